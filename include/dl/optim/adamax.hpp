// dl/optim/adamax.hpp — Adamax, Adam with the infinity norm (PyTorch's torch.optim.Adamax).
//   optim::Adamax opt(net.parameters(), {.lr = 2e-3, .betas = {0.9, 0.999}});
#pragma once

#include <array>
#include <cmath>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_ADAMAX_FIELDS(X)            \
  X(double, lr, 2e-3)                  \
  X(Pair, betas, Pair(0.9, 0.999))     \
  X(double, eps, 1e-8)                 \
  X(double, weight_decay, 0.0)         \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(Adamax, DL_ADAMAX_FIELDS)

template <scalar_type T>
struct AdamaxState {
  double step = 0;
  Tensor<T> exp_avg, exp_inf;
  template <class F>
  void for_each(F&& f) { f("step", step), f("exp_avg", exp_avg), f("exp_inf", exp_inf); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("exp_avg", exp_avg), f("exp_inf", exp_inf); }
};

DL_OPTIMIZER_CLASS(Adamax, AdamaxState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// s = (exp_avg, exp_inf): exp_inf = max(beta2 exp_inf, |g| + eps), p -= clr exp_avg / exp_inf.
template <class T>
struct AdamaxRule {
  T wd, w1, beta2, eps, clr;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 2>& s) const {
    using std::abs;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    s[0] = s[0] + (g - s[0]) * w1;
    s[1] = vmax(s[1] * beta2, abs(g) + eps);
    p = p - s[0] / s[1] * clr;
  }
};

}  // namespace detail

template <scalar_type T>
void Adamax<T>::validate(const AdamaxOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void Adamax<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Adamax.step");
  using Rule = detail::AdamaxRule<T>;
  detail::step_param_groups<T, 2, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const AdamaxOptions& o, const Tensor<T>& p, AdamaxState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.exp_avg.defined()) {
          st.exp_avg = zeros<T>(p.shape());
          st.exp_inf = zeros<T>(p.shape());
        }
        st.step += 1;
        const double clr = o.lr / (1 - std::pow(o.betas.first, st.step));
        return detail::StepItem<T, 2, Rule>{target.data(), g.data(), {st.exp_avg.data(), st.exp_inf.data()}, p.numel(),
                                            Rule{T(o.weight_decay), T(1 - o.betas.first), T(o.betas.second), T(o.eps), T(clr)}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(Adamax, AdamaxState)
