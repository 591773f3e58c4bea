// dl/optim/schedulers/step-inl.hpp — the bodies of dl/optim/schedulers/step.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "step.hpp"

namespace dl::optim {

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

}  // namespace dl::optim
