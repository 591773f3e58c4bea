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

// ---- ConstantLR, LinearLR

// ---- ExponentialLR, PolynomialLR

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "step-inl.hpp"
#endif
