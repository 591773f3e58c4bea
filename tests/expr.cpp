// Tests for dl/expr: lazy elementwise expressions (broadcasting, type promotion, strided and
// in-place evaluation) and reductions, against PyTorch (tests/gen_reference.py).
#include <doctest/doctest.h>

#include <dl/dl.hpp>

#include "reference.hpp"

using dl::Tensor;

TEST_CASE("unary ops match PyTorch") {
  const auto x = ref::tensor<float>("x"), pos = ref::tensor<float>("pos"), unit = ref::tensor<float>("unit");
  auto check = [](const auto& e, const char* name) { ref::check(Tensor<float>(e), std::string("unary.") + name, 2e-6, 2e-6); };
  check(-x, "neg");
  check(dl::abs(x), "abs");
  check(dl::exp(x), "exp");
  check(dl::expm1(x), "expm1");
  check(dl::log(pos), "log");
  check(dl::log1p(pos), "log1p");
  check(dl::log2(pos), "log2");
  check(dl::log10(pos), "log10");
  check(dl::sqrt(pos), "sqrt");
  check(dl::rsqrt(pos), "rsqrt");
  check(dl::sin(x), "sin");
  check(dl::cos(x), "cos");
  check(dl::tan(unit), "tan");
  check(dl::asin(unit), "asin");
  check(dl::acos(unit), "acos");
  check(dl::atan(x), "atan");
  check(dl::sinh(x), "sinh");
  check(dl::cosh(x), "cosh");
  check(dl::tanh(x), "tanh");
  check(dl::erf(x), "erf");
  check(dl::sigmoid(x), "sigmoid");
  check(dl::relu(x), "relu");
  check(dl::reciprocal(pos), "reciprocal");
  check(dl::sign(x), "sign");
  check(dl::floor(x), "floor");
  check(dl::ceil(x), "ceil");
  check(dl::round(x), "round");
  check(dl::trunc(x), "trunc");
  check(dl::square(x), "square");
  check(dl::pow(x, 2), "pow2");
  check(x.pow(3), "pow3");
  check(dl::pow(x, 0), "pow0");  // an integral 0 once took the 0.5 (sqrt) fast path
  check(dl::pow(pos, 2.5), "pow2_5");
  check(dl::pow(pos, -1.5), "pow_m1_5");
  check(dl::pow(pos, 0.5), "pow0_5");
  check(dl::clamp(x, -0.5, 0.5), "clamp");
  check(dl::clamp_min(x, 0.2), "clamp_min");
  check(x.clamp_max(-0.2), "clamp_max");
  SUBCASE("double precision") {
    const auto xd = ref::tensor<double>("x");
    Tensor<double> y = dl::sigmoid(xd) * dl::exp(xd);
    Tensor<float> yf = dl::sigmoid(x) * dl::exp(x);
    CHECK(dl::all(dl::abs(y.to<float>() - yf) < 1e-5f).item());
  }
}

TEST_CASE("binary ops, broadcasting and fusion match PyTorch") {
  const auto a = ref::tensor<float>("a"), b = ref::tensor<float>("b"), c = ref::tensor<float>("c");
  const auto x = ref::tensor<float>("x"), pos = ref::tensor<float>("pos");
  ref::check(Tensor<float>(a + b), "bin.add");
  ref::check(Tensor<float>(a - c), "bin.sub");
  ref::check(Tensor<float>(a * b), "bin.mul");
  ref::check(Tensor<float>(a / c), "bin.div", 1e-6, 1e-6);
  ref::check(Tensor<float>(dl::sigmoid(a * b + c) * 2.0f), "bin.chain");
  ref::check(Tensor<float>(dl::maximum(a, c)), "bin.maximum");
  ref::check(Tensor<float>(dl::minimum(a, b)), "bin.minimum");
  ref::check(Tensor<float>(dl::pow(pos, dl::tensor<float>({0.5f, 1, 2, -1, 3}))), "bin.pow");
  ref::check(Tensor<float>(dl::remainder(a * 5.0f, b)), "bin.remainder", 1e-5, 1e-5);
  ref::check(Tensor<float>(dl::lerp(a, c, 0.3f)), "bin.lerp");
  ref::check(Tensor<float>(dl::lerp(a, c, 0.75f)), "bin.lerp_hi");
  ref::check(Tensor<float>(dl::where(a > 0.0f, a, b * 10.0f)), "bin.where");
  ref::check(Tensor<bool>(a > b), "bin.gt");
  ref::check(Tensor<bool>(a <= c), "bin.le");
  ref::check(Tensor<bool>(dl::round(a) == dl::round(b)), "bin.eq");
  ref::check(Tensor<float>(2.0f - a / 4.0f + 1.0f), "bin.scalar");
  ref::check(Tensor<float>(x.t() + dl::exp(x.t())), "bin.t_plus");
  ref::check(Tensor<float>(x.slice(1, 0, INT64_MAX, 2) * 3.0f), "bin.strided");

  SUBCASE("NaN and infinity") {
    const auto v = ref::tensor<float>("nan.v");
    ref::check(Tensor<float>(dl::maximum(v, dl::tensor<float>({0.0f, 0.0f, NAN, 1.0f}))), "nan.maximum");
    ref::check(Tensor<float>(dl::relu(v)), "nan.relu");
    ref::check(Tensor<float>(dl::clamp(v, -1, 1)), "nan.clamp");
    ref::check(Tensor<float>(dl::sign(v)), "nan.sign");
  }
  SUBCASE("mismatched shapes name both shapes") {
    CHECK_THROWS_WITH_AS(Tensor<float>(a + dl::ones({5})),
                         "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 2 "
                         "(shapes [2, 3, 4] and [5])",
                         dl::Error);
  }
  SUBCASE("an expression is lazy; evaluating it twice computes twice") {
    Tensor<float> t = dl::ones({3});
    auto e = t * 2.0f;
    static_assert(!std::is_same_v<decltype(e), Tensor<float>>);
    t.fill_(5.0f);
    CHECK(Tensor<float>(e).at(0) == 10.0f);
    CHECK(e.shape() == dl::Shape{3});
  }
  SUBCASE("long rows, all loop kinds: contiguous, broadcast, strided") {
    Tensor<float> big = dl::randn({37, 1001});
    Tensor<float> row = dl::randn({1001});
    Tensor<float> y = big * row + 1.0f;               // broadcast operand (Mixed loop)
    Tensor<float> z = big.t().t() * 2.0f;             // contiguous
    Tensor<float> w = big.t() * 2.0f;                 // transposed read (strided loop)
    for (int64_t i : {0, 17, 36})
      for (int64_t j : {0, 15, 16, 999, 1000}) {
        CHECK(y.at(i, j) == doctest::Approx(big.at(i, j) * row.at(j) + 1.0f));
        CHECK(z.at(i, j) == big.at(i, j) * 2.0f);
        CHECK(w.at(j, i) == big.at(i, j) * 2.0f);
      }
  }
}

TEST_CASE("large outputs use streaming stores, aligned or not") {
  const int64_t n = (int64_t(1) << 21) + 37;  // > 8 MiB of floats
  Tensor<float> a = dl::randn({n}), b = dl::randn({n});
  Tensor<float> y = a * b + 1.0f;  // fresh, aligned output
  Tensor<float> v = a.clone();
  v.narrow(0, 3, n - 3).mul_(2.0f);  // output starts 12 bytes past an aligned address: peeled
  Tensor<double> d = dl::cast<double>(a) * 0.5;
  for (int64_t i : {int64_t(0), int64_t(2), int64_t(3), int64_t(17), n / 2, n - 2, n - 1}) {
    CHECK(y.at(i) == a.at(i) * b.at(i) + 1.0f);
    CHECK(v.at(i) == (i >= 3 ? 2.0f * a.at(i) : a.at(i)));
    CHECK(d.at(i) == double(a.at(i)) * 0.5);
  }
  a.requires_grad_();
  b.requires_grad_();
  dl::sum(dl::sigmoid(a * b)).backward();  // four-byte gradients written by streaming stores
  for (int64_t i : {int64_t(0), int64_t(5), n - 1}) {
    const float s = 1.0f / (1.0f + std::exp(-a.at(i) * b.at(i)));
    CHECK(a.grad().at(i) == doctest::Approx(s * (1 - s) * b.at(i)).epsilon(1e-5));
  }
}

TEST_CASE("type promotion follows PyTorch") {
  static_assert(std::is_same_v<decltype(dl::ones<int32_t>({1}) + dl::ones<int64_t>({1}))::value_type, int64_t>);
  static_assert(std::is_same_v<decltype(dl::ones<int64_t>({1}) * 0.5)::value_type, float>);
  static_assert(std::is_same_v<decltype(dl::ones<int64_t>({1}) / dl::ones<int64_t>({1}))::value_type, float>);
  static_assert(std::is_same_v<decltype(dl::ones<float>({1}) + dl::ones<double>({1}))::value_type, double>);
  static_assert(std::is_same_v<decltype(dl::ones<int32_t>({1}) * 2)::value_type, int32_t>);
  static_assert(std::is_same_v<decltype(dl::exp(dl::ones<int64_t>({1})))::value_type, float>);
  static_assert(std::is_same_v<decltype(dl::ones<float>({1}) > 0)::value_type, bool>);
  const auto ia = ref::tensor<int64_t>("ia"), ib = ref::tensor<int64_t>("ib");
  ref::check(Tensor<int64_t>(ia + ib), "int.add");
  ref::check(Tensor<int64_t>(ia * ib), "int.mul");
  ref::check(Tensor<float>(ia / ib), "int.div");
  ref::check(Tensor<int64_t>(dl::remainder(ia, ib)), "int.remainder");
  ref::check(Tensor<int64_t>(dl::pow(ia, 2)), "int.pow");
  ref::check(Tensor<int64_t>(dl::abs(ia)), "int.abs");
  ref::check(Tensor<float>(ia + 0.5), "int.plus_float");
  ref::check(Tensor<int64_t>(dl::relu(ia)), "int.relu");
  ref::check(Tensor<int64_t>(dl::clamp(ia, -2, 5)), "int.clamp");
  ref::check(Tensor<uint8_t>(ref::tensor<uint8_t>("u8") + dl::tensor<uint8_t>({100, 200, 5})), "u8.add");
  const auto i32 = ref::tensor<int32_t>("i32");
  ref::check(Tensor<int64_t>(i32 + dl::tensor<int64_t>({10, 20, 30})), "i32.plus_i64");
  ref::check(Tensor<float>(i32 * dl::tensor<float>({0.5f, 0.25f, 2.0f})), "i32.times_float");
  const auto ma = ref::tensor<bool>("ma"), mb = ref::tensor<bool>("mb");
  ref::check(Tensor<bool>(ma & mb), "bool.and");
  ref::check(Tensor<bool>(ma | mb), "bool.or");
  ref::check(Tensor<bool>(ma ^ mb), "bool.xor");
  ref::check(Tensor<bool>(~ma), "bool.not");
  ref::check(Tensor<bool>(ma + mb), "bool.add");
}

TEST_CASE("in-place ops") {
  SUBCASE("evaluate into the target, any strides") {
    Tensor<float> x = dl::arange(6.0f).reshape({2, 3});
    x.add_(1.0f);
    x.mul_(dl::tensor<float>({1, 2, 3}));
    CHECK(x.at(1, 2) == 18);
    x.t().sub_(dl::tensor<float>({1, 2}));  // broadcast over a transposed view
    CHECK(x.at(1, 2) == 16);
    x += x;                                 // exact self-overlap is fine
    CHECK(x.at(0, 0) == 0);
    x /= 2.0f;
    x.clamp_(1.0f, 4.0f);
    CHECK(x.max().item() == 4.0f);
    x.masked_fill_(x > 3.0f, -1.0f);
    CHECK(x.min().item() == -1.0f);
    x.copy_(dl::arange(6).reshape({2, 3}));  // converts int64 to float
    CHECK(x.at(1, 0) == 3);
    x.add_(dl::ones({2, 3}), 10);
    CHECK(x.at(0, 0) == 10);
    CHECK(x.version() == 9);  // one bump per in-place op above
  }
  SUBCASE("bad in-place writes are rejected") {
    Tensor<float> x = dl::zeros({3});
    CHECK_THROWS_WITH_AS(x.add_(dl::ones({2, 3})), "add_: output with shape [3] doesn't match the broadcast shape [2, 3]", dl::Error);
    Tensor<float> e = dl::zeros({1}).expand({4});
    CHECK_THROWS_AS(e.add_(1.0f), dl::Error);
    Tensor<float> y = dl::arange(8.0f);
    CHECK_THROWS_AS(y.narrow(0, 1, 4).copy_(y.narrow(0, 0, 4)), dl::Error);
    Tensor<float> leaf = dl::ones({2}).requires_grad_();
    CHECK_THROWS_WITH_AS(leaf.mul_(2.0f), "mul_: a leaf Variable that requires grad is being used in an in-place operation.", dl::Error);
    dl::NoGradGuard no_grad;
    leaf.mul_(2.0f);
    CHECK(leaf.at(0) == 2);
  }
}

TEST_CASE("reductions match PyTorch") {
  const auto r = ref::tensor<float>("r");
  ref::check(r.sum(), "red.sum", 1e-5, 1e-5);
  ref::check(r.sum(0), "red.sum0", 1e-5, 1e-5);
  ref::check(r.sum(1, true), "red.sum1k", 1e-5, 1e-5);
  ref::check(r.sum(2), "red.sum2", 1e-5, 1e-5);
  ref::check(r.sum({0, 2}), "red.sum02", 1e-5, 1e-5);
  ref::check(r.mean(), "red.mean", 1e-5, 1e-6);
  ref::check(r.mean({1, 2}, true), "red.mean12k", 1e-5, 1e-6);
  ref::check(r.prod(1), "red.prod1", 1e-5, 1e-6);
  ref::check(Tensor<float>(r[0] / 2.0f + 1.0f).prod(), "red.prod", 1e-5, 1e-6);
  ref::check(r.max(), "red.max");
  ref::check(r.min(), "red.min");
  auto [v, i] = r.max(1);
  ref::check(v, "red.max1.values");
  ref::check(i, "red.max1.indices");
  auto mn = r.min(2, true);
  ref::check(mn.values, "red.min2k.values");
  ref::check(mn.indices, "red.min2k.indices");
  ref::check(r.amax({0, 2}), "red.amax02");
  ref::check(r.amin({1}, true), "red.amin1k");
  ref::check(r.argmax(), "red.argmax");
  ref::check(r.argmax(0), "red.argmax0");
  ref::check(r.argmin(2, true), "red.argmin2k");
  ref::check(r.var(), "red.var", 1e-5, 1e-6);
  ref::check(r.var({1}), "red.var1", 1e-5, 1e-6);
  ref::check(r.var({0, 2}, false, true), "red.var_biased02k", 1e-5, 1e-6);
  ref::check(r.std(), "red.std", 1e-5, 1e-6);
  ref::check(r.std({2}), "red.std2", 1e-5, 1e-6);
  ref::check(r.norm(), "red.norm", 1e-5, 1e-6);
  ref::check(r.norm(1, {1}), "red.norm1_1", 1e-5, 1e-6);
  ref::check(r.norm(INFINITY, {2}), "red.norm_inf2");
  ref::check(r.norm(3, {0}), "red.norm3_0", 1e-5, 1e-6);
  ref::check(r.logsumexp({1}), "red.logsumexp1", 1e-5, 1e-6);
  ref::check(r.logsumexp({0, 2}, true), "red.logsumexp02k", 1e-5, 1e-6);
  ref::check(dl::all(r > -3.0f), "red.all");
  ref::check(dl::any(r > 1.5f, 1), "red.any1");
  ref::check(dl::all(r > -1.0f, 2, true), "red.all2k");
  ref::check(dl::sum(dl::pow(r - 1.0f, 2), 1), "red.expr_sum1", 1e-5, 1e-5);
  ref::check(r[0].t().sum(0), "red.t_sum0", 1e-5, 1e-6);
  const auto ri = ref::tensor<int32_t>("ri");
  ref::check(ri.sum(), "red.int_sum");
  ref::check(ri.sum(1), "red.int_sum1");
  ref::check(ri.prod(0), "red.int_prod0");
  ref::check(ri.max(), "red.int_max");
  ref::check(dl::sum(ri > 2), "red.bool_sum");
  CHECK(dl::sum(dl::arange(10) == dl::arange(10)).item() == 10);   // int64 comparison: mask lanes
  CHECK(dl::sum(dl::arange(40) > 2, 0).item() == 37);
  CHECK(dl::any(dl::arange(5.0f) > 3.5f).item());
  ref::check(dl::tensor<float>({1, NAN, 3}).max(), "red.nan_max");

  SUBCASE("many blocks, deterministic for any thread count") {
    Tensor<float> big = dl::empty<float>({1000, 37});
    for (int64_t k = 0; k < 37000; ++k) big.data()[k] = float((k * 7919) % 1000) / 100.0f - 5.0f;
    // Column sums cancel to about -5 from terms whose absolute sum is about 2500: an error of
    // 1e-4 is 4e-8 relative (PyTorch itself is 3e-5 away from the exact -5).
    ref::check(big.sum(0), "red.big_sum0", 1e-5, 3e-4);
    ref::check(big.sum(1), "red.big_sum1", 1e-5, 1e-5);
    ref::check(big.mean(), "red.big_mean", 1e-5, 1e-6);
    Tensor<float> huge = dl::randn({3, 300000});
    dl::set_num_threads(1);
    const float s1 = huge.sum().item(), c1 = huge.sum(1).at(2), r1 = huge.sum(0).at(12345);
    dl::set_num_threads(2);
    CHECK(huge.sum().item() == s1);
    CHECK(huge.sum(1).at(2) == c1);
    CHECK(huge.sum(0).at(12345) == r1);
    Tensor<double> hd = huge.to<double>();
    CHECK(std::abs(double(s1) - hd.sum().item()) < 1e-2);
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(r.sum(3), "sum: dimension out of range (expected to be in range of [-3, 2], but got 3)", dl::Error);
    CHECK_THROWS_WITH_AS(r.sum({1, 1}), "sum: dim 1 appears multiple times in the list of dims", dl::Error);
    CHECK_THROWS_AS(dl::zeros({0}).max(), dl::Error);
    CHECK_THROWS_AS(dl::zeros({2, 0}).max(1), dl::Error);
    CHECK_THROWS_AS(dl::zeros({0}).argmax(), dl::Error);
  }
}
