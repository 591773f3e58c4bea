// dl/optim/asgd.hpp — averaged stochastic gradient descent (PyTorch's torch.optim.ASGD): the state
// "ax" holds the running average of the parameters once step exceeds t0.
//   optim::ASGD opt(net.parameters(), {.lr = 1e-2, .t0 = 100});
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_ASGD_FIELDS(X)        \
  X(double, lr, 1e-2)            \
  X(double, lambd, 1e-4)         \
  X(double, alpha, 0.75)         \
  X(double, t0, 1e6)             \
  X(double, weight_decay, 0.0)   \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(ASGD, DL_ASGD_FIELDS)

template <scalar_type T>
struct ASGDState {
  double step = 0, eta = 0, mu = 1;
  Tensor<T> ax;
  template <class F>
  void for_each(F&& f) { f("step", step), f("eta", eta), f("mu", mu), f("ax", ax); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("eta", eta), f("mu", mu), f("ax", ax); }
};

DL_OPTIMIZER_CLASS(ASGD, ASGDState)

// ------------------------------------------------------------------------------ implementation

namespace detail {
/// s = (ax): p = p (1 - lambd eta) - eta g, then ax moves towards p by mu (or becomes p).
template <class T>
struct ASGDRule {
  T wd, decay, eta, mu;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 1>& s) const {
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    p = p * decay - g * eta;
    s[0] = mu != T(1) ? s[0] + (p - s[0]) * mu : p;
  }
};
}  // namespace detail

template <scalar_type T>
void ASGD<T>::validate(const ASGDOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(o.lambd >= 0, "Invalid lambd value: ", py_number(o.lambd));
  DL_CHECK(o.alpha >= 0, "Invalid alpha value: ", py_number(o.alpha));
  DL_CHECK(o.weight_decay >= 0, "Invalid weight_decay value: ", py_number(o.weight_decay));
}

template <scalar_type T>
void ASGD<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#ASGD.step");
  using Rule = detail::ASGDRule<T>;
  detail::step_param_groups<T, 1, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const ASGDOptions& o, const Tensor<T>& p, ASGDState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.ax.defined()) {
          st.ax = zeros<T>(p.shape());
          st.eta = double(detail::state_scalar_t<T>(o.lr));
          st.mu = 1;
        }
        st.step += 1;
        const Rule r{T(o.weight_decay), T(1 - o.lambd * st.eta), T(st.eta), T(st.mu)};
        // The step uses the current eta and mu; the next ones follow PyTorch's schedule, stored as
        // PyTorch stores them (0-d tensors of the default dtype: double for double parameters).
        using S = detail::state_scalar_t<T>;
        st.eta = double(S(o.lr / std::pow(1 + o.lambd * o.lr * st.step, o.alpha)));
        st.mu = double(S(1 / std::max(1.0, st.step - o.t0)));
        return detail::StepItem<T, 1, Rule>{target.data(), g.data(), {st.ax.data()}, p.numel(), r};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(ASGD, ASGDState)
