// dl/optim/adam.hpp — Adam (amsgrad, weight decay coupled or decoupled, maximize), as PyTorch's
// torch.optim.Adam; its state, update rule and step, which AdamW (adamw.hpp) shares.
//   optim::Adam adam(net.parameters(), {.lr = 1e-3, .betas = {0.9, 0.999}, .eps = 1e-8, .amsgrad = true});
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

#define DL_ADAM_FIELDS(X)              \
  X(double, lr, 1e-3)                  \
  X(Pair, betas, Pair(0.9, 0.999))     \
  X(double, eps, 1e-8)                 \
  X(double, weight_decay, 0.0)         \
  X(bool, amsgrad, false)              \
  X(bool, maximize, false)             \
  X(bool, decoupled_weight_decay, false)
DL_OPTIM_OPTIONS(Adam, DL_ADAM_FIELDS)

/// The state of Adam and AdamW.
template <scalar_type T>
struct AdamState {
  double step = 0;
  Tensor<T> exp_avg, exp_avg_sq, max_exp_avg_sq;
  template <class F>
  void for_each(F&& f) {
    f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq), f("max_exp_avg_sq", max_exp_avg_sq);
  }
  template <class F>
  void for_each(F&& f) const {
    f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq), f("max_exp_avg_sq", max_exp_avg_sq);
  }
};

/// Adam; decoupled_weight_decay = true makes it AdamW.
DL_OPTIMIZER_CLASS(Adam, AdamState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// One Adam update: s = (exp_avg, exp_avg_sq[, max_exp_avg_sq]).
template <class T, int K>
struct AdamRule {
  T decay;          // p *= decay first (decoupled weight decay), 1 otherwise
  T wd;             // g += wd p (L2 weight decay)
  T w1, beta2, w2;  // 1 - beta1, beta2, 1 - beta2
  T inv_bc2_sqrt, eps, step_size;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, K>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    if (decay != T(1)) p = p * decay;
    s[0] = s[0] + (g - s[0]) * w1;  // lerp(exp_avg, g, 1 - beta1), as PyTorch 2
    s[1] = s[1] * beta2 + g * g * w2;
    V v = s[1];
    if constexpr (K == 3) {
      s[2] = vmax(s[2], s[1]);
      v = s[2];
    }
    p = p - s[0] / (sqrt(v) * inv_bc2_sqrt + eps) * step_size;
  }
};

/// Adam's and AdamW's step: the weight decay is decoupled when decoupled_always (AdamW) or when the
/// options ask for it (Adam's decoupled_weight_decay).
template <class T, class Opt, class Groups, class StateOf>
void adam_step(Groups& groups, StateOf&& state_of, bool decoupled_always) {
  NoGradGuard no_grad;
  for (auto& group : groups) {
    const Opt& o = group.options;
    bool decoupled = decoupled_always;
    if constexpr (requires { o.decoupled_weight_decay; }) decoupled = decoupled || o.decoupled_weight_decay;
    const auto [beta1, beta2] = o.betas;
    StepBatch<T> batch;
    std::vector<StepItem<T, 2, AdamRule<T, 2>>> plain;
    std::vector<StepItem<T, 3, AdamRule<T, 3>>> ams;
    for (auto& p : group.params) {
      if (!p.grad().defined()) continue;
      auto [target, g] = batch.add(p, o.maximize);
      auto& st = state_of(p);
      if (!st.exp_avg.defined()) {
        st.exp_avg = zeros<T>(p.shape());
        st.exp_avg_sq = zeros<T>(p.shape());
        if (o.amsgrad) st.max_exp_avg_sq = zeros<T>(p.shape());
      }
      if (o.amsgrad && !st.max_exp_avg_sq.defined()) st.max_exp_avg_sq = zeros<T>(p.shape());
      st.step += 1;
      const double bc1 = 1 - std::pow(beta1, st.step), bc2 = 1 - std::pow(beta2, st.step);
      AdamRule<T, 2> r{T(decoupled && o.weight_decay != 0 ? 1 - o.lr * o.weight_decay : 1),
                       T(decoupled ? 0 : o.weight_decay),
                       T(1 - beta1),
                       T(beta2),
                       T(1 - beta2),
                       T(1 / std::sqrt(bc2)),
                       T(o.eps),
                       T(o.lr / bc1)};
      if (o.amsgrad) {
        ams.push_back({target.data(), g.data(), {st.exp_avg.data(), st.exp_avg_sq.data(), st.max_exp_avg_sq.data()}, p.numel(),
                       {r.decay, r.wd, r.w1, r.beta2, r.w2, r.inv_bc2_sqrt, r.eps, r.step_size}});
      } else {
        plain.push_back({target.data(), g.data(), {st.exp_avg.data(), st.exp_avg_sq.data()}, p.numel(), r});
      }
    }
    fused_step(plain);
    fused_step(ams);
    batch.finish();
  }
}

}  // namespace detail

template <scalar_type T>
void Adam<T>::validate(const AdamOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void Adam<T>::step() {
  this->check_dense_grads_(", please consider SparseAdam instead");
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Adam.step");
  detail::adam_step<T, AdamOptions>(this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); }, false);
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(Adam, AdamState)
