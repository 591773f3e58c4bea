// dl/autograd/meta.hpp — the autograd data model: grad mode, graph nodes and edges, the per-tensor
// autograd slot, saved tensors with version checks, and the helpers ops use to record history.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../grad_mode.hpp"
#include "../shape.hpp"
#include "../tensor_impl.hpp"
#include "anomaly.hpp"

namespace dl::autograd {

// ---------------------------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------------------------

class Node;

/// Where a gradient goes: input `input_nr` of node `fn` (an AccumulateGrad node for leaves).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return bool(fn); }
};

/// Shape and dtype of one output of a node, to check and create gradients.
struct OutputInfo {
  Shape shape;
  uint8_t dtype = 0;  // a ScalarType
};

using GradHook = std::function<TensorImplPtr(const TensorImplPtr&)>;

/// A backward function: turns the gradients of a recorded op's outputs into gradients of its
/// inputs (one per next edge). Subclasses are the backward rules of ops.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node() : sequence_nr_(next_sequence_nr()) {
    if (is_anomaly_enabled()) [[unlikely]]
      forward_site_ = detail::call_site_slot();
  }
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Name shown by grad_fn()->name(), e.g. "SigmoidBackward".
  virtual std::string name() const = 0;
  /// grads[i] is the gradient of output i (null when none reached it); returns one gradient per
  /// next edge (null where there is none).
  virtual std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) = 0;
  /// Drops saved tensors after a backward pass without retain_graph.
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  const std::vector<OutputInfo>& outputs() const { return outputs_; }
  std::vector<OutputInfo>& mutable_outputs() { return outputs_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  /// The user's call that created this node, recorded in anomaly mode (line() == 0 otherwise).
  const dl::SourceLocation& forward_site() const { return forward_site_; }

  /// Hooks on output `output_nr`, run on its gradient before apply (tensor.register_hook).
  /// `last` hooks run after all others (retain_grad sees the gradient the other hooks produced).
  void add_pre_hook(uint32_t output_nr, GradHook hook, bool last = false) {
    (last ? last_hooks_ : pre_hooks_).push_back({output_nr, std::move(hook)});
  }
  const std::vector<std::pair<uint32_t, GradHook>>& pre_hooks() const { return pre_hooks_; }
  const std::vector<std::pair<uint32_t, GradHook>>& last_hooks() const { return last_hooks_; }

 private:
  static uint64_t next_sequence_nr() {
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed);
  }

  uint64_t sequence_nr_;
  dl::SourceLocation forward_site_;
  std::vector<Edge> next_edges_;
  std::vector<OutputInfo> outputs_;
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks_, last_hooks_;
};

/// A sparse COO gradient (nn::Embedding with sparse = true), kept instead of a dense one: indices
/// [sparse_dim, nnz] int64, values [nnz, dense sizes...], the dense size; dl::SparseTensor<T> is its
/// typed view (dl/ops/sparse.hpp), and to_dense makes the dense gradient when a dense one meets it.
struct SparseGrad {
  TensorImplPtr indices, values;
  Shape size;
  bool coalesced = false;
  TensorImplPtr (*to_dense)(const SparseGrad&) = nullptr;
};

/// The autograd slot of a tensor.
struct AutogradMeta {
  bool requires_grad = false;        // set on leaves by requires_grad_()
  bool retains_grad = false;
  TensorImplPtr grad;                // accumulated gradient (leaves, or retain_grad)
  std::shared_ptr<SparseGrad> sparse_grad;  // or a sparse one (then grad is null)
  std::shared_ptr<Node> grad_fn;     // producer; null for leaves
  uint32_t output_nr = 0;
  uint32_t view_version = 0;         // views: storage version when grad_fn was derived
  std::weak_ptr<Node> grad_accumulator;  // AccumulateGrad of a leaf, created on demand
  std::vector<GradHook> hooks;           // leaf hooks (non-leaf hooks live on grad_fn)
  /// Run after a gradient was accumulated into grad (register_post_accumulate_grad_hook; DDP's
  /// bucket hooks), each with the key that removes it.
  std::vector<std::pair<const void*, std::function<void()>>> post_accumulate_hooks;
  std::mutex mutex;                      // guards grad accumulation (Hogwild threads)
};

/// A tensor saved for backward together with the storage version it had when saved. Unpacking
/// after an in-place change throws the error PyTorch users know.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(TensorImplPtr impl, std::string saved_by);
  /// The tensor; throws if it was modified in place since it was saved or was released.
  const TensorImplPtr& unpack() const;
  void release() { impl_.reset(); released_ = true; }
  bool defined() const { return bool(impl_) || released_; }

 private:
  TensorImplPtr impl_;
  uint32_t version_ = 0;
  std::string saved_by_;
  bool released_ = false;
};

}  // namespace dl::autograd

