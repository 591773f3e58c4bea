// Tests of dl/optim.hpp's optimizers: 20-step trajectories of every algorithm and option against
// PyTorch 2 (tests/data/optim_ref.bin, written by tests/gen_optim_reference.py) in float and double,
// NAdam's and ASGD's double trajectories with float64 as PyTorch's default dtype (its scalars in double:
// tests/data/optim_double_ref.bin, tests/gen_optim_double_reference.py),
// parameters after every step and state at steps 1, 10 and 20; parameter groups and in-place
// learning-rate changes; LBFGS with and without the strong Wolfe line search; state-dict round
// trips that continue exactly as an uninterrupted run; error paths.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/optim.hpp>

#include "refbin.hpp"

namespace optim = dl::optim;
using dl::Shape;
using dl::Tensor;

namespace {

const refbin::File ref("optim_ref.bin");
const refbin::File double_ref("optim_double_ref.bin");  // NAdam and ASGD, float64 default dtype
constexpr int kSteps = 20;

template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-9;
}
template <class T>
std::string dtype_key() {
  return std::is_same_v<T, float> ? "f32" : "f64";
}

/// The generator's gradient: 0.3 p^2 - c p + 0.5 d(t).
template <class T>
Tensor<T> grad_of(const Tensor<T>& p, int i, int t) {
  const Tensor<T> c = refbin::det<T>(p.shape(), 50 + i), d = refbin::det<T>(p.shape(), 100 + 7 * t + i);
  return Tensor<T>(p * p * T(0.3) - p * c + d * T(0.5));
}

template <class T>
std::vector<Tensor<T>> make_params() {
  return {refbin::det<T>({3, 4}, 1).requires_grad_(), refbin::det<T>({5}, 2).requires_grad_()};
}

/// Every state tensor PyTorch has at this step equals ours, and we have no other. float32_state names a
/// scalar the reference holds in float32 where ours is double: compared to float32's precision.
template <class T>
void check_state(const dl::StateDict& sd, const std::string& prefix, int i, const refbin::File& ref = ::ref,
                 const std::string& float32_state = "") {
  const std::vector<std::string> names = ref.keys_with_prefix(prefix + "/s" + std::to_string(i) + "/");
  for (const auto& n : names) {
    const std::string key = "state." + std::to_string(i) + "." + n;
    INFO(prefix, " ", key);
    REQUIRE(sd.contains(key));
    const dl::AnyTensor& t = sd.at(key);
    Tensor<double> v = t.is<double>() ? t.as<double>() : t.is<int64_t>() ? t.as<int64_t>().to<double>() : t.as<T>().template to<double>();
    const refbin::Array& r = ref.get(prefix + "/s" + std::to_string(i) + "/" + n);
    if (r.shape.size() == 0) v = v.reshape({});
    ref.check(v, prefix + "/s" + std::to_string(i) + "/" + n, std::is_same_v<T, float> || n == float32_state ? 2e-5 : 1e-9);
  }
  for (const auto& [k, t] : sd) {
    const std::string sp = "state." + std::to_string(i) + ".";
    if (k.compare(0, sp.size(), sp) == 0) CHECK_MESSAGE(ref.has(prefix + "/s" + std::to_string(i) + "/" + k.substr(sp.size())), k);
  }
}

/// Runs a generator case: make(params) builds the optimizer.
template <class T, class Make>
void run_case(const std::string& name, Make make, bool lr_change = false, const refbin::File& ref = ::ref,
              const std::string& float32_state = "") {
  auto ps = make_params<T>();
  auto opt = make(ps);
  for (int t = 1; t <= kSteps; ++t) {
    for (int i = 0; i < 2; ++i)
      ps[size_t(i)].mutable_grad() = (i == 1 && t == 5) ? Tensor<T>() : grad_of(ps[size_t(i)].detach(), i, t);
    if (lr_change && t == 10) opt.param_groups()[0].options.lr *= 0.1;
    opt.step();
    const std::string prefix = name + "/" + dtype_key<T>() + "/" + std::to_string(t);
    INFO(prefix);
    for (int i = 0; i < 2; ++i) ref.check(ps[size_t(i)].detach(), prefix + "/p" + std::to_string(i), tol<T>());
    if (t == 1 || t == 10 || t == kSteps) {
      const dl::StateDict sd = opt.state_dict();
      for (int i = 0; i < 2; ++i) check_state<T>(sd, prefix, i, ref, float32_state);
    }
  }
}

template <template <class> class Opt, class Options>
void run_both(const std::string& name, Options o) {
  SUBCASE((name + " float").c_str()) { run_case<float>(name, [&](auto& ps) { return Opt<float>(ps, o); }); }
  SUBCASE((name + " double").c_str()) { run_case<double>(name, [&](auto& ps) { return Opt<double>(ps, o); }); }
}

/// NAdam and ASGD keep scalars of their state in PyTorch's default dtype: float parameters against
/// PyTorch with float32 (optim_ref.bin), double ones against PyTorch with float64 (optim_double_ref.bin).
template <template <class> class Opt, class Options>
void run_default_dtype(const std::string& name, Options o) {
  SUBCASE((name + " float").c_str()) { run_case<float>(name, [&](auto& ps) { return Opt<float>(ps, o); }); }
  SUBCASE((name + " double").c_str()) {
    run_case<double>(name, [&](auto& ps) { return Opt<double>(ps, o); }, false, double_ref);
  }
}

/// The generator's LBFGS objective.
template <class T>
Tensor<T> lbfgs_loss(const std::vector<Tensor<T>>& ps) {
  const Tensor<T> a = ps[0].reshape({-1});
  const Tensor<T> x = a.slice(0, 0, a.size(0) - 1), y = a.slice(0, 1);
  const Tensor<T>& b = ps[1];
  Tensor<T> l1 = (T(1) - x).pow(2).sum();
  Tensor<T> l2 = (y - x * x).pow(2).sum();
  Tensor<T> l3 = (b - T(0.5)).pow(4).sum();
  Tensor<T> l4 = (b * b).sum();
  return Tensor<T>(l1 + l2 * T(2) + l3 + l4 * T(0.1));
}

}  // namespace

TEST_CASE("SGD trajectories") {
  run_both<optim::SGD>("sgd", optim::SGDOptions{.lr = 0.1});
  run_both<optim::SGD>("sgd_momentum", optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  run_both<optim::SGD>("sgd_dampening_wd", optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
  run_both<optim::SGD>("sgd_nesterov", optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.02, .nesterov = true});
  run_both<optim::SGD>("sgd_maximize", optim::SGDOptions{.lr = 0.01, .momentum = 0.5, .maximize = true});
}

TEST_CASE("Adam and AdamW trajectories") {
  run_both<optim::Adam>("adam", optim::AdamOptions{.lr = 0.01});
  run_both<optim::Adam>("adam_amsgrad", optim::AdamOptions{.lr = 0.02, .betas = {0.8, 0.99}, .amsgrad = true});
  run_both<optim::Adam>("adam_wd_maximize", optim::AdamOptions{.lr = 0.01, .eps = 1e-6, .weight_decay = 0.1, .maximize = true});
  run_both<optim::Adam>("adam_decoupled", optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true});
  run_both<optim::AdamW>("adamw", optim::AdamWOptions{.lr = 0.01});
  run_both<optim::AdamW>("adamw_amsgrad", optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.05, .amsgrad = true, .maximize = true});
}

TEST_CASE("Adamax, NAdam and RAdam trajectories") {
  run_both<optim::Adamax>("adamax", optim::AdamaxOptions{});
  run_both<optim::Adamax>("adamax_wd_maximize", optim::AdamaxOptions{.lr = 0.01, .betas = {0.8, 0.9}, .weight_decay = 0.1, .maximize = true});
  run_default_dtype<optim::NAdam>("nadam", optim::NAdamOptions{});
  run_default_dtype<optim::NAdam>("nadam_wd", optim::NAdamOptions{.lr = 0.01, .weight_decay = 0.1, .momentum_decay = 0.01});
  {
    // No float64-default twin (PyTorch 1.13's NAdam has neither option): the double run against PyTorch 2
    // with float32 scalars, whose mu_product differs from ours by float32's rounding.
    const optim::NAdamOptions o{.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true, .maximize = true};
    SUBCASE("nadam_decoupled_maximize float") {
      run_case<float>("nadam_decoupled_maximize", [&](auto& ps) { return optim::NAdam<float>(ps, o); });
    }
    SUBCASE("nadam_decoupled_maximize double") {
      run_case<double>("nadam_decoupled_maximize", [&](auto& ps) { return optim::NAdam<double>(ps, o); }, false, ref, "mu_product");
    }
  }
  run_both<optim::RAdam>("radam", optim::RAdamOptions{.lr = 0.01});
  run_both<optim::RAdam>("radam_wd", optim::RAdamOptions{.lr = 0.01, .betas = {0.9, 0.9}, .weight_decay = 0.1});
  run_both<optim::RAdam>("radam_decoupled_maximize",
                         optim::RAdamOptions{.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true, .maximize = true});
}

TEST_CASE("Adagrad, Adadelta, RMSprop, Rprop and ASGD trajectories") {
  run_both<optim::Adagrad>("adagrad", optim::AdagradOptions{.lr = 0.1});
  run_both<optim::Adagrad>("adagrad_options", optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.1, .weight_decay = 0.05,
                                                                     .initial_accumulator_value = 0.5, .eps = 1e-8, .maximize = true});
  run_both<optim::Adadelta>("adadelta", optim::AdadeltaOptions{});
  run_both<optim::Adadelta>("adadelta_options", optim::AdadeltaOptions{.lr = 0.5, .rho = 0.5, .eps = 1e-4, .weight_decay = 0.1, .maximize = true});
  run_both<optim::RMSprop>("rmsprop", optim::RMSpropOptions{.lr = 0.01});
  run_both<optim::RMSprop>("rmsprop_momentum", optim::RMSpropOptions{.lr = 0.01, .weight_decay = 0.05, .momentum = 0.9});
  run_both<optim::RMSprop>("rmsprop_centered", optim::RMSpropOptions{.lr = 0.01, .alpha = 0.9, .centered = true});
  run_both<optim::RMSprop>("rmsprop_centered_momentum_maximize",
                           optim::RMSpropOptions{.lr = 0.01, .momentum = 0.5, .centered = true, .maximize = true});
  run_both<optim::Rprop>("rprop", optim::RpropOptions{.lr = 0.01});
  run_both<optim::Rprop>("rprop_options", optim::RpropOptions{.lr = 0.05, .etas = {0.3, 1.5}, .step_sizes = {1e-3, 0.2}, .maximize = true});
  run_default_dtype<optim::ASGD>("asgd", optim::ASGDOptions{.lr = 0.05});
  run_default_dtype<optim::ASGD>("asgd_options",
                        optim::ASGDOptions{.lr = 0.05, .lambd = 0.1, .alpha = 0.5, .t0 = 5, .weight_decay = 0.1, .maximize = true});
}

TEST_CASE("NAdam's mu_product and ASGD's eta and mu: double for double parameters, float32 for the others") {
  const double mu1 = 0.9 * (1 - 0.5 * std::pow(0.96, 1 * 4e-3)), mu2 = 0.9 * (1 - 0.5 * std::pow(0.96, 2 * 4e-3));
  const double eta1 = 0.05 / std::pow(1 + 1e-4 * 0.05 * 1, 0.75);
  auto scalar = [](const dl::StateDict& sd, const std::string& k) {
    const dl::AnyTensor& t = sd.at(k);
    return t.is<double>() ? t.as<double>().item() : double(t.as<float>().item());
  };
  auto two_steps = [](auto& opt, auto& ps) {
    for (int t = 1; t <= 2; ++t) {
      ps[0].mutable_grad() = grad_of(ps[0].detach(), 0, t);
      ps[1].mutable_grad() = grad_of(ps[1].detach(), 1, t);
      opt.step();
    }
  };
  {
    auto pd = make_params<double>();
    optim::NAdam<double> nd(pd, {});
    two_steps(nd, pd);
    CHECK(scalar(nd.state_dict(), "state.0.mu_product") == mu1 * mu2);
    auto pf = make_params<float>();
    optim::NAdam<float> nf(pf, {});
    two_steps(nf, pf);
    CHECK(scalar(nf.state_dict(), "state.0.mu_product") == double(float(mu1) * float(mu2)));
  }
  {
    auto pd = make_params<double>();
    optim::ASGD<double> ad(pd, {.lr = 0.05, .t0 = 0});
    two_steps(ad, pd);
    CHECK(scalar(ad.state_dict(), "state.0.eta") == 0.05 / std::pow(1 + 1e-4 * 0.05 * 2, 0.75));
    CHECK(scalar(ad.state_dict(), "state.0.mu") == 0.5);
    auto pf = make_params<float>();
    optim::ASGD<float> af(pf, {.lr = 0.05, .t0 = 0});
    two_steps(af, pf);
    CHECK(scalar(af.state_dict(), "state.0.eta") == double(float(0.05 / std::pow(1 + 1e-4 * 0.05 * 2, 0.75))));
    CHECK(double(float(eta1)) != eta1);  // the two precisions are told apart
  }
}

TEST_CASE("parameter groups: options from the defaults unless given; lr changed in place keeps the state") {
  SUBCASE("SGD") {
    run_case<float>("sgd_groups", [](auto& ps) {
      return optim::SGD<float>({{{ps[0]}}, {{ps[1]}, {.lr = 0.05}}}, {.lr = 0.1, .momentum = 0.9});
    }, true);
  }
  SUBCASE("Adam") {
    run_case<double>("adam_groups", [](auto& ps) {
      return optim::Adam<double>({{{ps[0]}}, {{ps[1]}, {.lr = 0.05}}}, {.lr = 0.01});
    }, true);
  }
  auto ps = make_params<float>();
  optim::SGD opt({{{ps[0]}}, {{ps[1]}, {.lr = 1e-2}}}, {.lr = 1e-5, .momentum = 0.9});
  CHECK(opt.param_groups()[1].options.lr == 1e-2);
  CHECK(opt.param_groups()[1].options.momentum == 0.9);  // unnamed options come from the defaults
  CHECK(opt.param_groups()[0].options.lr == 1e-5);
  CHECK(opt.defaults().momentum == 0.9);
  CHECK(opt.num_param_groups() == 2);
  opt.set_lr(1, 0.5);
  CHECK(opt.get_lr(1) == 0.5);
  CHECK(opt.get_momentum(0) == 0.9);
  Tensor<float> extra = dl::zeros({2}).requires_grad_();
  opt.add_param_group({{extra}, {.momentum = 0.5}});
  CHECK(opt.param_groups()[2].options.lr == 1e-5);
  CHECK(opt.param_groups()[2].options.momentum == 0.5);
}

TEST_CASE("LBFGS trajectories, with and without the strong Wolfe line search") {
  auto run = [](const std::string& name, auto tag, optim::LBFGSOptions o) {
    using T = decltype(tag);
    auto ps = make_params<T>();
    for (auto& p : ps) {
      dl::NoGradGuard no_grad;
      p.mul_(T(0.5));
    }
    optim::LBFGS<T> opt(ps, o);
    for (int t = 1; t <= 5; ++t) {
      Tensor<T> loss = opt.step([&] {
        opt.zero_grad();
        Tensor<T> l = lbfgs_loss(ps);
        l.backward();
        return l;
      });
      const std::string prefix = name + "/" + dtype_key<T>() + "/" + std::to_string(t);
      INFO(prefix);
      // In float32 the line search's decisions (how many evaluations, which bracket) depend on the
      // rounding of PyTorch's float32 dot products; the iterates then agree to about 1e-3.
      const bool loose = std::is_same_v<T, float> && !o.line_search_fn.empty();
      const double tl = loose ? 2e-3 : std::is_same_v<T, float> ? 1e-4 : 1e-8;
      ref.check(Tensor<double>(loss.template to<double>()).reshape({}), prefix + "/loss", tl);
      for (int i = 0; i < 2; ++i) ref.check(ps[size_t(i)].detach(), prefix + "/p" + std::to_string(i), tl);
      if (loose) continue;
      const dl::StateDict sd = opt.state_dict();
      CHECK(sd.at("state.0.n_iter").as<int64_t>().item() == int64_t(ref.get(prefix + "/n_iter").values[0]));
      CHECK(sd.at("state.0.func_evals").as<int64_t>().item() == int64_t(ref.get(prefix + "/func_evals").values[0]));
    }
  };
  for (auto [name, o] : {std::pair{"lbfgs", optim::LBFGSOptions{.lr = 1, .max_iter = 5}},
                         std::pair{"lbfgs_wolfe", optim::LBFGSOptions{.lr = 1, .max_iter = 10, .line_search_fn = "strong_wolfe"}},
                         std::pair{"lbfgs_history", optim::LBFGSOptions{.lr = 0.5, .max_iter = 4, .tolerance_grad = 1e-9,
                                                                        .tolerance_change = 1e-12, .history_size = 3}}}) {
    run(name, double{}, o);
    run(name, float{}, o);
  }
}

// ------------------------------------------------------------------------------ state dicts

namespace {
/// Trains 2k steps straight, and k steps + save + rebuild + load + k steps; both must agree exactly.
template <class Make>
void check_resume(Make make, int k = 6) {
  auto straight = make_params<float>();
  auto a = make(straight);
  for (int t = 1; t <= 2 * k; ++t) {
    for (int i = 0; i < 2; ++i) straight[size_t(i)].mutable_grad() = grad_of(straight[size_t(i)].detach(), i, t);
    a.step();
  }
  auto first = make_params<float>();
  auto b = make(first);
  for (int t = 1; t <= k; ++t) {
    for (int i = 0; i < 2; ++i) first[size_t(i)].mutable_grad() = grad_of(first[size_t(i)].detach(), i, t);
    b.step();
  }
  const std::string path = (std::filesystem::temp_directory_path() / "dl_test_optim_resume.safetensors").string();
  dl::save(b.state_dict(), path);
  auto second = make_params<float>();
  for (int i = 0; i < 2; ++i) {
    dl::NoGradGuard no_grad;
    second[size_t(i)].copy_(first[size_t(i)]);
  }
  auto c = make(second);
  c.load_state_dict(dl::load(path));
  for (int t = k + 1; t <= 2 * k; ++t) {
    for (int i = 0; i < 2; ++i) second[size_t(i)].mutable_grad() = grad_of(second[size_t(i)].detach(), i, t);
    c.step();
  }
  for (int i = 0; i < 2; ++i) CHECK(dl::equal(second[size_t(i)].detach(), straight[size_t(i)].detach()));
}
}  // namespace

TEST_CASE("state_dict round trip: k steps, save, rebuild, load, k steps = 2k steps") {
  check_resume([](auto& ps) { return optim::SGD<float>(ps, {.lr = 0.1, .momentum = 0.9, .nesterov = true}); });
  check_resume([](auto& ps) { return optim::Adam<float>(ps, {.lr = 0.01, .amsgrad = true}); });
  check_resume([](auto& ps) { return optim::NAdam<float>(ps, {.lr = 0.01}); });
  check_resume([](auto& ps) { return optim::RMSprop<float>(ps, {.lr = 0.01, .momentum = 0.5, .centered = true}); });
  check_resume([](auto& ps) { return optim::ASGD<float>(ps, {.lr = 0.05, .t0 = 3}); });
  check_resume([](auto& ps) { return optim::Rprop<float>(ps, {.lr = 0.05}); });
  check_resume([](auto& ps) { return optim::Adagrad<float>(ps, {.lr = 0.1, .lr_decay = 0.1}); });
  // Group options travel too.
  auto ps = make_params<float>();
  optim::Adam a(ps, {.lr = 0.01, .betas = {0.8, 0.95}});
  a.param_groups()[0].options.lr = 0.123;
  optim::Adam b(ps, {});
  b.load_state_dict(a.state_dict());
  CHECK(b.param_groups()[0].options.lr == 0.123);
  CHECK(b.param_groups()[0].options.betas == optim::Pair{0.8, 0.95});
  // LBFGS keeps its curvature history.
  auto lp = make_params<double>();
  optim::LBFGS<double> l1(lp, {.max_iter = 3});
  auto closure = [&] {
    l1.zero_grad();
    Tensor<double> loss = lbfgs_loss(lp);
    loss.backward();
    return loss;
  };
  l1.step(closure);
  const dl::StateDict sd = l1.state_dict();
  CHECK(sd.contains("state.0.old_dirs.0"));
  optim::LBFGS<double> l2(lp, {.max_iter = 3});
  l2.load_state_dict(sd);
  CHECK(l2.state_dict().keys() == sd.keys());
}

TEST_CASE("optimizers step modules' parameters; parameters without a gradient are skipped; zero_grad") {
  dl::manual_seed(0);
  auto net = dl::nn::Sequential(dl::nn::Linear<4, 3>(), dl::nn::ReLU(), dl::nn::Linear<3, 2>());
  optim::SGD opt(net.parameters(), {.lr = 0.1});
  Tensor<float> before = net.get<2>().weight.clone();
  Tensor<float> out = net(dl::randn({5, 4}));
  out.sum().backward();
  net.get<0>().weight.mutable_grad() = Tensor<float>();  // skipped
  Tensor<float> w0 = net.get<0>().weight.clone();
  opt.step();
  CHECK(dl::equal(net.get<0>().weight, w0));
  CHECK_FALSE(dl::equal(net.get<2>().weight, before));
  CHECK(net.get<2>().weight.version() > 0);  // an in-place update, as autograd sees it
  opt.zero_grad(false);
  CHECK(net.get<2>().weight.grad().abs().sum().item() == 0.0f);
  opt.zero_grad();
  CHECK_FALSE(net.get<2>().weight.grad().defined());
  // A non-contiguous parameter is updated through a contiguous copy.
  Tensor<float> base = dl::zeros({3, 2});
  Tensor<float> tp = base.t().requires_grad_();
  tp.mutable_grad() = dl::ones({2, 3});
  optim::SGD<float> o2({tp}, {.lr = 1});
  o2.step();
  CHECK(base.sum().item() == -6.0f);
}

TEST_CASE("bad hyper-parameters and state dicts give PyTorch's messages") {
  auto ps = make_params<float>();
  CHECK_THROWS_WITH_AS(optim::SGD<float>(ps, {.lr = -1}), "Invalid learning rate: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::SGD<float>(ps, {.lr = 0.1, .momentum = -0.5}), "Invalid momentum value: -0.5", dl::Error);
  CHECK_THROWS_WITH_AS(optim::SGD<float>(ps, {.lr = 0.1, .nesterov = true}), "Nesterov momentum requires a momentum and zero dampening",
                       dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adam<float>(ps, {.betas = {1.5, 0.9}}), "Invalid beta parameter at index 0: 1.5", dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adam<float>(ps, {.betas = {0.9, 1.0}}), "Invalid beta parameter at index 1: 1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adam<float>(ps, {.eps = -1e-8}), "Invalid epsilon value: -1e-08", dl::Error);
  CHECK_THROWS_WITH_AS(optim::AdamW<float>(ps, {.weight_decay = -1}), "Invalid weight_decay value: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::Rprop<float>(ps, {.etas = {1.5, 1.2}}), "Invalid eta values: 1.5, 1.2", dl::Error);
  CHECK_THROWS_WITH_AS(optim::RMSprop<float>(ps, {.alpha = -1}), "Invalid alpha value: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adadelta<float>(ps, {.rho = 2}), "Invalid rho value: 2", dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adagrad<float>(ps, {.lr_decay = -1}), "Invalid lr_decay value: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::NAdam<float>(ps, {.momentum_decay = -1}), "Invalid momentum_decay value: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::ASGD<float>(ps, {.lambd = -1}), "Invalid lambd value: -1", dl::Error);
  CHECK_THROWS_WITH_AS(optim::LBFGS<float>(ps, {.line_search_fn = "backtracking"}), doctest::Contains("only 'strong_wolfe' is supported"),
                       dl::Error);
  using Groups = std::vector<optim::SGD<float>::GroupSpec>;
  CHECK_THROWS_WITH_AS(optim::SGD<float>(Groups{{{ps[0]}}, {{ps[0], ps[1]}}}, {}), doctest::Contains("more than one parameter group"),
                       dl::Error);
  Tensor<float> nonleaf = ps[0] * 2.0f;
  CHECK_THROWS_WITH_AS(optim::SGD<float>({nonleaf}, {}), doctest::Contains("can't optimize a non-leaf Tensor"), dl::Error);
  CHECK_THROWS_WITH_AS(optim::SGD<float>(std::vector<Tensor<float>>{}, {}), doctest::Contains("empty parameter list"), dl::Error);
  optim::LBFGS<float> lbfgs(ps);
  CHECK_THROWS_WITH_AS(lbfgs.step(), doctest::Contains("LBFGS requires a closure"), dl::Error);

  optim::SGD<float> one(Groups{{{ps[0]}}, {{ps[1]}}}, {.lr = 0.1});
  optim::SGD<float> merged(ps, {.lr = 0.1});
  CHECK_THROWS_WITH_AS(merged.load_state_dict(one.state_dict()), doctest::Contains("different number of parameter groups"), dl::Error);
  optim::SGD<float> fewer({ps[0]}, {.lr = 0.1});
  CHECK_THROWS_WITH_AS(fewer.load_state_dict(merged.state_dict()), doctest::Contains("doesn't match the size of optimizer's group"),
                       dl::Error);
  optim::Adam<float> adam(ps);
  CHECK_THROWS_WITH_AS(adam.load_state_dict(merged.state_dict()), doctest::Contains("loaded state dict is for SGD, not Adam"), dl::Error);
  CHECK_THROWS_WITH_AS(merged.get_lr(3), doctest::Contains("parameter group 3 does not exist"), dl::Error);
  CHECK_THROWS_WITH_AS(optim::Adagrad<float>(ps).set_momentum(0, 0.9), doctest::Contains("Adagrad has no momentum"), dl::Error);
}
