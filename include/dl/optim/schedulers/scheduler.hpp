// dl/optim/schedulers/scheduler.hpp — LRScheduler, the base of every learning-rate scheduler (PyTorch's
// torch.optim.lr_scheduler.LRScheduler): the initial step, step(), state_dict / load_state_dict; and
// what the schedulers share: GroupValues (one value or one per group) and Python's arithmetic.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../../io/state_dict.hpp"
#include "../../tensor.hpp"
#include "../optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// One value for every parameter group, or a list with one value per group (PyTorch's
/// `float or list` arguments): `.max_lr = 0.1` or `.max_lr = {0.1, 0.01}`.
struct GroupValues {
  std::vector<double> values;
  bool per_group = false;
  GroupValues() = default;
  GroupValues(double v) : values{v} {}
  GroupValues(std::initializer_list<double> v) : values(v), per_group(true) {}
  GroupValues(std::vector<double> v) : values(std::move(v)), per_group(true) {}
  /// The value of each of n groups (PyTorch's _format_param); `name` is the argument in errors.
  std::vector<double> for_groups(const std::string& name, size_t n) const;
};

class LRScheduler;

namespace detail {

/// What state_dict() saves and load_state_dict() restores: every scheduler names its numbers
/// (with PyTorch's attribute names) to a SchedulerFields, which either writes or reads them. One
/// list per scheduler thus serves both directions.
class SchedulerFields {
 public:
  virtual ~SchedulerFields() = default;
  virtual void field(const std::string& key, int64_t& v) = 0;
  virtual void field(const std::string& key, double& v) = 0;
  virtual void field(const std::string& key, bool& v) = 0;
  virtual void field(const std::string& key, std::string& v) = 0;
  virtual void field(const std::string& key, std::vector<double>& v) = 0;
  virtual void field(const std::string& key, std::vector<int64_t>& v) = 0;
  /// Absent from the state dict when empty (PyTorch's None).
  virtual void field(const std::string& key, std::optional<double>& v) = 0;
  /// The scheduler's fields (and its name, which a loaded state dict must match) under prefix
  /// (relative to the current one: "_schedulers.0." inside "_schedulers.1." nests).
  void visit(LRScheduler& s, const std::string& prefix);

 protected:
  virtual void name(const std::string& key, const std::string& scheduler_name) = 0;
  std::string prefix_;
};

}  // namespace detail

/// The base of every scheduler (PyTorch's LRScheduler). A scheduler sets the learning rate of
/// each parameter group of its optimizer; step() moves it to the next epoch (or batch).
///
/// Construction follows PyTorch: with last_epoch == -1 each group's lr becomes its "initial_lr"
/// (unless one is set already); with last_epoch >= 0 (resuming) every group must have one. Then the
/// scheduler makes its initial step, so last_epoch() is 0 after a fresh start. step() computes the
/// new rates from the current ones (the chainable form), so schedulers compose and a group lr
/// changed by hand is respected.
///
/// A custom scheduler derives from LRScheduler, overrides get_lr() and name(), and calls
/// init(last_epoch) last in its constructor (a C++ base constructor cannot call the derived get_lr).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Moves to the next epoch and sets the groups' learning rates (call after optimizer.step()).
  DL_API virtual void step();
  /// The learning rates the last step set, one per group.
  std::vector<double> get_last_lr() const { return last_lr_; }
  /// The index of the last epoch (0 after construction with last_epoch = -1).
  virtual int64_t last_epoch() const { return last_epoch_; }
  /// The initial learning rates the schedule starts from (the groups' "initial_lr").
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }
  /// "StepLR", "CosineAnnealingLR", ...
  virtual std::string name() const = 0;
  /// The learning rates of the epoch last_epoch(), computed from the current ones; step() calls
  /// it after advancing last_epoch. To read the current rates use get_last_lr().
  virtual std::vector<double> get_lr() = 0;

  /// The scheduler's numbers as tensors (last_epoch, base_lrs, _last_lr, its hyper-parameters,
  /// counters), with PyTorch's attribute names as keys; strings in the metadata. Functions
  /// (lr_lambda, scale_fn) are not saved, as in PyTorch.
  StateDict state_dict() const;
  /// Restores what state_dict() saved; a bad state dict changes nothing.
  void load_state_dict(const StateDict& sd);

 protected:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {}
  /// PyTorch's LRScheduler.__init__: initial_lr and base_lrs, then the initial step.
  void init(int64_t last_epoch);
  /// step() in "initial mode" with a fresh step count (what the constructor and SequentialLR do).
  void initial_step();
  /// Advances last_epoch (or sets it to *epoch, then uses the closed form where there is one) and
  /// sets the groups' learning rates.
  void update_lr(std::optional<int64_t> epoch);
  /// The learning rates at last_epoch from base_lrs, for schedulers that have a closed form.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  /// The schedulers a composite scheduler drives (ChainedScheduler, SequentialLR).
  virtual std::vector<LRScheduler*> sub_schedulers() const { return {}; }
  /// Names the numbers state_dict() saves; a derived scheduler calls its base's first.
  DL_API virtual void visit_state(detail::SchedulerFields& f);
  /// Called after load_state_dict() has set the fields (checks and derived values).
  virtual void after_load() {}

  std::vector<double> group_lrs() const;
  size_t num_groups() const { return optimizer_->num_param_groups(); }

  Optimizer* optimizer_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;

  friend class detail::SchedulerFields;
  friend class SequentialLR;
  friend class ChainedScheduler;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API std::string sched_float(double v);

/// Python's a % b on integers (the sign of b); b == 0 raises, as Python's ZeroDivisionError.
DL_API int64_t py_mod(int64_t a, int64_t b, const char* who);
/// Python's a // b on integers (rounds toward -inf).
DL_API int64_t py_floordiv(int64_t a, int64_t b, const char* who);
/// Python's a % b on floats (the sign of b).
DL_API double py_fmod(double a, double b, const char* who);
/// a / b as Python computes it: a zero divisor raises instead of giving inf or NaN.
DL_API double py_div(double a, double b, const char* who);
/// Python's bisect.bisect_right (the same probes on an unsorted list, too).
DL_API size_t bisect_right(const std::vector<int64_t>& a, int64_t x);

/// The numbers of a tensor in a scheduler state dict (float64, float32 or int64).
DL_API std::vector<double> sched_values(const AnyTensor& t, const std::string& key);

class SchedulerSaver final : public SchedulerFields {
 public:
  explicit SchedulerSaver(StateDict& sd) : sd_(sd) {}
  void field(const std::string& k, int64_t& v) override { sd_.insert(prefix_ + k, scalar_tensor<int64_t>(v)); }
  void field(const std::string& k, double& v) override { sd_.insert(prefix_ + k, scalar_tensor<double>(v)); }
  void field(const std::string& k, bool& v) override { sd_.insert(prefix_ + k, scalar_tensor<double>(v ? 1.0 : 0.0)); }
  void field(const std::string& k, std::string& v) override { sd_.metadata[prefix_ + k] = v; }
  void field(const std::string& k, std::vector<double>& v) override { sd_.insert(prefix_ + k, tensor<double>(v)); }
  void field(const std::string& k, std::vector<int64_t>& v) override { sd_.insert(prefix_ + k, tensor<int64_t>(v)); }
  void field(const std::string& k, std::optional<double>& v) override {
    if (v) sd_.insert(prefix_ + k, scalar_tensor<double>(*v));
  }

 protected:
  void name(const std::string& k, const std::string& n) override { sd_.metadata[prefix_ + k] = n; }

 private:
  StateDict& sd_;
};

/// Reads every field; assigns them only when `apply` (a first pass with apply = false checks the
/// whole state dict, so that a bad one changes nothing).
class SchedulerLoader final : public SchedulerFields {
 public:
  SchedulerLoader(const StateDict& sd, bool apply) : sd_(sd), apply_(apply) {}
  void field(const std::string& k, int64_t& v) override {
    const AnyTensor& t = at(k);
    int64_t x = 0;
    if (t.is<int64_t>()) {
      DL_CHECK(t.numel() == 1, "scheduler state dict: ", prefix_ + k, " has ", t.numel(), " values, expected 1");
      x = t.contiguous().as<int64_t>().data()[0];
    } else {
      x = int64_t(scalar(k));
    }
    if (apply_) v = x;
  }
  void field(const std::string& k, double& v) override {
    const double x = scalar(k);
    if (apply_) v = x;
  }
  void field(const std::string& k, bool& v) override {
    const double x = scalar(k);
    if (apply_) v = x != 0;
  }
  void field(const std::string& k, std::string& v) override {
    auto it = sd_.metadata.find(prefix_ + k);
    DL_CHECK(it != sd_.metadata.end(), "scheduler state dict: missing ", prefix_ + k);
    if (apply_) v = it->second;
  }
  void field(const std::string& k, std::vector<double>& v) override {
    std::vector<double> x = sched_values(at(k), prefix_ + k);
    check_size(k, x.size(), v.size());
    if (apply_) v = std::move(x);
  }
  void field(const std::string& k, std::vector<int64_t>& v) override {
    const AnyTensor& t = at(k);
    std::vector<int64_t> x;
    if (t.is<int64_t>()) {
      const Tensor<int64_t> c = t.contiguous().as<int64_t>();
      x.assign(c.data(), c.data() + c.numel());
    } else {
      for (double d : sched_values(t, prefix_ + k)) x.push_back(int64_t(d));
    }
    check_size(k, x.size(), v.size());
    if (apply_) v = std::move(x);
  }
  void field(const std::string& k, std::optional<double>& v) override {
    std::optional<double> x;
    if (sd_.contains(prefix_ + k)) x = scalar(k);
    if (apply_) v = x;
  }

 protected:
  void name(const std::string& k, const std::string& n) override {
    auto it = sd_.metadata.find(prefix_ + k);
    DL_CHECK(it == sd_.metadata.end() || it->second == n, "loaded state dict",
             prefix_.empty() ? "" : " entry " + prefix_.substr(0, prefix_.size() - 1), " is for ", it->second, ", not ", n);
  }

 private:
  const AnyTensor& at(const std::string& k) const {
    DL_CHECK(sd_.contains(prefix_ + k), "scheduler state dict: missing ", prefix_ + k);
    return sd_.at(prefix_ + k);
  }
  double scalar(const std::string& k) const {
    const std::vector<double> x = sched_values(at(k), prefix_ + k);
    DL_CHECK(x.size() == 1, "scheduler state dict: ", prefix_ + k, " has ", x.size(), " values, expected 1");
    return x[0];
  }
  // Lists that exist must keep their length (one value per group, one milestone per scheduler).
  void check_size(const std::string& k, size_t got, size_t have) const {
    DL_CHECK(have == 0 || got == have, "scheduler state dict: ", prefix_ + k, " has ", got, " values, expected ", have);
  }
  const StateDict& sd_;
  bool apply_;
};

}  // namespace detail

// ---- LRScheduler

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "scheduler-inl.hpp"
#endif
