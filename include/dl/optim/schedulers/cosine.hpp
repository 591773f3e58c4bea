// dl/optim/schedulers/cosine.hpp — cosine annealing, once (CosineAnnealingLR) or with warm restarts
// (CosineAnnealingWarmRestarts, SGDR).
//   optim::CosineAnnealingLR sched(opt, {.T_max = 100, .eta_min = 1e-5});
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../optimizer.hpp"
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// CosineAnnealingLR: lr follows eta_min + (initial_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2
/// (through PyTorch's recursive form, which keeps going past T_max).
struct CosineAnnealingLROptions {
  int64_t T_max;  ///< required
  double eta_min = 0.0;
  int64_t last_epoch = -1;
};
class CosineAnnealingLR : public LRScheduler {
 public:
  using Options = CosineAnnealingLROptions;
  CosineAnnealingLR(Optimizer& optimizer, const CosineAnnealingLROptions& options);
  std::string name() const override { return "CosineAnnealingLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// CosineAnnealingWarmRestarts (SGDR): cosine annealing over T_i epochs, restarting at
/// initial_lr; T_0 epochs until the first restart, each period T_mult times the previous one.
struct CosineAnnealingWarmRestartsOptions {
  int64_t T_0;  ///< required
  int64_t T_mult = 1;
  double eta_min = 0.0;
  int64_t last_epoch = -1;
};
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  using Options = CosineAnnealingWarmRestartsOptions;
  CosineAnnealingWarmRestarts(Optimizer& optimizer, const CosineAnnealingWarmRestartsOptions& options);
  std::string name() const override { return "CosineAnnealingWarmRestarts"; }
  DL_API std::vector<double> get_lr() override;
  DL_API void step() override;
  /// Jumps to a (fractional) epoch, e.g. step(epoch + i / iters) after each batch.
  void step(double epoch);
  double T_cur() const { return T_cur_; }
  int64_t T_i() const { return T_i_; }

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  void set_lrs();
  int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
};

// ------------------------------------------------------------------------------ implementation

// ---- CosineAnnealingLR

// ---- CosineAnnealingWarmRestarts

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "cosine-inl.hpp"
#endif
