// dl/optim/rprop.hpp — Rprop (resilient backpropagation): per-element step sizes that grow or shrink with
// the sign of the gradient (PyTorch's torch.optim.Rprop).
//   optim::Rprop opt(net.parameters(), {.lr = 1e-2, .etas = {0.5, 1.2}, .step_sizes = {1e-6, 50}});
#pragma once

#include <array>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_RPROP_FIELDS(X)               \
  X(double, lr, 1e-2)                    \
  X(Pair, etas, Pair(0.5, 1.2))          \
  X(Pair, step_sizes, Pair(1e-6, 50.0))  \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(Rprop, DL_RPROP_FIELDS)

template <scalar_type T>
struct RpropState {
  double step = 0;
  Tensor<T> prev, step_size;
  template <class F>
  void for_each(F&& f) { f("step", step), f("prev", prev), f("step_size", step_size); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("prev", prev), f("step_size", step_size); }
};

DL_OPTIMIZER_CLASS(Rprop, RpropState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// s = (prev, step_size).
template <class T>
struct RpropRule {
  T etaminus, etaplus, min_step, max_step;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 2>& s) const {
    const V prod = g0 * s[0];
    const V factor = expr::select(prod > T(0), V(etaplus), expr::select(prod < T(0), V(etaminus), V(T(1))));
    s[1] = vmax(vmin(s[1] * factor, V(max_step)), V(min_step));
    const V g = expr::select(prod < T(0), V(T(0)), g0);
    p = p - vsign(g) * s[1];
    s[0] = g;
  }
  template <class V>
  static DL_INLINE V vmin(const V& a, const V& b) {
    return expr::select(b < a, b, a);
  }
};

}  // namespace detail

template <scalar_type T>
void Rprop<T>::validate(const RpropOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(0 < o.etas.first && o.etas.first < 1 && 1 < o.etas.second, "Invalid eta values: ", py_number(o.etas.first), ", ",
           py_number(o.etas.second));
}

template <scalar_type T>
void Rprop<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Rprop.step");
  using Rule = detail::RpropRule<T>;
  detail::step_param_groups<T, 2, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const RpropOptions& o, const Tensor<T>& p, RpropState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.prev.defined()) {
          st.prev = zeros<T>(p.shape());
          st.step_size = full<T>(p.shape(), o.lr);
        }
        st.step += 1;
        return detail::StepItem<T, 2, Rule>{target.data(), g.data(), {st.prev.data(), st.step_size.data()}, p.numel(),
                                            Rule{T(o.etas.first), T(o.etas.second), T(o.step_sizes.first), T(o.step_sizes.second)}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(Rprop, RpropState)
