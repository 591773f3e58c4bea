// Tests for dl/autograd: fused expression backward, backward rules of reductions, views and
// indexing (gradcheck + PyTorch references), the engine (accumulation, retain_graph, grad mode,
// hooks, autograd::grad, create_graph), in-place checks, custom Functions.
#include <doctest/doctest.h>

#include <dl/dl.hpp>

#include "reference.hpp"

using dl::Tensor;
namespace ag = dl::autograd;

namespace {
Tensor<double> rnd(dl::Shape s, double lo = -1, double hi = 1) {
  Tensor<double> t = dl::rand<double>(s);
  return Tensor<double>(t * (hi - lo) + lo);
}
}  // namespace

TEST_CASE("gradcheck: elementwise ops (fused backward)") {
  dl::manual_seed(3);
  const auto x = rnd({2, 3}), y = rnd({3}), pos = rnd({2, 3}, 0.2, 2.0), unit = rnd({2, 3}, -0.8, 0.8);
  auto check1 = [&](const char* name, auto f, const Tensor<double>& in) {
    INFO(std::string(name));
    CHECK(ag::gradcheck([&](auto& v) { return f(v[0]); }, {in}));
  };
  check1("neg", [](auto& a) { return -a; }, x);
  check1("abs", [](auto& a) { return dl::abs(a); }, x);
  check1("exp", [](auto& a) { return dl::exp(a); }, x);
  check1("expm1", [](auto& a) { return dl::expm1(a); }, x);
  check1("log", [](auto& a) { return dl::log(a); }, pos);
  check1("log1p", [](auto& a) { return dl::log1p(a); }, pos);
  check1("log2", [](auto& a) { return dl::log2(a); }, pos);
  check1("log10", [](auto& a) { return dl::log10(a); }, pos);
  check1("sqrt", [](auto& a) { return dl::sqrt(a); }, pos);
  check1("rsqrt", [](auto& a) { return dl::rsqrt(a); }, pos);
  check1("sin", [](auto& a) { return dl::sin(a); }, x);
  check1("cos", [](auto& a) { return dl::cos(a); }, x);
  check1("tan", [](auto& a) { return dl::tan(a); }, unit);
  check1("asin", [](auto& a) { return dl::asin(a); }, unit);
  check1("acos", [](auto& a) { return dl::acos(a); }, unit);
  check1("atan", [](auto& a) { return dl::atan(a); }, x);
  check1("sinh", [](auto& a) { return dl::sinh(a); }, x);
  check1("cosh", [](auto& a) { return dl::cosh(a); }, x);
  check1("tanh", [](auto& a) { return dl::tanh(a); }, x);
  check1("erf", [](auto& a) { return dl::erf(a); }, x);
  check1("sigmoid", [](auto& a) { return dl::sigmoid(a); }, x);
  check1("relu", [](auto& a) { return dl::relu(a); }, x);
  check1("reciprocal", [](auto& a) { return dl::reciprocal(a); }, pos);
  check1("square", [](auto& a) { return dl::square(a); }, x);
  check1("pow_int", [](auto& a) { return dl::pow(a, 3); }, x);
  check1("pow_real", [](auto& a) { return dl::pow(a, -1.5); }, pos);
  check1("clamp", [](auto& a) { return dl::clamp(a, -0.3, 0.4); }, x);
  check1("floor", [](auto& a) { return dl::floor(a) + a; }, x);
  // Through float: linear, so a large step is exact while float rounding would drown 1e-6.
  CHECK(ag::gradcheck([](auto& v) { return dl::cast<double>(dl::cast<float>(v[0]) * 2.0f); }, {x}, {.eps = 1e-2}));
  auto check2 = [&](const char* name, auto f, const Tensor<double>& a, const Tensor<double>& b) {
    INFO(std::string(name));
    CHECK(ag::gradcheck([&](auto& v) { return f(v[0], v[1]); }, {a, b}));
  };
  check2("add", [](auto& a, auto& b) { return a + b; }, x, y);
  check2("sub", [](auto& a, auto& b) { return a - b * 2.0; }, x, y);
  check2("mul", [](auto& a, auto& b) { return a * b; }, x, y);
  check2("div", [](auto& a, auto& b) { return a / b; }, x, pos);
  check2("pow", [](auto& a, auto& b) { return dl::pow(a, b); }, pos, x);
  check2("maximum", [](auto& a, auto& b) { return dl::maximum(a, b); }, x, y);
  check2("minimum", [](auto& a, auto& b) { return dl::minimum(a, b); }, x, y);
  check2("remainder", [](auto& a, auto& b) { return dl::remainder(a, b); }, x, pos);
  check2("where", [](auto& a, auto& b) { return dl::where(a > 0.0, a * b, b); }, x, y);
  check2("chain", [](auto& a, auto& b) { return dl::sigmoid(a * b + 1.0) * dl::tanh(a - b); }, x, y);
  check2("reuse", [](auto& a, auto& b) { return a * a + dl::exp(a) * b; }, x, y);
  CHECK(ag::gradcheck([](auto& v) { return dl::lerp(v[0], v[1], v[2]); }, {x, y, rnd({2, 3}, 0, 1)}));
}

TEST_CASE("gradients match PyTorch") {
  auto a = ref::tensor<float>("ga").requires_grad_(), b = ref::tensor<float>("gb").requires_grad_();
  auto c = ref::tensor<float>("gc").requires_grad_(), d = ref::tensor<float>("gd").requires_grad_();
  auto run = [&](const char* tag, const Tensor<float>& loss, std::vector<std::pair<const char*, Tensor<float>>> ins) {
    std::vector<Tensor<float>> inputs;
    for (auto& [n, t] : ins) inputs.push_back(t);
    auto gs = ag::grad<float>({loss}, inputs, {}, {}, false, true);
    for (size_t i = 0; i < ins.size(); ++i)
      ref::check(gs[i].defined() ? gs[i] : dl::zeros_like(inputs[i]), std::string("grad.") + tag + "." + ins[i].first, 1e-4, 1e-5);
  };
  run("chain", dl::sum(dl::sigmoid(a * b + c) * d), {{"a", a}, {"b", b}, {"c", c}, {"d", d}});
  run("mixed", dl::mean(dl::exp(a) / (1.0f + dl::abs(b)) - dl::pow(dl::tanh(c), 2)), {{"a", a}, {"b", b}, {"c", c}});
  run("where", dl::sum(dl::where(a > 0.0f, a * d, -a)), {{"a", a}, {"d", d}});
  const Tensor<float> w = dl::linspace(-1, 1, 24).reshape({2, 3, 4});
  run("var", dl::sum(a.var({1}) * w.select(1, 0)), {{"a", a}});
  run("std", dl::sum(a.std({0, 2}, true, true) * dl::tensor<float>({1, 2, 3}).reshape({1, 3, 1})), {{"a", a}});
  run("norm", Tensor<float>(a.norm() + a.norm(1, {2}).sum() + a.norm(3, {0}).sum()), {{"a", a}});
  run("logsumexp", dl::sum(a.logsumexp({2}) * w[0].narrow(1, 0, 2).t().reshape({2, 3})), {{"a", a}});
  run("max", Tensor<float>(a.max(1).values.sum() + a.amax({0, 2}).sum() * 2.0f + a.max()), {{"a", a}});
  run("prod", Tensor<float>(Tensor<float>(a[0] / 4.0f + 1.0f).prod(1).sum() + Tensor<float>(a[1][0] / 4.0f + 1.0f).prod()), {{"a", a}});
  run("views",
      Tensor<float>(dl::sum(a.permute({2, 0, 1}).slice(0, 1, 3).reshape({2, 6}) * w.reshape({4, 6}).narrow(0, 0, 2)) +
                    dl::sum(dl::pow(a.transpose(0, 1)[0], 2)) + a.select(2, -1).expand({5, 2, 3}).sum()),
      {{"a", a}});
  const auto gi = ref::tensor<int64_t>("gi"), si = ref::tensor<int64_t>("si");
  run("index",
      Tensor<float>(dl::sum(dl::gather(a, 2, gi) * 3.0f) + dl::sum(dl::pow(dl::index_select(a, 1, si), 2)) +
                    dl::sum(dl::pow(dl::cat<float>({a, Tensor<float>(d * 2.0f)}, 1).sum(1), 2))),
      {{"a", a}, {"d", d}});
}

TEST_CASE("gradcheck: reductions, views, indexing") {
  dl::manual_seed(5);
  const auto x = rnd({3, 4}), z = rnd({2, 3, 4});
  CHECK(ag::gradcheck([](auto& v) { return v[0].sum(1); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].mean({0, 2}, true); }, {z}));
  CHECK(ag::gradcheck([](auto& v) { return dl::sum(dl::exp(v[0]) * 2.0, 0); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].prod(1); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].prod(); }, {rnd({5}, 0.5, 1.5)}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].max(1).values; }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].amin({0}); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].var({1}); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].std({0, 2}, false, false); }, {z}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].norm(2, {1}); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].norm(1.5); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].logsumexp({1}); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].t().contiguous(); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].permute({2, 0, 1}).reshape({4, 6}); }, {z}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].narrow(1, 1, 2) * v[0].select(0, 1).narrow(0, 0, 2).unsqueeze(0); }, {z}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].slice(2, 0, 4, 3).expand({2, 2, 3, 2}); }, {z}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].as_strided({2, 2}, {1, 4}, 1); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].squeeze().flatten(); }, {rnd({1, 3, 1})}));
  CHECK(ag::gradcheck([](auto& v) { return dl::cat<double>({v[0], v[1]}, 0); }, {x, rnd({2, 4})}));
  CHECK(ag::gradcheck([](auto& v) { return dl::stack<double>({v[0], v[0] * 2.0}, 1); }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return dl::repeat(v[0], {2, 1, 3}); }, {x}));
  const auto idx = dl::tensor<int64_t>({{0, 2}, {1, 1}, {3, 0}});
  CHECK(ag::gradcheck([&](auto& v) { return dl::gather(v[0], 1, idx); }, {x}));
  // scatter's gradient is only defined for unique indices (as in PyTorch).
  const auto unique = dl::tensor<int64_t>({{0, 2}, {1, 3}, {3, 0}});
  CHECK(ag::gradcheck([&](auto& v) { return dl::scatter(v[0], 1, unique, v[1]); }, {x, rnd({3, 2})}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::scatter_add(v[0], 1, idx, v[1]); }, {x, rnd({3, 2})}));
  const auto sel = dl::tensor<int64_t>({2, 0, 2});
  CHECK(ag::gradcheck([&](auto& v) { return dl::index_select(v[0], 1, sel); }, {x}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::index_add(v[0], 1, sel, v[1], 2.0); }, {x, rnd({3, 3})}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::index_copy(v[0], 0, dl::tensor<int64_t>({2, 0}), v[1]); }, {x, rnd({2, 4})}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::index_fill(v[0], 1, sel, 0.5); }, {x}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::index(v[0], {dl::tensor<int64_t>({2, 0, 2})}); }, {x}));
  CHECK(ag::gradcheck([&](auto& v) { return dl::index_put(v[0], {dl::tensor<int64_t>({1, 1})}, v[1], true); }, {x, rnd({4})}));
  CHECK(ag::gradcheck([](auto& v) { return dl::masked_select(v[0], v[0] > 0.0); }, {x}));
  SUBCASE("an index changed in place after the forward pass is reported") {
    Tensor<int64_t> i = dl::tensor<int64_t>({{0, 1}, {1, 1}, {2, 0}});
    Tensor<double> w = x.clone().requires_grad_();
    Tensor<double> y = dl::gather(w, 1, i);
    i.add_(1);
    CHECK_THROWS_WITH_AS(y.sum().backward(), doctest::Contains("modified by an inplace operation"), dl::Error);
  }
}

TEST_CASE("split, chunk and unbind share one backward node (one pass, however many pieces)") {
  dl::manual_seed(6);
  const auto x = rnd({5, 4}), z = rnd({2, 3, 4});
  CHECK(ag::gradcheck([](auto& v) {
    auto p = v[0].split(2, 0);  // pieces of 2, 2, 1 rows
    return dl::cat<double>({p[2] * 3.0, dl::sin(p[0]), p[1] * p[1]}, 0);
  }, {x}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].split(std::vector<int64_t>{1, 0, 3}, 1)[2] * 2.0; }, {x}));  // pieces without gradient
  CHECK(ag::gradcheck([](auto& v) {
    auto p = v[0].chunk(2, 2);
    return Tensor<double>(dl::tanh(p[0]) * p[1]);
  }, {z}));
  CHECK(ag::gradcheck([](auto& v) {
    auto p = v[0].unbind(1);
    return Tensor<double>(p[0] * p[2] + p[1]);
  }, {z}));
  CHECK(ag::gradgradcheck([](auto& v) {
    auto p = v[0].chunk(2, 1);
    return Tensor<double>(dl::sin(p[0]) * p[1] * p[1]);
  }, {x}));
  CHECK(ag::gradgradcheck([](auto& v) {
    auto p = v[0].unbind(0);
    return Tensor<double>(p[0] * p[1] * dl::exp(p[1]));
  }, {z}));

  Tensor<float> a = dl::arange<float>(0, 12).reshape({3, 4}).requires_grad_();
  auto parts = a.chunk(3, 0);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].grad_fn() == parts[2].grad_fn());
  CHECK(parts[0].grad_fn()->name() == "SplitBackward");
  CHECK(parts[2].output_nr() == 2);
  CHECK(a.split(std::vector<int64_t>{1, 2})[0].grad_fn()->name() == "SplitWithSizesBackward");
  CHECK(a.unbind(1)[3].grad_fn()->name() == "UnbindBackward");
  Tensor<float>(parts[1].sum() * 2.0f).backward();  // pieces 0 and 2 got no gradient: zeros there
  CHECK(dl::equal(a.grad(), dl::tensor<float>({{0, 0, 0, 0}, {2, 2, 2, 2}, {0, 0, 0, 0}})));
  CHECK(parts[1].data_ptr() == a.data_ptr() + 4);

  SUBCASE("a piece changed in place: the base's history covers it") {
    Tensor<float> w = dl::ones({2, 3}).requires_grad_();
    Tensor<float> y = w * 1.0f;
    auto rows = y.unbind(0);
    rows[0].mul_(4.0f);
    Tensor<float>(rows[0].sum() + rows[1].sum() + y.sum()).backward();
    CHECK(dl::equal(w.grad(), dl::tensor<float>({{8, 8, 8}, {2, 2, 2}})));
  }
  SUBCASE("without grad mode the pieces record nothing") {
    dl::NoGradGuard no_grad;
    CHECK(!a.split(1, 0)[0].requires_grad());
  }
}

TEST_CASE("second derivatives") {
  auto x = ref::tensor<double>("gg.x").requires_grad_();
  Tensor<double> y = dl::sum(dl::sin(x) * x);
  auto g = ag::grad<double>({y}, {x}, {}, {}, /*create_graph=*/true);
  ref::check(g[0], "gg.first", 1e-10, 1e-12);
  auto gg = ag::grad<double>({dl::sum(g[0] * g[0])}, {x});
  ref::check(gg[0], "gg.second", 1e-10, 1e-12);
  dl::manual_seed(9);
  const auto a = rnd({2, 3}), b = rnd({3});
  CHECK(ag::gradgradcheck([](auto& v) { return dl::sigmoid(v[0] * v[1]) * dl::exp(v[0]); }, {a, b}));
  CHECK(ag::gradgradcheck([](auto& v) { return dl::tanh(v[0]).sum(1); }, {a}));
  CHECK(ag::gradgradcheck([](auto& v) { return dl::pow(v[0], 3).mean() + dl::log(dl::abs(v[1]) + 1.0).sum(); }, {a, b}));
  // Rules that used raw loops: max(dim), prod, as_strided.
  const auto pos = rnd({2, 3}, 0.5, 1.5);
  CHECK(ag::gradgradcheck([](auto& v) { return dl::pow(v[0].max(1).values, 2) + v[0].min(0, true).values.sum(); }, {a}));
  CHECK(ag::gradgradcheck([](auto& v) { return Tensor<double>(v[0].prod(1).sum() * v[0].prod()); }, {pos}));
  CHECK(ag::gradgradcheck([](auto& v) { return dl::pow(v[0].as_strided({2, 2}, {1, 3}, 1), 2); }, {a}));
  CHECK(ag::gradcheck([](auto& v) { return v[0].as_strided({3, 2}, {1, 1}, 0) * 1.0; }, {a}));  // overlapping reads
  Tensor<double> z = dl::tensor<double>({1, 0, 2}).requires_grad_();
  CHECK(ag::grad<double>({z.prod()}, {z})[0].at(1) == 2.0);  // exact with zeros
  CHECK_THROWS_WITH_AS(ag::grad<double>({z.prod()}, {z}, {}, {}, /*create_graph=*/true), doctest::Contains("contains zeros"), dl::Error);
  CHECK(Tensor<double>(dl::pow(a, 0)).sum().item() == 6.0);
}

TEST_CASE("second derivatives through fused expressions (the create_graph pass over stand-ins of the leaves)") {
  dl::manual_seed(11);
  const auto a = rnd({2, 3}), b = rnd({3}), c = rnd({2, 1}), pos = rnd({2, 3}, 0.5, 1.5);
  // A leaf read several times, broadcasting leaves, a leaf computed from another leaf.
  CHECK(ag::gradgradcheck([](auto& v) { return v[0] * v[0] * v[0]; }, {a}));
  CHECK(ag::gradgradcheck([](auto& v) { return v[0] * v[1] + v[1] * v[1] * v[2]; }, {a, b, c}));
  CHECK(ag::gradgradcheck([](auto& v) { return v[0] / (v[1] * v[1] + 1.0); }, {c, b}));
  CHECK(ag::gradgradcheck(
      [](auto& v) {
        Tensor<double> t(dl::exp(v[0]) * 0.5);
        return t * v[0] * t + dl::log(t);
      },
      {pos}));
  // Third order: sum(x^4) -> 4x^3 -> 12x^2 -> 24x, each gradient a graph over x.
  auto x = rnd({5}).requires_grad_();
  Tensor<double> y = dl::sum(x * x * x * x);
  auto g1 = ag::grad<double>({y}, {x}, {}, {}, /*create_graph=*/true)[0];
  CHECK(g1.requires_grad());
  auto g2 = ag::grad<double>({g1.sum()}, {x}, {}, {}, /*create_graph=*/true)[0];
  auto g3 = ag::grad<double>({g2.sum()}, {x})[0];
  for (int64_t i = 0; i < 5; ++i) {
    const double xi = x.at(i);
    CHECK(g1.at(i) == doctest::Approx(4 * xi * xi * xi));
    CHECK(g2.at(i) == doctest::Approx(12 * xi * xi));
    CHECK(g3.at(i) == doctest::Approx(24 * xi));
  }
  // Gradient reaches a leaf along the edge recorded in forward, even after an in-place op gave the
  // leaf a new history (allowed: the rules never read its value).
  auto w = rnd({3}).requires_grad_();
  auto u = rnd({3}).requires_grad_();
  Tensor<double> m(w * 2.0);
  Tensor<double> z = (m + 1.0) * 3.0 + u * u;
  m.mul_(5.0);
  auto gz = ag::grad<double>({z.sum()}, {w, u}, {}, {}, /*create_graph=*/true);
  for (int64_t i = 0; i < 3; ++i) {
    CHECK(gz[0].at(i) == doctest::Approx(6.0));
    CHECK(gz[1].at(i) == doctest::Approx(2 * u.at(i)));
  }
  CHECK(ag::grad<double>({(gz[1] * gz[1]).sum()}, {u})[0].at(1) == doctest::Approx(8 * u.at(1)));
  // A float expression cast into a double one.
  auto f = dl::rand<float>({4}).requires_grad_();
  Tensor<double> mixed = dl::exp(dl::cast<double>(f) * 2.0) * 0.5;
  auto gf = ag::grad<float>({mixed.sum().template to<float>()}, {f}, {}, {}, /*create_graph=*/true)[0];
  auto gff = ag::grad<float>({gf.sum()}, {f})[0];
  for (int64_t i = 0; i < 4; ++i) CHECK(gff.at(i) == doctest::Approx(2 * std::exp(2 * double(f.at(i)))).epsilon(1e-5));
}

TEST_CASE("engine behaviour") {
  SUBCASE("leaves, grad_fn names, accumulation, zeroing") {
    Tensor<float> a = dl::tensor<float>({1, 2, 3}).requires_grad_();
    CHECK(a.is_leaf());
    CHECK(!a.grad().defined());
    CHECK(!a.grad_fn());
    Tensor<float> y = dl::sigmoid(a) * 2.0f;
    CHECK(!y.is_leaf());
    CHECK(y.requires_grad());
    CHECK(y.grad_fn()->name() == "FusedBackward[Mul(Sigmoid(x0), 2)]");
    CHECK(Tensor<float>(dl::sigmoid(a)).grad_fn()->name() == "SigmoidBackward");
    CHECK(y.sum().grad_fn()->name() == "SumBackward");
    CHECK(a.t().grad_fn()->name() == "TransposeBackward");
    Tensor<float> loss = (a * a).sum();
    loss.backward(/*retain_graph=*/true);
    CHECK(a.grad().at(2) == 6);
    loss.backward();
    CHECK(a.grad().at(2) == 12);  // accumulated
    a.grad().zero_();
    (a * 3.0f).sum().backward();
    CHECK(a.grad().at(0) == 3);
    a.mutable_grad() = Tensor<float>{};
    CHECK(!a.grad().defined());
    CHECK_THROWS_AS(a.mutable_grad() = dl::zeros({2}), dl::Error);
  }
  SUBCASE("backward twice without retain_graph fails clearly") {
    Tensor<float> a = dl::ones({3}).requires_grad_();
    Tensor<float> y = (a * 2.0f).sum();
    y.backward();
    CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("Trying to backward through the graph a second time"), dl::Error);
  }
  SUBCASE("backward needs a scalar or a gradient") {
    Tensor<float> a = dl::ones({2, 2}).requires_grad_();
    Tensor<float> y = a * 3.0f;
    CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("grad can be implicitly created only for scalar outputs"), dl::Error);
    CHECK_THROWS_WITH_AS(y.backward(dl::ones({3})), doctest::Contains("Mismatch in shape"), dl::Error);
    y.backward(dl::full<float>({2, 2}, 2));
    CHECK(a.grad().at(1, 1) == 6);
    CHECK_THROWS_WITH_AS(dl::ones({1}).backward(), "element 0 of tensors does not require grad and does not have a grad_fn", dl::Error);
    CHECK_THROWS_AS(dl::ones<int64_t>({1}).requires_grad_(), dl::Error);
  }
  SUBCASE("grad mode") {
    Tensor<float> a = dl::ones({2}).requires_grad_();
    {
      dl::NoGradGuard no_grad;
      Tensor<float> y = a * 2.0f;
      CHECK(!y.requires_grad());
      {
        dl::EnableGradGuard enable;
        CHECK(Tensor<float>(a * 2.0f).requires_grad());
      }
      a.sub_(a * 0.5f);  // the update step of an optimizer
    }
    CHECK(a.at(0) == 0.5f);
    dl::set_grad_enabled(false);
    CHECK(!Tensor<float>(a + 1.0f).requires_grad());
    dl::set_grad_enabled(true);
    Tensor<float> d = a.detach();
    CHECK(!d.requires_grad());
    CHECK(d.data() == a.data());
  }
  SUBCASE("broadcast leaves get summed gradients") {
    Tensor<float> w = dl::ones({3, 4}).requires_grad_(), bias = dl::zeros({4}).requires_grad_(), s = dl::ones({}).requires_grad_();
    Tensor<float> y = (w * s + bias).sum();
    y.backward();
    CHECK(bias.grad().shape() == dl::Shape{4});
    CHECK(bias.grad().at(0) == 3);
    CHECK(s.grad().item() == 12);
  }
  SUBCASE("hooks and retain_grad") {
    Tensor<float> a = dl::ones({3}).requires_grad_();
    Tensor<float> h = a * 2.0f;
    h.retain_grad();
    h.register_hook([](const Tensor<float>& g) { return Tensor<float>(g * 10.0f); });
    int calls = 0;
    a.register_hook([&](const Tensor<float>& g) {
      ++calls;
      CHECK(g.at(0) == 20.0f);
      return Tensor<float>{};
    });
    h.sum().backward();
    CHECK(calls == 1);
    CHECK(a.grad().at(1) == 20.0f);
    CHECK(h.grad().at(0) == 10.0f);
    CHECK_THROWS_AS(dl::ones({1}).register_hook([](const Tensor<float>& g) { return g; }), dl::Error);
  }
  SUBCASE("autograd::grad returns instead of accumulating") {
    Tensor<float> a = dl::ones({2}).requires_grad_(), b = dl::ones({2}).requires_grad_();
    Tensor<float> y = (a * b * 3.0f).sum();
    auto g = ag::grad<float>({y}, {a});
    CHECK(g[0].at(0) == 3.0f);
    CHECK(!a.grad().defined());
    CHECK(!b.grad().defined());
    Tensor<float> z = (a * 2.0f).sum();
    CHECK_THROWS_WITH_AS(ag::grad<float>({z}, {b}), doctest::Contains("appears to not have been used in the graph"), dl::Error);
    CHECK(!ag::grad<float>({(a * 2.0f).sum()}, {b}, {}, {}, false, true)[0].defined());
  }
  SUBCASE("in-place change of a saved tensor is detected") {
    Tensor<float> a = dl::ones({3}).requires_grad_();
    Tensor<float> h = a * 2.0f;
    Tensor<float> y = h * h;  // saves h
    h.add_(1.0f);
    CHECK_THROWS_WITH_AS(y.sum().backward(),
                         doctest::Contains("one of the variables needed for gradient computation has been modified by an inplace operation"),
                         dl::Error);
  }
  SUBCASE("only values the backward pass reads are version-checked") {
    Tensor<float> a = dl::ones({3}).requires_grad_();
    Tensor<float> h = a * 2.0f, m = dl::tensor<float>({1, -1, 1});
    Tensor<float> y = h + 1.0f;              // add never reads h: changing h later is fine
    Tensor<float> z = h * 3.0f;              // nor does a product with a number
    Tensor<float> w = dl::where(m > 0.0f, a, 0.0f);  // where reads m, which needs no grad
    h.add_(5.0f);
    m.fill_(1.0f);
    Tensor<float>(y.sum() + z.sum()).backward();
    CHECK(a.grad().at(0) == 8.0f);
    CHECK_THROWS_WITH_AS(w.sum().backward(), doctest::Contains("modified by an inplace operation"), dl::Error);
  }
  SUBCASE("in-place ops on non-leaves keep exact gradients") {
    Tensor<float> a = dl::tensor<float>({1, 2, 3}).requires_grad_(), b = dl::tensor<float>({4, 5, 6}).requires_grad_();
    Tensor<float> h = a * 2.0f;
    h.add_(b);      // h = 2a + b
    h.mul_(b);      // h = (2a + b) * b, needs the old h for d/db
    h.sum().backward();
    CHECK(a.grad().at(0) == 8.0f);            // 2b
    CHECK(b.grad().at(0) == 2 * 1 + 2 * 4);   // 2a + 2b
  }
  SUBCASE("retain_graph keeps saved tensors; version counters count writes") {
    Tensor<float> a = dl::ones({2}).requires_grad_();
    Tensor<float> y = dl::sum(dl::exp(a));
    y.backward(true);
    y.backward(true);
    CHECK(a.grad().at(0) == doctest::Approx(2 * std::exp(1.0f)));
  }
}

TEST_CASE("in-place ops on views rewrite the base's history (CopySlices)") {
  SUBCASE("a zeroed slice stops the gradient") {
    Tensor<float> x = dl::ones({3, 4}).requires_grad_();
    Tensor<float> y = x * 2.0f;
    y.narrow(0, 0, 1).zero_();
    CHECK(y.grad_fn()->name() == "CopySlices");
    y.sum().backward();
    CHECK(x.grad().select(0, 0).sum().item() == 0.0f);
    CHECK(x.grad().narrow(0, 1, 2).sum().item() == 16.0f);
  }
  SUBCASE("filling rows of a buffer that needs no grad") {
    Tensor<double> w = dl::tensor<double>({1, -2, 3}).requires_grad_();
    Tensor<double> out = dl::zeros<double>({4, 3});
    for (int i = 0; i < 4; ++i) out.select(0, i).copy_(w * double(i));
    CHECK(out.requires_grad());
    (out * out).sum().backward();  // d/dw sum_i i^2 w^2 = 2 * 14 * w
    CHECK(w.grad().at(0) == doctest::Approx(28.0));
    CHECK(w.grad().at(1) == doctest::Approx(-56.0));
  }
  SUBCASE("gradcheck and gradgradcheck through ops on views") {
    dl::manual_seed(11);
    const auto x = rnd({3, 4}), w = rnd({3});
    auto f = [](auto& v) {
      Tensor<double> y = v[0] * 1.0;
      y.select(1, 1).mul_(v[1]);                     // needs the old value
      y.narrow(0, 1, 2).add_(v[1].narrow(0, 0, 2).unsqueeze(1));
      y.t().narrow(0, 2, 2).masked_fill_(y.t().narrow(0, 2, 2) > 0.5, 0.25);
      y.select(0, 0).select(0, 3).copy_(v[1].sum());  // a view of a view
      return Tensor<double>(dl::sin(y) * 1.0);
    };
    CHECK(ag::gradcheck(f, {x, w}));
    CHECK(ag::gradgradcheck(f, {x, w}));
    auto self_alias = [](auto& v) {  // operands that alias the target are read before the write
      Tensor<double> y = v[0] * 1.0;
      y.masked_fill_(y > 0.2, 0.5);
      y.mul_(y);
      y.select(0, 1).mul_(y.select(0, 1));
      return y;
    };
    CHECK(ag::gradcheck(self_alias, {x}));
  }
  SUBCASE("views read the base's new history") {
    Tensor<float> x = dl::ones({3, 2}).requires_grad_();
    Tensor<float> y = x * 1.0f;
    Tensor<float> a = y[0], b = y[1];
    CHECK(b.grad_fn()->name() == "SelectBackward");
    a.mul_(3.0f);
    CHECK(a.grad_fn()->name() == "AsStridedBackward");
    CHECK(b.grad_fn()->name() == "AsStridedBackward");
    Tensor<float>(a.sum() + b.sum() + y.sum()).backward();
    CHECK(x.grad().at(0, 0) == 6.0f);
    CHECK(x.grad().at(1, 1) == 2.0f);
    CHECK(x.grad().at(2, 0) == 1.0f);
    Tensor<float> z = x * 1.0f, row = z[2];
    z.mul_(5.0f);                                    // the base changes: the view follows it
    x.mutable_grad() = Tensor<float>{};
    row.sum().backward();
    CHECK(x.grad().at(2, 1) == 5.0f);
    CHECK(x.grad().at(0, 0) == 0.0f);
  }
  SUBCASE("errors and no-grad updates") {
    Tensor<float> w = dl::ones({2, 2}).requires_grad_();
    CHECK_THROWS_WITH_AS(w[0].mul_(2.0f), doctest::Contains("a view of a leaf Variable that requires grad"), dl::Error);
    {
      dl::NoGradGuard no_grad;
      w[0].mul_(2.0f);
    }
    CHECK(w.at(0, 1) == 2.0f);
    Tensor<float> h = w * 1.0f;
    Tensor<float> saved = h[1];
    Tensor<float> y = saved * saved;
    h[1].add_(1.0f);
    CHECK_THROWS_WITH_AS(y.sum().backward(), doctest::Contains("modified by an inplace operation"), dl::Error);
    Tensor<float> plain = dl::zeros({2, 2}), row;
    {
      dl::NoGradGuard no_grad;
      row = plain[0];
    }
    CHECK_THROWS_WITH_AS(row.copy_(w[1]), doctest::Contains("made with grad mode off"), dl::Error);
    Tensor<float> expanded = dl::zeros({1, 2}).expand({3, 2}).detach();
    CHECK_THROWS_WITH_AS(expanded[0].copy_(w[1]), doctest::Contains("view of an expanded tensor"), dl::Error);
  }
}

namespace {
struct MyReLU : ag::Function<MyReLU> {
  static Tensor<float> forward(ag::Context& ctx, const Tensor<float>& x) {
    ctx.save_for_backward(x);
    return dl::clamp_min(x, 0.0f);
  }
  static Tensor<float> backward(ag::Context& ctx, const Tensor<float>& g) {
    const Tensor<float> x = ctx.saved<float>(0);
    return dl::where(x > 0.0f, g, 0.0f);
  }
};
/// Two inputs, two outputs, a non-tensor argument and a value kept in saved_data.
struct ScaleSplit : ag::Function<ScaleSplit> {
  static std::vector<Tensor<double>> forward(ag::Context& ctx, const Tensor<double>& a, const Tensor<double>& b, double k) {
    ctx.saved_data["k"] = k;
    ctx.save_for_backward(a, b);
    return {Tensor<double>(a * b * k), Tensor<double>(a + b)};
  }
  static std::vector<Tensor<double>> backward(ag::Context& ctx, const Tensor<double>& g0, const Tensor<double>& g1) {
    const double k = std::any_cast<double>(ctx.saved_data["k"]);
    const auto a = ctx.saved<double>(0), b = ctx.saved<double>(1);
    return {Tensor<double>(g0 * b * k + g1), ctx.needs_input_grad(1) ? Tensor<double>(g0 * a * k + g1) : Tensor<double>()};
  }
};
}  // namespace

TEST_CASE("custom autograd Functions") {
  Tensor<float> x = dl::tensor<float>({-1, 2, -3, 4}).requires_grad_();
  Tensor<float> y = MyReLU::apply(x);
  CHECK(y.grad_fn()->name() == "MyReLUBackward");
  CHECK(y.at(1) == 2);
  (y * 3.0f).sum().backward();
  CHECK(x.grad().at(0) == 0);
  CHECK(x.grad().at(3) == 3);
  CHECK(ag::gradcheck([](auto& v) { return ScaleSplit::apply(v[0], v[1], 1.5)[0] * 2.0 + ScaleSplit::apply(v[0], v[1], 1.5)[1]; },
                      {rnd({3}), rnd({3})}));
  // A saved tensor modified after forward is reported.
  Tensor<float> h = Tensor<float>(x * 1.0f);
  Tensor<float> r = MyReLU::apply(h);
  h.mul_(2.0f);
  CHECK_THROWS_WITH_AS(r.sum().backward(), doctest::Contains("modified by an inplace operation"), dl::Error);
}

namespace {
// libtorch's own examples of custom functions (docs: "C++ autograd"), spelled as libtorch spells them.
struct LinearFunction : ag::Function<LinearFunction> {
  static Tensor<double> forward(ag::AutogradContext* ctx, Tensor<double> input, Tensor<double> weight, Tensor<double> bias = {}) {
    ctx->save_for_backward({input, weight, bias});
    Tensor<double> output = dl::matmul(input, weight.t());
    if (bias.defined()) output = output + bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static std::vector<Tensor<double>> backward(ag::AutogradContext* ctx, std::vector<Tensor<double>> grad_outputs) {
    auto saved = ctx->get_saved_variables<double>();
    auto input = saved[0], weight = saved[1], bias = saved[2];
    auto grad_output = grad_outputs[0];
    Tensor<double> grad_input = ctx->needs_input_grad(0) ? dl::matmul(grad_output, weight) : Tensor<double>();
    Tensor<double> grad_weight = ctx->needs_input_grad(1) ? dl::matmul(grad_output.t(), input) : Tensor<double>();
    Tensor<double> grad_bias = bias.defined() ? Tensor<double>(grad_output.sum(0)) : Tensor<double>();
    return {grad_input, grad_weight, grad_bias};
  }
};
struct MulConstant : ag::Function<MulConstant> {
  static Tensor<float> forward(ag::AutogradContext* ctx, Tensor<float> tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    ctx->saved_data["calls"] = 1;
    return tensor * float(constant);
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grad_outputs) {
    // one gradient per argument; the double's is undefined
    return {grad_outputs[0] * float(ctx->saved_data["constant"].toDouble() * double(ctx->saved_data["calls"].toInt())), Tensor<float>()};
  }
};
/// Two outputs, the second (a mask) not differentiable; materialize_grads off.
struct SplitMask : ag::Function<SplitMask> {
  static std::vector<Tensor<double>> forward(ag::AutogradContext* ctx, const Tensor<double>& x) {
    Tensor<double> mask = dl::cast<double>(x > 0.0);
    ctx->mark_non_differentiable(mask);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward(x);
    return {Tensor<double>(x * x), mask};
  }
  static std::vector<Tensor<double>> backward(ag::AutogradContext* ctx, std::vector<Tensor<double>> g) {
    CHECK(g.size() == 2);
    CHECK_FALSE(g[1].defined());  // the mask took no part: undefined, not zeros
    if (!g[0].defined()) return {Tensor<double>()};
    return {Tensor<double>(g[0] * ctx->get_saved_variables<double>()[0] * 2.0)};
  }
};
}  // namespace

TEST_CASE("custom autograd Functions in libtorch's spelling: AutogradContext*, variable_list, saved_data accessors") {
  Tensor<double> in = rnd({4, 3}), w = rnd({2, 3}), b = rnd({2});
  CHECK(ag::gradcheck([](auto& v) { return LinearFunction::apply(v[0], v[1], v[2]); }, {in, w, b}));
  CHECK(ag::gradcheck([](auto& v) { return LinearFunction::apply(v[0], v[1]); }, {in, w}));  // bias undefined, saved anyway
  // needs_input_grad: an input that does not require grad gets none computed.
  Tensor<double> x0 = rnd({4, 3}), w0 = rnd({2, 3}).requires_grad_();
  LinearFunction::apply(x0, w0).sum().backward();
  CHECK(w0.grad().defined());
  CHECK(dl::allclose(w0.grad(), dl::matmul(dl::ones<double>({2, 4}), x0)));

  Tensor<float> x = dl::tensor<float>({1, -2, 3}).requires_grad_();
  Tensor<float> y = MulConstant::apply(x, 5.5);
  CHECK(y.grad_fn()->name() == "MulConstantBackward");
  CHECK(y.at(2) == doctest::Approx(16.5));
  y.sum().backward();
  CHECK(x.grad().at(1) == doctest::Approx(5.5));

  Tensor<double> z = dl::tensor<double>({-1.0, 2.0, 3.0}).requires_grad_();
  auto outs = SplitMask::apply(z);
  CHECK(outs[0].requires_grad());
  CHECK_FALSE(outs[1].requires_grad());
  CHECK(outs[1].at(0) == 0.0);
  outs[0].sum().backward();
  CHECK(z.grad().at(2) == doctest::Approx(6.0));
  CHECK(ag::gradcheck([](auto& v) { return SplitMask::apply(v[0])[0]; }, {rnd({5})}));

  // saved_data accessors say what the value holds.
  ag::Context ctx;
  ctx.saved_data["k"] = std::string("text");
  ctx.saved_data["n"] = int64_t(3);
  ctx.saved_data["t"] = dl::ones<float>({2});
  CHECK(ctx.saved_data["n"].toDouble() == 3.0);
  CHECK(ctx.saved_data["t"].toTensor().sum().item() == 2.0f);
  CHECK_THROWS_WITH_AS(ctx.saved_data["k"].toDouble(), doctest::Contains("toDouble() needs a double, but the value holds std::"), dl::Error);
  CHECK_THROWS_WITH_AS(ctx.saved_data["missing"].toInt(), doctest::Contains("toInt() needs an integer, but the value holds nothing"),
                       dl::Error);
  CHECK(std::any_cast<int64_t>(ctx.saved_data["n"]) == 3);  // still a std::any
}

TEST_CASE("custom Functions: a gradient for a non-tensor argument, or the wrong count, is an error") {
  struct BadArg : ag::Function<BadArg> {
    static Tensor<float> forward(ag::AutogradContext*, Tensor<float> x, double) { return x * 2.0f; }
    static ag::variable_list backward(ag::AutogradContext*, ag::variable_list g) { return {g[0] * 2.0f, g[0]}; }
  };
  struct TooMany : ag::Function<TooMany> {
    static Tensor<float> forward(ag::AutogradContext*, Tensor<float> x) { return x * 2.0f; }
    static ag::variable_list backward(ag::AutogradContext*, ag::variable_list g) { return {g[0], g[0], g[0]}; }
  };
  Tensor<float> x = dl::ones<float>({2}).requires_grad_();
  CHECK_THROWS_WITH_AS(BadArg::apply(x, 1.0).sum().backward(),
                       doctest::Contains("function BadArgBackward returned a gradient for argument 1, which is not a tensor"), dl::Error);
  CHECK_THROWS_WITH_AS(TooMany::apply(x).sum().backward(),
                       doctest::Contains("function TooManyBackward returned an incorrect number of gradients (expected 1, got 3)"), dl::Error);
}

TEST_CASE("gradcheck reports a wrong backward") {
  struct Wrong : ag::Function<Wrong> {
    static Tensor<double> forward(ag::Context&, const Tensor<double>& x) { return Tensor<double>(x * x); }
    static Tensor<double> backward(ag::Context&, const Tensor<double>& g) { return g; }  // should be 2 x g
  };
  const auto x = rnd({3}, 1, 2);
  CHECK_THROWS_WITH_AS(ag::gradcheck([](auto& v) { return Wrong::apply(v[0]); }, {x}), doctest::Contains("Jacobian mismatch"), dl::Error);
  CHECK_FALSE(ag::gradcheck([](auto& v) { return Wrong::apply(v[0]); }, {x}, {.raise_exception = false}));
}
