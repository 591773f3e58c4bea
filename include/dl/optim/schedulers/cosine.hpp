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

#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

// ---- CosineAnnealingWarmRestarts

#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
