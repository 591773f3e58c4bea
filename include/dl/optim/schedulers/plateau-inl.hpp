// dl/optim/schedulers/plateau-inl.hpp — the bodies of dl/optim/schedulers/plateau.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "plateau.hpp"

namespace dl::optim {

DL_API ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o) : LRScheduler(optimizer) {
  DL_CHECK(o.factor < 1.0, "Factor should be < 1.0. (got factor = ", detail::sched_float(o.factor), ")");
  factor_ = o.factor;
  const size_t n = num_groups();
  if (o.min_lr.per_group) {
    DL_CHECK(o.min_lr.values.size() == n, "expected ", n, " min_lrs, got ", o.min_lr.values.size());
    min_lrs_ = o.min_lr.values;
  } else {
    DL_CHECK(!o.min_lr.values.empty(), "ReduceLROnPlateau: min_lr is required (one value, or one per parameter group)");
    default_min_lr_ = o.min_lr.values[0];
    min_lrs_.assign(n, o.min_lr.values[0]);
  }
  patience_ = o.patience;
  cooldown_ = o.cooldown;
  eps_ = o.eps;
  last_epoch_ = 0;
  last_lr_ = group_lrs();
  init_is_better(o.mode, o.threshold, o.threshold_mode);
  best_ = mode_worse_;
  cooldown_counter_ = 0;
  num_bad_epochs_ = 0;
}

DL_API void ReduceLROnPlateau::init_is_better(const std::string& mode, double threshold, const std::string& threshold_mode) {
  DL_CHECK(mode == "min" || mode == "max", "mode ", mode, " is unknown!");
  DL_CHECK(threshold_mode == "rel" || threshold_mode == "abs", "threshold mode ", threshold_mode, " is unknown!");
  mode_worse_ = mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  mode_ = mode;
  threshold_ = threshold;
  threshold_mode_ = threshold_mode;
}

DL_API bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == "min" && threshold_mode_ == "rel") return a < best * (1.0 - threshold_);
  if (mode_ == "min") return a < best - threshold_;
  if (threshold_mode_ == "rel") return a > best * (threshold_ + 1.0);
  return a > best + threshold_;
}

DL_API void ReduceLROnPlateau::step() {
  throw Error("ReduceLROnPlateau.step() needs the metric it watches: call step(metric)");
}

DL_API std::vector<double> ReduceLROnPlateau::get_lr() {
  throw Error("ReduceLROnPlateau has no get_lr: its rates depend on the metric given to step(metric)");
}

DL_API void ReduceLROnPlateau::step(double metric) {
  const double current = metric;
  last_epoch_ = last_epoch_ + 1;
  if (is_better(current, best_)) {
    best_ = current;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = group_lrs();
}

DL_API void ReduceLROnPlateau::reduce_lr() {
  const size_t n = num_groups();
  if (min_lrs_.size() != n) {
    DL_CHECK(default_min_lr_, "The number of param groups in the `optimizer` (", n,
             ") differs from when `ReduceLROnPlateau` was initialized (", min_lrs_.size(),
             "), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match "
             "the length of the `optimizer` param groups.");
    min_lrs_.assign(n, *default_min_lr_);
  }
  for (size_t g = 0; g < n; ++g) {
    const double old_lr = optimizer_->get_lr(g);
    const double scaled = old_lr * factor_;
    const double new_lr = min_lrs_[g] > scaled ? min_lrs_[g] : scaled;  // Python's max(scaled, min_lr)
    if (old_lr - new_lr > eps_) optimizer_->set_lr(g, new_lr);
  }
}

DL_API void ReduceLROnPlateau::visit_state(detail::SchedulerFields& f) {
  f.field("factor", factor_);
  f.field("min_lrs", min_lrs_);
  f.field("default_min_lr", default_min_lr_);
  f.field("patience", patience_);
  f.field("cooldown", cooldown_);
  f.field("eps", eps_);
  f.field("last_epoch", last_epoch_);
  f.field("_last_lr", last_lr_);
  f.field("mode", mode_);
  f.field("threshold", threshold_);
  f.field("threshold_mode", threshold_mode_);
  f.field("best", best_);
  f.field("cooldown_counter", cooldown_counter_);
  f.field("num_bad_epochs", num_bad_epochs_);
  f.field("mode_worse", mode_worse_);
}

}  // namespace dl::optim
