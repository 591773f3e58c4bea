// dl/optim/nadam.hpp — NAdam, Nesterov-accelerated Adam with momentum decay (PyTorch's torch.optim.NAdam).
//   optim::NAdam opt(net.parameters(), {.lr = 2e-3, .momentum_decay = 4e-3});
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

#define DL_NADAM_FIELDS(X)                \
  X(double, lr, 2e-3)                     \
  X(Pair, betas, Pair(0.9, 0.999))        \
  X(double, eps, 1e-8)                    \
  X(double, weight_decay, 0.0)            \
  X(double, momentum_decay, 4e-3)         \
  X(bool, decoupled_weight_decay, false)  \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(NAdam, DL_NADAM_FIELDS)

template <scalar_type T>
struct NAdamState {
  double step = 0, mu_product = 1;
  Tensor<T> exp_avg, exp_avg_sq;
  template <class F>
  void for_each(F&& f) { f("step", step), f("mu_product", mu_product), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("mu_product", mu_product), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
};

DL_OPTIMIZER_CLASS(NAdam, NAdamState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// s = (exp_avg, exp_avg_sq): two addcdiv terms, one of the gradient and one of the momentum.
template <class T>
struct NAdamRule {
  T decay, wd, w1, beta2, w2, inv_bc2, eps, c_grad, c_avg;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 2>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    if (decay != T(1)) p = p * decay;
    s[0] = s[0] + (g - s[0]) * w1;
    s[1] = s[1] * beta2 + g * g * w2;
    const V denom = sqrt(s[1] * inv_bc2) + eps;
    p = p + g / denom * c_grad;
    p = p + s[0] / denom * c_avg;
  }
};

}  // namespace detail

template <scalar_type T>
void NAdam<T>::validate(const NAdamOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
  DL_CHECK(o.momentum_decay >= 0, "Invalid momentum_decay value: ", dl::detail::py_number(o.momentum_decay));
}

template <scalar_type T>
void NAdam<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#NAdam.step");
  using Rule = detail::NAdamRule<T>;
  detail::step_param_groups<T, 2, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const NAdamOptions& o, const Tensor<T>& p, NAdamState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.exp_avg.defined()) {
          st.exp_avg = zeros<T>(p.shape());
          st.exp_avg_sq = zeros<T>(p.shape());
        }
        st.step += 1;
        const auto [beta1, beta2] = o.betas;
        const double bc2 = 1 - std::pow(beta2, st.step);
        const double mu = beta1 * (1 - 0.5 * std::pow(0.96, st.step * o.momentum_decay));
        const double mu_next = beta1 * (1 - 0.5 * std::pow(0.96, (st.step + 1) * o.momentum_decay));
        using S = detail::state_scalar_t<T>;  // PyTorch keeps mu_product in a 0-d tensor of the default dtype
        st.mu_product = double(S(st.mu_product) * S(mu));
        const double mu_product_next = st.mu_product * mu_next;
        const bool decoupled = o.decoupled_weight_decay && o.weight_decay != 0;
        return detail::StepItem<T, 2, Rule>{
            target.data(), g.data(), {st.exp_avg.data(), st.exp_avg_sq.data()}, p.numel(),
            Rule{T(decoupled ? 1 - o.lr * o.weight_decay : 1), T(decoupled ? 0 : o.weight_decay), T(1 - beta1), T(beta2), T(1 - beta2),
                 T(1 / bc2), T(o.eps), T(-o.lr * (1 - mu) / (1 - st.mu_product)), T(-o.lr * mu_next / (1 - mu_product_next))}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(NAdam, NAdamState)
