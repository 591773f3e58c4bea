// dl/optim/sgd.hpp — stochastic gradient descent with momentum, dampening, Nesterov momentum,
// weight decay and maximize (PyTorch's torch.optim.SGD).
//   optim::SGD opt(net.parameters(), {.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
#pragma once

#include <array>
#include <vector>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_SGD_FIELDS(X)            \
  X(double, lr, 1e-3)               \
  X(double, momentum, 0.0)          \
  X(double, dampening, 0.0)         \
  X(double, weight_decay, 0.0)      \
  X(bool, nesterov, false)          \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(SGD, DL_SGD_FIELDS)

template <scalar_type T>
struct SGDState {
  Tensor<T> momentum_buffer;  ///< created at the first step with momentum
  template <class F>
  void for_each(F&& f) { f("momentum_buffer", momentum_buffer); }
  template <class F>
  void for_each(F&& f) const { f("momentum_buffer", momentum_buffer); }
};

DL_OPTIMIZER_CLASS(SGD, SGDState)

// ------------------------------------------------------------------------------ implementation

namespace detail {
/// p -= lr * d, d = g + wd p, through the momentum buffer s[0] when momentum != 0.
template <class T, int K>
struct SGDRule {
  T lr, wd, momentum, dampening;
  bool nesterov, first;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g, std::array<V, K>& s) const {
    V d = g;
    if (wd != T(0)) d = d + p * wd;
    if constexpr (K == 1) {
      s[0] = first ? d : s[0] * momentum + d * (T(1) - dampening);
      d = nesterov ? d + s[0] * momentum : s[0];
    }
    p = p - d * lr;
  }
};
}  // namespace detail

template <scalar_type T>
void SGD<T>::validate(const SGDOptions& o) {
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", dl::detail::py_number(o.lr));
  DL_CHECK(o.momentum >= 0, "Invalid momentum value: ", dl::detail::py_number(o.momentum));
  DL_CHECK(o.weight_decay >= 0, "Invalid weight_decay value: ", dl::detail::py_number(o.weight_decay));
  DL_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "Nesterov momentum requires a momentum and zero dampening");
}

template <scalar_type T>
void SGD<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#SGD.step");
  NoGradGuard no_grad;
  for (auto& group : this->param_groups()) {
    const SGDOptions& o = group.options;
    detail::StepBatch<T> batch;
    std::vector<detail::StepItem<T, 0, detail::SGDRule<T, 0>>> plain;
    std::vector<detail::StepItem<T, 1, detail::SGDRule<T, 1>>> with_momentum;
    for (auto& p : group.params) {
      if (p.grad_is_sparse()) {  // p -= lr * g, entry by entry (PyTorch's sparse SGD)
        DL_CHECK(o.momentum == 0 && o.weight_decay == 0,
                 "SGD: a sparse gradient (nn::Embedding with sparse = true) takes neither momentum nor weight_decay");
        const auto rows = detail::sparse_rows(p, false, o.maximize);
        T* w = p.data();
        const T* v = rows.values.data();
        const T lr = T(o.lr);
        for (size_t k = 0; k < rows.row_at.size(); ++k)
          for (int64_t j = 0; j < rows.R; ++j) w[rows.row_at[k] + j] -= lr * v[int64_t(k) * rows.R + j];
        p.bump_version();
        continue;
      }
      if (!p.grad().defined()) continue;
      auto [target, g] = batch.add(p, o.maximize);
      if (o.momentum == 0) {
        plain.push_back({target.data(), g.data(), {}, p.numel(), {T(o.lr), T(o.weight_decay), T(0), T(0), false, false}});
        continue;
      }
      auto& st = this->state(p);
      const bool first = !st.momentum_buffer.defined();
      if (first) st.momentum_buffer = empty<T>(p.shape());
      with_momentum.push_back({target.data(), g.data(), {st.momentum_buffer.data()}, p.numel(),
                               {T(o.lr), T(o.weight_decay), T(o.momentum), T(o.dampening), o.nesterov, first}});
    }
    detail::fused_step(plain);
    detail::fused_step(with_momentum);
    batch.finish();
  }
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(SGD, SGDState)
