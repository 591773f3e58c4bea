// dl/optim/schedulers/cyclic.hpp — per-batch cyclical schedules, which also cycle the momentum (or beta1):
// CyclicLR and OneCycleLR.
//   optim::OneCycleLR sched(opt, {.max_lr = 0.1, .total_steps = epochs * batches});  // step() every batch
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../optimizer.hpp"
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// CyclicLR: cycles lr between base_lr and max_lr (and, inversely, the momentum between
/// max_momentum and base_momentum); call step() after every batch.
struct CyclicLROptions {
  GroupValues base_lr;  ///< required
  GroupValues max_lr;   ///< required
  int64_t step_size_up = 2000;
  std::optional<int64_t> step_size_down = std::nullopt;  ///< default: step_size_up
  std::string mode = "triangular";                       ///< "triangular", "triangular2" or "exp_range"
  double gamma = 1.0;                                    ///< of "exp_range": gamma^iterations
  std::function<double(double)> scale_fn = {};           ///< replaces mode when set
  std::string scale_mode = "cycle";                      ///< "cycle" or "iterations": scale_fn's argument
  bool cycle_momentum = true;
  GroupValues base_momentum = 0.8;
  GroupValues max_momentum = 0.9;
  int64_t last_epoch = -1;
};
class CyclicLR : public LRScheduler {
 public:
  using Options = CyclicLROptions;
  CyclicLR(Optimizer& optimizer, const CyclicLROptions& options);
  std::string name() const override { return "CyclicLR"; }
  /// Also sets the groups' momentum when cycle_momentum.
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;
  void after_load() override { init_scale_fn(); }

 private:
  void init_scale_fn();
  double scale(double x) const;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_, gamma_;
  std::string mode_, scale_mode_;
  std::function<double(double)> scale_fn_custom_;
  bool cycle_momentum_;
};

/// OneCycleLR (1cycle policy): lr rises from max_lr / div_factor to max_lr over pct_start of the
/// steps, then anneals to initial_lr / final_div_factor; call step() after every batch.
struct OneCycleLROptions {
  GroupValues max_lr;  ///< required
  std::optional<int64_t> total_steps = std::nullopt;  ///< or epochs * steps_per_epoch
  std::optional<int64_t> epochs = std::nullopt;
  std::optional<int64_t> steps_per_epoch = std::nullopt;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  ///< "cos" or "linear"
  bool cycle_momentum = true;
  GroupValues base_momentum = 0.85;
  GroupValues max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
  int64_t last_epoch = -1;
};
class OneCycleLR : public LRScheduler {
 public:
  using Options = OneCycleLROptions;
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);
  std::string name() const override { return "OneCycleLR"; }
  /// Also sets the groups' momentum when cycle_momentum.
  DL_API std::vector<double> get_lr() override;
  int64_t total_steps() const { return total_steps_; }

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;
  DL_API void after_load() override;

 private:
  enum Value : int64_t { kInitialLr, kMaxLr, kMinLr, kMaxMomentum, kBaseMomentum };
  struct Phase {
    double end_step;
    Value start_lr, end_lr, start_momentum, end_momentum;
  };
  void make_phases();
  double value(Value v, size_t group) const;
  double anneal(double start, double end, double pct) const;
  int64_t total_steps_;
  double pct_start_;
  bool three_phase_;
  std::string anneal_strategy_;
  std::vector<Phase> phases_;
  std::vector<double> max_lrs_, min_lrs_, base_momentums_, max_momentums_;
  bool cycle_momentum_;
};

// ------------------------------------------------------------------------------ implementation

// ---- CyclicLR

namespace detail {
DL_API void require_momentum(const Optimizer& opt, const char* who);
}  // namespace detail

// ---- OneCycleLR

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "cyclic-inl.hpp"
#endif
