// dl/optim/adagrad.hpp — Adagrad, per-element step sizes from the sum of squared gradients (PyTorch's
// torch.optim.Adagrad).
//   optim::Adagrad opt(net.parameters(), {.lr = 1e-2, .lr_decay = 1e-4});
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

#define DL_ADAGRAD_FIELDS(X)                \
  X(double, lr, 1e-2)                       \
  X(double, lr_decay, 0.0)                  \
  X(double, weight_decay, 0.0)              \
  X(double, initial_accumulator_value, 0.0) \
  X(double, eps, 1e-10)                     \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(Adagrad, DL_ADAGRAD_FIELDS)

template <scalar_type T>
struct AdagradState {
  double step = 0;
  Tensor<T> sum;
  template <class F>
  void for_each(F&& f) { f("step", step), f("sum", sum); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("sum", sum); }
};

DL_OPTIMIZER_CLASS(Adagrad, AdagradState)

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class T>
struct AdagradRule {
  T wd, eps, clr;
  template <class V>
  DL_INLINE void operator()(V& p, const V& g0, std::array<V, 1>& s) const {
    using std::sqrt;
    V g = g0;
    if (wd != T(0)) g = g + p * wd;
    s[0] = s[0] + g * g;
    p = p - g / (sqrt(s[0]) + eps) * clr;
  }
};

}  // namespace detail

template <scalar_type T>
void Adagrad<T>::validate(const AdagradOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(o.lr_decay >= 0, "Invalid lr_decay value: ", py_number(o.lr_decay));
  DL_CHECK(o.weight_decay >= 0, "Invalid weight_decay value: ", py_number(o.weight_decay));
  DL_CHECK(o.initial_accumulator_value >= 0, "Invalid initial_accumulator_value value: ", py_number(o.initial_accumulator_value));
  DL_CHECK(o.eps >= 0, "Invalid epsilon value: ", py_number(o.eps));
}

template <scalar_type T>
void Adagrad<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#Adagrad.step");
  using Rule = detail::AdagradRule<T>;
  for (auto& group : this->param_groups()) {  // sparse gradients: only the rows present (PyTorch's rule)
    const AdagradOptions& o = group.options;
    for (auto& p : group.params) {
      if (!p.grad_is_sparse()) continue;
      DL_CHECK(o.weight_decay == 0, "weight_decay option is not compatible with sparse gradients");
      NoGradGuard no_grad;
      auto& st = this->state(p);
      if (!st.sum.defined()) st.sum = full<T>(p.shape(), o.initial_accumulator_value);
      st.step += 1;
      const T clr = T(o.lr / (1 + (st.step - 1) * o.lr_decay)), eps = T(o.eps);
      const auto rows = detail::sparse_rows(p, true, o.maximize);
      T* w = p.data();
      T* sum = st.sum.data();
      const T* v = rows.values.data();
      for (size_t k = 0; k < rows.row_at.size(); ++k)
        for (int64_t j = 0; j < rows.R; ++j) {
          const int64_t at = rows.row_at[k] + j;
          const T g = v[int64_t(k) * rows.R + j];
          sum[at] += g * g;
          w[at] -= clr * (g / (std::sqrt(sum[at]) + eps));
        }
      p.bump_version();
    }
  }
  detail::step_param_groups<T, 1, Rule>(
      this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); },
      [](const AdagradOptions& o, const Tensor<T>& p, AdagradState<T>& st, Tensor<T>& target, Tensor<T>& g) {
        if (!st.sum.defined()) st.sum = full<T>(p.shape(), o.initial_accumulator_value);
        st.step += 1;
        const double clr = o.lr / (1 + (st.step - 1) * o.lr_decay);
        return detail::StepItem<T, 1, Rule>{target.data(), g.data(), {st.sum.data()}, p.numel(), Rule{T(o.weight_decay), T(o.eps), T(clr)}};
      });
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(Adagrad, AdagradState)
