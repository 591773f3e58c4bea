// dl/optim/radam.hpp — RAdam, Adam with a rectified adaptive learning rate (PyTorch's torch.optim.RAdam).
//   optim::RAdam opt(net.parameters(), {.lr = 1e-3, .decoupled_weight_decay = true});
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

#define DL_RADAM_FIELDS(X)                \
  X(double, lr, 1e-3)                     \
  X(Pair, betas, Pair(0.9, 0.999))        \
  X(double, eps, 1e-8)                    \
  X(double, weight_decay, 0.0)            \
  X(bool, decoupled_weight_decay, false)  \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(RAdam, DL_RADAM_FIELDS)

template <scalar_type T>
struct RAdamState {
  double step = 0;
  Tensor<T> exp_avg, exp_avg_sq;
  template <class F>
  void for_each(F&& f) { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
};

DL_OPTIMIZER_CLASS(RAdam, RAdamState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// s = (exp_avg, exp_avg_sq); rectified when the variance is tractable (rho_t > 5).
template <class T>
struct RAdamRule {
  T decay, wd, w1, beta2, w2, inv_bc1, lr, eps, rect_bc2;  // rect_bc2 = rect * sqrt(bc2), 0: unrectified
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 2>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    if (decay != T(1)) p = p * decay;
    s[0] = s[0] + (g - s[0]) * w1;
    s[1] = s[1] * beta2 + g * g * w2;
    const V avg = s[0] * inv_bc1;
    if (rect_bc2 != T(0)) p = p - avg * lr * (V(rect_bc2) / (sqrt(s[1]) + eps));
    else p = p - avg * lr;
  }
};

}  // namespace detail

template <scalar_type T>
void RAdam<T>::validate(const RAdamOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void RAdam<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#RAdam.step");
  using Rule = detail::RAdamRule<T>;
  detail::step_param_groups<T, 2, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const RAdamOptions& o, const Tensor<T>& p, RAdamState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.exp_avg.defined()) {
          st.exp_avg = zeros<T>(p.shape());
          st.exp_avg_sq = zeros<T>(p.shape());
        }
        st.step += 1;
        const auto [beta1, beta2] = o.betas;
        const double bc1 = 1 - std::pow(beta1, st.step), bc2 = 1 - std::pow(beta2, st.step);
        const double rho_inf = 2 / (1 - beta2) - 1;
        const double rho_t = rho_inf - 2 * st.step * std::pow(beta2, st.step) / bc2;
        double rect_bc2 = 0;
        if (rho_t > 5)
          rect_bc2 = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) * std::sqrt(bc2);
        const bool decoupled = o.decoupled_weight_decay && o.weight_decay != 0;
        return detail::StepItem<T, 2, Rule>{
            target.data(), g.data(), {st.exp_avg.data(), st.exp_avg_sq.data()}, p.numel(),
            Rule{T(decoupled ? 1 - o.lr * o.weight_decay : 1), T(decoupled ? 0 : o.weight_decay), T(1 - beta1), T(beta2), T(1 - beta2),
                 T(1 / bc1), T(o.lr), T(o.eps), T(rect_bc2)}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(RAdam, RAdamState)
