// dl/optim/schedulers/cyclic-inl.hpp — the bodies of dl/optim/schedulers/cyclic.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "cyclic.hpp"

namespace dl::optim::detail {

DL_API void require_momentum(const Optimizer& opt, const char* who) {
  DL_CHECK(opt.get_momentum(0).has_value(), "optimizer must support momentum or beta1 with `cycle_momentum` option enabled (",
           who, " on ", opt.name(), ")");
}
}  // namespace dl::optim::detail

namespace dl::optim {

DL_API CyclicLR::CyclicLR(Optimizer& optimizer, const CyclicLROptions& o) : LRScheduler(optimizer) {
  const size_t n = num_groups();
  std::vector<double> base_lrs = o.base_lr.for_groups("base_lr", n);
  if (o.last_epoch == -1)
    for (size_t g = 0; g < n; ++g) optimizer.set_lr(g, base_lrs[g]);
  max_lrs_ = o.max_lr.for_groups("max_lr", n);
  const double up = double(o.step_size_up);
  const double down = o.step_size_down ? double(*o.step_size_down) : up;
  total_size_ = up + down;
  step_ratio_ = detail::py_div(up, total_size_, "CyclicLR (step_size_up + step_size_down = 0)");
  DL_CHECK(o.mode == "triangular" || o.mode == "triangular2" || o.mode == "exp_range" || o.scale_fn,
           "mode is invalid and scale_fn is None (mode = '", o.mode, "')");
  mode_ = o.mode;
  gamma_ = o.gamma;
  scale_fn_custom_ = o.scale_fn;
  scale_mode_ = o.scale_mode;
  init_scale_fn();
  cycle_momentum_ = o.cycle_momentum;
  if (cycle_momentum_) {
    detail::require_momentum(optimizer, "CyclicLR");
    base_momentums_ = o.base_momentum.for_groups("base_momentum", n);
    max_momentums_ = o.max_momentum.for_groups("max_momentum", n);
    if (o.last_epoch == -1)
      for (size_t g = 0; g < n; ++g) optimizer.set_momentum(g, max_momentums_[g]);
  }
  init(o.last_epoch);
  // As in PyTorch, the initial step uses the groups' initial_lr (which an earlier scheduler may
  // have set); base_lr holds from then on.
  base_lrs_ = std::move(base_lrs);
}

DL_API void CyclicLR::init_scale_fn() {
  if (scale_fn_custom_) return;
  // The built-in policies fix their argument, whatever scale_mode says.
  if (mode_ == "triangular" || mode_ == "triangular2") scale_mode_ = "cycle";
  else if (mode_ == "exp_range") scale_mode_ = "iterations";
}

DL_API double CyclicLR::scale(double x) const {
  if (scale_fn_custom_) return scale_fn_custom_(x);
  if (mode_ == "triangular") return 1.0;
  if (mode_ == "triangular2") return 1 / std::pow(2.0, x - 1);
  if (mode_ == "exp_range") return std::pow(gamma_, x);
  throw Error(dl::detail::cat("CyclicLR: mode is invalid and scale_fn is None (mode = '", mode_, "')"));
}

DL_API std::vector<double> CyclicLR::get_lr() {
  const double cycle = std::floor(1 + double(last_epoch_) / total_size_);
  const double x = 1.0 + double(last_epoch_) / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? detail::py_div(x, step_ratio_, "CyclicLR (step_size_up = 0)")
                                               : detail::py_div(x - 1, step_ratio_ - 1, "CyclicLR (step_size_down = 0)");
  // scale_fn is called once per value, as PyTorch does (a stateful scale_fn sees the same calls).
  const double arg = scale_mode_ == "cycle" ? cycle : double(last_epoch_);
  DL_CHECK(base_lrs_.size() == max_lrs_.size(), "CyclicLR: ", base_lrs_.size(), " base_lrs but ", max_lrs_.size(), " max_lrs");
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = base_lrs_[g] + (max_lrs_[g] - base_lrs_[g]) * scale_factor * scale(arg);
  if (cycle_momentum_) {
    DL_CHECK(base_momentums_.size() == num_groups() && max_momentums_.size() == num_groups(), "CyclicLR: ",
             base_momentums_.size(), " base_momentums and ", max_momentums_.size(), " max_momentums for ", num_groups(),
             " parameter groups");
    for (size_t g = 0; g < num_groups(); ++g)
      optimizer_->set_momentum(g, max_momentums_[g] - (max_momentums_[g] - base_momentums_[g]) * scale_factor * scale(arg));
  }
  return lrs;
}

DL_API void CyclicLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("max_lrs", max_lrs_);
  f.field("total_size", total_size_);
  f.field("step_ratio", step_ratio_);
  f.field("mode", mode_);
  f.field("gamma", gamma_);
  f.field("scale_mode", scale_mode_);
  f.field("cycle_momentum", cycle_momentum_);
  f.field("base_momentums", base_momentums_);  // empty without cycle_momentum
  f.field("max_momentums", max_momentums_);
}

DL_API OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o) : LRScheduler(optimizer) {
  if (o.total_steps) {
    DL_CHECK(*o.total_steps > 0, "Expected positive integer total_steps, but got ", *o.total_steps);
    total_steps_ = *o.total_steps;
  } else if (o.epochs && o.steps_per_epoch) {
    DL_CHECK(*o.epochs > 0, "Expected positive integer epochs, but got ", *o.epochs);
    DL_CHECK(*o.steps_per_epoch > 0, "Expected positive integer steps_per_epoch, but got ", *o.steps_per_epoch);
    total_steps_ = *o.epochs * *o.steps_per_epoch;
  } else {
    throw Error("You must define either total_steps OR (epochs AND steps_per_epoch)");
  }
  pct_start_ = o.pct_start;
  three_phase_ = o.three_phase;
  make_phases();
  DL_CHECK(!(o.pct_start < 0 || o.pct_start > 1), "Expected float between 0 and 1 pct_start, but got ",
           detail::sched_float(o.pct_start));
  DL_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
           "anneal_strategy must be one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  anneal_strategy_ = o.anneal_strategy;
  const size_t n = num_groups();
  max_lrs_ = o.max_lr.for_groups("max_lr", n);
  min_lrs_.assign(n, 0.0);
  for (size_t g = 0; g < n; ++g) {
    if (o.last_epoch == -1) optimizer.set_initial_lr(g, max_lrs_[g] / o.div_factor);
    // When resuming, PyTorch reads max_lr and min_lr back from the param groups, where the first
    // run's scheduler left them; here they follow from the same options and the kept initial_lr.
    if (auto lr0 = optimizer.initial_lr(g)) min_lrs_[g] = *lr0 / o.final_div_factor;
  }
  cycle_momentum_ = o.cycle_momentum;
  if (cycle_momentum_) {
    detail::require_momentum(optimizer, "OneCycleLR");
    max_momentums_ = o.max_momentum.for_groups("max_momentum", n);
    base_momentums_ = o.base_momentum.for_groups("base_momentum", n);
    if (o.last_epoch == -1)
      for (size_t g = 0; g < n; ++g) optimizer.set_momentum(g, max_momentums_[g]);
  }
  init(o.last_epoch);
}

DL_API void OneCycleLR::make_phases() {
  const double total = double(total_steps_);
  if (three_phase_) {
    phases_ = {{pct_start_ * total - 1, kInitialLr, kMaxLr, kMaxMomentum, kBaseMomentum},
               {2 * pct_start_ * total - 2, kMaxLr, kInitialLr, kBaseMomentum, kMaxMomentum},
               {total - 1, kInitialLr, kMinLr, kMaxMomentum, kMaxMomentum}};
  } else {
    phases_ = {{pct_start_ * total - 1, kInitialLr, kMaxLr, kMaxMomentum, kBaseMomentum},
               {total - 1, kMaxLr, kMinLr, kBaseMomentum, kMaxMomentum}};
  }
}

DL_API double OneCycleLR::value(Value v, size_t g) const {
  auto at = [&](const std::vector<double>& xs, const char* what) {
    DL_CHECK(g < xs.size(), "OneCycleLR: no ", what, " for parameter group ", g, " (", xs.size(), " values)");
    return xs[g];
  };
  switch (v) {
    case kInitialLr: {
      auto lr0 = optimizer_->initial_lr(g);
      DL_CHECK(lr0, "OneCycleLR: param_groups[", g, "] has no 'initial_lr'");
      return *lr0;
    }
    case kMaxLr: return at(max_lrs_, "max_lr");
    case kMinLr: return at(min_lrs_, "min_lr");
    case kMaxMomentum: return at(max_momentums_, "max_momentum");
    default: return at(base_momentums_, "base_momentum");
  }
}

DL_API double OneCycleLR::anneal(double start, double end, double pct) const {
  constexpr double pi = 3.141592653589793;
  if (anneal_strategy_ == "cos") return end + (start - end) / 2.0 * (std::cos(pi * pct) + 1);
  return (end - start) * pct + start;
}

DL_API std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  DL_CHECK(step_num <= total_steps_, "Tried to step ", step_num, " times. The specified number of total steps is ", total_steps_);
  std::vector<double> lrs(num_groups());
  for (size_t g = 0; g < lrs.size(); ++g) {
    double start_step = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& p = phases_[i];
      if (double(step_num) <= p.end_step || i + 1 == phases_.size()) {
        const double pct = detail::py_div(double(step_num) - start_step, p.end_step - start_step,
                                          "OneCycleLR (a phase of zero steps)");
        lrs[g] = anneal(value(p.start_lr, g), value(p.end_lr, g), pct);
        if (cycle_momentum_) optimizer_->set_momentum(g, anneal(value(p.start_momentum, g), value(p.end_momentum, g), pct));
        break;
      }
      start_step = p.end_step;
    }
  }
  return lrs;
}

DL_API void OneCycleLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("total_steps", total_steps_);
  f.field("pct_start", pct_start_);
  f.field("three_phase", three_phase_);
  f.field("_anneal_func_type", anneal_strategy_);
  f.field("cycle_momentum", cycle_momentum_);
  f.field("max_lr", max_lrs_);
  f.field("min_lr", min_lrs_);
  f.field("max_momentum", max_momentums_);  // empty without cycle_momentum
  f.field("base_momentum", base_momentums_);
}

DL_API void OneCycleLR::after_load() {
  DL_CHECK(anneal_strategy_ == "cos" || anneal_strategy_ == "linear", "Unknown _anneal_func_type: ", anneal_strategy_);
  make_phases();
}

}  // namespace dl::optim
