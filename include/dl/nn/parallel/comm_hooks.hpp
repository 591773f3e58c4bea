// dl/nn/parallel/comm_hooks.hpp — DistributedDataParallel's communication hooks: what a hook
// receives (GradBucket) and PyTorch's built-in hooks (torch.distributed.algorithms.ddp_comm_hooks
// default_hooks): the plain average, and averages sent as float16 or bfloat16 (half the bytes on
// the wire; the gradients keep about 3 and 2 significant digits).
//
//   nn::parallel::DistributedDataParallel ddp(net);
//   ddp.register_comm_hook(nn::parallel::comm_hooks::fp16_compress_hook);
//   ddp.register_comm_hook([&](nn::parallel::GradBucket& b) { ...; return work; });   // your own
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "../../distributed/collectives.hpp"
#include "../../half.hpp"

namespace dl::nn::parallel {

/// One bucket of gradients handed to a communication hook (PyTorch's GradBucket). The hook starts
/// the reduction of buffer() and returns its Work; when that completes, buffer() must hold the
/// gradients averaged over the group (DDP then writes them back into grad()).
class GradBucket {
 public:
  GradBucket(size_t index, bool is_last, AnyTensor buffer, std::vector<AnyTensor> gradients, std::vector<AnyTensor> parameters,
             distributed::Group group)
      : index_(index), is_last_(is_last), buffer_(std::move(buffer)), gradients_(std::move(gradients)),
        parameters_(std::move(parameters)), group_(std::move(group)) {}
  /// The bucket's position in reduction order (0 is reduced first).
  size_t index() const { return index_; }
  /// The last bucket of this backward pass.
  bool is_last() const { return is_last_; }
  /// The bucket's gradients, flattened into one contiguous 1-D tensor.
  const AnyTensor& buffer() const { return buffer_; }
  /// Views of buffer() shaped like each parameter.
  const std::vector<AnyTensor>& gradients() const { return gradients_; }
  /// The parameters whose gradients the bucket holds, in the order of gradients().
  const std::vector<AnyTensor>& parameters() const { return parameters_; }
  /// The group DDP averages over (empty: the default group).
  const distributed::Group& group() const { return group_; }
  distributed::ProcessGroup& process_group() const { return distributed::detail::group_of(group_); }

 private:
  size_t index_;
  bool is_last_;
  AnyTensor buffer_;
  std::vector<AnyTensor> gradients_, parameters_;
  distributed::Group group_;
};

/// A communication hook: starts the reduction of a bucket (dl/nn/parallel/comm_hooks.hpp has
/// PyTorch's built-in ones). State a hook needs is captured by the callable.
using CommHook = std::function<distributed::Work(GradBucket&)>;

namespace comm_hooks {

/// The default: the bucket averaged over the group by one asynchronous all-reduce.
inline distributed::Work allreduce_hook(GradBucket& bucket) {
  return distributed::all_reduce(bucket.buffer(), {.op = distributed::ReduceOp::AVG, .group = bucket.group(), .async_op = true});
}

namespace detail {
/// Sends a float or double bucket as H (divided by the group's size first, so the sum cannot
/// overflow where the average does not) and writes the average back when the all-reduce is done.
template <class H>
distributed::Work compress_hook(GradBucket& bucket) {
  const TensorImplPtr flat = bucket.buffer().impl();
  if (flat->dtype != ScalarType::Float && flat->dtype != ScalarType::Double) return allreduce_hook(bucket);
  DL_CHECK(flat->storage->device().is_cpu(), "comm_hooks: compressing CUDA buckets needs the NCCL backend, which dl does not have yet");
  distributed::ProcessGroup& g = bucket.process_group();
  const int64_t n = flat->shape.empty() ? 1 : flat->shape[0];
  auto wire = dl::detail::make_impl(dtype_of<H>, {n}, kCPU);
  H* w = static_cast<H*>(wire->data());
  const double inv = 1.0 / g.size();
  auto each = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) w[i] = H(float(double(p[i]) * inv));
  };
  if (flat->dtype == ScalarType::Float) each(static_cast<const float*>(flat->data()));
  else each(static_cast<const double*>(flat->data()));
  return g.all_reduce(AnyTensor(wire), distributed::ReduceOp::SUM, [flat, wire, n] {
    const H* r = static_cast<const H*>(wire->data());
    if (flat->dtype == ScalarType::Float)
      for (int64_t i = 0; i < n; ++i) static_cast<float*>(flat->data())[i] = float(r[i]);
    else
      for (int64_t i = 0; i < n; ++i) static_cast<double*>(flat->data())[i] = double(float(r[i]));
  });
}
}  // namespace detail

/// The average sent as float16 (PyTorch's fp16_compress_hook). Buckets of other dtypes are
/// averaged as they are.
inline distributed::Work fp16_compress_hook(GradBucket& bucket) { return detail::compress_hook<Half>(bucket); }
/// The average sent as bfloat16 (PyTorch's bf16_compress_hook): float's range, fewer digits.
inline distributed::Work bf16_compress_hook(GradBucket& bucket) { return detail::compress_hook<BFloat16>(bucket); }

}  // namespace comm_hooks
}  // namespace dl::nn::parallel
