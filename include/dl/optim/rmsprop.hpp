// dl/optim/rmsprop.hpp — RMSprop: steps scaled by a running average of squared gradients, optionally
// centered and with momentum (PyTorch's torch.optim.RMSprop).
//   optim::RMSprop opt(net.parameters(), {.lr = 1e-2, .alpha = 0.99, .momentum = 0.9, .centered = true});
#pragma once

#include <array>
#include <cmath>
#include <vector>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_RMSPROP_FIELDS(X)     \
  X(double, lr, 1e-2)            \
  X(double, alpha, 0.99)         \
  X(double, eps, 1e-8)           \
  X(double, weight_decay, 0.0)   \
  X(double, momentum, 0.0)       \
  X(bool, centered, false)       \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(RMSprop, DL_RMSPROP_FIELDS)

template <scalar_type T>
struct RMSpropState {
  double step = 0;
  Tensor<T> square_avg, momentum_buffer, grad_avg;
  template <class F>
  void for_each(F&& f) { f("step", step), f("square_avg", square_avg), f("momentum_buffer", momentum_buffer), f("grad_avg", grad_avg); }
  template <class F>
  void for_each(F&& f) const {
    f("step", step), f("square_avg", square_avg), f("momentum_buffer", momentum_buffer), f("grad_avg", grad_avg);
  }
};

DL_OPTIMIZER_CLASS(RMSprop, RMSpropState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// s = (square_avg[, grad_avg][, momentum_buffer]).
template <class T, bool Centered, bool Momentum>
struct RMSpropRule {
  static constexpr int K = 1 + Centered + Momentum;
  T wd, alpha, w, eps, lr, momentum;  // w = 1 - alpha
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, K>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    s[0] = s[0] * alpha + g * g * w;
    V avg;
    if constexpr (Centered) {
      s[1] = s[1] + (g - s[1]) * w;
      avg = sqrt(s[0] - s[1] * s[1]) + eps;
    } else {
      avg = sqrt(s[0]) + eps;
    }
    if constexpr (Momentum) {
      s[K - 1] = s[K - 1] * momentum + g / avg;
      p = p - s[K - 1] * lr;
    } else {
      p = p - g / avg * lr;
    }
  }
};

template <class T, bool C, bool M, class Group, class StateOf>
void rmsprop_group(Group& group, StateOf&& state_of) {
  using Rule = RMSpropRule<T, C, M>;
  constexpr int K = Rule::K;
  const RMSpropOptions& o = group.options;
  StepBatch<T> batch;
  std::vector<StepItem<T, K, Rule>> items;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    auto [target, g] = batch.add(p, o.maximize);
    auto& st = state_of(p);
    if (!st.square_avg.defined()) st.square_avg = zeros<T>(p.shape());
    if (C && !st.grad_avg.defined()) st.grad_avg = zeros<T>(p.shape());
    if (M && !st.momentum_buffer.defined()) st.momentum_buffer = zeros<T>(p.shape());
    st.step += 1;
    std::array<T*, K> s;
    s[0] = st.square_avg.data();
    if constexpr (C) s[1] = st.grad_avg.data();
    if constexpr (M) s[K - 1] = st.momentum_buffer.data();
    items.push_back({target.data(), g.data(), s, p.numel(),
                     Rule{T(o.weight_decay), T(o.alpha), T(1 - o.alpha), T(o.eps), T(o.lr), T(o.momentum)}});
  }
  fused_step(items);
  batch.finish();
}

}  // namespace detail

template <scalar_type T>
void RMSprop<T>::validate(const RMSpropOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(o.eps >= 0, "Invalid epsilon value: ", py_number(o.eps));
  DL_CHECK(o.momentum >= 0, "Invalid momentum value: ", py_number(o.momentum));
  DL_CHECK(o.weight_decay >= 0, "Invalid weight_decay value: ", py_number(o.weight_decay));
  DL_CHECK(o.alpha >= 0, "Invalid alpha value: ", py_number(o.alpha));
}

template <scalar_type T>
void RMSprop<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#RMSprop.step");
  NoGradGuard no_grad;
  auto state_of = [this](const Tensor<T>& p) -> auto& { return this->state(p); };
  for (auto& group : this->param_groups()) {
    const bool c = group.options.centered, m = group.options.momentum > 0;
    if (c && m) detail::rmsprop_group<T, true, true>(group, state_of);
    else if (c) detail::rmsprop_group<T, true, false>(group, state_of);
    else if (m) detail::rmsprop_group<T, false, true>(group, state_of);
    else detail::rmsprop_group<T, false, false>(group, state_of);
  }
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(RMSprop, RMSpropState)
