// Tests for the tensor API a PyTorch/libtorch user reaches for (issue 14): conversions and type
// queries, new_*, in-place views, isinf/isfinite/nan_to_num, clamp with tensor bounds, libtorch's
// spellings (braced cat/stack lists, vectors as shapes, single-int dims, braced pooling strides,
// indexing members, creation options, item<T>(), queries on unevaluated expressions) and the
// scatter/scatter_add backward with an index smaller than src, Tensor::unfold. References:
// gen_tensor_api_reference.py.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/dl.hpp>

#include "refbin.hpp"

using dl::Tensor;
namespace ag = dl::autograd;
namespace F = dl::nn::functional;

namespace {
const refbin::File ref("tensor_api_ref.bin");
using refbin::backward_weighted;
using refbin::det;

template <class T>
constexpr const char* tag() { return std::is_same_v<T, double> ? "d" : "f"; }
std::string key(const char* name, const char* t, const char* what) { return std::string(name) + "_" + t + "/" + what; }
}  // namespace

TEST_CASE_TEMPLATE("scatter and scatter_add: an index smaller than src (gradient has src's shape)", T, double, float) {
  const Tensor<int64_t> idx = ref.tensor<int64_t>("scatter/index"), idx2 = ref.tensor<int64_t>("scatter/index2");
  for (const char* op : {"scatter_add", "scatter"}) {
    CAPTURE(op);
    Tensor<T> x = det<T>({2, 4, 5}, 1).requires_grad_(), src = det<T>({2, 5, 4}, 2).requires_grad_();
    const bool add = std::string(op) == "scatter_add";
    Tensor<T> out = add ? x.scatter_add(2, idx, src) : x.scatter(2, idx2, src);
    ref.check(out, key(op, tag<T>(), "out"));
    backward_weighted(out);
    ref.check(x.grad(), key(op, tag<T>(), "gx"));
    ref.check(src.grad(), key(op, tag<T>(), "gsrc"));
    CHECK(src.grad().shape() == dl::Shape{2, 5, 4});
  }
  if constexpr (std::is_same_v<T, double>) {
    const Tensor<T> x = det<T>({2, 4, 5}, 3).requires_grad_(), src = det<T>({2, 5, 4}, 4).requires_grad_();
    CHECK(ag::gradcheck([&](auto& v) { return dl::scatter_add(v[0], 2, idx, v[1]); }, {x, src}));
    CHECK(ag::gradcheck([&](auto& v) { return dl::scatter(v[0], 2, idx2, v[1]); }, {x, src}));
    CHECK(ag::gradgradcheck([&](auto& v) { return dl::scatter_add(v[0], 2, idx, v[1]); }, {x, src}));
  }
  // the index may not be larger than src outside the scatter dim
  const Tensor<T> x = dl::zeros<T>({2, 4, 5}), small = dl::zeros<T>({2, 2, 2});
  CHECK_THROWS_AS(x.scatter_add(2, idx, small), dl::Error);
}

TEST_CASE_TEMPLATE("clamp with tensor bounds", T, double, float) {
  auto inputs = [] {
    Tensor<T> x = Tensor<T>(det<T>({3, 4, 5}, 3) * T(2)), lo = Tensor<T>(det<T>({4, 1}, 4) - T(0.5)),
              hi = Tensor<T>(det<T>({5}, 5) + T(0.5));
    x.at(0, 0, 0) = std::numeric_limits<T>::quiet_NaN();
    x.at(1, 1, 1) = T(0.5);
    lo.at(1, 0) = T(0.5);
    hi.at(2) = T(-3);
    x.requires_grad_();
    lo.requires_grad_();
    hi.requires_grad_();
    return std::array{x, lo, hi};
  };
  {
    auto [x, lo, hi] = inputs();
    Tensor<T> out = dl::clamp(x, lo, hi);
    ref.check(out, key("clamp", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(x.grad(), key("clamp", tag<T>(), "gx"));
    ref.check(lo.grad(), key("clamp", tag<T>(), "glo"));
    ref.check(hi.grad(), key("clamp", tag<T>(), "ghi"));
  }
  {
    auto [x, lo, hi] = inputs();
    Tensor<T> out = x.clamp(lo, std::nullopt);  // torch.clamp(x, min=lo)
    ref.check(out, key("clamp_min", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(x.grad(), key("clamp_min", tag<T>(), "gx"));
    ref.check(lo.grad(), key("clamp_min", tag<T>(), "glo"));
  }
  {
    auto [x, lo, hi] = inputs();
    Tensor<T> out = dl::clamp_max(x, hi);
    ref.check(out, key("clamp_max", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(x.grad(), key("clamp_max", tag<T>(), "gx"));
    ref.check(hi.grad(), key("clamp_max", tag<T>(), "ghi"));
  }
  {
    auto [x, lo, hi] = inputs();
    Tensor<T> out = x.clamp(lo, 0.25);
    ref.check(out, key("clamp_mixed", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(x.grad(), key("clamp_mixed", tag<T>(), "gx"));
    ref.check(lo.grad(), key("clamp_mixed", tag<T>(), "glo"));
  }
  if constexpr (std::is_same_v<T, double>) {  // away from the kinks
    const Tensor<T> x = det<T>({3, 4}, 11).requires_grad_(), lo = Tensor<T>(det<T>({4}, 12) * 0.5 - 1.0).requires_grad_(),
                    hi = Tensor<T>(det<T>({3, 1}, 13) * 0.5 + 1.0).requires_grad_();
    CHECK(ag::gradcheck([](auto& v) { return dl::clamp(v[0], v[1], v[2]); }, {x, lo, hi}));
    CHECK(ag::gradcheck([](auto& v) { return dl::clamp_min(v[0] * 2.0, v[1]); }, {x, lo}));
    CHECK(ag::gradcheck([](auto& v) { return dl::clamp(v[0], std::nullopt, v[1]); }, {x, hi}));
    CHECK(ag::gradgradcheck([](auto& v) { return dl::clamp(v[0] * v[0], v[1], v[2]); }, {x, lo, hi}));
  }
  CHECK_THROWS_AS(Tensor<T>(dl::clamp(dl::zeros<T>({3, 4}), dl::zeros<T>({3}), 1.0)), dl::Error);  // shapes [3, 4] and [3]
  // integral tensors
  const Tensor<int64_t> i = dl::arange(6), ilo = dl::full({6}, 2), ihi = dl::full({1}, 4);
  const Tensor<int64_t> ic = dl::clamp(i, ilo, ihi);
  CHECK(ic.at(0) == 2);
  CHECK(ic.at(3) == 3);
  CHECK(ic.at(5) == 4);
}

// NaNs in the SIMD lanes, not only in the scalar tail: xsimd's SIMD != is an ordered compare (false
// for NaN), which maximum/minimum/clamp, x != y and the max/min reductions used to rely on. The
// expected indices are PyTorch 1.13's (torch.maximum(a, b).isnan().nonzero(), (a != a).nonzero(), ...).
TEST_CASE_TEMPLATE("NaN propagates on the SIMD path: maximum, minimum, clamp, !=, max/min reductions", T, float, double) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  Tensor<T> a = dl::ones<T>({37}), b = dl::full<T>({37}, T(2));
  a.data()[3] = nan;   // a SIMD lane of the first vector
  b.data()[20] = nan;  // a SIMD lane of the second vector, only in b
  a.data()[36] = nan;  // the scalar tail
  auto nan_at = [](const Tensor<T>& t) {
    std::vector<int64_t> at;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::isnan(t.data()[i])) at.push_back(i);
    return at;
  };
  auto true_at = [](const Tensor<bool>& t) {
    std::vector<int64_t> at;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.data()[i]) at.push_back(i);
    return at;
  };
  CHECK(nan_at(Tensor<T>(dl::maximum(a, b))) == std::vector<int64_t>{3, 20, 36});
  CHECK(nan_at(Tensor<T>(dl::minimum(a, b))) == std::vector<int64_t>{3, 20, 36});
  CHECK(nan_at(Tensor<T>(dl::clamp(dl::ones<T>({37}), b, std::nullopt))) == std::vector<int64_t>{20});
  CHECK(true_at(Tensor<bool>(a != a)) == std::vector<int64_t>{3, 36});
  CHECK(true_at(Tensor<bool>(a == a)).size() == 35);
  CHECK(Tensor<bool>(a != b).sum().item() == 37);
  // Reductions: whole tensor, along the outer dim and along the inner dim, short and multi-threaded.
  for (const int64_t n : {40, 1000, 100000}) {
    for (const int64_t at : {int64_t(0), int64_t(21), n / 2 + 3, n - 1}) {
      CAPTURE(n);
      CAPTURE(at);
      Tensor<T> c = dl::arange<T>(n);
      c.data()[at] = nan;
      CHECK(std::isnan(c.max().item()));
      CHECK(std::isnan(c.min().item()));
      CHECK(std::isnan(c.amax().item()));
      CHECK(std::isnan(c.amin({0}).item()));
      CHECK(std::isnan(Tensor<T>(c.reshape({-1, 8}).amax({0})).at(at % 8)));
      CHECK(std::isnan(Tensor<T>(c.reshape({-1, 8}).amin({1})).at(at / 8)));
    }
  }
}

// x.sum({}) is PyTorch's x.sum(dim=[]): every dim (a braced list once picked sum(int64_t dim)).
TEST_CASE("sum({}) and mean({}) reduce every dim") {
  const Tensor<float> x = dl::ones({3, 4});
  CHECK(x.sum({}).shape() == dl::Shape{});
  CHECK(x.sum({}).item() == 12.0f);
  CHECK(x.mean({}).item() == 1.0f);
  CHECK(dl::sum(x, {}).item() == 12.0f);
  CHECK(dl::mean(x, {}, true).shape() == dl::Shape{1, 1});
  CHECK(x.sum({1}).shape() == dl::Shape{3});
  CHECK(x.sum(1).shape() == dl::Shape{3});
  CHECK(x.sum({0, 1}).item() == 12.0f);
}

TEST_CASE_TEMPLATE("isnan, isinf, isposinf, isneginf, isfinite, nan_to_num", T, double, float) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  auto input = [&] { return dl::tensor<T>({0, -1.5, nan, inf, -inf, T(1e30), -0.0, 3}).requires_grad_(); };
  const Tensor<T> x = input();
  ref.check(Tensor<bool>(dl::isnan(x)), std::string("isnan_") + tag<T>());
  ref.check(Tensor<bool>(dl::isinf(x)), std::string("isinf_") + tag<T>());
  ref.check(Tensor<bool>(x.isposinf()), std::string("isposinf_") + tag<T>());
  ref.check(Tensor<bool>(dl::isneginf(x)), std::string("isneginf_") + tag<T>());
  ref.check(Tensor<bool>(dl::isfinite(x * T(1))), std::string("isfinite_") + tag<T>());
  {
    Tensor<T> in = input(), out = dl::nan_to_num(in);
    ref.check(out, key("nan_to_num", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(in.grad(), key("nan_to_num", tag<T>(), "gx"));
  }
  {
    Tensor<T> in = input(), out = in.nan_to_num(7.0, 100.0, -200.0);
    ref.check(out, key("nan_to_num_args", tag<T>(), "out"));
    backward_weighted(out);
    ref.check(in.grad(), key("nan_to_num_args", tag<T>(), "gx"));
  }
  if constexpr (std::is_same_v<T, double>) CHECK(ag::gradcheck([](auto& v) { return dl::nan_to_num(v[0] * 3.0); }, {det<T>({5}, 1).requires_grad_()}));
  // long enough for the SIMD path of every lane width (a NaN in each 8-, 16- and 32-lane block)
  Tensor<T> big = dl::ones<T>({70});
  for (int64_t i : {3, 20, 45, 69}) big.at(i) = nan;
  big.at(10) = inf;
  big.at(30) = -inf;
  CHECK(Tensor<bool>(dl::isnan(big)).sum().item() == 4);
  CHECK(Tensor<bool>(dl::isinf(big)).sum().item() == 2);
  CHECK(Tensor<bool>(dl::isfinite(big)).sum().item() == 64);
  const Tensor<T> cleaned = dl::nan_to_num(big, 5.0, 6.0, -7.0);
  CHECK(cleaned.at(20) == T(5));
  CHECK(cleaned.at(10) == T(6));
  CHECK(cleaned.at(30) == T(-7));
  CHECK(cleaned.sum().item() == T(64 + 4 * 5 + 6 - 7));
  // integral inputs are finite
  const Tensor<int64_t> i = dl::arange(3);
  CHECK(Tensor<bool>(dl::isfinite(i)).all().item());
  CHECK(!Tensor<bool>(dl::isinf(i)).any().item());
  CHECK(Tensor<int64_t>(dl::nan_to_num(i)).at(2) == 2);
}

TEST_CASE("in-place views: t_, transpose_, squeeze_, unsqueeze_") {
  {
    Tensor<double> a = det<double>({2, 3}, 6).requires_grad_();
    Tensor<double> b = a * 2.0;
    const uint32_t v0 = b.version();
    Tensor<double> alias = b;
    b.t_();
    CHECK(b.shape() == dl::Shape{3, 2});
    CHECK(alias.shape() == dl::Shape{3, 2});  // every handle sees the change, as in PyTorch
    CHECK(b.version() == v0 + 1);
    CHECK(b.grad_fn()->name() == "TransposeBackward");
    b.unsqueeze_(0);
    CHECK(b.shape() == dl::Shape{1, 3, 2});
    b = b * 1.5;
    b.squeeze_();
    CHECK(b.shape() == dl::Shape{3, 2});
    b.transpose_(0, 1);
    ref.check(b, "inplace_views/out");
    backward_weighted(b);
    ref.check(a.grad(), "inplace_views/ga");
  }
  {  // on a view of a non-leaf: the gradient reaches the base
    Tensor<double> a = det<double>({2, 3}, 7).requires_grad_();
    Tensor<double> base = a * 3.0;
    Tensor<double> w = base.view({3, 2});
    w.t_();
    Tensor<double> out = w * det<double>({2, 3}, 8);
    ref.check(out, "inplace_view_of_view/out");
    backward_weighted(out);
    ref.check(a.grad(), "inplace_view_of_view/ga");
  }
  Tensor<float> leaf = dl::ones({2, 3}, dl::requires_grad());
  CHECK_THROWS_WITH_AS(leaf.t_(), "t_: a leaf Variable that requires grad is being used in an in-place operation.", dl::Error);
  CHECK_THROWS_AS(leaf.unsqueeze_(3), dl::Error);
  {
    dl::NoGradGuard no_grad;  // allowed without grad mode, as in PyTorch
    leaf.t_();
    CHECK(leaf.shape() == dl::Shape{3, 2});
  }
  Tensor<float> c = dl::zeros({2, 1, 3});
  c.squeeze_(1).unsqueeze_(-1);
  CHECK(c.shape() == dl::Shape{2, 3, 1});
  CHECK_THROWS_WITH_AS(c.t_(), "t() expects a tensor with <= 2 dimensions, but self is 3D (shape [2, 3, 1])", dl::Error);
  CHECK_THROWS_AS(c.transpose_(0, 3), dl::Error);
  CHECK(c.shape() == dl::Shape{2, 3, 1});  // a refused op leaves the tensor as it was
}

TEST_CASE("conversions, type_as, type_name, new_*") {
  const Tensor<float> x = dl::tensor<float>({1.5f, -2.0f, 0.0f});
  CHECK(x.type_name() == "torch.FloatTensor");
  CHECK(x.to_double().type_name() == "torch.DoubleTensor");
  CHECK(x.long_().type_name() == "torch.LongTensor");
  CHECK(x.to_int().type_name() == "torch.IntTensor");
  CHECK(x.bool_().type_name() == "torch.BoolTensor");
  CHECK(x.byte().type_name() == "torch.ByteTensor");
  CHECK(x.to_long().at(1) == -2);
  CHECK(x.int_().at(0) == 1);  // truncation, as PyTorch
  CHECK(x.to_bool().at(2) == false);
  CHECK(x.float_().is_same(x));  // no copy when the type already matches
  CHECK(x.double_().at(0) == 1.5);
  const Tensor<int64_t> i = dl::arange(3);
  const Tensor<float> f = i.type_as(x);
  CHECK(f.at(2) == 2.0f);
  // differentiable: the gradient converts back
  Tensor<float> w = dl::ones({2}, dl::requires_grad());
  Tensor<double> y = w.to_double() * 3.0;
  y.sum().backward();
  CHECK(w.grad().at(0) == 3.0f);

  CHECK(x.new_zeros({2, 2}).shape() == dl::Shape{2, 2});
  CHECK(x.new_ones({3}).sum().item() == 3.0f);
  CHECK(i.new_full({2}, 3.5).at(0) == 3);  // keeps the integral dtype (PyTorch: tensor([3, 3]))
  CHECK(x.new_full<double>({1}, 0.25).at(0) == 0.25);
  CHECK(x.new_empty({0, 4}).numel() == 0);
  CHECK(!w.new_zeros({2}).requires_grad());
}

TEST_CASE("libtorch spellings: braced lists, vectors as shapes, single-int dims, pooling strides") {
  const Tensor<float> a = det<float>({2, 3}, 1), b = det<float>({2, 3}, 2);
  CHECK(dl::cat({a, b}, 0).shape() == dl::Shape{4, 3});
  CHECK(dl::cat({a, b}, 1).shape() == dl::Shape{2, 6});
  CHECK(dl::stack({a, b}).shape() == dl::Shape{2, 2, 3});
  CHECK(dl::stack({a, b}, -1).shape() == dl::Shape{2, 3, 2});
  CHECK_THROWS_AS(dl::cat({a, dl::zeros({3, 2})}, 0), dl::Error);

  // std::vector / std::array / std::span as shapes and dim lists
  std::vector<int64_t> shape{3, 2};
  const std::vector<int> dims{1, 0};
  const std::array<int64_t, 1> one{1};
  CHECK(a.reshape(shape).shape() == dl::Shape{3, 2});
  CHECK(a.view(shape).shape() == dl::Shape{3, 2});
  CHECK(a.permute(dims).shape() == dl::Shape{3, 2});
  CHECK(a.sum(one).shape() == dl::Shape{2});
  CHECK(a.sum(std::span<const int64_t>(shape.data(), 0)).numel() == 1);
  CHECK(dl::zeros(shape).shape() == dl::Shape{3, 2});
  std::vector<float> buf(6, 1.0f);
  CHECK(dl::from_blob(buf.data(), shape).sum().item() == 6.0f);
  CHECK_THROWS_AS(a.reshape(std::vector<int64_t>{4, 2}), dl::Error);

  // one int dim (checked against PyTorch: values and gradients)
  const char* names[] = {"amax", "amin", "var", "var_biased", "std", "norm", "norm1", "logsumexp", "var_dims0"};
  for (const char* name : names) {
    CAPTURE(name);
    Tensor<double> x = det<double>({3, 4, 5}, 9).requires_grad_();
    const std::string n = name;
    Tensor<double> out = n == "amax" ? x.amax(1, true) : n == "amin" ? dl::amin(x, -1) : n == "var" ? x.var(1, true, false)
                       : n == "var_biased" ? dl::var(x, 2, false, true) : n == "std" ? x.std(0, true, false)
                       : n == "norm" ? x.norm(2.0, 1, false) : n == "norm1" ? dl::norm(x, 1.0, -1, true)
                       : n == "logsumexp" ? x.logsumexp(1, true) : dl::var(x, {0});
    ref.check(out, "red_" + n + "/out");
    backward_weighted(out);
    ref.check(x.grad(), "red_" + n + "/gx");
  }
  CHECK(dl::var(a, {0}).shape() == dl::Shape{3});  // a braced {0} means dims, not unbiased = false
  CHECK(dl::var(a).numel() == 1);
  CHECK(dl::var(a, false).item() < dl::var(a, true).item());
  CHECK(a.amax({}).numel() == 1);  // {} still means all dims
  CHECK_THROWS_AS(a.amax(2), dl::Error);

  // braced strides for pooling
  const Tensor<float> img = det<float>({1, 2, 6, 6}, 4);
  CHECK(F::max_pool2d(img, {2, 2}, {2, 2}).shape() == dl::Shape{1, 2, 3, 3});
  CHECK(dl::equal(F::max_pool2d(img, {2, 2}, {2, 2}), F::max_pool2d(img, 2)));
  CHECK(F::avg_pool2d(img, {3, 3}, {1, 3}).shape() == dl::Shape{1, 2, 4, 2});
  CHECK(F::max_pool2d_with_indices(img, {2, 2}, {2, 1}).values.shape() == dl::Shape{1, 2, 3, 5});
  CHECK(F::max_pool2d(img, 3, std::nullopt).shape() == dl::Shape{1, 2, 2, 2});
}

TEST_CASE("indexing members") {
  const Tensor<float> x = dl::arange(12.0f).reshape({3, 4});
  const Tensor<int64_t> idx = dl::tensor<int64_t>({{0, 3}, {1, 1}, {2, 0}});
  CHECK(dl::equal(x.gather(1, idx), dl::gather(x, 1, idx)));
  CHECK(dl::equal(x.index_select(0, dl::tensor<int64_t>({2, 0})), dl::index_select(x, 0, dl::tensor<int64_t>({2, 0}))));
  CHECK(x.repeat({2, 1}).shape() == dl::Shape{6, 4});
  CHECK(x.scatter(1, idx, -1.0f).at(0, 3) == -1.0f);
  CHECK(x.scatter_add(1, idx, dl::ones({3, 2})).at(1, 1) == 7.0f);
  CHECK(x.index_fill(1, dl::tensor<int64_t>({0}), 9.0f).at(2, 0) == 9.0f);
  CHECK(x.index_add(0, dl::tensor<int64_t>({1}), dl::ones({1, 4}), 2.0f).at(1, 0) == 6.0f);
  CHECK(x.index_copy(0, dl::tensor<int64_t>({0}), dl::zeros({1, 4})).at(0, 1) == 0.0f);
  Tensor<float> y = x.clone();
  y.scatter_(1, idx, dl::zeros({3, 2})).scatter_add_(1, idx, dl::ones({3, 2}));
  CHECK(y.at(0, 3) == 1.0f);
  CHECK(y.at(1, 1) == 2.0f);  // two writes of 0, then two adds of 1
  y.index_fill_(0, dl::tensor<int64_t>({2}), 5.0f).index_add_(0, dl::tensor<int64_t>({2}), dl::ones({1, 4}));
  CHECK(y.at(2, 3) == 6.0f);
  CHECK_THROWS_AS(x.gather(1, dl::full({3, 1}, 4)), dl::Error);
  CHECK_THROWS_AS(x.repeat({2}), dl::Error);
}

TEST_CASE("creation options, item<T>()") {
  Tensor<float> x = dl::ones({2, 2}, dl::requires_grad());
  CHECK(x.requires_grad());
  CHECK(x.is_leaf());
  Tensor<double> d = dl::zeros<double>({3}, {.device = dl::kCPU, .requires_grad = true});
  CHECK(d.requires_grad());
  CHECK(!dl::ones({2}, dl::TensorOptions{}).requires_grad());
  CHECK(dl::full({2}, 1.5, dl::requires_grad()).requires_grad());
  CHECK(dl::randn({3}, {.requires_grad = true}).requires_grad());
  CHECK(dl::rand<double>({3}, dl::dtype(dl::kFloat64)).numel() == 3);
  CHECK(dl::eye(3, dl::requires_grad()).sum().item() == 3.0f);
  CHECK(dl::empty({2, 3}, dl::device(dl::kCPU)).shape() == dl::Shape{2, 3});
  const Tensor<float> v = dl::tensor<float>({0.1f, 1.0f, 0.0001f}, dl::dtype(dl::kFloat));
  CHECK(v.numel() == 3);
  CHECK(dl::tensor<double>({{1, 2}, {3, 4}}, dl::requires_grad()).requires_grad());
  CHECK_THROWS_WITH_AS(dl::ones({2}, {.dtype = dl::kFloat64}),
                       "ones: the options ask for dtype float64 but the tensor type is Tensor<float>; dl's element type is a "
                       "template argument: dl::ones<double>(...)",
                       dl::Error);
  CHECK_THROWS_WITH_AS(dl::zeros<int64_t>({2}, dl::requires_grad()), "only Tensors of floating point dtype can require gradients (got int64)",
                       dl::Error);
  CHECK_THROWS_AS(dl::randn({2}, dl::device({dl::kCUDA, 0})), dl::Error);

  CHECK(dl::full({1}, 2.5f).item<double>() == 2.5);
  CHECK(dl::full({}, 7).item<int>() == 7);
  CHECK(dl::tensor<float>({3.75f}).item<int64_t>() == 3);
  CHECK(Tensor<bool>(dl::ones({2}) == 1.0f).all().item<bool>());
  CHECK_THROWS_AS(dl::ones({2}).item<double>(), dl::Error);
}

TEST_CASE("queries on unevaluated expressions") {
  const Tensor<float> x = dl::ones({2, 3}, dl::requires_grad());
  const Tensor<float> c = dl::ones({3});
  auto y = x + 2;  // nothing computed
  CHECK(y.requires_grad());
  CHECK(!(c * 2).requires_grad());
  CHECK(y.shape() == dl::Shape{2, 3});
  CHECK(y.sizes() == dl::Shape{2, 3});
  CHECK(y.size(1) == 3);
  CHECK(y.size(-2) == 2);
  CHECK(y.dim() == 2);
  CHECK(y.numel() == 6);
  CHECK(y.dtype() == dl::ScalarType::Float);
  CHECK((x > 1.0f).dtype() == dl::ScalarType::Bool);
  CHECK(dl::cast<double>(y).dtype() == dl::ScalarType::Double);
  CHECK(y.device() == dl::Device(dl::kCPU));
  CHECK_THROWS_AS(y.size(2), dl::Error);
  {
    dl::NoGradGuard no_grad;
    CHECK(!y.requires_grad());
  }
  auto bad = x + dl::ones({4});
  CHECK_THROWS_AS((void)bad.shape(), dl::Error);
  Tensor<float> z = y * y * 3;
  CHECK(z.grad_fn() != nullptr);
}

namespace {
/// libtorch's tutorial style: a defaulted tensor argument and an undefined gradient for it.
struct ScaledLinear : dl::autograd::Function<ScaledLinear> {
  static Tensor<float> forward(dl::autograd::Context& ctx, const Tensor<float>& x, const Tensor<float>& w,
                               const Tensor<float>& bias = Tensor<float>()) {
    ctx.save_for_backward(x, w);
    return dl::matmul(x, w.t());
  }
  static std::vector<Tensor<float>> backward(dl::autograd::Context& ctx, const Tensor<float>& g) {
    const auto x = ctx.saved<float>(0), w = ctx.saved<float>(1);
    return {dl::matmul(g, w), dl::matmul(g.t(), x), Tensor<float>()};  // one more than the tensor inputs
  }
};
}  // namespace

TEST_CASE("libtorch's autograd tutorial forms: grad with braced lists, trailing undefined gradients") {
  // torch::autograd::grad({output}, {input}, {grad_output}, retain_graph, create_graph)
  Tensor<float> x = dl::tensor<float>({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor<float> y = x * x;
  const auto g = dl::autograd::grad({y}, {x}, {dl::ones_like(y)}, std::nullopt, /*create_graph=*/true);
  REQUIRE(g.size() == 1);
  CHECK(g[0].at(2) == doctest::Approx(6.0f));
  CHECK(g[0].requires_grad());  // create_graph: the gradient is differentiable

  // A backward that returns an undefined gradient past its tensor inputs: dropped, as libtorch does.
  Tensor<float> a = dl::randn({2, 3}).requires_grad_(), w = dl::randn({4, 3}).requires_grad_();
  ScaledLinear::apply(a, w).sum().backward();
  CHECK(dl::allclose(a.grad(), dl::matmul(dl::ones<float>({2, 4}), w), 1e-5, 1e-6));
  CHECK(dl::allclose(w.grad(), dl::matmul(dl::ones<float>({4, 2}), a), 1e-5, 1e-6));
}

TEST_CASE_TEMPLATE("Tensor::unfold: windows as a view, against PyTorch (values, strides, gradients)", T, double, float) {
  struct Case {
    const char* name;
    int64_t dim, size, step;
  };
  for (const Case c : {Case{"d1_s3_st2", 1, 3, 2}, Case{"d1_s2_st3", 1, 2, 3}, Case{"dm1_s4_st1", -1, 4, 1}, Case{"d0_s4_st1", 0, 4, 1},
                       Case{"d1_s7_st4", 1, 7, 4}, Case{"d2_s0_st2", 2, 0, 2}})
    for (const bool transposed : {false, true}) {
      const std::string k = std::string("unfold_") + c.name + (transposed ? "_t" : "");
      CAPTURE(k);
      Tensor<T> x = det<T>({4, 7, 5}, 21).requires_grad_();
      const Tensor<T> src = transposed ? x.transpose(0, 2) : x;
      Tensor<T> out = src.unfold(c.dim, c.size, c.step);
      const Tensor<int64_t> shape = ref.tensor<int64_t>(k + "/shape"), strides = ref.tensor<int64_t>(k + "/strides");
      CHECK(out.shape() == dl::Shape(std::vector<int64_t>(shape.data(), shape.data() + shape.numel())));
      CHECK(out.strides() == dl::Strides(std::vector<int64_t>(strides.data(), strides.data() + strides.numel())));
      CHECK(out.data() == src.data());  // a view of the same storage
      ref.check(out, k + "/out");
      backward_weighted(out);
      ref.check(x.grad(), k + "/gx");
    }
  if constexpr (std::is_same_v<T, double>) {
    const Tensor<T> x = det<T>({3, 8}, 5).requires_grad_();
    for (const std::pair<int64_t, int64_t> c : {std::pair<int64_t, int64_t>{3, 2}, {2, 2}, {3, 4}, {8, 1}}) {  // overlapping, tiling, gaps, one window
      const int64_t size = c.first, step = c.second;
      CAPTURE(size);
      CAPTURE(step);
      CHECK(ag::gradcheck([&](auto& v) { return Tensor<T>(v[0].unfold(1, size, step) * v[0].unfold(1, size, step)); }, {x}));
      CHECK(ag::gradgradcheck([&](auto& v) { return Tensor<T>(v[0].unfold(1, size, step) * v[0].unfold(1, size, step)); }, {x}));
    }
    // a 0-d tensor has one window of size 1 (or none of size 0), as in PyTorch
    const Tensor<T> s = dl::scalar_tensor<T>(3.0).requires_grad_();
    CHECK(s.unfold(0, 1, 1).shape() == dl::Shape{1});
    CHECK(s.unfold(-1, 0, 2).shape() == dl::Shape{0});
    CHECK(ag::gradcheck([](auto& v) { return Tensor<T>(v[0].unfold(0, 1, 1) * 2.0); }, {s}));
  }
  // writes through the view reach the input; overlapping windows see them twice
  auto values = [](const Tensor<T>& t) {
    const Tensor<T> c = t.contiguous();
    return std::vector<T>(c.data(), c.data() + c.numel());
  };
  Tensor<T> y = dl::zeros<T>({6});
  y.unfold(0, 3, 2).select(0, 1).fill_(T(1));  // elements 2, 3, 4
  CHECK(values(y) == std::vector<T>{0, 0, 1, 1, 1, 0});
  CHECK(values(y.unfold(0, 3, 2).select(0, 0)) == std::vector<T>{0, 0, 1});
  // PyTorch's messages
  const Tensor<T> x = dl::zeros<T>({7});
  CHECK_THROWS_WITH_AS(x.unfold(0, 8, 1), "maximum size for tensor at dimension 0 is 7 but size is 8", dl::Error);
  CHECK_THROWS_WITH_AS(x.unfold(0, 2, 0), "step is 0 but must be > 0", dl::Error);
  CHECK_THROWS_WITH_AS(dl::scalar_tensor<T>(1).unfold(0, 2, 1), "maximum size for tensor at dimension 0 is 1 but size is 2", dl::Error);
  CHECK_THROWS_AS(x.unfold(1, 2, 1), dl::Error);
  CHECK_THROWS_WITH_AS(x.unfold(0, -1, 1), "unfold: size must be non-negative, but got size -1", dl::Error);
}
