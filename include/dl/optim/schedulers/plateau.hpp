// dl/optim/schedulers/plateau.hpp — ReduceLROnPlateau: lr *= factor when a metric stops improving.
//   optim::ReduceLROnPlateau sched(opt, {.mode = "min", .patience = 5});
//   sched.step(val_loss);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../../tensor.hpp"
#include "../optimizer.hpp"
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// ReduceLROnPlateau: lr *= factor when a metric has not improved for `patience` epochs;
/// step(metric) after each evaluation.
struct ReduceLROnPlateauOptions {
  std::string mode = "min";  ///< "min" or "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  ///< "rel" or "abs"
  int64_t cooldown = 0;
  GroupValues min_lr = 0.0;
  double eps = 1e-8;
};
class ReduceLROnPlateau : public LRScheduler {
 public:
  using Options = ReduceLROnPlateauOptions;
  explicit ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  std::string name() const override { return "ReduceLROnPlateau"; }
  /// Takes the metric: throws, naming step(metric).
  DL_API void step() override;
  void step(double metric);
  /// A one-element tensor metric (e.g. the validation loss).
  template <scalar_type T>
  void step(const Tensor<T>& metric) {
    DL_CHECK(metric.numel() == 1, "ReduceLROnPlateau.step: the metric must have one element, got shape ", metric.shape());
    step(double(metric.item()));
  }
  /// Throws: the rates depend on the metric (PyTorch raises NotImplementedError).
  DL_API std::vector<double> get_lr() override;
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;
  void after_load() override { init_is_better(mode_, threshold_, threshold_mode_); }

 private:
  void init_is_better(const std::string& mode, double threshold, const std::string& threshold_mode);
  bool is_better(double a, double best) const;
  void reduce_lr();
  double factor_, threshold_, eps_, best_, mode_worse_;
  std::vector<double> min_lrs_;
  std::optional<double> default_min_lr_;
  int64_t patience_, cooldown_, cooldown_counter_ = 0, num_bad_epochs_ = 0;
  std::string mode_, threshold_mode_;
};

// ------------------------------------------------------------------------------ implementation

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "plateau-inl.hpp"
#endif
