// Tests of dl/optim/lr_scheduler.hpp: every scheduler's learning-rate (and momentum) sequence
// against PyTorch 2.x (tests/data/lr_scheduler_ref.bin, written by
// tests/gen_lr_scheduler_reference.py), combinations, rates changed by hand, resuming with
// last_epoch and from state dicts, and the error paths with PyTorch's messages.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <dl/optim/adagrad.hpp>
#include <dl/optim/adam.hpp>
#include <dl/optim/lr_scheduler.hpp>
#include <dl/optim/sgd.hpp>
#include <dl/io/serialize.hpp>

#include "refbin.hpp"

namespace optim = dl::optim;
using doctest::Contains;
using dl::Error;

namespace {

const refbin::File sref("lr_scheduler_ref.bin");
constexpr int kSteps = 100;

/// SGD over two one-element parameters, one group each (lr 0.1 and 0.05, momentum 0.9), as the generator.
std::unique_ptr<optim::SGD<float>> make_opt(std::vector<double> lrs = {0.1, 0.05}, std::vector<double> initial_lrs = {}) {
  std::vector<optim::SGD<float>::GroupSpec> groups;
  for (double lr : lrs) groups.push_back({{dl::zeros<float>({1})}, {.lr = lr}});
  auto opt = std::make_unique<optim::SGD<float>>(groups, optim::SGDOptions{.lr = lrs[0], .momentum = 0.9});
  for (size_t g = 0; g < initial_lrs.size(); ++g) opt->set_initial_lr(g, initial_lrs[g]);
  return opt;
}

/// A scheduler under test with the ones it drives, and how one step of the case is taken.
struct Built {
  std::vector<std::unique_ptr<optim::LRScheduler>> owned;
  optim::LRScheduler* main = nullptr;
  std::function<void(int)> step;  // step(i): the case's i-th step; default main->step()

  template <class S, class... A>
  S* add(A&&... args) {
    auto s = std::make_unique<S>(std::forward<A>(args)...);
    S* p = s.get();
    owned.push_back(std::move(s));
    main = p;
    return p;
  }
  void do_step(int i) {
    if (step) step(i);
    else main->step();
  }
};
using Factory = std::function<void(Built&, optim::Optimizer&)>;

std::vector<double> ref_values(const std::string& key) { return sref.get(key).values; }

/// The rows recorded so far as a [rows, groups] tensor, checked against the reference.
void check_rows(const std::vector<std::vector<double>>& rows, const std::string& key) {
  const int64_t n = int64_t(rows.size()), g = int64_t(rows[0].size());
  dl::Tensor<double> t = dl::empty<double>({n, g});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < g; ++j) t.data()[i * g + j] = rows[size_t(i)][size_t(j)];
  sref.check(t, key, 1e-12);
}

std::vector<double> momenta(const optim::Optimizer& opt) {
  std::vector<double> m;
  for (size_t g = 0; g < opt.num_param_groups(); ++g) m.push_back(*opt.get_momentum(g));
  return m;
}

struct Run {
  std::vector<std::vector<double>> lr, momentum;
};

/// Records get_last_lr() (and the momenta) after construction and after each step; checks that
/// the optimizer's rates are the ones get_last_lr() reports.
void record(Run& run, Built& b, optim::Optimizer& opt) {
  const std::vector<double> last = b.main->get_last_lr();
  REQUIRE(last.size() == opt.num_param_groups());
  for (size_t g = 0; g < last.size(); ++g) CHECK(opt.get_lr(g) == last[g]);
  run.lr.push_back(last);
  run.momentum.push_back(momenta(opt));
}

/// Runs the case `name` as the generator did: `steps` steps, hook(i) before step i.
Run run_case(const std::string& name, const Factory& make, int steps = kSteps, std::vector<double> initial_lrs = {},
             const std::function<void(int, optim::Optimizer&)>& hook = {}) {
  auto opt = make_opt({0.1, 0.05}, initial_lrs);
  Built b;
  make(b, *opt);
  Run run;
  record(run, b, *opt);
  for (int i = 0; i < steps; ++i) {
    if (hook) hook(i, *opt);
    b.do_step(i);
    record(run, b, *opt);
  }
  check_rows(run.lr, name + "/lr");
  if (sref.has(name + "/momentum")) check_rows(run.momentum, name + "/momentum");
  return run;
}

// ------------------------------------------------------------------------------ the cases

double sin_scale(double x) { return 0.5 * (1 + std::sin(x * std::numbers::pi / 2)); }

const std::vector<std::pair<std::string, Factory>>& plain_cases() {
  using namespace optim;
  static const std::vector<std::pair<std::string, Factory>> cases = {
      {"step", [](Built& b, Optimizer& o) { b.add<StepLR>(o, StepLROptions{.step_size = 7, .gamma = 0.5}); }},
      {"step_default_gamma", [](Built& b, Optimizer& o) { b.add<StepLR>(o, StepLROptions{.step_size = 30}); }},
      {"multistep",
       [](Built& b, Optimizer& o) { b.add<MultiStepLR>(o, MultiStepLROptions{.milestones = {60, 10, 25, 25}, .gamma = 0.3}); }},
      {"exponential", [](Built& b, Optimizer& o) { b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.97}); }},
      {"cosine",
       [](Built& b, Optimizer& o) { b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 30, .eta_min = 0.001}); }},
      {"cosine_short", [](Built& b, Optimizer& o) { b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 7}); }},
      {"warm_restarts",
       [](Built& b, Optimizer& o) {
         b.add<CosineAnnealingWarmRestarts>(o, CosineAnnealingWarmRestartsOptions{.T_0 = 10, .T_mult = 2, .eta_min = 1e-3});
       }},
      {"warm_restarts_mult1",
       [](Built& b, Optimizer& o) { b.add<CosineAnnealingWarmRestarts>(o, CosineAnnealingWarmRestartsOptions{.T_0 = 7}); }},
      {"lambda",
       [](Built& b, Optimizer& o) {
         b.add<LambdaLR>(o, LambdaLROptions{.lr_lambda = {[](int64_t e) { return std::pow(0.95, double(e)); },
                                                          [](int64_t e) { return 1.0 / double(1 + e); }}});
       }},
      {"lambda_one",
       [](Built& b, Optimizer& o) {
         b.add<LambdaLR>(o, LambdaLROptions{.lr_lambda = [](int64_t e) { return e % 10 < 5 ? 0.5 : 1.0; }});
       }},
      {"multiplicative",
       [](Built& b, Optimizer& o) {
         b.add<MultiplicativeLR>(o, MultiplicativeLROptions{.lr_lambda = [](int64_t e) { return e % 3 ? 0.97 : 1.02; }});
       }},
      {"multiplicative_groups",
       [](Built& b, Optimizer& o) {
         b.add<MultiplicativeLR>(o, MultiplicativeLROptions{.lr_lambda = {[](int64_t) { return 0.9; },
                                                                          [](int64_t e) { return 1.0 + 0.01 * double(e); }}});
       }},
      {"linear",
       [](Built& b, Optimizer& o) {
         b.add<LinearLR>(o, LinearLROptions{.start_factor = 0.25, .end_factor = 0.9, .total_iters = 40});
       }},
      {"linear_default", [](Built& b, Optimizer& o) { b.add<LinearLR>(o); }},
      {"constant", [](Built& b, Optimizer& o) { b.add<ConstantLR>(o, ConstantLROptions{.factor = 0.5, .total_iters = 20}); }},
      {"constant_default", [](Built& b, Optimizer& o) { b.add<ConstantLR>(o); }},
      {"polynomial", [](Built& b, Optimizer& o) { b.add<PolynomialLR>(o, PolynomialLROptions{.total_iters = 60, .power = 2.0}); }},
      {"polynomial_default", [](Built& b, Optimizer& o) { b.add<PolynomialLR>(o); }},
      {"cyclic",
       [](Built& b, Optimizer& o) {
         b.add<CyclicLR>(o, CyclicLROptions{.base_lr = {0.01, 0.02}, .max_lr = {0.1, 0.2}, .step_size_up = 8, .step_size_down = 12});
       }},
      {"cyclic_tri2",
       [](Built& b, Optimizer& o) {
         b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 5, .mode = "triangular2",
                                            .base_momentum = {0.7, 0.75}, .max_momentum = 0.95});
       }},
      {"cyclic_exp",
       [](Built& b, Optimizer& o) {
         b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 6, .step_size_down = 4,
                                            .mode = "exp_range", .gamma = 0.97});
       }},
      {"cyclic_fn_cycle",
       [](Built& b, Optimizer& o) {
         b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 4, .scale_fn = sin_scale,
                                            .scale_mode = "cycle", .cycle_momentum = false});
       }},
      {"cyclic_fn_iter",
       [](Built& b, Optimizer& o) {
         b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 4, .scale_fn = sin_scale,
                                            .scale_mode = "iterations", .cycle_momentum = false});
       }},
      {"onecycle", [](Built& b, Optimizer& o) { b.add<OneCycleLR>(o, OneCycleLROptions{.max_lr = {0.1, 0.2}, .total_steps = 100}); }},
      {"onecycle_linear3",
       [](Built& b, Optimizer& o) {
         b.add<OneCycleLR>(o, OneCycleLROptions{.max_lr = 0.5, .epochs = 10, .steps_per_epoch = 10, .pct_start = 0.25,
                                                .anneal_strategy = "linear", .base_momentum = {0.8, 0.85}, .max_momentum = 0.9,
                                                .div_factor = 10.0, .final_div_factor = 100.0, .three_phase = true});
       }},
      {"onecycle_nomom",
       [](Built& b, Optimizer& o) {
         b.add<OneCycleLR>(o, OneCycleLROptions{.max_lr = 0.3, .total_steps = 100, .pct_start = 0.4, .cycle_momentum = false});
       }},
      {"chained",
       [](Built& b, Optimizer& o) {
         auto* e = b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.97});
         auto* s = b.add<StepLR>(o, StepLROptions{.step_size = 10, .gamma = 0.5});
         b.add<ChainedScheduler>(std::vector<LRScheduler*>{e, s});
       }},
      {"chained_constant_cosine",
       [](Built& b, Optimizer& o) {
         auto* c = b.add<ConstantLR>(o, ConstantLROptions{.factor = 0.1, .total_iters = 5});
         auto* s = b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 40, .eta_min = 0.002});
         b.add<ChainedScheduler>(std::vector<LRScheduler*>{c, s});
       }},
      {"sequential",
       [](Built& b, Optimizer& o) {
         auto* w = b.add<LinearLR>(o, LinearLROptions{.start_factor = 0.1, .total_iters = 10});
         auto* c = b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 90});
         b.add<SequentialLR>(o, std::vector<LRScheduler*>{w, c}, std::vector<int64_t>{10});
       }},
      {"sequential3",
       [](Built& b, Optimizer& o) {
         auto* c = b.add<ConstantLR>(o, ConstantLROptions{.factor = 0.5, .total_iters = 3});
         auto* e = b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.9});
         auto* s = b.add<StepLR>(o, StepLROptions{.step_size = 4, .gamma = 0.5});
         b.add<SequentialLR>(o, std::vector<LRScheduler*>{c, e, s}, std::vector<int64_t>{5, 30});
       }},
      {"sequential_restarts",
       [](Built& b, Optimizer& o) {
         auto* w = b.add<LinearLR>(o, LinearLROptions{.start_factor = 0.2, .total_iters = 8});
         auto* r = b.add<CosineAnnealingWarmRestarts>(o, CosineAnnealingWarmRestartsOptions{.T_0 = 15});
         b.add<SequentialLR>(o, std::vector<LRScheduler*>{w, r}, std::vector<int64_t>{8});
       }},
      {"sequential_nested",
       [](Built& b, Optimizer& o) {
         auto* c = b.add<ConstantLR>(o, ConstantLROptions{.factor = 0.5, .total_iters = 4});
         auto* e = b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.98});
         auto* chain = b.add<ChainedScheduler>(std::vector<LRScheduler*>{c, e});
         auto* cos = b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 50});
         b.add<SequentialLR>(o, std::vector<LRScheduler*>{chain, cos}, std::vector<int64_t>{20});
       }},
  };
  return cases;
}

Factory plateau_case(const std::string& name) {
  using namespace optim;
  ReduceLROnPlateauOptions o;
  if (name == "plateau_min_rel") o = {.mode = "min", .factor = 0.5, .patience = 3};
  else if (name == "plateau_min_abs")
    o = {.mode = "min", .factor = 0.5, .patience = 2, .threshold = 0.05, .threshold_mode = "abs", .cooldown = 3};
  else if (name == "plateau_max_rel") o = {.mode = "max", .factor = 0.3, .patience = 4, .threshold = 0.01, .min_lr = {0.01, 0.004}};
  else if (name == "plateau_max_abs")
    o = {.mode = "max", .factor = 0.5, .patience = 1, .threshold = 0.02, .threshold_mode = "abs", .cooldown = 2, .min_lr = 0.02,
         .eps = 0.004};
  else REQUIRE(name == "plateau_default");
  return [o, name](Built& b, Optimizer& opt) {
    auto* p = b.add<ReduceLROnPlateau>(opt, o);
    const std::vector<double> metric = ref_values(name + "/metric");
    b.step = [p, metric](int i) { p->step(metric[size_t(i)]); };
  };
}
const std::vector<std::string> plateau_names = {"plateau_min_rel", "plateau_min_abs", "plateau_max_rel", "plateau_max_abs",
                                                "plateau_default"};

Factory restarts_epochs_case(const std::string& name, int64_t T_0, int64_t T_mult) {
  return [=](Built& b, optim::Optimizer& o) {
    auto* s = b.add<optim::CosineAnnealingWarmRestarts>(
        o, optim::CosineAnnealingWarmRestartsOptions{.T_0 = T_0, .T_mult = T_mult, .eta_min = 0.01});
    const std::vector<double> epochs = ref_values(name + "/epochs");
    b.step = [s, epochs](int i) {
      if (epochs[size_t(i)] == -1) s->step();
      else s->step(epochs[size_t(i)]);
    };
  };
}

Factory find_case(const std::string& name) {
  for (const auto& [n, f] : plain_cases())
    if (n == name) return f;
  for (const auto& n : plateau_names)
    if (n == name) return plateau_case(n);
  FAIL("no case " << name);
  return {};
}

/// A minimal optimizer with learning rates only (no momentum), for the cycle_momentum error paths.
class LrOnly : public optim::Optimizer {
 public:
  explicit LrOnly(std::vector<double> lrs) : lrs_(std::move(lrs)) {}
  void step() override {}
  void zero_grad(bool) override {}
  size_t num_param_groups() const override { return lrs_.size(); }
  double get_lr(size_t g) const override { return lrs_.at(g); }
  void set_lr(size_t g, double lr) override { lrs_.at(g) = lr; }
  std::string name() const override { return "LrOnly"; }
  dl::StateDict state_dict() const override { return {}; }
  void load_state_dict(const dl::StateDict&) override {}

 private:
  std::vector<double> lrs_;
};

}  // namespace

// ------------------------------------------------------------------------------ sequences

TEST_CASE("lr_scheduler: every scheduler's sequence matches PyTorch") {
  for (const auto& [name, make] : plain_cases()) {
    CAPTURE(name);
    run_case(name, make);
  }
}

TEST_CASE("lr_scheduler: CosineAnnealingWarmRestarts.step(epoch) with fractional and backward epochs") {
  run_case("warm_restarts_epochs", restarts_epochs_case("warm_restarts_epochs", 5, 3), 23);
  run_case("warm_restarts_epochs_mult1", restarts_epochs_case("warm_restarts_epochs_mult1", 6, 1), 23);
  auto opt = make_opt();
  optim::CosineAnnealingWarmRestarts s(*opt, {.T_0 = 5, .T_mult = 3});
  s.step(20.5);  // 5 + 15 = 20: the third period (45 epochs) has begun
  CHECK(s.T_i() == 45);
  CHECK(s.T_cur() == doctest::Approx(0.5));
  CHECK(s.last_epoch() == 20);
}

TEST_CASE("lr_scheduler: ReduceLROnPlateau on a metric sequence, both modes and threshold modes") {
  for (const auto& name : plateau_names) {
    CAPTURE(name);
    run_case(name, plateau_case(name));
  }
  SUBCASE("counters") {
    auto opt = make_opt();
    optim::ReduceLROnPlateau p(*opt, {.factor = 0.5, .patience = 1, .cooldown = 2});
    CHECK(p.last_epoch() == 0);
    CHECK(p.get_last_lr() == std::vector<double>{0.1, 0.05});
    p.step(1.0);
    CHECK(p.best() == 1.0);
    p.step(1.0);
    CHECK(p.num_bad_epochs() == 1);
    p.step(1.0);  // a second bad epoch: reduce, then cool down
    CHECK(opt->get_lr(0) == doctest::Approx(0.05));
    CHECK(p.in_cooldown());
    CHECK(p.cooldown_counter() == 2);
    p.step(2.0);
    p.step(2.0);
    CHECK(p.num_bad_epochs() == 0);
    CHECK(!p.in_cooldown());
    CHECK(p.last_epoch() == 5);
  }
}

TEST_CASE("lr_scheduler: a group lr changed by hand is respected by chainable schedulers") {
  using namespace optim;
  struct Change {
    int step;
    size_t group;
    double lr;
  };
  auto hook_for = [](std::vector<Change> changes) {
    return [changes](int i, Optimizer& o) {
      for (const auto& c : changes)
        if (c.step == i) o.set_lr(c.group, c.lr);
    };
  };
  run_case("changed_exponential", [](Built& b, Optimizer& o) { b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.95}); },
           kSteps, {}, hook_for({{40, 0, 0.3}, {60, 1, 0.01}}));
  run_case("changed_cosine",
           [](Built& b, Optimizer& o) { b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 50, .eta_min = 0.001}); },
           kSteps, {}, hook_for({{20, 0, 0.2}}));
  run_case("changed_step", [](Built& b, Optimizer& o) { b.add<StepLR>(o, StepLROptions{.step_size = 10, .gamma = 0.5}); }, kSteps,
           {}, hook_for({{15, 1, 0.5}}));
  // LambdaLR is not chainable: the change lasts until the next step.
  run_case("changed_lambda",
           [](Built& b, Optimizer& o) {
             b.add<LambdaLR>(o, LambdaLROptions{.lr_lambda = [](int64_t e) { return std::pow(0.99, double(e)); }});
           },
           kSteps, {}, hook_for({{30, 0, 1.0}}));
}

TEST_CASE("lr_scheduler: constructed with last_epoch >= 0 (resuming) from the groups' initial_lr") {
  using namespace optim;
  const std::vector<double> lr0 = {0.2, 0.08};
  run_case("resume_step", [](Built& b, Optimizer& o) { b.add<StepLR>(o, StepLROptions{.step_size = 5, .gamma = 0.5, .last_epoch = 12}); },
           kSteps, lr0);
  run_case("resume_multistep",
           [](Built& b, Optimizer& o) { b.add<MultiStepLR>(o, MultiStepLROptions{.milestones = {15, 20}, .last_epoch = 12}); }, kSteps,
           lr0);
  run_case("resume_exponential",
           [](Built& b, Optimizer& o) { b.add<ExponentialLR>(o, ExponentialLROptions{.gamma = 0.9, .last_epoch = 12}); }, kSteps, lr0);
  run_case("resume_cosine",
           [](Built& b, Optimizer& o) { b.add<CosineAnnealingLR>(o, CosineAnnealingLROptions{.T_max = 20, .last_epoch = 12}); },
           kSteps, lr0);
  run_case("resume_warm_restarts",
           [](Built& b, Optimizer& o) {
             b.add<CosineAnnealingWarmRestarts>(o, CosineAnnealingWarmRestartsOptions{.T_0 = 10, .T_mult = 2, .last_epoch = 12});
           },
           kSteps, lr0);
  run_case("resume_linear", [](Built& b, Optimizer& o) { b.add<LinearLR>(o, LinearLROptions{.last_epoch = 3}); }, kSteps, lr0);
  run_case("resume_polynomial",
           [](Built& b, Optimizer& o) { b.add<PolynomialLR>(o, PolynomialLROptions{.total_iters = 30, .last_epoch = 5}); }, kSteps,
           lr0);
  run_case("resume_lambda",
           [](Built& b, Optimizer& o) {
             b.add<LambdaLR>(o, LambdaLROptions{.lr_lambda = [](int64_t e) { return std::pow(0.9, double(e)); }, .last_epoch = 12});
           },
           kSteps, lr0);
  run_case("resume_cyclic",
           [](Built& b, Optimizer& o) {
             b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 5, .last_epoch = 12});
           },
           kSteps, lr0);
  run_case("resume_onecycle",
           [](Built& b, Optimizer& o) {
             b.add<OneCycleLR>(o, OneCycleLROptions{.max_lr = {5.0, 2.0}, .total_steps = 100, .last_epoch = 12});
           },
           kSteps - 13, lr0);
  // An initial_lr left by an earlier scheduler is where CyclicLR's initial step starts.
  run_case("cyclic_preset",
           [](Built& b, Optimizer& o) { b.add<CyclicLR>(o, CyclicLROptions{.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 3}); },
           kSteps, {0.07, 0.03});
}

TEST_CASE("lr_scheduler: resuming from state dicts continues the same sequence") {
  const std::vector<std::string> names = {"step",       "multistep",         "cosine",          "warm_restarts", "lambda",
                                          "multiplicative", "linear",        "constant",        "polynomial",    "cyclic",
                                          "cyclic_exp", "onecycle",          "onecycle_linear3", "chained",       "sequential",
                                          "sequential3", "sequential_nested", "plateau_min_abs", "plateau_max_rel"};
  constexpr int kSplit = 40;
  for (const auto& name : names) {
    CAPTURE(name);
    const Factory make = find_case(name);
    auto opt = make_opt();
    Built b;
    make(b, *opt);
    Run run;
    record(run, b, *opt);
    for (int i = 0; i < kSplit; ++i) {
      b.do_step(i);
      record(run, b, *opt);
    }
    const dl::StateDict opt_sd = opt->state_dict();
    const dl::StateDict sd = b.main->state_dict();
    // A fresh run: the scheduler is built first (it resets the rates), then both states are loaded.
    auto opt2 = make_opt();
    Built b2;
    make(b2, *opt2);
    opt2->load_state_dict(opt_sd);
    b2.main->load_state_dict(sd);
    CHECK(b2.main->get_last_lr() == b.main->get_last_lr());
    CHECK(b2.main->last_epoch() == b.main->last_epoch());
    for (int i = kSplit; i < kSteps; ++i) {
      b2.do_step(i);
      record(run, b2, *opt2);
    }
    check_rows(run.lr, name + "/lr");
    if (sref.has(name + "/momentum")) check_rows(run.momentum, name + "/momentum");
  }
}

TEST_CASE("lr_scheduler: state dicts survive a safetensors file") {
  const std::string path = (std::filesystem::temp_directory_path() / "dl_test_lr_scheduler.safetensors").string();
  for (const std::string name : {"plateau_max_rel", "sequential3", "cyclic_tri2"}) {
    CAPTURE(name);
    const Factory make = find_case(name);
    auto opt = make_opt();
    Built b;
    make(b, *opt);
    for (int i = 0; i < 30; ++i) b.do_step(i);
    dl::save(b.main->state_dict(), path);
    auto opt2 = make_opt();
    Built b2;
    make(b2, *opt2);
    opt2->load_state_dict(opt->state_dict());
    b2.main->load_state_dict(dl::load(path));
    for (int i = 30; i < 60; ++i) {
      b.do_step(i);
      b2.do_step(i);
      CHECK(b2.main->get_last_lr() == b.main->get_last_lr());
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("lr_scheduler: state_dict holds the scheduler's numbers under PyTorch's names") {
  auto opt = make_opt();
  optim::StepLR s(*opt, {.step_size = 3, .gamma = 0.5});
  for (int i = 0; i < 7; ++i) s.step();
  const dl::StateDict sd = s.state_dict();
  CHECK(sd.get<int64_t>("last_epoch").item() == 7);
  CHECK(sd.get<int64_t>("step_size").item() == 3);
  CHECK(sd.get<double>("gamma").item() == 0.5);
  CHECK(sd.get<int64_t>("_step_count").item() == 8);
  CHECK(sd.get<double>("base_lrs").shape() == dl::Shape{2});
  CHECK(sd.get<double>("_last_lr").data()[1] == doctest::Approx(0.05 * 0.25));
  CHECK(sd.metadata.at("scheduler") == "StepLR");

  optim::ReduceLROnPlateau p(*opt, {.min_lr = {0.1, 0.2}});
  const dl::StateDict psd = p.state_dict();
  CHECK(std::isinf(psd.get<double>("best").item()));
  CHECK(!psd.contains("default_min_lr"));  // None: min_lr was given per group
  CHECK(psd.metadata.at("mode") == "min");

  auto opt2 = make_opt();
  optim::LinearLR w(*opt2);
  optim::ExponentialLR e(*opt2, {.gamma = 0.9});
  optim::SequentialLR seq(*opt2, {&w, &e}, {5});
  const dl::StateDict ssd = seq.state_dict();
  CHECK(ssd.contains("_schedulers.0.start_factor"));
  CHECK(ssd.contains("_schedulers.1.gamma"));
  CHECK(ssd.metadata.at("_schedulers.1.scheduler") == "ExponentialLR");
  CHECK(ssd.get<int64_t>("_milestones").data()[0] == 5);
}

// ------------------------------------------------------------------------------ behaviour

TEST_CASE("lr_scheduler: construction sets initial_lr and makes the initial step") {
  auto opt = make_opt();
  optim::StepLR s(*opt, {.step_size = 2});
  CHECK(s.last_epoch() == 0);
  CHECK(*opt->initial_lr(0) == 0.1);
  CHECK(*opt->initial_lr(1) == 0.05);
  CHECK(s.base_lrs() == std::vector<double>{0.1, 0.05});
  CHECK(&s.optimizer() == opt.get());
  CHECK(s.name() == "StepLR");
  // A second scheduler keeps the initial_lr it finds: its base_lrs are the first rates.
  opt->set_lr(0, 0.7);
  optim::ExponentialLR e(*opt, {.gamma = 0.5});
  CHECK(e.base_lrs() == std::vector<double>{0.1, 0.05});
  CHECK(e.get_last_lr() == std::vector<double>{0.7, 0.05});
}

TEST_CASE("lr_scheduler: CyclicLR and OneCycleLR cycle Adam's beta1") {
  auto make = [](Built& b, optim::Optimizer& o, const std::string& name) {
    if (name == "onecycle_adam") b.add<optim::OneCycleLR>(o, optim::OneCycleLROptions{.max_lr = {0.01, 0.02}, .total_steps = 100});
    else
      b.add<optim::CyclicLR>(o, optim::CyclicLROptions{.base_lr = 1e-3, .max_lr = 1e-2, .step_size_up = 7, .base_momentum = 0.85,
                                                       .max_momentum = 0.95});
  };
  for (const std::string name : {"onecycle_adam", "cyclic_adam"}) {
    CAPTURE(name);
    std::vector<optim::Adam<float>::GroupSpec> groups;
    for (double lr : {0.1, 0.05}) groups.push_back({{dl::zeros<float>({1})}, {.lr = lr}});
    optim::Adam<float> adam(groups, {.betas = {0.9, 0.99}});
    Built b;
    make(b, adam, name);
    Run run;
    record(run, b, adam);
    for (int i = 0; i < kSteps; ++i) {
      b.do_step(i);
      record(run, b, adam);
    }
    check_rows(run.lr, name + "/lr");
    check_rows(run.momentum, name + "/momentum");
    CHECK(adam.param_groups()[1].options.betas.second == 0.99);  // beta2 is left alone
  }
}

TEST_CASE("lr_scheduler: CyclicLR and OneCycleLR cycle SGD's momentum") {
  auto opt = make_opt();
  optim::CyclicLR c(*opt, {.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 2});
  CHECK(*opt->get_momentum(0) == doctest::Approx(0.9));
  c.step();
  CHECK(*opt->get_momentum(0) == doctest::Approx(0.85));
  c.step();
  CHECK(*opt->get_momentum(1) == doctest::Approx(0.8));
  CHECK(opt->get_lr(1) == doctest::Approx(0.1));

  // Without cycle_momentum the momentum is left alone, on any optimizer.
  LrOnly plain({0.1});
  optim::OneCycleLR oc(plain, {.max_lr = 1.0, .total_steps = 10, .cycle_momentum = false});
  CHECK(plain.get_lr(0) == doctest::Approx(0.04));
  CHECK(oc.total_steps() == 10);
}

namespace {
/// A scheduler written outside the library: halves the rates every second epoch.
class Halving : public optim::LRScheduler {
 public:
  explicit Halving(optim::Optimizer& o, int64_t last_epoch = -1) : LRScheduler(o) { init(last_epoch); }
  std::string name() const override { return "Halving"; }
  std::vector<double> get_lr() override {
    std::vector<double> lrs = group_lrs();
    if (last_epoch_ > 0 && last_epoch_ % 2 == 0)
      for (double& lr : lrs) lr /= 2;
    return lrs;
  }
};
}  // namespace

TEST_CASE("lr_scheduler: a custom scheduler composes with the library's") {
  auto opt = make_opt();
  Halving h(*opt);
  optim::ExponentialLR e(*opt, {.gamma = 0.9});
  optim::ChainedScheduler chain({&h, &e});
  for (int i = 1; i <= 9; ++i) {
    chain.step();
    const double expect = 0.05 * std::pow(0.5, i / 2) * std::pow(0.9, i);
    CHECK(chain.get_last_lr()[1] == doctest::Approx(expect).epsilon(1e-14));
  }
  CHECK(chain.last_epoch() == 9);
  const dl::StateDict sd = chain.state_dict();
  CHECK(sd.metadata.at("_schedulers.0.scheduler") == "Halving");
  CHECK(sd.get<int64_t>("_schedulers.0.last_epoch").item() == 9);

  optim::ReduceLROnPlateau p(*opt, {.patience = 0});
  p.step(dl::scalar_tensor<float>(1.0f));
  p.step(dl::tensor<double>({2.0}));
  CHECK(p.get_last_lr()[0] == doctest::Approx(0.1 * std::pow(0.5, 4) * std::pow(0.9, 9) * 0.1));
  CHECK_THROWS_WITH_AS(p.step(dl::tensor<double>({1.0, 2.0})), Contains("the metric must have one element"), Error);
}

// ------------------------------------------------------------------------------ errors

TEST_CASE("lr_scheduler: errors name PyTorch's reasons") {
  using namespace optim;
  auto opt = make_opt();
  Optimizer& o = *opt;

  SUBCASE("resuming without initial_lr") {
    CHECK_THROWS_WITH_AS(StepLR(o, {.step_size = 3, .last_epoch = 5}),
                         Contains("param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with last_epoch >= 0"),
                         Error);
  }
  SUBCASE("factors and periods") {
    CHECK_THROWS_WITH_AS(ConstantLR(o, {.factor = 1.5}), Contains("Constant multiplicative factor expected to be between 0 and 1."),
                         Error);
    CHECK_THROWS_WITH_AS(LinearLR(o, {.start_factor = 0}),
                         Contains("Starting multiplicative factor expected to be greater than 0 and less or equal to 1."), Error);
    CHECK_THROWS_WITH_AS(LinearLR(o, {.end_factor = 1.5}), Contains("Ending multiplicative factor expected to be between 0 and 1."),
                         Error);
    CHECK_THROWS_WITH_AS(ExponentialLR(o, {}), Contains("ExponentialLR: gamma is required"), Error);
    CHECK_THROWS_WITH_AS(CosineAnnealingWarmRestarts(o, {.T_0 = -1}), Contains("Expected positive integer T_0, but got -1"), Error);
    CHECK_THROWS_WITH_AS(CosineAnnealingWarmRestarts(o, {.T_0 = 5, .T_mult = 0}), Contains("Expected integer T_mult >= 1, but got 0"),
                         Error);
    CosineAnnealingWarmRestarts r(o, {.T_0 = 5});
    CHECK_THROWS_WITH_AS(r.step(-1.0), Contains("Expected non-negative epoch, but got -1"), Error);
    StepLR s(o, {.step_size = 0});  // PyTorch fails at the first step that divides, too
    CHECK_THROWS_WITH_AS(s.step(), Contains("integer division or modulo by zero"), Error);
    CosineAnnealingLR c(o, {.T_max = 0});
    CHECK_THROWS_WITH_AS(c.step(), Contains("integer division or modulo by zero"), Error);
  }
  SUBCASE("lambdas") {
    auto f = [](int64_t) { return 1.0; };
    CHECK_THROWS_WITH_AS(LambdaLR(o, {.lr_lambda = {f, f, f}}), Contains("Expected 2 lr_lambdas, but got 3"), Error);
    CHECK_THROWS_WITH_AS(MultiplicativeLR(o, {.lr_lambda = LRLambda()}), Contains("lr_lambda should be a function"), Error);
    CHECK_THROWS_WITH_AS(LambdaLR(o, {}), Contains("lr_lambda is required"), Error);
  }
  SUBCASE("ReduceLROnPlateau") {
    CHECK_THROWS_WITH_AS(ReduceLROnPlateau(o, {.factor = 1.0}), Contains("Factor should be < 1.0."), Error);
    CHECK_THROWS_WITH_AS(ReduceLROnPlateau(o, {.mode = "avg"}), Contains("mode avg is unknown!"), Error);
    CHECK_THROWS_WITH_AS(ReduceLROnPlateau(o, {.threshold_mode = "pct"}), Contains("threshold mode pct is unknown!"), Error);
    CHECK_THROWS_WITH_AS(ReduceLROnPlateau(o, {.min_lr = {0.1, 0.2, 0.3}}), Contains("expected 2 min_lrs, got 3"), Error);
    ReduceLROnPlateau p(o);
    CHECK_THROWS_WITH_AS(p.step(), Contains("call step(metric)"), Error);
    CHECK_THROWS_AS(p.get_lr(), Error);
  }
  SUBCASE("ReduceLROnPlateau after a param group was added") {
    ReduceLROnPlateau fixed(o, {.patience = 0, .min_lr = {0.0, 0.0}});
    ReduceLROnPlateau shared(o, {.patience = 0});
    opt->add_param_group({{dl::zeros<float>({1})}, {.lr = 0.2}});
    fixed.step(1.0);
    CHECK_THROWS_WITH_AS(fixed.step(2.0),
                         Contains("The number of param groups in the `optimizer` (3) differs from when `ReduceLROnPlateau` was "
                                  "initialized (2)"),
                         Error);
    shared.step(1.0);
    shared.step(2.0);  // one default min_lr: extended to the new group
    CHECK(shared.get_last_lr().size() == 3);
    CHECK(opt->get_lr(2) == doctest::Approx(0.02));
  }
  SUBCASE("CyclicLR") {
    CHECK_THROWS_WITH_AS(CyclicLR(o, {.base_lr = 0.01, .max_lr = 0.1, .mode = "sine"}), Contains("mode is invalid and scale_fn is None"),
                         Error);
    CHECK_THROWS_WITH_AS(CyclicLR(o, {.base_lr = {0.01, 0.02, 0.03}, .max_lr = 0.1}),
                         Contains("base_lr must have the same length as optimizer.param_groups. base_lr has 3 values, param_groups has 2."),
                         Error);
    CHECK_THROWS_WITH_AS(CyclicLR(o, {.base_lr = 0.01, .max_lr = 0.1, .base_momentum = {0.8}}),
                         Contains("base_momentum must have the same length as optimizer.param_groups"), Error);
    LrOnly plain({0.1, 0.2});
    CHECK_THROWS_WITH_AS(CyclicLR(plain, {.base_lr = 0.01, .max_lr = 0.1}),
                         Contains("optimizer must support momentum or beta1 with `cycle_momentum` option enabled"), Error);
    CyclicLR ok(plain, {.base_lr = 0.01, .max_lr = 0.1, .cycle_momentum = false});
    CHECK(plain.get_lr(1) == 0.01);
  }
  SUBCASE("OneCycleLR") {
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .total_steps = 0}), Contains("Expected positive integer total_steps, but got 0"),
                         Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .epochs = -1, .steps_per_epoch = 10}),
                         Contains("Expected positive integer epochs, but got -1"), Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .epochs = 2, .steps_per_epoch = 0}),
                         Contains("Expected positive integer steps_per_epoch, but got 0"), Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .epochs = 2}),
                         Contains("You must define either total_steps OR (epochs AND steps_per_epoch)"), Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .total_steps = 10, .pct_start = 1.5}),
                         Contains("Expected float between 0 and 1 pct_start, but got 1.5"), Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = 0.1, .total_steps = 10, .anneal_strategy = "quad"}),
                         Contains("anneal_strategy must be one of 'cos' or 'linear', instead got quad"), Error);
    CHECK_THROWS_WITH_AS(OneCycleLR(o, {.max_lr = {0.1, 0.2, 0.3}, .total_steps = 10}),
                         Contains("max_lr must have the same length as optimizer.param_groups. max_lr has 3 values, param_groups has 2."),
                         Error);
    LrOnly plain({0.1});
    CHECK_THROWS_WITH_AS(OneCycleLR(plain, {.max_lr = 0.1, .total_steps = 10}),
                         Contains("optimizer must support momentum or beta1 with `cycle_momentum` option enabled"), Error);
    optim::Adagrad<float> adagrad(std::vector<dl::Tensor<float>>{dl::zeros<float>({1})});
    CHECK_THROWS_WITH_AS(OneCycleLR(adagrad, {.max_lr = 0.1, .total_steps = 10}),
                         Contains("optimizer must support momentum or beta1 with `cycle_momentum` option enabled (OneCycleLR on Adagrad)"),
                         Error);
    OneCycleLR s(o, {.max_lr = 0.1, .total_steps = 10});
    for (int i = 0; i < 10; ++i) s.step();
    CHECK_THROWS_WITH_AS(s.step(), Contains("Tried to step 11 times. The specified number of total steps is 10"), Error);
  }
  SUBCASE("SequentialLR and ChainedScheduler") {
    auto other = make_opt();
    StepLR a(o, {.step_size = 3});
    StepLR b(*other, {.step_size = 3});
    ReduceLROnPlateau p(o);
    CHECK_THROWS_WITH_AS(SequentialLR(o, {}, {}), Contains("SequentialLR expects at least one scheduler, but got no scheduler."), Error);
    CHECK_THROWS_WITH_AS(SequentialLR(o, {&a, &b}, {3}),
                         Contains("SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler StepLR at index 1"),
                         Error);
    CHECK_THROWS_WITH_AS(SequentialLR(o, {&a, &p}, {3}),
                         Contains("SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs"),
                         Error);
    CHECK_THROWS_WITH_AS(SequentialLR(o, {&a, &a}, {3, 4}),
                         Contains("Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                                  "milestone points, but got number of schedulers 2 and the number of milestones to be equal to 2"),
                         Error);
    CHECK_THROWS_WITH_AS(ChainedScheduler({}), Contains("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
                         Error);
    CHECK_THROWS_WITH_AS(ChainedScheduler({&a, &b}),
                         Contains("ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler StepLR at index 1"),
                         Error);
    CHECK_THROWS_WITH_AS(ChainedScheduler({&a}, other.get()), Contains("at index 0"), Error);
    CHECK_THROWS_WITH_AS(ChainedScheduler({&p}), Contains("ChainedScheduler does not support `ReduceLROnPlateau` scheduler"), Error);
    // A composite scheduler has no closed form to restart from at a milestone (PyTorch: NotImplementedError).
    StepLR c(o, {.step_size = 3});
    ChainedScheduler chain({&c});
    SequentialLR seq(o, {&a, &chain}, {2});
    seq.step();
    CHECK_THROWS_WITH_AS(seq.step(), Contains("ChainedScheduler has no get_lr"), Error);
  }
  SUBCASE("load_state_dict") {
    StepLR s(o, {.step_size = 3});
    ExponentialLR e(o, {.gamma = 0.5});
    for (int i = 0; i < 4; ++i) e.step();
    CHECK_THROWS_WITH_AS(e.load_state_dict(s.state_dict()), Contains("loaded state dict is for StepLR, not ExponentialLR"), Error);
    dl::StateDict sd = e.state_dict();
    sd.erase("gamma");
    sd.insert("last_epoch", dl::scalar_tensor<int64_t>(99));
    CHECK_THROWS_WITH_AS(e.load_state_dict(sd), Contains("scheduler state dict: missing gamma"), Error);
    CHECK(e.last_epoch() == 4);  // nothing changed
    dl::StateDict bad = e.state_dict();
    bad.insert("base_lrs", dl::tensor<double>({1.0, 2.0, 3.0}));
    CHECK_THROWS_WITH_AS(e.load_state_dict(bad), Contains("base_lrs has 3 values, expected 2"), Error);
    ReduceLROnPlateau p(o);
    dl::StateDict psd = p.state_dict();
    psd.metadata["mode"] = "median";
    CHECK_THROWS_WITH_AS(p.load_state_dict(psd), Contains("mode median is unknown!"), Error);
  }
}
