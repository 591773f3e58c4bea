// dl/optim/adamax.hpp — Adamax (Adam with the infinity norm), NAdam (Nesterov-accelerated Adam) and
// RAdam (rectified Adam), as PyTorch's torch.optim.Adamax / NAdam / RAdam.
#pragma once

#include <cmath>

#include "adam.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_ADAMAX_FIELDS(X)            \
  X(double, lr, 2e-3)                  \
  X(Pair, betas, Pair(0.9, 0.999))     \
  X(double, eps, 1e-8)                 \
  X(double, weight_decay, 0.0)         \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(Adamax, DL_ADAMAX_FIELDS)
#undef DL_ADAMAX_FIELDS

#define DL_NADAM_FIELDS(X)                \
  X(double, lr, 2e-3)                     \
  X(Pair, betas, Pair(0.9, 0.999))        \
  X(double, eps, 1e-8)                    \
  X(double, weight_decay, 0.0)            \
  X(double, momentum_decay, 4e-3)         \
  X(bool, decoupled_weight_decay, false)  \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(NAdam, DL_NADAM_FIELDS)
#undef DL_NADAM_FIELDS

#define DL_RADAM_FIELDS(X)                \
  X(double, lr, 1e-3)                     \
  X(Pair, betas, Pair(0.9, 0.999))        \
  X(double, eps, 1e-8)                    \
  X(double, weight_decay, 0.0)            \
  X(bool, decoupled_weight_decay, false)  \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(RAdam, DL_RADAM_FIELDS)
#undef DL_RADAM_FIELDS

template <scalar_type T>
struct AdamaxState {
  double step = 0;
  Tensor<T> exp_avg, exp_inf;
  template <class F>
  void for_each(F&& f) { f("step", step), f("exp_avg", exp_avg), f("exp_inf", exp_inf); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("exp_avg", exp_avg), f("exp_inf", exp_inf); }
};

template <scalar_type T>
struct NAdamState {
  double step = 0, mu_product = 1;
  Tensor<T> exp_avg, exp_avg_sq;
  template <class F>
  void for_each(F&& f) { f("step", step), f("mu_product", mu_product), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("mu_product", mu_product), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
};

template <scalar_type T>
struct RAdamState {
  double step = 0;
  Tensor<T> exp_avg, exp_avg_sq;
  template <class F>
  void for_each(F&& f) { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
};

DL_OPTIMIZER_CLASS(Adamax, AdamaxState)
DL_OPTIMIZER_CLASS(NAdam, NAdamState)
DL_OPTIMIZER_CLASS(RAdam, RAdamState)

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

/// Runs one algorithm's per-parameter loop: init(p, state), then rule(p, state) -> StepItem.
template <class T, int K, class Rule, class Groups, class StateOf, class Make>
void adam_family_step(Groups& groups, StateOf&& state_of, Make&& make) {
  NoGradGuard no_grad;
  for (auto& group : groups) {
    StepBatch<T> batch;
    std::vector<StepItem<T, K, Rule>> items;
    for (auto& p : group.params) {
      if (!p.grad().defined()) continue;
      auto [target, g] = batch.add(p, group.options.maximize);
      items.push_back(make(group.options, p, state_of(p), target, g));
    }
    fused_step(items);
    batch.finish();
  }
}

}  // namespace detail

template <scalar_type T>
void Adamax<T>::validate(const AdamaxOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void Adamax<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Adamax.step");
  using Rule = detail::AdamaxRule<T>;
  detail::adam_family_step<T, 2, Rule>(
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

template <scalar_type T>
void NAdam<T>::validate(const NAdamOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
  DL_CHECK(o.momentum_decay >= 0, "Invalid momentum_decay value: ", dl::detail::py_number(o.momentum_decay));
}

template <scalar_type T>
void NAdam<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#NAdam.step");
  using Rule = detail::NAdamRule<T>;
  detail::adam_family_step<T, 2, Rule>(
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
        st.mu_product = double(float(st.mu_product) * float(mu));  // PyTorch keeps it as a float32 0-d tensor
        const double mu_product_next = st.mu_product * mu_next;
        const bool decoupled = o.decoupled_weight_decay && o.weight_decay != 0;
        return detail::StepItem<T, 2, Rule>{
            target.data(), g.data(), {st.exp_avg.data(), st.exp_avg_sq.data()}, p.numel(),
            Rule{T(decoupled ? 1 - o.lr * o.weight_decay : 1), T(decoupled ? 0 : o.weight_decay), T(1 - beta1), T(beta2), T(1 - beta2),
                 T(1 / bc2), T(o.eps), T(-o.lr * (1 - mu) / (1 - st.mu_product)), T(-o.lr * mu_next / (1 - mu_product_next))}};
      });
}

template <scalar_type T>
void RAdam<T>::validate(const RAdamOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void RAdam<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#RAdam.step");
  using Rule = detail::RAdamRule<T>;
  detail::adam_family_step<T, 2, Rule>(
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
