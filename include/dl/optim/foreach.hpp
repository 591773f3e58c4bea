// dl/optim/foreach.hpp — the fused multi-tensor step every optimizer runs: one pass per parameter
// that reads the parameter, its gradient and its state and writes the parameter and state, with the
// elements of all of a group's tensors cut into chunks that one parallel region shares (PyTorch's
// foreach/fused idea: the many small tensors of a network do not each start a thread team).
// An update rule is a functor on values that may be scalars or SIMD batches (and, later, CUDA
// threads): rule(p, g, s) with p and the state array s updated in place. step_param_groups is the
// loop most algorithms' step() is made of.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "../xsimd.hpp"

#include "../config.hpp"
#include "../expr/simd.hpp"
#include "../parallel.hpp"
#include "../ops/sparse.hpp"
#include "../tensor.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

namespace detail {

/// The type PyTorch keeps an optimizer's per-parameter scalars in (NAdam's mu_product, ASGD's eta
/// and mu are 0-d tensors of the default dtype): double for double parameters, as for a user who set
/// the default dtype to float64, and float for every other parameter type.
template <class T>
using state_scalar_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// One tensor's share of a fused step: its parameter, gradient and K state buffers (contiguous,
/// n elements each) and the rule with this tensor's scalars (bias corrections, step sizes...).
template <class T, int K, class Rule>
struct StepItem {
  T* p;
  const T* g;
  std::array<T*, K> s;
  int64_t n;
  Rule rule;
};

/// Applies every item's rule elementwise, all items in one parallel region.
template <class T, int K, class Rule>
void fused_step(const std::vector<StepItem<T, K, Rule>>& items);

/// Elementwise helpers for rules (scalars and batches alike).
template <class V>
DL_INLINE V vmax(const V& a, const V& b) {
  return expr::select(a < b, b, a);
}
template <class V>
DL_INLINE V vsign(const V& x) {
  using S = expr::scalar_of_t<V>;
  return expr::select(x > S(0), V(S(1)), expr::select(x < S(0), V(S(-1)), V(S(0))));
}

/// Collects (parameter, gradient, state) for a fused step, working on contiguous copies where a
/// parameter or gradient is strided and writing them back afterwards.
template <class T>
class StepBatch {
 public:
  /// The contiguous parameter to update (p itself when contiguous) and its contiguous gradient.
  std::pair<Tensor<T>, Tensor<T>> add(const Tensor<T>& p, bool maximize);
  /// Writes back the parameters that were copied and bumps every parameter's version counter
  /// (an update in place, as autograd must see it).
  void finish();

 private:
  std::vector<Tensor<T>> params_;
  std::vector<std::pair<Tensor<T>, Tensor<T>>> copies_;  // (original, contiguous copy)
  std::vector<Tensor<T>> keep_;                          // gradients negated or made contiguous
};

/// One step of an algorithm with a single rule (Adamax, NAdam, RAdam, Adagrad, Adadelta, Rprop,
/// ASGD), under no_grad: for each group, make(options, p, state_of(p), target, g) initialises the
/// state of every parameter p that has a gradient and returns its StepItem<T, K, Rule>; then one
/// fused_step per group. (target, g): the contiguous parameter and gradient of StepBatch::add.
template <class T, int K, class Rule, class Groups, class StateOf, class Make>
void step_param_groups(Groups& groups, StateOf&& state_of, Make&& make);

}  // namespace detail

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class T, int K, class Rule>
void fused_step(const std::vector<StepItem<T, K, Rule>>& items) {
  constexpr int64_t kChunk = 16384;
  struct Chunk {
    int64_t item, begin, end;
  };
  std::vector<Chunk> chunks;
  for (int64_t i = 0; i < int64_t(items.size()); ++i)
    for (int64_t b = 0; b < items[size_t(i)].n; b += kChunk) chunks.push_back({i, b, std::min(items[size_t(i)].n, b + kChunk)});
  using B = xsimd::batch<T>;
  constexpr int64_t W = int64_t(B::size);
  dl::detail::parallel_for(0, int64_t(chunks.size()), 2, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const Chunk ch = chunks[size_t(c)];
      const StepItem<T, K, Rule>& it = items[size_t(ch.item)];
      int64_t j = ch.begin;
      for (; j + W <= ch.end; j += W) {
        B p = B::load_unaligned(it.p + j);
        const B g = B::load_unaligned(it.g + j);
        std::array<B, K> s;
        for (int k = 0; k < K; ++k) s[size_t(k)] = B::load_unaligned(it.s[size_t(k)] + j);
        it.rule(p, g, s);
        p.store_unaligned(it.p + j);
        for (int k = 0; k < K; ++k) s[size_t(k)].store_unaligned(it.s[size_t(k)] + j);
      }
      for (; j < ch.end; ++j) {
        T p = it.p[j];
        std::array<T, K> s;
        for (int k = 0; k < K; ++k) s[size_t(k)] = it.s[size_t(k)][j];
        it.rule(p, it.g[j], s);
        it.p[j] = p;
        for (int k = 0; k < K; ++k) it.s[size_t(k)][j] = s[size_t(k)];
      }
    }
  });
}

template <class T>
std::pair<Tensor<T>, Tensor<T>> StepBatch<T>::add(const Tensor<T>& p, bool maximize) {
  DL_CHECK(p.device().is_cpu(), "optimizer step: parameter of shape ", p.shape(), " is on ", p.device(),
           "; this build's optimizers update CPU tensors");
  Tensor<T> g = p.grad();
  DL_CHECK(g.shape() == p.shape(), "optimizer step: gradient of shape ", g.shape(), " for a parameter of shape ", p.shape());
  if (maximize) g = Tensor<T>(-g);
  else if (!g.is_contiguous()) g = g.contiguous();
  keep_.push_back(g);
  params_.push_back(p);
  Tensor<T> target = p;
  if (!p.is_contiguous()) {
    target = p.detach().contiguous();
    copies_.emplace_back(p, target);
  }
  return {target, g};
}

template <class T>
void StepBatch<T>::finish() {
  for (auto& [orig, copy] : copies_) orig.detach().copy_(copy);
  for (auto& p : params_) p.bump_version();
  copies_.clear();
  keep_.clear();
  params_.clear();
}

template <class T, int K, class Rule, class Groups, class StateOf, class Make>
void step_param_groups(Groups& groups, StateOf&& state_of, Make&& make) {
  NoGradGuard no_grad;
  for (auto& group : groups) {
    StepBatch<T> batch;
    std::vector<StepItem<T, K, Rule>> items;
    for (auto& p : group.params) {
      if (p.grad_is_sparse() || !p.grad().defined()) continue;  // sparse: stepped by the algorithm (or refused)
      auto [target, g] = batch.add(p, group.options.maximize);
      items.push_back(make(group.options, p, state_of(p), target, g));
    }
    fused_step(items);
    batch.finish();
  }
}

/// A parameter and its sparse gradient seen row by row: row k of the gradient's values (R
/// elements) belongs at element offset row_at[k] of the parameter's data (contiguous).
template <class T>
struct SparseRows {
  std::vector<int64_t> row_at;
  Tensor<T> values;  // [nnz, ...], contiguous
  int64_t R = 0;
};
/// p's sparse gradient, coalesced when `coalesce` (SparseAdam and Adagrad; SGD adds every entry).
template <class T>
SparseRows<T> sparse_rows(const Tensor<T>& p, bool coalesce, bool maximize) {
  DL_CHECK(p.device().is_cpu() && p.is_contiguous(), "optimizer step: a parameter with a sparse gradient must be a contiguous CPU tensor (got shape ",
           p.shape(), ")");
  SparseTensor<T> g = p.sparse_grad();
  if (coalesce) g = g.coalesce();
  SparseRows<T> out;
  out.values = g._values().contiguous();
  if (maximize) out.values = Tensor<T>(-out.values);
  const int64_t nnz = g._nnz();
  out.R = nnz ? out.values.numel() / nnz : 0;
  out.row_at = dl::detail::sparse_linear_index(g._indices(), g.shape());
  for (auto& r : out.row_at) r *= out.R;
  return out;
}

}  // namespace detail

}  // namespace dl::optim
