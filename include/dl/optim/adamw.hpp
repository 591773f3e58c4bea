// dl/optim/adamw.hpp — AdamW, Adam with decoupled weight decay (Loshchilov & Hutter), as PyTorch's
// torch.optim.AdamW: Adam's state, rule and step (adam.hpp) with p *= 1 - lr * weight_decay first.
//   optim::AdamW opt(net.parameters(), {.lr = 1e-3, .weight_decay = 1e-2});
#pragma once

#include "../profiler_hook.hpp"
#include "../tensor.hpp"
#include "adam.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_ADAMW_FIELDS(X)             \
  X(double, lr, 1e-3)                  \
  X(Pair, betas, Pair(0.9, 0.999))     \
  X(double, eps, 1e-8)                 \
  X(double, weight_decay, 1e-2)        \
  X(bool, amsgrad, false)              \
  X(bool, maximize, false)
DL_OPTIM_OPTIONS(AdamW, DL_ADAMW_FIELDS)

/// Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr * weight_decay.
DL_OPTIMIZER_CLASS(AdamW, AdamState)

// ------------------------------------------------------------------------------ implementation

template <scalar_type T>
void AdamW<T>::validate(const AdamWOptions& o) {
  detail::check_lr_eps_betas_wd(o.lr, o.eps, o.betas, o.weight_decay);
}

template <scalar_type T>
void AdamW<T>::step() {
  this->check_dense_grads_();
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, "Optimizer.step#AdamW.step");
  detail::adam_step<T, AdamWOptions>(this->param_groups(), [this](const Tensor<T>& p) -> auto& { return this->state(p); }, true);
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp).
DL_OPTIMIZER_INSTANCES(AdamW, AdamState)
