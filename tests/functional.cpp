// Tests of dl/nn/functional/{activation,dropout,normalization,sparse,padding}.hpp and the kernels
// under them: values and gradients against PyTorch (tests/data/functional_ref.bin, written by
// tests/gen_functional_reference.py), finite differences in double, second derivatives, fusion,
// dropout statistics and reproducibility, error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/nn/functional/activation.hpp>
#include <dl/nn/functional/dropout.hpp>
#include <dl/nn/functional/normalization.hpp>
#include <dl/nn/functional/padding.hpp>
#include <dl/nn/functional/sparse.hpp>

#include "refbin.hpp"

namespace F = dl::nn::functional;
using dl::Shape;

namespace {

const refbin::File ref("functional_ref.bin");
using refbin::backward_weighted;
using refbin::det;

/// The generator's inp(): det in float, times scale plus offset in float, converted to T.
template <class T>
dl::Tensor<T> inp(const Shape& shape, int64_t seed, float scale = 1, float offset = 0) {
  dl::Tensor<float> f = det<float>(shape, seed) * scale + offset;
  return f.to<T>();
}

template <class T>
dl::Tensor<T> leaf(const dl::Tensor<T>& t) {
  dl::Tensor<T> l = t.detach().clone();
  l.requires_grad_();
  return l;
}

/// A shape stored as (rank, sizes...) at p[at].
Shape shape_at(const std::vector<double>& p, size_t at) {
  Shape s;
  for (int d = 0; d < int(p[at]); ++d) s.push_back(int64_t(p[at + 1 + size_t(d)]));
  return s;
}

std::string case_name(const char* family, int k) { return std::string(family) + "/" + std::to_string(k); }

template <class T>
void check_grad(const dl::Tensor<T>& t, const std::string& key) {
  REQUIRE_MESSAGE(t.grad().defined(), key << ": no gradient");
  ref.check(t.grad(), key);
}

using V = std::vector<dl::Tensor<double>>;

}  // namespace

// ============================================================================== activations

namespace {
template <class T>
using Act = std::function<dl::Tensor<T>(const dl::Tensor<T>&)>;

template <class T>
std::vector<std::pair<std::string, Act<T>>> activation_table() {
  using X = dl::Tensor<T>;
  return {
      {"relu", [](const X& x) { return X(F::relu(x)); }},
      {"relu6", [](const X& x) { return X(F::relu6(x)); }},
      {"leaky_relu", [](const X& x) { return X(F::leaky_relu(x)); }},
      {"leaky_relu_0.2", [](const X& x) { return X(F::leaky_relu(x, 0.2)); }},
      {"elu", [](const X& x) { return X(F::elu(x)); }},
      {"elu_0.5", [](const X& x) { return X(F::elu(x, 0.5)); }},
      {"selu", [](const X& x) { return X(F::selu(x)); }},
      {"celu", [](const X& x) { return X(F::celu(x)); }},
      {"celu_2", [](const X& x) { return X(F::celu(x, 2.0)); }},
      {"gelu", [](const X& x) { return X(F::gelu(x)); }},
      {"gelu_tanh", [](const X& x) { return X(F::gelu(x, "tanh")); }},
      {"silu", [](const X& x) { return X(F::silu(x)); }},
      {"mish", [](const X& x) { return X(F::mish(x)); }},
      {"sigmoid", [](const X& x) { return X(F::sigmoid(x)); }},
      {"tanh", [](const X& x) { return X(F::tanh(x)); }},
      {"softplus", [](const X& x) { return X(F::softplus(x)); }},
      {"softplus_2_10", [](const X& x) { return X(F::softplus(x, 2.0, 10.0)); }},
      {"softplus_0.5_5", [](const X& x) { return X(F::softplus(x, 0.5, 5.0)); }},
      {"hardtanh", [](const X& x) { return X(F::hardtanh(x)); }},
      {"hardtanh_-2_0.5", [](const X& x) { return X(F::hardtanh(x, -2.0, 0.5)); }},
      {"hardsigmoid", [](const X& x) { return X(F::hardsigmoid(x)); }},
      {"hardswish", [](const X& x) { return X(F::hardswish(x)); }},
      {"logsigmoid", [](const X& x) { return X(F::logsigmoid(x)); }},
      {"softsign", [](const X& x) { return X(F::softsign(x)); }},
      {"tanhshrink", [](const X& x) { return X(F::tanhshrink(x)); }},
      {"threshold_0.5_-2", [](const X& x) { return X(F::threshold(x, 0.5, -2.0)); }},
      {"threshold_0_0", [](const X& x) { return X(F::threshold(x, 0.0, 0.0)); }},
  };
}
}  // namespace

TEST_CASE_TEMPLATE("activations match PyTorch, values and gradients, at the kinks and for large |x|", T, float, double) {
  const dl::Tensor<T> x0 = ref.tensor<T>("act/x");
  for (const auto& [name, fn] : activation_table<T>()) {
    CAPTURE(name);
    auto x = leaf(x0);
    auto out = fn(x);
    ref.check(out, "act/" + name + "/out");
    backward_weighted(out);
    REQUIRE(x.grad().defined());
    // PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float, also for double
    const double tol = std::is_same_v<T, float> ? 3e-5 : name == "hardsigmoid" ? 1e-7 : 1e-11;
    ref.check(x.grad(), "act/" + name + "/gx", tol);
  }
}

TEST_CASE_TEMPLATE("prelu: one weight or one per channel, inputs of rank 1 to 4", T, float, double) {
  for (int k = 0; ref.has(case_name("prelu", k) + "/params"); ++k) {
    const std::string c = case_name("prelu", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    auto x = leaf(inp<T>(shape_at(p, 0), 20 + k, 2));
    auto w = leaf(inp<T>({int64_t(p[5])}, 40 + k, 0.25f));
    dl::Tensor<T> out = F::prelu(x, w);
    ref.check(out, c + "/out");
    backward_weighted(out);
    check_grad(x, c + "/gx");
    check_grad(w, c + "/gw");
  }
}

TEST_CASE("activations fuse: gelu(leaky_relu(a * b)) is one pass forward and one node backward") {
  auto a = leaf(inp<float>({6, 5}, 1, 2)), b = leaf(inp<float>({6, 5}, 2, 2));
  dl::Tensor<float> y = F::gelu(F::leaky_relu(a * b));
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "FusedBackward[Gelu(LeakyRelu(Mul(x0, x1)))]");
  const auto& edges = y.grad_fn()->next_edges();
  REQUIRE(edges.size() == 2);
  CHECK(edges[0].fn->name() == "AccumulateGrad");  // straight to the leaves: no intermediate node
  CHECK(edges[1].fn->name() == "AccumulateGrad");
  ref.check(y, "fused/out");
  backward_weighted(y);
  check_grad(a, "fused/ga");
  check_grad(b, "fused/gb");
  // an activation of an activation of a number expression stays lazy until assigned
  auto e = F::silu(F::hardswish(a) * 2.0f);
  CHECK(e.shape() == Shape{6, 5});
}

TEST_CASE("activations: errors and integer inputs") {
  auto x = dl::tensor<float>({-1.f, 0.f, 2.f});
  CHECK_THROWS_WITH_AS(F::celu(x, 0.0), doctest::Contains("alpha cannot be 0 for CELU"), dl::Error);
  CHECK_THROWS_WITH_AS(F::gelu(x, "exact"), doctest::Contains("approximate argument must be either none or tanh"), dl::Error);
  CHECK_THROWS_WITH_AS(F::prelu(dl::ones<float>({2, 3}), dl::ones<float>({4})),
                       doctest::Contains("Found parameter numbers = 4 and channel size = 3"), dl::Error);
  CHECK_THROWS_WITH_AS(F::prelu(dl::ones<float>({4}), dl::ones<float>({4})),
                       doctest::Contains("Found parameter numbers = 4 and channel size = 1"), dl::Error);
  CHECK_THROWS_WITH_AS(F::prelu(dl::ones<float>({2, 3}), dl::ones<float>({1, 3})),
                       doctest::Contains("Expected `weight` to be a scalar or 1D tensor, but got ndim = 2"), dl::Error);
  // hardtanh, relu6 and threshold keep integer tensors integral (as PyTorch's clamp-based kernels)
  dl::Tensor<int64_t> xi = dl::tensor<int64_t>({-3, 0, 4, 7});
  dl::Tensor<int64_t> h = F::hardtanh(xi, -1, 1), r6 = F::relu6(xi), th = F::threshold(xi, 0.5, 9);
  CHECK(h.to<double>().sum().item() == 1);      // -1 0 1 1
  CHECK(r6.to<double>().sum().item() == 10);    // 0 0 4 6
  CHECK(th.to<double>().sum().item() == 29);    // 9 9 4 7
  // hardtanh with min_val > max_val gives max_val everywhere, as PyTorch
  dl::Tensor<float> hh = F::hardtanh(x, 2.0, 1.0);
  CHECK(hh.sum().item() == 3.0f);
  // NaN propagates
  dl::Tensor<float> n = F::gelu(dl::full<float>({2}, NAN)) + F::leaky_relu(dl::full<float>({2}, NAN)) + F::hardtanh(dl::full<float>({2}, NAN));
  CHECK(std::isnan(n.data()[0]));
}

TEST_CASE("activations: finite differences and second derivatives (double)") {
  const auto x = inp<double>({14}, 31, 3);
  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  CHECK(gradcheck([](auto& in) { return F::relu6(in[0]) + F::leaky_relu(in[0], 0.3) + F::hardtanh(in[0], -1.5, 2.0); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::elu(in[0], 0.7) + F::selu(in[0]) + F::celu(in[0], 1.5); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::gelu(in[0]) + F::gelu(in[0], "tanh") * 2.0; }, {x}));
  CHECK(gradcheck([](auto& in) { return F::silu(in[0]) + F::mish(in[0]) + F::logsigmoid(in[0]); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::softplus(in[0], 2.0, 3.0) + F::softsign(in[0]) + F::tanhshrink(in[0]); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::hardsigmoid(in[0]) + F::hardswish(in[0]) + F::threshold(in[0], 0.3, -1.0); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::prelu(in[0], in[1]); }, {inp<double>({2, 3, 4}, 5, 2), inp<double>({3}, 6)}));
  CHECK(gradcheck([](auto& in) { return F::prelu(in[0], in[1]); }, {inp<double>({7}, 5, 2), inp<double>({1}, 6)}));
  CHECK(gradgradcheck([](auto& in) { return F::gelu(in[0]) + F::gelu(in[0], "tanh") * 2.0; }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::silu(in[0]) * F::mish(in[0]) + F::logsigmoid(in[0]); }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::elu(in[0], 0.7) * F::softplus(in[0], 2.0, 3.0) + F::softsign(in[0]); }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::tanhshrink(in[0]) * F::hardswish(in[0]) + F::leaky_relu(in[0]) * in[0]; }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::prelu(in[0], in[1]) * in[0]; }, {inp<double>({2, 3, 4}, 5, 2), inp<double>({3}, 6)}));
}

// ============================================================================== dropout

TEST_CASE("dropout: fraction dropped, scaling, mean, eval identity, gradient = mask * scale") {
  dl::manual_seed(123);
  const int64_t n = int64_t(1) << 20;
  const dl::Tensor<float> ones = dl::ones<float>({n});
  for (double p : {0.1, 0.3, 0.5, 0.9}) {
    CAPTURE(p);
    dl::Tensor<float> y = F::dropout(ones, p);
    const float scale = float(1.0 / (1.0 - p));
    const double dropped = dl::sum(dl::cast<double>(y == 0.0f)).item() / double(n);
    CHECK(std::abs(dropped - p) < 0.003);  // 6 standard deviations
    CHECK(dl::all((y == 0.0f) | (y == scale)).item());
    CHECK(std::abs(dl::mean(dl::cast<double>(y)).item() - 1.0) < 0.03 * scale);
  }
  // identity: the same tensor when not training or p == 0
  CHECK(F::dropout(ones, 0.5, false).is_same(ones));
  CHECK(F::dropout(ones, 0.0).is_same(ones));
  CHECK(F::dropout2d(dl::ones<float>({2, 3, 4, 4}), 0.5, false).shape() == Shape{2, 3, 4, 4});
  // p == 1: zeros (input * 0), gradient zeros
  auto x = leaf(dl::randn<float>({1000}));
  dl::Tensor<float> z = F::dropout(x, 1.0);
  CHECK(dl::all(z == 0.0f).item());
  z.sum().backward();
  CHECK(dl::all(x.grad() == 0.0f).item());
  // gradient: the same mask times the scale
  x = leaf(dl::randn<float>({4096}));
  dl::Tensor<float> y = F::dropout(x, 0.4);
  y.backward(dl::ones<float>({4096}));
  const dl::Tensor<float> g = x.grad();
  CHECK(dl::all((g == 0.0f) | (g == float(1 / 0.6))).item());
  CHECK(dl::all((g == 0.0f) == (y == 0.0f)).item());
  CHECK(dl::max(dl::abs(y - x * g)).item() < 1e-6f);
}

TEST_CASE("dropout fuses with its input expression and reproduces with the seed for any thread count") {
  auto a = leaf(dl::randn<float>({3000})), b = leaf(dl::randn<float>({3000}));
  dl::Tensor<float> y = F::dropout(a * 2.0f + b, 0.25);
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name().rfind("FusedBackward[", 0) == 0);  // one node for the input chain and the mask
  y.sum().backward();
  CHECK(dl::max(dl::abs(a.grad() - b.grad() * 2.0f)).item() == 0.0f);
  // reproducibility
  const auto x = dl::randn<double>({1 << 17});
  const int threads = dl::get_num_threads();
  dl::manual_seed(7);
  dl::Tensor<double> y1 = F::dropout(x, 0.5);
  dl::set_num_threads(1);
  dl::manual_seed(7);
  dl::Tensor<double> y2 = F::dropout(x, 0.5);
  dl::set_num_threads(std::max(threads, 2));
  dl::manual_seed(7);
  dl::Tensor<double> y3 = F::dropout(x, 0.5);
  dl::set_num_threads(threads);
  CHECK(dl::all(y1 == y2).item());
  CHECK(dl::all(y1 == y3).item());
  dl::Tensor<double> y4 = F::dropout(x, 0.5);  // the generator moved on
  CHECK(!dl::all(y1 == y4).item());
  dl::Generator gen(99), gen2(99);
  dl::Tensor<double> g1 = F::dropout(x, 0.5, true, &gen), g2 = F::dropout(x, 0.5, true, &gen2);
  CHECK(dl::all(g1 == g2).item());
}

TEST_CASE("dropout1d / dropout2d drop whole channels; alpha_dropout keeps mean and variance") {
  dl::manual_seed(3);
  dl::Tensor<float> y = F::dropout2d(dl::ones<float>({16, 64, 3, 5}), 0.5);
  const dl::Tensor<float> per_channel_min = dl::amin(y, {2, 3}), per_channel_max = dl::amax(y, {2, 3});
  CHECK(dl::all(per_channel_min == per_channel_max).item());  // a channel is kept or dropped whole
  const double dropped = dl::mean(dl::cast<double>(per_channel_max == 0.0f)).item();
  CHECK(std::abs(dropped - 0.5) < 0.08);
  dl::Tensor<float> y3 = F::dropout2d(dl::ones<float>({64, 3, 5}), 0.5);  // unbatched [C, H, W]
  CHECK(dl::all(dl::amin(y3, {1, 2}) == dl::amax(y3, {1, 2})).item());
  dl::Tensor<float> y1 = F::dropout1d(dl::ones<float>({8, 32, 9}), 0.3);
  CHECK(dl::all(dl::amin(y1, {2}) == dl::amax(y1, {2})).item());
  dl::Tensor<float> y1u = F::dropout1d(dl::ones<float>({32, 9}), 0.3);
  CHECK(dl::all(dl::amin(y1u, {1}) == dl::amax(y1u, {1})).item());
  CHECK_THROWS_WITH_AS(F::dropout1d(dl::ones<float>({4}), 0.5), doctest::Contains("dropout1d: Expected 2D or 3D input, but received a 1D input"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::dropout2d(dl::ones<float>({4}), 0.5), doctest::Contains("Feature dropout requires at least 2 dimensions"),
                       dl::Error);
  // gradient of channel dropout: the channel mask times the scale
  auto x = leaf(dl::randn<float>({4, 8, 3, 3}));
  dl::Tensor<float> yc = F::dropout2d(x, 0.25);
  yc.sum().backward();
  CHECK(dl::all((x.grad() == 0.0f) | (x.grad() == float(1 / 0.75))).item());
  // alpha dropout of a standard normal input keeps mean 0 and variance 1
  const auto xn = dl::randn<double>({1 << 20});
  for (double p : {0.1, 0.5}) {
    dl::Tensor<double> a = F::alpha_dropout(xn, p, true);
    CHECK(std::abs(dl::mean(a).item()) < 0.01);
    CHECK(std::abs(dl::var(a).item() - 1.0) < 0.01);
    const double alpha = 1.7580993408473766, s = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
    const double dropped = dl::mean(dl::cast<double>(dl::abs(a - alpha * s * (p - 1)) < 1e-12)).item();
    CHECK(std::abs(dropped - p) < 0.003);
  }
  CHECK(F::alpha_dropout(xn, 0.5).is_same(xn));  // training defaults to false, as PyTorch
}

TEST_CASE_TEMPLATE("dropout masks follow the Philox stream: group layout and generator offsets", T, float, double) {
  for (int64_t n : {1, 63, 64, 65, 1000, 4099}) {
    CAPTURE(n);
    dl::Generator gen(42);
    gen.reserve(7);
    const dl::Tensor<T> m = dl::detail::keep_mask<T>({n}, 0.3, T(2), &gen);
    const uint64_t threshold = uint64_t(std::llround(0.3 * 4294967296.0));
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {  // element 64 g + 16 w + l: word w of block 16 g + l
      const auto words = dl::detail::Philox::generate(42, 7 + uint64_t(16 * (i / 64) + i % 16));
      wrong += m.data()[i] != (words[size_t((i % 64) / 16)] < threshold ? T(2) : T(0));
    }
    CHECK(wrong == 0);
    CHECK(gen.offset() == uint64_t(7 + 16 * ((n + 63) / 64)));
  }
}

TEST_CASE("dropout: errors") {
  const auto x = dl::ones<float>({4, 4});
  CHECK_THROWS_WITH_AS(F::dropout(x, 1.5), doctest::Contains("dropout probability has to be between 0 and 1, but got 1.5"), dl::Error);
  CHECK_THROWS_WITH_AS(F::dropout(x, -0.1, false), doctest::Contains("but got -0.1"), dl::Error);
  CHECK_THROWS_WITH_AS(F::dropout2d(x, 2.0), doctest::Contains("dropout probability has to be between 0 and 1"), dl::Error);
  CHECK_THROWS_WITH_AS(F::alpha_dropout(x, 1.5, true), doctest::Contains("dropout probability has to be between 0 and 1"), dl::Error);
}

// ============================================================================== normalisation

TEST_CASE_TEMPLATE("batch_norm matches PyTorch: training and eval, running statistics, every rank", T, float, double) {
  for (int k = 0; ref.has(case_name("bn", k) + "/params"); ++k) {
    const std::string c = case_name("bn", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const int64_t C = shape[1];
    const bool hw = p[6] != 0, hb = p[7] != 0, training = p[8] != 0, hr = p[11] != 0;
    auto x = leaf(inp<T>(shape, 100 + k, float(p[12]), float(p[13])));
    dl::Tensor<T> w = hw ? leaf(inp<T>({C}, 200 + k)) : dl::Tensor<T>();
    dl::Tensor<T> b = hb ? leaf(inp<T>({C}, 300 + k)) : dl::Tensor<T>();
    dl::Tensor<T> rm = hr ? inp<T>({C}, 400 + k, 0.25f) : dl::Tensor<T>();
    dl::Tensor<T> rv = hr ? inp<T>({C}, 500 + k, 0.25f, 1.0f) : dl::Tensor<T>();
    dl::Tensor<T> out = F::batch_norm(x, rm, rv, w, b, training, p[9], p[10]);
    ref.check(out, c + "/out");
    if (hr) {
      ref.check(rm, c + "/rm");
      ref.check(rv, c + "/rv");
    }
    backward_weighted(out);
    check_grad(x, c + "/gx");
    if (hw) check_grad(w, c + "/gw");
    if (hb) check_grad(b, c + "/gb");
  }
}

TEST_CASE("batch_norm: the fast backward equals the differentiable one; gradcheck and gradgradcheck") {
  for (Shape shape : {Shape{6, 3}, Shape{3, 4, 70}, Shape{2, 3, 5, 5}}) {
    CAPTURE(shape);
    const int64_t C = shape[1];
    auto x = leaf(inp<double>(shape, 1, 2)), w = leaf(inp<double>({C}, 2)), b = leaf(inp<double>({C}, 3));
    dl::Tensor<double> y = F::batch_norm(x, {}, {}, w, b, true);
    CHECK(y.grad_fn()->name() == "NativeBatchNormBackward");
    const auto v = inp<double>(shape, 4);
    auto fast = dl::autograd::grad<double>({y}, {x, w, b}, {v}, true, false);
    auto graph = dl::autograd::grad<double>({y}, {x, w, b}, {v}, true, true);
    for (int i = 0; i < 3; ++i) CHECK(dl::max(dl::abs(fast[size_t(i)] - graph[size_t(i)])).item() < 1e-12);
    CHECK(graph[0].requires_grad());
  }
  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  const auto x = inp<double>({4, 3, 5}, 7, 2), w = inp<double>({3}, 8), b = inp<double>({3}, 9);
  CHECK(gradcheck([](auto& in) { return F::batch_norm(in[0], {}, {}, in[1], in[2], true); }, {x, w, b}));
  CHECK(gradcheck([](auto& in) { return F::batch_norm(in[0], {}, {}, {}, {}, true, 0.1, 1e-3); }, {inp<double>({5, 2}, 1)}));
  CHECK(gradcheck([](auto& in) { return F::batch_norm(in[0], {}, {}, in[1], in[2], true); }, {inp<double>({2, 3, 9, 8}, 7), w, b}));
  const auto rm = inp<double>({3}, 10, 0.25f), rv = inp<double>({3}, 11, 0.25f, 1.0f);
  CHECK(gradcheck([&](auto& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); }, {x, w, b}));
  CHECK(gradgradcheck([](auto& in) { return F::batch_norm(in[0], {}, {}, in[1], in[2], true); }, {x, w, b}));
  CHECK(gradgradcheck([](auto& in) { return F::batch_norm(in[0], {}, {}, {}, {}, true); }, {inp<double>({5, 2}, 1)}));
  CHECK(gradgradcheck([&](auto& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); }, {x, w, b}));
}

TEST_CASE("batch_norm: statistics accuracy, expression input, thread count, momentum, errors") {
  // float input with a large offset (std / mean = 1e-5): the statistics stay accurate
  dl::Tensor<float> xf = inp<float>({16, 8, 12, 12}, 3, 0.01f, 1000.0f);
  dl::Tensor<float> y = F::batch_norm(xf, {}, {}, {}, {}, true, 0.1, 0.0);
  CHECK(dl::max(dl::abs(dl::mean(y, {0, 2, 3}))).item() < 1e-3f);
  CHECK(dl::max(dl::abs(dl::var(y, {0, 2, 3}, false) - 1.0f)).item() < 1e-3f);
  dl::Tensor<float> y2d = F::batch_norm(inp<float>({512, 8}, 3, 0.01f, 1000.0f), {}, {}, {}, {}, true, 0.1, 0.0);
  CHECK(dl::max(dl::abs(dl::var(y2d, {0}, false) - 1.0f)).item() < 1e-3f);
  // an expression input is materialised once; results do not depend on the thread count
  auto a = leaf(inp<float>({8, 4, 9, 9}, 5)), b = leaf(inp<float>({8, 4, 9, 9}, 6));
  const int threads = dl::get_num_threads();
  dl::set_num_threads(1);
  dl::Tensor<float> r1 = F::batch_norm(a * b + 1.0f, {}, {}, {}, {}, true);
  dl::set_num_threads(std::max(threads, 2));
  dl::Tensor<float> r2 = F::batch_norm(a * b + 1.0f, {}, {}, {}, {}, true);
  dl::set_num_threads(threads);
  CHECK(dl::all(r1 == r2).item());
  r2.sum().backward();
  CHECK(a.grad().defined());
  // momentum = 1 / num_batches_tracked gives the cumulative average (BatchNorm's momentum=None)
  dl::Tensor<double> rm = dl::zeros<double>({2}), rv = dl::ones<double>({2});
  const uint32_t v0 = rm.version();
  dl::Tensor<double> b1 = inp<double>({5, 2}, 1), b2 = inp<double>({5, 2}, 2);
  F::batch_norm(b1, rm, rv, {}, {}, true, 1.0);
  F::batch_norm(b2, rm, rv, {}, {}, true, 0.5);
  CHECK(rm.version() != v0);
  const dl::Tensor<double> both_mean = (dl::mean(b1, dl::Dims{0}) + dl::mean(b2, dl::Dims{0})) * 0.5;
  const dl::Tensor<double> both_var = (dl::var(b1, dl::Dims{0}) + dl::var(b2, dl::Dims{0})) * 0.5;
  CHECK(dl::max(dl::abs(rm - both_mean)).item() < 1e-12);
  CHECK(dl::max(dl::abs(rv - both_var)).item() < 1e-12);
  // errors
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({1, 3}), {}, {}, {}, {}, true),
                       doctest::Contains("Expected more than 1 value per channel when training, got input size [1, 3]"), dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({1, 3, 1}), {}, {}, {}, {}, true),
                       doctest::Contains("got input size [1, 3, 1]"), dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({2, 3}), dl::zeros<float>({4}), dl::ones<float>({3}), {}, {}, true),
                       doctest::Contains("running_mean should contain 3 elements not 4"), dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({2, 3}), {}, {}, dl::ones<float>({4}), {}, true),
                       doctest::Contains("weight should contain 3 elements not 4"), dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({2, 3}), {}, {}, {}, dl::ones<float>({2}), true),
                       doctest::Contains("bias should contain 3 elements not 2"), dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({2, 3}), {}, {}), doctest::Contains("running_mean must be defined in evaluation mode"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::batch_norm(dl::ones<float>({3}), {}, {}, {}, {}, true), doctest::Contains("at least 2 dimensions"), dl::Error);
}

TEST_CASE_TEMPLATE("layer_norm, group_norm and instance_norm match PyTorch", T, float, double) {
  for (int k = 0; ref.has(case_name("ln", k) + "/params"); ++k) {
    const std::string c = case_name("ln", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const int nd = int(p[5]);
    Shape ns;
    for (int d = shape.size() - nd; d < shape.size(); ++d) ns.push_back(shape[d]);
    const bool hw = p[6] != 0, hb = p[7] != 0;
    auto x = leaf(inp<T>(shape, 600 + k, 2, 0.5f));
    dl::Tensor<T> w = hw ? leaf(inp<T>(ns, 700 + k)) : dl::Tensor<T>();
    dl::Tensor<T> b = hb ? leaf(inp<T>(ns, 800 + k)) : dl::Tensor<T>();
    dl::Tensor<T> out = F::layer_norm(x, ns, w, b, p[8]);
    ref.check(out, c + "/out");
    backward_weighted(out);
    check_grad(x, c + "/gx");
    if (hw) check_grad(w, c + "/gw");
    if (hb) check_grad(b, c + "/gb");
  }
  for (int k = 0; ref.has(case_name("gn", k) + "/params"); ++k) {
    const std::string c = case_name("gn", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const int64_t C = shape[1];
    const bool hw = p[6] != 0, hb = p[7] != 0;
    auto x = leaf(inp<T>(shape, 900 + k, 2, -0.5f));
    dl::Tensor<T> w = hw ? leaf(inp<T>({C}, 1000 + k)) : dl::Tensor<T>();
    dl::Tensor<T> b = hb ? leaf(inp<T>({C}, 1100 + k)) : dl::Tensor<T>();
    dl::Tensor<T> out = F::group_norm(x, int64_t(p[5]), w, b, p[8]);
    ref.check(out, c + "/out");
    backward_weighted(out);
    check_grad(x, c + "/gx");
    if (hw) check_grad(w, c + "/gw");
    if (hb) check_grad(b, c + "/gb");
  }
  for (int k = 0; ref.has(case_name("in", k) + "/params"); ++k) {
    const std::string c = case_name("in", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    const int64_t C = shape[1];
    const bool hw = p[5] != 0, hr = p[6] != 0, use_input_stats = p[7] != 0;
    auto x = leaf(inp<T>(shape, 1200 + k, 2, 0.25f));
    dl::Tensor<T> w = hw ? leaf(inp<T>({C}, 1300 + k)) : dl::Tensor<T>();
    dl::Tensor<T> b = hw ? leaf(inp<T>({C}, 1400 + k)) : dl::Tensor<T>();
    dl::Tensor<T> rm = hr ? inp<T>({C}, 1500 + k, 0.25f) : dl::Tensor<T>();
    dl::Tensor<T> rv = hr ? inp<T>({C}, 1600 + k, 0.25f, 1.0f) : dl::Tensor<T>();
    dl::Tensor<T> out = F::instance_norm(x, rm, rv, w, b, use_input_stats, 0.2, 1e-5);
    ref.check(out, c + "/out");
    if (hr) {
      ref.check(rm, c + "/rm");
      ref.check(rv, c + "/rv");
    }
    backward_weighted(out);
    check_grad(x, c + "/gx");
    if (hw) {
      check_grad(w, c + "/gw");
      check_grad(b, c + "/gb");
    }
  }
}

TEST_CASE("layer_norm, group_norm, instance_norm: gradcheck, gradgradcheck, errors") {
  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  const auto x = inp<double>({2, 4, 6}, 1, 2), w6 = inp<double>({6}, 2), b6 = inp<double>({6}, 3);
  const auto w46 = inp<double>({4, 6}, 4), w4 = inp<double>({4}, 5), b4 = inp<double>({4}, 6);
  CHECK(gradcheck([](auto& in) { return F::layer_norm(in[0], {6}, in[1], in[2]); }, {x, w6, b6}));
  CHECK(gradcheck([](auto& in) { return F::layer_norm(in[0], {4, 6}, in[1]); }, {x, w46}));
  CHECK(gradcheck([](auto& in) { return F::group_norm(in[0], 2, in[1], in[2]); }, {x, w4, b4}));
  CHECK(gradcheck([](auto& in) { return F::group_norm(in[0], 4, {}, in[1]); }, {x, b4}));
  CHECK(gradcheck([](auto& in) { return F::instance_norm(in[0], {}, {}, in[1], in[2]); }, {x, w4, b4}));
  CHECK(gradgradcheck([](auto& in) { return F::layer_norm(in[0], {6}, in[1], in[2]); }, {x, w6, b6}));
  CHECK(gradgradcheck([](auto& in) { return F::group_norm(in[0], 2, in[1], in[2]); }, {x, w4, b4}));
  const auto f = dl::ones<float>({2, 3});
  CHECK_THROWS_WITH_AS(F::layer_norm(f, {4}),
                       doctest::Contains("Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::layer_norm(f, {3}, dl::ones<float>({4})),
                       doctest::Contains("Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [3]"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::layer_norm(f, {3}, {}, dl::ones<float>({2})), doctest::Contains("Expected bias to be of same shape"),
                       dl::Error);
  const auto g = dl::ones<float>({2, 6, 3});
  CHECK_THROWS_WITH_AS(F::group_norm(g, 4),
                       doctest::Contains("Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 3] and num_groups=4"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::group_norm(g, 3, dl::ones<float>({5})),
                       doctest::Contains("Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [5] and input of shape [2, 6, 3]"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::group_norm(dl::ones<float>({6}), 3), doctest::Contains("at least 2 dimensions"), dl::Error);
  CHECK_THROWS_WITH_AS(F::instance_norm(dl::ones<float>({2, 3, 1})), doctest::Contains("Expected more than 1 spatial element when training"),
                       dl::Error);
}

// ============================================================================== embedding, one_hot

TEST_CASE_TEMPLATE("embedding matches PyTorch: repeated indices, padding_idx, max_norm, scale_grad_by_freq", T, float, double) {
  const dl::Tensor<int64_t> idx = ref.tensor<int64_t>("emb/idx");
  for (int k = 0; ref.has(case_name("emb", k) + "/params"); ++k) {
    const std::string c = case_name("emb", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    auto w = leaf(inp<T>({10, 5}, 1700 + k));
    const std::optional<int64_t> pad = p[0] == -100 ? std::nullopt : std::optional<int64_t>(int64_t(p[0]));
    const std::optional<double> max_norm = p[1] == 0 ? std::nullopt : std::optional<double>(p[1]);
    dl::Tensor<T> out = F::embedding(idx, w, pad, max_norm, p[2], p[3] != 0);
    CHECK(out.shape() == Shape{3, 4, 5});
    ref.check(out, c + "/out");
    ref.check(w.detach(), c + "/w_after");
    backward_weighted(out);
    check_grad(w, c + "/gw");
  }
}

TEST_CASE("embedding: any index shape, gradients of any order, errors; one_hot") {
  auto w = leaf(inp<double>({6, 3}, 1));
  const dl::Tensor<int64_t> scalar_index = dl::full<int64_t>({}, 4);
  dl::Tensor<double> row = F::embedding(scalar_index, w);
  CHECK(row.shape() == Shape{3});
  CHECK(dl::max(dl::abs(row - w[4])).item() == 0);
  const dl::Tensor<int64_t> idx = dl::tensor<int64_t>({{0, 5, 5}, {2, 3, 5}});
  CHECK(F::embedding(idx, w).shape() == Shape{2, 3, 3});
  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  // (padding_idx and scale_grad_by_freq change the gradient on purpose: checked against PyTorch above)
  CHECK(gradcheck([&](auto& in) { return F::embedding(idx, in[0], 4); }, {inp<double>({6, 3}, 2)}));
  CHECK(gradgradcheck([&](auto& in) { return F::embedding(idx, dl::Tensor<double>(in[0] * in[0]), 3); }, {inp<double>({6, 3}, 2)}));
  CHECK_THROWS_WITH_AS(F::embedding(dl::tensor<int64_t>({1, 12}), w), doctest::Contains("index out of range in self"), dl::Error);
  CHECK_THROWS_WITH_AS(F::embedding(dl::tensor<int64_t>({1, -1}), w), doctest::Contains("index out of range in self"), dl::Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx, w, 6), doctest::Contains("Padding_idx must be within num_embeddings"), dl::Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx, w, -7), doctest::Contains("Padding_idx must be within num_embeddings"), dl::Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx, dl::ones<double>({6})), doctest::Contains("'weight' must be 2-D"), dl::Error);

  const dl::Tensor<int64_t> oh = F::one_hot(dl::tensor<int64_t>({{0, 2}, {1, 0}}));
  CHECK(oh.shape() == Shape{2, 2, 3});
  const std::vector<int64_t> expected{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0};
  CHECK(std::vector<int64_t>(oh.data(), oh.data() + 12) == expected);
  CHECK(F::one_hot(dl::tensor<int64_t>({1, 3}), 5).shape() == Shape{2, 5});
  CHECK(F::one_hot(dl::zeros<int64_t>({0}), 4).shape() == Shape{0, 4});
  CHECK_THROWS_WITH_AS(F::one_hot(dl::tensor<int64_t>({1, -1})), doctest::Contains("Class values must be non-negative."), dl::Error);
  CHECK_THROWS_WITH_AS(F::one_hot(dl::tensor<int64_t>({1, 5}), 3), doctest::Contains("Class values must be smaller than num_classes."),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::one_hot(dl::zeros<int64_t>({0})), doctest::Contains("Can not infer total number of classes from empty tensor."),
                       dl::Error);
}

// ============================================================================== pad, normalize

TEST_CASE_TEMPLATE("pad matches PyTorch: constant, reflect, replicate, circular, negative pads", T, float, double) {
  const char* modes[] = {"constant", "reflect", "replicate", "circular"};
  for (int k = 0; ref.has(case_name("pad", k) + "/params"); ++k) {
    const std::string c = case_name("pad", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = shape_at(p, 0);
    std::vector<int64_t> pads;
    for (int i = 0; i < int(p[6]); ++i) pads.push_back(int64_t(p[7 + size_t(i)]));
    const char* mode = modes[int(p[13])];
    CAPTURE(mode);
    auto x = leaf(inp<T>(shape, 1800 + k));
    dl::Tensor<T> out = F::pad(x, pads, mode, p[14]);
    ref.check(out, c + "/out");
    backward_weighted(out);
    check_grad(x, c + "/gx");
  }
}

TEST_CASE("pad: expression input, integer tensors, gradients of any order, errors") {
  auto a = leaf(inp<double>({2, 3, 4}, 1));
  dl::Tensor<double> y = F::pad(a * 2.0, {1, 1}, "reflect");
  CHECK(y.shape() == Shape{2, 3, 6});
  y.sum().backward();
  CHECK(a.grad().defined());
  dl::Tensor<int64_t> pi = F::pad(dl::tensor<int64_t>({{1, 2}, {3, 4}}), {1, 0, 0, 1}, "constant", 7);
  CHECK(pi.shape() == Shape{3, 3});
  CHECK(std::vector<int64_t>(pi.data(), pi.data() + 9) == std::vector<int64_t>{7, 1, 2, 7, 3, 4, 7, 7, 7});
  using dl::autograd::gradcheck, dl::autograd::gradgradcheck;
  const auto x = inp<double>({1, 2, 4, 5}, 2);
  CHECK(gradcheck([](auto& in) { return F::pad(in[0], {2, 1, 3, 0}, "reflect"); }, {x}));
  CHECK(gradcheck([](auto& in) { return F::pad(in[0], {-1, 2, 1, -2}, "constant", 0.5); }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::pad(in[0] * in[0], {2, 3, 1, 1}, "replicate"); }, {x}));
  CHECK(gradgradcheck([](auto& in) { return F::pad(in[0] * in[0], {3, 1, -1, 2}, "circular"); }, {x}));
  const auto f = dl::ones<float>({1, 1, 3});
  CHECK_THROWS_WITH_AS(F::pad(f, {3, 3}, "reflect"),
                       doctest::Contains("Padding size should be less than the corresponding input dimension, but got: padding (3, 3) at dimension 2 of input [1, 1, 3]"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {1, 1}, "wrap"), doctest::Contains("Unrecognised padding mode wrap"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {1, 1, 1}), doctest::Contains("Padding length must be divisible by 2"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {1, 1, 1, 1, 1, 1, 1, 1}), doctest::Contains("Padding length too large"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(dl::ones<float>({3}), {1, 1}, "reflect"),
                       doctest::Contains("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {1, 1}, "replicate", 2.0), doctest::Contains("Padding mode \"replicate\" doesn't take in value argument"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {4, 0}, "circular"), doctest::Contains("Padding value causes wrapping around more than once"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(f, {-2, -2}), doctest::Contains("resulted in a negative output size"), dl::Error);
  CHECK_THROWS_WITH_AS(F::pad(dl::ones<float>({1, 2, 0}), {1, 1}, "replicate"),
                       doctest::Contains("with possibly 0 batch size and other non-zero dimensions for input, but got: [1, 2, 0]"), dl::Error);
}

TEST_CASE_TEMPLATE("normalize matches PyTorch; a zero vector gets a zero gradient", T, float, double) {
  for (int k = 0; ref.has(case_name("normalize", k) + "/params"); ++k) {
    const std::string c = case_name("normalize", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    auto x = leaf(inp<T>(shape_at(p, 0), 1900 + k));
    dl::Tensor<T> out = F::normalize(x, p[4], int64_t(p[5]));
    ref.check(out, c + "/out");
    backward_weighted(out);
    check_grad(x, c + "/gx");
  }
  auto z = leaf(dl::zeros<T>({2, 3}));
  dl::Tensor<T> n = F::normalize(z);
  n.sum().backward();
  CHECK(dl::all(n == T(0)).item());
  CHECK(dl::max(dl::abs(dl::cast<double>(z.grad()) * 1e-12 - 1.0)).item() < 1e-5);  // 1 / eps, as PyTorch
}

TEST_CASE("normalize: finite differences") {
  using dl::autograd::gradcheck;
  CHECK(gradcheck([](auto& in) { return F::normalize(in[0]); }, {inp<double>({3, 4}, 1)}));
  CHECK(gradcheck([](auto& in) { return F::normalize(in[0], 3.0, 0); }, {inp<double>({3, 4}, 2)}));
  CHECK(gradcheck([](auto& in) { return F::normalize(in[0], 1.0, -1); }, {inp<double>({3, 4}, 3)}));
  CHECK_THROWS_WITH_AS(F::normalize(dl::ones<float>({2, 3}), 2.0, 2), doctest::Contains("dimension out of range"), dl::Error);
}
