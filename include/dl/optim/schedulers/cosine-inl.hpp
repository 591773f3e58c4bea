// dl/optim/schedulers/cosine-inl.hpp — the bodies of dl/optim/schedulers/cosine.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "cosine.hpp"

namespace dl::optim {

DL_API CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, const CosineAnnealingLROptions& o)
    : LRScheduler(optimizer), T_max_(o.T_max), eta_min_(o.eta_min) {
  init(o.last_epoch);
}

DL_API std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_) return lrs;
  constexpr double pi = 3.141592653589793;  // Python's math.pi
  const char* who = "CosineAnnealingLR (T_max = 0)";
  const double T = double(T_max_);
  auto base = [&](size_t g) {
    DL_CHECK(g < base_lrs_.size(), "CosineAnnealingLR: ", num_groups(), " parameter groups but ", base_lrs_.size(), " base_lrs");
    return base_lrs_[g];
  };
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = eta_min_ + (base(g) - eta_min_) * (1 + std::cos(double(last_epoch_) * pi / T)) / 2;
  } else if (detail::py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_, who) == 0) {
    // At an odd multiple of T_max the recursive form divides by zero; restart the rise instead.
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] + (base(g) - eta_min_) * (1 - std::cos(pi / T)) / 2;
  } else {
    const double f = (1 + std::cos(pi * double(last_epoch_) / T)) / (1 + std::cos(pi * double(last_epoch_ - 1) / T));
    for (double& lr : lrs) lr = f * (lr - eta_min_) + eta_min_;
  }
  return lrs;
}

DL_API std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  constexpr double pi = 3.141592653589793;
  const double c = 1 + std::cos(detail::py_div(pi * double(last_epoch_), double(T_max_), "CosineAnnealingLR (T_max = 0)"));
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr = eta_min_ + (lr - eta_min_) * c / 2;
  return lrs;
}

DL_API void CosineAnnealingLR::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("T_max", T_max_);
  f.field("eta_min", eta_min_);
}

DL_API CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer,
                                                                const CosineAnnealingWarmRestartsOptions& o)
    : LRScheduler(optimizer), T_0_(o.T_0), T_i_(o.T_0), T_mult_(o.T_mult), eta_min_(o.eta_min), T_cur_(double(o.last_epoch)) {
  DL_CHECK(o.T_0 > 0, "Expected positive integer T_0, but got ", o.T_0);
  DL_CHECK(o.T_mult >= 1, "Expected integer T_mult >= 1, but got ", o.T_mult);
  init(o.last_epoch);
}

DL_API std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  constexpr double pi = 3.141592653589793;
  std::vector<double> lrs = base_lrs_;
  const double c = 1 + std::cos(pi * detail::py_div(T_cur_, double(T_i_), "CosineAnnealingWarmRestarts (T_i = 0)"));
  for (double& lr : lrs) lr = eta_min_ + (lr - eta_min_) * c / 2;
  return lrs;
}

DL_API void CosineAnnealingWarmRestarts::step() {
  if (last_epoch_ < 0) return step(0.0);
  T_cur_ = T_cur_ + 1;
  if (T_cur_ >= double(T_i_)) {
    T_cur_ = detail::py_fmod(T_cur_, double(T_i_), "CosineAnnealingWarmRestarts (T_i = 0)");
    T_i_ = T_i_ * T_mult_;
  }
  last_epoch_ = last_epoch_ + 1;
  set_lrs();
}

DL_API void CosineAnnealingWarmRestarts::step(double epoch) {
  DL_CHECK(epoch >= 0, "Expected non-negative epoch, but got ", dl::detail::py_number(epoch));
  if (epoch >= double(T_0_)) {
    if (T_mult_ == 1) {
      T_cur_ = detail::py_fmod(epoch, double(T_0_), "CosineAnnealingWarmRestarts");
    } else {
      // Python's math.log(x, base) is log(x) / log(base); int() truncates.
      const auto n = int64_t(std::log(epoch / double(T_0_) * double(T_mult_ - 1) + 1) / std::log(double(T_mult_)));
      int64_t p = 1;
      for (int64_t i = 0; i < n; ++i) p *= T_mult_;
      T_cur_ = epoch - double(T_0_ * (p - 1)) / double(T_mult_ - 1);
      T_i_ = T_0_ * p;
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
  }
  last_epoch_ = int64_t(std::floor(epoch));
  set_lrs();
}

DL_API void CosineAnnealingWarmRestarts::set_lrs() {
  const std::vector<double> lrs = get_lr();
  DL_CHECK(lrs.size() == num_groups(), "CosineAnnealingWarmRestarts: ", base_lrs_.size(), " base_lrs for ", num_groups(),
           " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_->set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

DL_API void CosineAnnealingWarmRestarts::visit_state(detail::SchedulerFields& f) {
  LRScheduler::visit_state(f);
  f.field("T_0", T_0_);
  f.field("T_i", T_i_);
  f.field("T_mult", T_mult_);
  f.field("eta_min", eta_min_);
  f.field("T_cur", T_cur_);
}

}  // namespace dl::optim
