// dl/optim/adadelta.hpp — Adadelta, steps scaled by running averages of squared gradients and updates
// (PyTorch's torch.optim.Adadelta).
//   optim::Adadelta opt(net.parameters(), {.lr = 1.0, .rho = 0.9});
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

#define DL_ADADELTA_FIELDS(X)    \
  X(double, lr, 1.0)             \
  X(double, rho, 0.9)            \
  X(double, eps, 1e-6)           \
  X(double, weight_decay, 0.0)   \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(Adadelta, DL_ADADELTA_FIELDS)

template <scalar_type T>
struct AdadeltaState {
  double step = 0;
  Tensor<T> square_avg, acc_delta;
  template <class F>
  void for_each(F&& f) { f("step", step), f("square_avg", square_avg), f("acc_delta", acc_delta); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("square_avg", square_avg), f("acc_delta", acc_delta); }
};

DL_OPTIMIZER_CLASS(Adadelta, AdadeltaState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class T>
struct AdadeltaRule {
  T wd, rho, w, eps, lr;  // w = 1 - rho
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 2>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    s[0] = s[0] * rho + g * g * w;
    const V delta = sqrt(s[1] + eps) / sqrt(s[0] + eps) * g;
    s[1] = s[1] * rho + delta * delta * w;
    p = p - delta * lr;
  }
};

}  // namespace detail

template <scalar_type T>
void Adadelta<T>::validate(const AdadeltaOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(o.rho >= 0 && o.rho <= 1, "Invalid rho value: ", py_number(o.rho));
  DL_CHECK(o.eps >= 0, "Invalid epsilon value: ", py_number(o.eps));
  DL_CHECK(o.weight_decay >= 0, "Invalid weight_decay value: ", py_number(o.weight_decay));
}

template <scalar_type T>
void Adadelta<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Adadelta.step");
  using Rule = detail::AdadeltaRule<T>;
  detail::step_param_groups<T, 2, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const AdadeltaOptions& o, const Tensor<T>& p, AdadeltaState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.square_avg.defined()) {
          st.square_avg = zeros<T>(p.shape());
          st.acc_delta = zeros<T>(p.shape());
        }
        st.step += 1;
        return detail::StepItem<T, 2, Rule>{target.data(), g.data(), {st.square_avg.data(), st.acc_delta.data()}, p.numel(),
                                            Rule{T(o.weight_decay), T(o.rho), T(1 - o.rho), T(o.eps), T(o.lr)}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(Adadelta, AdadeltaState)
