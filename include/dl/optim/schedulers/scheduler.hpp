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
#if DL_HEADER_ONLY
DL_API std::string sched_float(double v) { return dl::detail::py_float(v); }
#endif  // DL_HEADER_ONLY

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
#if DL_HEADER_ONLY
DL_API int64_t py_mod(int64_t a, int64_t b, const char* who) {
  DL_CHECK(b != 0, who, ": integer division or modulo by zero");
  const int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
DL_API int64_t py_floordiv(int64_t a, int64_t b, const char* who) {
  DL_CHECK(b != 0, who, ": integer division or modulo by zero");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
DL_API double py_fmod(double a, double b, const char* who) {
  DL_CHECK(b != 0, who, ": float modulo by zero");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
DL_API double py_div(double a, double b, const char* who) {
  DL_CHECK(b != 0, who, ": float division by zero");
  return a / b;
}
DL_API size_t bisect_right(const std::vector<int64_t>& a, int64_t x) {
  size_t lo = 0, hi = a.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (x < a[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
#endif  // DL_HEADER_ONLY

/// The numbers of a tensor in a scheduler state dict (float64, float32 or int64).
DL_API std::vector<double> sched_values(const AnyTensor& t, const std::string& key);
#if DL_HEADER_ONLY
DL_API std::vector<double> sched_values(const AnyTensor& t, const std::string& key) {
  std::vector<double> out;
  if (t.is<double>()) {
    const Tensor<double> c = t.contiguous().as<double>();
    out.assign(c.data(), c.data() + c.numel());
  } else if (t.is<float>()) {
    const Tensor<float> c = t.contiguous().as<float>();
    out.assign(c.data(), c.data() + c.numel());
  } else if (t.is<int64_t>()) {
    const Tensor<int64_t> c = t.contiguous().as<int64_t>();
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(double(c.data()[i]));
  } else {
    throw Error(dl::detail::cat("scheduler state dict: ", key, " is ", dtype_name(t.dtype()),
                                ", expected float64, float32 or int64"));
  }
  return out;
}
#endif  // DL_HEADER_ONLY

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

#if DL_HEADER_ONLY
DL_API void SchedulerFields::visit(LRScheduler& s, const std::string& prefix) {
  const std::string outer = prefix_;
  prefix_ = outer + prefix;
  name("scheduler", s.name());
  s.visit_state(*this);
  prefix_ = outer;
}
#endif  // DL_HEADER_ONLY

}  // namespace detail

#if DL_HEADER_ONLY
DL_API std::vector<double> GroupValues::for_groups(const std::string& name, size_t n) const {
  if (!per_group) {
    DL_CHECK(!values.empty(), name, " is required (one value, or one per parameter group)");
    return std::vector<double>(n, values[0]);
  }
  DL_CHECK(values.size() == n, name, " must have the same length as optimizer.param_groups. ", name, " has ", values.size(),
           " values, param_groups has ", n, ".");
  return values;
}
#endif  // DL_HEADER_ONLY

// ---- LRScheduler

#if DL_HEADER_ONLY
DL_API std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs(num_groups());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = optimizer_->get_lr(g);
  return lrs;
}

DL_API void LRScheduler::init(int64_t last_epoch) {
  const size_t n = num_groups();
  if (last_epoch == -1) {
    for (size_t g = 0; g < n; ++g)
      if (!optimizer_->initial_lr(g)) optimizer_->set_initial_lr(g, optimizer_->get_lr(g));
  } else {
    for (size_t g = 0; g < n; ++g)
      DL_CHECK(optimizer_->initial_lr(g), "param 'initial_lr' is not specified in param_groups[", g,
               "] when resuming scheduler with last_epoch >= 0 (", name(), " with last_epoch = ", last_epoch,
               "): load the optimizer's state dict, which has it, or set it with set_initial_lr");
  }
  base_lrs_.resize(n);
  for (size_t g = 0; g < n; ++g) base_lrs_[g] = *optimizer_->initial_lr(g);
  last_epoch_ = last_epoch;
  initial_step();
}

DL_API void LRScheduler::initial_step() {
  step_count_ = 0;
  struct InitialMode {
    bool& flag;
    explicit InitialMode(bool& f) : flag(f) { flag = true; }
    ~InitialMode() { flag = false; }
  } mode(is_initial_);
  step();
}

DL_API void LRScheduler::step() {
  ++step_count_;
  update_lr(std::nullopt);
}

DL_API void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> lrs;
  if (!epoch) {
    ++last_epoch_;
    lrs = get_lr();
  } else {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    lrs = closed ? std::move(*closed) : get_lr();
  }
  DL_CHECK(lrs.size() == num_groups(), name(), ".get_lr() returned ", lrs.size(), " learning rates for ", num_groups(),
           " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_->set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

DL_API void LRScheduler::visit_state(detail::SchedulerFields& f) {
  f.field("base_lrs", base_lrs_);
  f.field("last_epoch", last_epoch_);
  f.field("_step_count", step_count_);
  f.field("_last_lr", last_lr_);
}

DL_API StateDict LRScheduler::state_dict() const {
  StateDict sd;
  detail::SchedulerSaver saver(sd);
  // The saver only reads the fields; visit_state is one non-const list for both directions.
  saver.visit(const_cast<LRScheduler&>(*this), "");
  return sd;
}

DL_API void LRScheduler::load_state_dict(const StateDict& sd) {
  detail::SchedulerLoader check(sd, false);
  check.visit(*this, "");
  detail::SchedulerLoader load(sd, true);
  load.visit(*this, "");
  // Nested schedulers first, as PyTorch loads them after their parent's own numbers.
  std::vector<LRScheduler*> pending{this};
  while (!pending.empty()) {
    LRScheduler* s = pending.back();
    pending.pop_back();
    s->after_load();
    for (LRScheduler* c : s->sub_schedulers()) pending.push_back(c);
  }
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
