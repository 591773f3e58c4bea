// dl/optim/lr_scheduler.hpp — learning-rate schedulers with PyTorch's names, formulas and edge
// cases (torch.optim.lr_scheduler, PyTorch 2.x): LambdaLR, MultiplicativeLR, StepLR, MultiStepLR,
// ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
// CyclicLR, OneCycleLR, ReduceLROnPlateau, SequentialLR and ChainedScheduler.
//
//   optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::LinearLR warmup(opt, {.start_factor = 0.1, .total_iters = 5});
//   optim::CosineAnnealingLR cosine(opt, {.T_max = 95});
//   optim::SequentialLR sched(opt, {&warmup, &cosine}, {5});
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "optimizer.hpp"

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

/// A function of the epoch that gives a learning-rate factor (LambdaLR, MultiplicativeLR).
using LRLambda = std::function<double(int64_t)>;

/// One LRLambda for every group, or a list with one per group: `.lr_lambda = [](int64_t e) {
/// return std::pow(0.95, e); }` or `.lr_lambda = {f0, f1}`.
struct LRLambdas {
  std::vector<LRLambda> fns;
  bool per_group = false;
  LRLambdas() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, LRLambdas> && std::is_invocable_r_v<double, F&, int64_t>)
  LRLambdas(F&& f) : fns{LRLambda(std::forward<F>(f))} {}
  LRLambdas(std::initializer_list<LRLambda> f) : fns(f), per_group(true) {}
  LRLambdas(std::vector<LRLambda> f) : fns(std::move(f)), per_group(true) {}
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

/// LambdaLR: lr = initial_lr * lr_lambda(epoch).
struct LambdaLROptions {
  LRLambdas lr_lambda;
  int64_t last_epoch = -1;
};
class LambdaLR : public LRScheduler {
 public:
  using Options = LambdaLROptions;
  LambdaLR(Optimizer& optimizer, const LambdaLROptions& options);
  std::string name() const override { return "LambdaLR"; }
  DL_API std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lambdas_;
};

/// MultiplicativeLR: lr *= lr_lambda(epoch) at every step.
struct MultiplicativeLROptions {
  LRLambdas lr_lambda;
  int64_t last_epoch = -1;
};
class MultiplicativeLR : public LRScheduler {
 public:
  using Options = MultiplicativeLROptions;
  MultiplicativeLR(Optimizer& optimizer, const MultiplicativeLROptions& options);
  std::string name() const override { return "MultiplicativeLR"; }
  DL_API std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lambdas_;
};

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

/// CyclicLR: cycles lr between base_lr and max_lr (and, inversely, the momentum between
/// max_momentum and base_momentum); call step() after every batch.
struct CyclicLROptions {
  GroupValues base_lr;  ///< required
  GroupValues max_lr;   ///< required
  int64_t step_size_up = 2000;
  std::optional<int64_t> step_size_down = std::nullopt;  ///< default: step_size_up
  std::string mode = "triangular";                       ///< "triangular", "triangular2" or "exp_range"
  double gamma = 1.0;                                    ///< of "exp_range": gamma^iterations
  std::function<double(double)> scale_fn = {};           ///< replaces mode when set
  std::string scale_mode = "cycle";                      ///< "cycle" or "iterations": scale_fn's argument
  bool cycle_momentum = true;
  GroupValues base_momentum = 0.8;
  GroupValues max_momentum = 0.9;
  int64_t last_epoch = -1;
};
class CyclicLR : public LRScheduler {
 public:
  using Options = CyclicLROptions;
  CyclicLR(Optimizer& optimizer, const CyclicLROptions& options);
  std::string name() const override { return "CyclicLR"; }
  /// Also sets the groups' momentum when cycle_momentum.
  DL_API std::vector<double> get_lr() override;

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;
  void after_load() override { init_scale_fn(); }

 private:
  void init_scale_fn();
  double scale(double x) const;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_, gamma_;
  std::string mode_, scale_mode_;
  std::function<double(double)> scale_fn_custom_;
  bool cycle_momentum_;
};

/// OneCycleLR (1cycle policy): lr rises from max_lr / div_factor to max_lr over pct_start of the
/// steps, then anneals to initial_lr / final_div_factor; call step() after every batch.
struct OneCycleLROptions {
  GroupValues max_lr;  ///< required
  std::optional<int64_t> total_steps = std::nullopt;  ///< or epochs * steps_per_epoch
  std::optional<int64_t> epochs = std::nullopt;
  std::optional<int64_t> steps_per_epoch = std::nullopt;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  ///< "cos" or "linear"
  bool cycle_momentum = true;
  GroupValues base_momentum = 0.85;
  GroupValues max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
  int64_t last_epoch = -1;
};
class OneCycleLR : public LRScheduler {
 public:
  using Options = OneCycleLROptions;
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);
  std::string name() const override { return "OneCycleLR"; }
  /// Also sets the groups' momentum when cycle_momentum.
  DL_API std::vector<double> get_lr() override;
  int64_t total_steps() const { return total_steps_; }

 protected:
  DL_API void visit_state(detail::SchedulerFields& f) override;
  DL_API void after_load() override;

 private:
  enum Value : int64_t { kInitialLr, kMaxLr, kMinLr, kMaxMomentum, kBaseMomentum };
  struct Phase {
    double end_step;
    Value start_lr, end_lr, start_momentum, end_momentum;
  };
  void make_phases();
  double value(Value v, size_t group) const;
  double anneal(double start, double end, double pct) const;
  int64_t total_steps_;
  double pct_start_;
  bool three_phase_;
  std::string anneal_strategy_;
  std::vector<Phase> phases_;
  std::vector<double> max_lrs_, min_lrs_, base_momentums_, max_momentums_;
  bool cycle_momentum_;
};

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

/// SequentialLR: runs schedulers[0] until milestones[0], then schedulers[1] (started afresh at
/// epoch 0), ...; every scheduler must drive `optimizer`. The schedulers are not owned.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
               int64_t last_epoch = -1);
  std::string name() const override { return "SequentialLR"; }
  DL_API void step() override;
  /// Throws: SequentialLR delegates to its schedulers (PyTorch raises NotImplementedError).
  DL_API std::vector<double> get_lr() override;

 protected:
  std::vector<LRScheduler*> sub_schedulers() const override { return schedulers_; }
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

/// ChainedScheduler: step() steps every scheduler in order, so their changes multiply. The
/// schedulers are not owned; optimizer defaults to the first scheduler's.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers, Optimizer* optimizer = nullptr);
  std::string name() const override { return "ChainedScheduler"; }
  DL_API void step() override;
  /// The last scheduler's (PyTorch's ChainedScheduler has no last_epoch of its own).
  int64_t last_epoch() const override { return schedulers_.back()->last_epoch(); }
  /// Throws: ChainedScheduler delegates to its schedulers (PyTorch raises NotImplementedError).
  DL_API std::vector<double> get_lr() override;

 protected:
  std::vector<LRScheduler*> sub_schedulers() const override { return schedulers_; }
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  std::vector<LRScheduler*> schedulers_;
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

namespace detail {
DL_API std::vector<LRLambda> lr_lambdas(const LRLambdas& l, size_t n, const char* who);
#if DL_HEADER_ONLY
DL_API std::vector<LRLambda> lr_lambdas(const LRLambdas& l, size_t n, const char* who) {
  std::vector<LRLambda> fns;
  if (!l.per_group) {
    DL_CHECK(l.fns.size() == 1, who, ": lr_lambda is required (a function, or one per parameter group)");
    fns.assign(n, l.fns[0]);
  } else {
    DL_CHECK(l.fns.size() == n, "Expected ", n, " lr_lambdas, but got ", l.fns.size());
    fns = l.fns;
  }
  for (size_t i = 0; i < fns.size(); ++i)
    DL_CHECK(bool(fns[i]), "lr_lambda should be a function, but got an empty std::function (", who, ", group ", i, ")");
  return fns;
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

// ---- LambdaLR, MultiplicativeLR

#if DL_HEADER_ONLY
DL_API LambdaLR::LambdaLR(Optimizer& optimizer, const LambdaLROptions& o)
    : LRScheduler(optimizer), lambdas_(detail::lr_lambdas(o.lr_lambda, optimizer.num_param_groups(), "LambdaLR")) {
  init(o.last_epoch);
}

DL_API std::vector<double> LambdaLR::get_lr() {
  DL_CHECK(lambdas_.size() == base_lrs_.size(), "LambdaLR: ", lambdas_.size(), " lr_lambdas for ", base_lrs_.size(), " base_lrs");
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = base_lrs_[g] * lambdas_[g](last_epoch_);
  return lrs;
}

DL_API MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, const MultiplicativeLROptions& o)
    : LRScheduler(optimizer),
      lambdas_(detail::lr_lambdas(o.lr_lambda, optimizer.num_param_groups(), "MultiplicativeLR")) {
  init(o.last_epoch);
}

DL_API std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_) return lrs;
  DL_CHECK(lambdas_.size() == lrs.size(), "MultiplicativeLR: ", lambdas_.size(), " lr_lambdas for ", lrs.size(),
           " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] *= lambdas_[g](last_epoch_);
  return lrs;
}
#endif  // DL_HEADER_ONLY

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

// ---- CyclicLR

namespace detail {
DL_API void require_momentum(const Optimizer& opt, const char* who);
#if DL_HEADER_ONLY
DL_API void require_momentum(const Optimizer& opt, const char* who) {
  DL_CHECK(opt.get_momentum(0).has_value(), "optimizer must support momentum or beta1 with `cycle_momentum` option enabled (",
           who, " on ", opt.name(), ")");
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

// ---- OneCycleLR

#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

// ---- ReduceLROnPlateau

#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

// ---- SequentialLR, ChainedScheduler

namespace detail {
DL_API void check_schedulers(const char* who, const std::vector<LRScheduler*>& schedulers, const Optimizer& optimizer);
/// ChainedScheduler's optimizer: the given one, else the first scheduler's.
DL_API Optimizer& chained_optimizer(const std::vector<LRScheduler*>& schedulers, Optimizer* optimizer);
#if DL_HEADER_ONLY
DL_API void check_schedulers(const char* who, const std::vector<LRScheduler*>& schedulers, const Optimizer& optimizer) {
  for (size_t i = 0; i < schedulers.size(); ++i) {
    const LRScheduler* s = schedulers[i];
    DL_CHECK(s, who, " at index ", i, " should have `optimizer` as its attribute (got a null scheduler).");
    DL_CHECK(!dynamic_cast<const ReduceLROnPlateau*>(s), who,
             " does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified when calling "
             "`step`, but got one at index ",
             i, " in the given schedulers sequence.");
    DL_CHECK(&s->optimizer() == &optimizer, who,
             " expects all schedulers to belong to the same optimizer, but got scheduler ", s->name(), " at index ", i,
             " has ", s->optimizer().name(), " at ", static_cast<const void*>(&s->optimizer()), ", which is different from ",
             optimizer.name(), " at ", static_cast<const void*>(&optimizer), ".");
  }
}
DL_API Optimizer& chained_optimizer(const std::vector<LRScheduler*>& schedulers, Optimizer* optimizer) {
  DL_CHECK(!schedulers.empty(), "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  if (optimizer) return *optimizer;
  DL_CHECK(schedulers[0], "ChainedScheduler at index 0 should have `optimizer` as its attribute (got a null scheduler).");
  return schedulers[0]->optimizer();
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

#if DL_HEADER_ONLY
DL_API SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
                                  int64_t last_epoch)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  DL_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler, but got no scheduler.");
  detail::check_schedulers("SequentialLR", schedulers_, optimizer);
  DL_CHECK(milestones_.size() == schedulers_.size() - 1,
           "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, "
           "but got number of schedulers ",
           schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  // Back to the initial rates, and undo the initial step every scheduler made when it was built.
  for (size_t g = 0; g < num_groups(); ++g) {
    auto lr0 = optimizer.initial_lr(g);
    DL_CHECK(lr0, "SequentialLR: param_groups[", g, "] has no 'initial_lr'");
    optimizer.set_lr(g, *lr0);
  }
  std::vector<LRScheduler*> pending = schedulers_;
  while (!pending.empty()) {
    LRScheduler* s = pending.back();
    pending.pop_back();
    const std::vector<LRScheduler*> subs = s->sub_schedulers();
    if (subs.empty()) --s->last_epoch_;
    else pending.insert(pending.end(), subs.begin(), subs.end());
  }
  // Only the scheduler meant to run at epoch 0 makes its initial step.
  LRScheduler* first = schedulers_[detail::bisect_right(milestones_, 0)];
  first->initial_step();
  last_lr_ = first->get_last_lr();
}

DL_API void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = detail::bisect_right(milestones_, last_epoch_);
  LRScheduler* s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s->update_lr(0);
  else s->step();
  last_lr_ = s->get_last_lr();
}

DL_API std::vector<double> SequentialLR::get_lr() {
  throw Error("SequentialLR has no get_lr of its own: it steps its schedulers (use get_last_lr for the current rates)");
}

DL_API void SequentialLR::visit_state(detail::SchedulerFields& f) {
  f.field("last_epoch", last_epoch_);
  f.field("_milestones", milestones_);
  f.field("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) f.visit(*schedulers_[i], "_schedulers." + std::to_string(i) + ".");
}

DL_API ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers, Optimizer* optimizer)
    : LRScheduler(detail::chained_optimizer(schedulers, optimizer)), schedulers_(std::move(schedulers)) {
  detail::check_schedulers("ChainedScheduler", schedulers_, *optimizer_);
  last_lr_ = schedulers_.back()->group_lrs();
}

DL_API void ChainedScheduler::step() {
  for (LRScheduler* s : schedulers_) s->step();
  last_lr_ = schedulers_.back()->group_lrs();
}

DL_API std::vector<double> ChainedScheduler::get_lr() {
  throw Error("ChainedScheduler has no get_lr of its own: it steps its schedulers (use get_last_lr for the current rates)");
}

DL_API void ChainedScheduler::visit_state(detail::SchedulerFields& f) {
  f.field("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) f.visit(*schedulers_[i], "_schedulers." + std::to_string(i) + ".");
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
