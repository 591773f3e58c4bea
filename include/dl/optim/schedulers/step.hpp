// dl/optim/schedulers/step.hpp — schedules that scale the initial rate by a simple factor of the epoch:
// StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR and PolynomialLR.
//   optim::StepLR sched(opt, {.step_size = 30, .gamma = 0.1});
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../optimizer.hpp"
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// StepLR: lr *= gamma every step_size epochs.
struct StepLROptions {
  int64_t step_size;  ///< required
  double gamma = 0.1;
  int64_t last_epoch = -1;
};
class StepLR : public LRScheduler {
 public:
  using Options = StepLROptions;
  StepLR(Optimizer& optimizer, const StepLROptions& options);
  std::string name() const override { return "StepLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// MultiStepLR: lr *= gamma at each milestone (gamma^n for a milestone listed n times).
struct MultiStepLROptions {
  std::vector<int64_t> milestones;
  double gamma = 0.1;
  int64_t last_epoch = -1;
};
class MultiStepLR : public LRScheduler {
 public:
  using Options = MultiStepLROptions;
  MultiStepLR(Optimizer& optimizer, const MultiStepLROptions& options);
  std::string name() const override { return "MultiStepLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  std::vector<int64_t> milestones_;  ///< sorted, with repetitions (PyTorch's Counter)
  double gamma_;
};

/// ConstantLR: lr = initial_lr * factor until epoch total_iters, then initial_lr.
struct ConstantLROptions {
  double factor = 1.0 / 3;
  int64_t total_iters = 5;
  int64_t last_epoch = -1;
};
class ConstantLR : public LRScheduler {
 public:
  using Options = ConstantLROptions;
  explicit ConstantLR(Optimizer& optimizer, const ConstantLROptions& options = {});
  std::string name() const override { return "ConstantLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// LinearLR: the factor on initial_lr goes linearly from start_factor to end_factor over total_iters epochs.
struct LinearLROptions {
  double start_factor = 1.0 / 3;
  double end_factor = 1.0;
  int64_t total_iters = 5;
  int64_t last_epoch = -1;
};
class LinearLR : public LRScheduler {
 public:
  using Options = LinearLROptions;
  explicit LinearLR(Optimizer& optimizer, const LinearLROptions& options = {});
  std::string name() const override { return "LinearLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// ExponentialLR: lr *= gamma every epoch.
struct ExponentialLROptions {
  double gamma = std::numeric_limits<double>::quiet_NaN();  ///< required
  int64_t last_epoch = -1;
};
class ExponentialLR : public LRScheduler {
 public:
  using Options = ExponentialLROptions;
  ExponentialLR(Optimizer& optimizer, const ExponentialLROptions& options);
  std::string name() const override { return "ExponentialLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  double gamma_;
};

/// PolynomialLR: lr = initial_lr * (1 - epoch / total_iters)^power, constant after total_iters.
struct PolynomialLROptions {
  int64_t total_iters = 5;
  double power = 1.0;
  int64_t last_epoch = -1;
};
class PolynomialLR : public LRScheduler {
 public:
  using Options = PolynomialLROptions;
  explicit PolynomialLR(Optimizer& optimizer, const PolynomialLROptions& options = {});
  std::string name() const override { return "PolynomialLR"; }
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API std::optional<std::vector<double>> closed_form_lr() const override;
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  int64_t total_iters_;
  double power_;
};

// ------------------------------------------------------------------------------ implementation

// ---- StepLR, MultiStepLR

#if DL_HEADER_ONLY
DL_API StepLR::StepLR(Optimizer& optimizer, const StepLROptions& o)
    : LRScheduler(optimizer), step_size_(o.step_size), gamma_(o.gamma) {
  init(o.last_epoch);
}

DL_API std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || detail::py_mod(last_epoch_, step_size_, "StepLR (step_size = 0)") != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

DL_API std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  const double f = std::pow(gamma_, double(detail::py_floordiv(last_epoch_, step_size_, "StepLR (step_size = 0)")));
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void StepLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("step_size", step_size_);
  f.field("gamma", gamma_);
}

DL_API MultiStepLR::MultiStepLR(Optimizer& optimizer, const MultiStepLROptions& o)
    : LRScheduler(optimizer), milestones_(o.milestones), gamma_(o.gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  init(o.last_epoch);
}

DL_API std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  const double f = std::pow(gamma_, double(count));
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  const double f = std::pow(gamma_, double(detail::bisect_right(milestones_, last_epoch_)));
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void MultiStepLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("milestones", milestones_);
  f.field("gamma", gamma_);
}
#endif  // DL_HEADER_ONLY

// ---- ConstantLR, LinearLR

#if DL_HEADER_ONLY
DL_API ConstantLR::ConstantLR(Optimizer& optimizer, const ConstantLROptions& o)
    : LRScheduler(optimizer), factor_(o.factor), total_iters_(o.total_iters) {
  DL_CHECK(!(o.factor > 1.0 || o.factor < 0), "Constant multiplicative factor expected to be between 0 and 1. (got factor = ",
           detail::sched_float(o.factor), ")");
  init(o.last_epoch);
}

DL_API std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    const double f = detail::py_div(1.0, factor_, "ConstantLR (factor = 0)");
    for (double& lr : lrs) lr *= f;
  }
  return lrs;
}

DL_API std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  const double f = factor_ + (last_epoch_ >= total_iters_ ? 1.0 : 0.0) * (1 - factor_);
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void ConstantLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("factor", factor_);
  f.field("total_iters", total_iters_);
}

DL_API LinearLR::LinearLR(Optimizer& optimizer, const LinearLROptions& o)
    : LRScheduler(optimizer), start_factor_(o.start_factor), end_factor_(o.end_factor), total_iters_(o.total_iters) {
  DL_CHECK(!(o.start_factor > 1.0 || o.start_factor <= 0),
           "Starting multiplicative factor expected to be greater than 0 and less or equal to 1. (got start_factor = ",
           detail::sched_float(o.start_factor), ")");
  DL_CHECK(!(o.end_factor > 1.0 || o.end_factor < 0), "Ending multiplicative factor expected to be between 0 and 1. (got end_factor = ",
           detail::sched_float(o.end_factor), ")");
  init(o.last_epoch);
}

DL_API std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  const double f = 1.0 + detail::py_div(d, double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d, "LinearLR");
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  const double f = start_factor_ + detail::py_div((end_factor_ - start_factor_) * double(std::min(total_iters_, last_epoch_)),
                                                  double(total_iters_), "LinearLR (total_iters = 0)");
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void LinearLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("start_factor", start_factor_);
  f.field("end_factor", end_factor_);
  f.field("total_iters", total_iters_);
}
#endif  // DL_HEADER_ONLY

// ---- ExponentialLR, PolynomialLR

#if DL_HEADER_ONLY
DL_API ExponentialLR::ExponentialLR(Optimizer& optimizer, const ExponentialLROptions& o)
    : LRScheduler(optimizer), gamma_(o.gamma) {
  DL_CHECK(!std::isnan(o.gamma), "ExponentialLR: gamma is required (ExponentialLROptions{.gamma = ...})");
  init(o.last_epoch);
}

DL_API std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  // When resuming (last_epoch >= 0) the initial step must not move the rate one step ahead.
  if (is_initial_) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

DL_API std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  const double f = std::pow(gamma_, double(last_epoch_));
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void ExponentialLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("gamma", gamma_);
}

DL_API PolynomialLR::PolynomialLR(Optimizer& optimizer, const PolynomialLROptions& o)
    : LRScheduler(optimizer), total_iters_(o.total_iters), power_(o.power) {
  init(o.last_epoch);
}

DL_API std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const char* who = "PolynomialLR (total_iters = 0)";
  const double T = double(total_iters_);
  const double f = std::pow(detail::py_div(1.0 - detail::py_div(double(last_epoch_), T, who),
                                           1.0 - detail::py_div(double(last_epoch_ - 1), T, who), "PolynomialLR"),
                            power_);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double f = std::pow(
      1.0 - detail::py_div(double(std::min(total_iters_, last_epoch_)), double(total_iters_), "PolynomialLR (total_iters = 0)"),
      power_);
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

DL_API void PolynomialLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("total_iters", total_iters_);
  f.field("power", power_);
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
