// dl/optim/sparse_adam.hpp — SparseAdam (PyTorch's torch.optim.SparseAdam): Adam for parameters with
// sparse gradients (nn::Embedding with sparse = true). Only the rows present in a step's gradient
// are updated — their moments and the parameter; the other rows keep their moments unchanged.
//   nn::Embedding emb(1'000'000, 64, {.sparse = true});
//   optim::SparseAdam opt(emb.parameters(), {.lr = 1e-3});
#pragma once

#include <cmath>
#include <vector>

#include "../config.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "foreach.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_SPARSE_ADAM_FIELDS(X)       \
  X(double, lr, 1e-3)                  \
  X(Pair, betas, Pair(0.9, 0.999))     \
  X(double, eps, 1e-8)                 \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(SparseAdam, DL_SPARSE_ADAM_FIELDS)
#undef DL_SPARSE_ADAM_FIELDS

template <scalar_type T>
struct SparseAdamState {
  double step = 0;
  Tensor<T> exp_avg, exp_avg_sq;  ///< dense, zeros at the first step
  template <class F>
  void for_each(F&& f) { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
  template <class F>
  void for_each(F&& f) const { f("step", step), f("exp_avg", exp_avg), f("exp_avg_sq", exp_avg_sq); }
};

DL_OPTIMIZER_CLASS(SparseAdam, SparseAdamState)

// ------------------------------------------------------------------------------ implementation

template <scalar_type T>
void SparseAdam<T>::validate(const SparseAdamOptions& o) {
  using dl::detail::py_number;
  DL_CHECK(0.0 < o.lr, "Invalid learning rate: ", py_number(o.lr));
  DL_CHECK(0.0 < o.eps, "Invalid epsilon value: ", py_number(o.eps));
  DL_CHECK(0.0 <= o.betas.first && o.betas.first < 1.0, "Invalid beta parameter at index 0: ", py_number(o.betas.first));
  DL_CHECK(0.0 <= o.betas.second && o.betas.second < 1.0, "Invalid beta parameter at index 1: ", py_number(o.betas.second));
}

template <scalar_type T>
void SparseAdam<T>::step() {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#SparseAdam.step");
  NoGradGuard no_grad;
  for (auto& group : this->param_groups()) {
    const SparseAdamOptions& o = group.options;
    for (auto& p : group.params) {
      if (!p.grad_is_sparse()) {
        DL_CHECK(!p.grad().defined(), "SparseAdam does not support dense gradients, please consider Adam instead");
        continue;
      }
      auto& st = this->state(p);
      if (!st.exp_avg.defined()) {
        st.exp_avg = zeros<T>(p.shape());
        st.exp_avg_sq = zeros<T>(p.shape());
      }
      st.step += 1;
      const auto rows = detail::sparse_rows(p, true, o.maximize);
      const double b1 = o.betas.first, b2 = o.betas.second;
      const double bias_correction1 = 1 - std::pow(b1, st.step), bias_correction2 = 1 - std::pow(b2, st.step);
      const T step_size = T(o.lr * std::sqrt(bias_correction2) / bias_correction1);
      const T w1 = T(1 - b1), w2 = T(1 - b2), eps = T(o.eps);
      T* w = p.data();
      T* m = st.exp_avg.data();
      T* v = st.exp_avg_sq.data();
      const T* gv = rows.values.data();
      const int64_t n = int64_t(rows.row_at.size()), R = rows.R;
      dl::detail::parallel_for(0, n, std::max<int64_t>(1, 4096 / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {  // coalesced: each row once, so rows update independently
          const int64_t at = rows.row_at[size_t(k)];
          const T* g = gv + k * R;
          for (int64_t j = 0; j < R; ++j) {
            const T m_update = (g[j] - m[at + j]) * w1;
            const T m_new = m[at + j] + m_update;
            const T v_new = v[at + j] + (g[j] * g[j] - v[at + j]) * w2;
            m[at + j] = m_new;
            v[at + j] = v_new;
            w[at + j] -= step_size * (m_new / (std::sqrt(v_new) + eps));
          }
        }
      });
      p.bump_version();
    }
  }
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(SparseAdam, SparseAdamState)
