// Tests of dl/nn/functional/{conv,pooling,linear,interpolate,fold}.hpp: conv3d, conv_transpose1d,
// max/avg/adaptive pooling in 1-d and bilinear against PyTorch (tests/data/functional_conv_ref.bin,
// written by tests/gen_loss_reference.py), interpolate (tests/data/interpolate_ref.bin, written by
// tests/gen_interpolate_reference.py), unfold and fold (tests/data/fold_ref.bin, written by
// tests/gen_fold_reference.py) in float and double, finite differences (first and second order)
// in double, unbatched inputs and the error messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/nn/functional/conv.hpp>
#include <dl/nn/functional/fold.hpp>
#include <dl/nn/functional/interpolate.hpp>
#include <dl/nn/functional/linear.hpp>
#include <dl/nn/functional/pooling.hpp>

#include "refbin.hpp"

namespace F = dl::nn::functional;
using dl::Shape;
using dl::Tensor;
using doctest::Contains;

namespace {

const refbin::File ref("functional_conv_ref.bin");
using refbin::backward_weighted;
using refbin::det;

std::string case_name(const char* family, int k) { return std::string(family) + "/" + std::to_string(k); }
bool has_case(const char* family, int k) { return ref.has(case_name(family, k) + "/params"); }

template <class T>
Tensor<T> leaf(const Tensor<T>& t) {
  Tensor<T> l = t.detach();
  l.requires_grad_();
  return l;
}

/// [C, L] (n == 0: unbatched) or [n, C, L].
Shape batched(int64_t n, Shape rest) {
  if (n == 0) return rest;
  Shape s{n};
  for (int64_t v : rest) s.push_back(v);
  return s;
}

}  // namespace

// ============================================================================== convolutions

TEST_CASE_TEMPLATE("conv3d matches PyTorch: groups, stride, padding, dilation, bias, unbatched input", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("conv3d", k); ++k, ++cases) {
    const std::string c = case_name("conv3d", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const int64_t N = int64_t(p[0]), C = int64_t(p[1]), O = int64_t(p[5]), G = int64_t(p[6]);
    Tensor<T> x = leaf(det<T>(batched(N, {C, int64_t(p[2]), int64_t(p[3]), int64_t(p[4])}), 10 * k));
    Tensor<T> w = leaf(det<T>({O, C / G, int64_t(p[7]), int64_t(p[8]), int64_t(p[9])}, 10 * k + 1));
    Tensor<T> b = p[19] != 0 ? leaf(det<T>({O}, 10 * k + 2)) : Tensor<T>();
    const dl::Size3 stride{int64_t(p[10]), int64_t(p[11]), int64_t(p[12])}, padding{int64_t(p[13]), int64_t(p[14]), int64_t(p[15])};
    const dl::Size3 dilation{int64_t(p[16]), int64_t(p[17]), int64_t(p[18])};
    const Tensor<T> out = F::conv3d(x, w, b, stride, padding, dilation, G);
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(w.grad(), c + "/gw");
    if (b.defined()) ref.check(b.grad(), c + "/gb");
  }
  CHECK(cases == 5);
}

TEST_CASE_TEMPLATE("conv_transpose1d matches PyTorch", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("convt1d", k); ++k, ++cases) {
    const std::string c = case_name("convt1d", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const int64_t N = int64_t(p[0]), Ci = int64_t(p[1]), L = int64_t(p[2]), Co = int64_t(p[3]), G = int64_t(p[4]);
    Tensor<T> x = leaf(det<T>(batched(N, {Ci, L}), 20 * k));
    Tensor<T> w = leaf(det<T>({Ci, Co / G, int64_t(p[5])}, 20 * k + 1));
    Tensor<T> b = p[10] != 0 ? leaf(det<T>({Co}, 20 * k + 2)) : Tensor<T>();
    const Tensor<T> out = F::conv_transpose1d(x, w, b, int64_t(p[6]), int64_t(p[7]), int64_t(p[8]), G, int64_t(p[9]));
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
    ref.check(w.grad(), c + "/gw");
    if (b.defined()) ref.check(b.grad(), c + "/gb");
  }
  CHECK(cases == 4);
}

// ============================================================================== pooling

TEST_CASE_TEMPLATE("max_pool1d and avg_pool1d match PyTorch (indices, ceil_mode, padding, dilation, count_include_pad)", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("maxpool1d", k); ++k, ++cases) {
    const std::string c = case_name("maxpool1d", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Tensor<T> x = leaf(det<T>(batched(int64_t(p[0]), {int64_t(p[1]), int64_t(p[2])}), 30 * k));
    const std::optional<int64_t> stride = p[4] != 0 ? std::optional<int64_t>(int64_t(p[4])) : std::nullopt;
    const auto [out, idx] = F::max_pool1d_with_indices(x, int64_t(p[3]), stride, int64_t(p[5]), int64_t(p[6]), p[7] != 0);
    ref.check(out, c + "/out");
    ref.check(idx, c + "/idx");
    CHECK(F::max_pool1d(x, int64_t(p[3]), stride, int64_t(p[5]), int64_t(p[6]), p[7] != 0).shape() == out.shape());
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
  }
  for (int k = 0; has_case("avgpool1d", k); ++k, ++cases) {
    const std::string c = case_name("avgpool1d", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Tensor<T> x = leaf(det<T>(batched(int64_t(p[0]), {int64_t(p[1]), int64_t(p[2])}), 40 * k));
    const std::optional<int64_t> stride = p[4] != 0 ? std::optional<int64_t>(int64_t(p[4])) : std::nullopt;
    const Tensor<T> out = F::avg_pool1d(x, int64_t(p[3]), stride, int64_t(p[5]), p[6] != 0, p[7] != 0);
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x.grad(), c + "/gx");
  }
  CHECK(cases == 9);
}

TEST_CASE_TEMPLATE("adaptive_avg_pool1d and adaptive_max_pool1d match PyTorch (shrinking and growing)", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("adaptive1d", k); ++k, ++cases) {
    const std::string c = case_name("adaptive1d", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    const Shape shape = batched(int64_t(p[0]), {int64_t(p[1]), int64_t(p[2])});
    const int64_t osz = int64_t(p[3]);
    Tensor<T> x = leaf(det<T>(shape, 50 * k));
    const Tensor<T> avg = F::adaptive_avg_pool1d(x, osz);
    ref.check(avg, c + "/avg");
    backward_weighted(avg);
    ref.check(x.grad(), c + "/avg/gx");
    x.mutable_grad() = Tensor<T>{};
    const auto [mx, idx] = F::adaptive_max_pool1d_with_indices(x, osz);
    ref.check(mx, c + "/max");
    ref.check(idx, c + "/idx");
    CHECK(F::adaptive_max_pool1d(x, osz).shape() == mx.shape());
    backward_weighted(mx);
    ref.check(x.grad(), c + "/max/gx");
  }
  CHECK(cases == 5);
}

// ============================================================================== bilinear

TEST_CASE_TEMPLATE("bilinear matches PyTorch: leading dims, 1-d inputs, with and without bias", T, float, double) {
  int cases = 0;
  for (int k = 0; has_case("bilinear", k); ++k, ++cases) {
    const std::string c = case_name("bilinear", k);
    CAPTURE(c);
    const auto p = ref.params(c);
    Shape lead;
    for (int d = 0; d < int(p[0]); ++d) lead.push_back(int64_t(p[size_t(1 + d)]));
    const size_t at = size_t(1 + lead.size());
    const int64_t i1 = int64_t(p[at]), i2 = int64_t(p[at + 1]), o = int64_t(p[at + 2]);
    Shape s1 = lead, s2 = lead;
    s1.push_back(i1);
    s2.push_back(i2);
    Tensor<T> x1 = leaf(det<T>(s1, 60 * k)), x2 = leaf(det<T>(s2, 60 * k + 1)), w = leaf(det<T>({o, i1, i2}, 60 * k + 2));
    Tensor<T> b = p[at + 3] != 0 ? leaf(det<T>({o}, 60 * k + 3)) : Tensor<T>();
    const Tensor<T> out = F::bilinear(x1, x2, w, b);
    ref.check(out, c + "/out");
    backward_weighted(out);
    ref.check(x1.grad(), c + "/gx1");
    ref.check(x2.grad(), c + "/gx2");
    ref.check(w.grad(), c + "/gw");
    if (b.defined()) ref.check(b.grad(), c + "/gb");
  }
  CHECK(cases == 4);
}

// ============================================================================== interpolate

TEST_CASE_TEMPLATE("interpolate matches PyTorch: every mode, sizes and scale factors, align_corners, recompute_scale_factor",
                   T, float, double) {
  const refbin::File iref("interpolate_ref.bin");
  static const char* const modes[] = {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"};
  int cases = 0;
  for (int k = 0; iref.has("interp/" + std::to_string(k) + "/params"); ++k, ++cases) {
    const std::string c = "interp/" + std::to_string(k);
    CAPTURE(c);
    const auto p = iref.params(c);
    F::InterpolateOptions o;
    o.mode = modes[int(p[0])];
    if (p[1] >= 0) o.align_corners = p[1] != 0;
    if (p[2] >= 0) o.recompute_scale_factor = p[2] != 0;
    const int nd = int(p[4]);
    Shape shape;
    for (int d = 0; d < nd; ++d) shape.push_back(int64_t(p[size_t(5 + d)]));
    for (int i = 0; i < int(p[size_t(5 + nd)]); ++i) {
      const double v = p[size_t(6 + nd + i)];
      if (p[3] != 0) o.size.push_back(int64_t(v));
      else o.scale_factor.push_back(v);
    }
    CAPTURE(o.mode);
    Tensor<T> x = leaf(det<T>(shape, 70 * k));
    const Tensor<T> out = F::interpolate(x, o);
    // Float against PyTorch's float kernels (indices and weights in float on both sides).
    iref.check(out, c + (std::is_same_v<T, float> ? "/out32" : "/out"));
    backward_weighted(out);
    iref.check(x.grad(), c + "/gx");
  }
  CHECK(cases == 23);
}

TEST_CASE("interpolate: finite differences, first and second order (double); expressions, integers, 16-bit") {
  namespace ag = dl::autograd;
  const Tensor<double> x = det<double>({1, 2, 4, 3}, 12), x1 = det<double>({2, 1, 5}, 13), x3 = det<double>({1, 1, 2, 3, 2}, 14);
  for (const char* mode : {"bilinear", "bicubic", "nearest", "nearest-exact", "area"}) {
    CAPTURE(mode);
    const F::InterpolateOptions o{.size = {5, 4}, .mode = mode};
    CHECK(ag::gradcheck([&](auto& in) { return F::interpolate(in[0], o); }, {x}));
    CHECK(ag::gradgradcheck([&](auto& in) { return F::interpolate(in[0], o); }, {x}));
  }
  CHECK(ag::gradcheck([](auto& in) { return F::interpolate(in[0], {.scale_factor = {1.5}, .mode = "linear", .align_corners = true}); }, {x1}));
  CHECK(ag::gradcheck([](auto& in) { return F::interpolate(in[0], {.size = {3, 2, 3}, .mode = "trilinear"}); }, {x3}));
  CHECK(ag::gradcheck([](auto& in) { return F::interpolate(in[0], {.size = {2}, .mode = "area"}); }, {x1}));

  // An expression input; the output keeps the input's type.
  const Tensor<float> xf = det<float>({1, 1, 2, 2}, 15);
  const Tensor<float> up = F::interpolate(xf * 2.0f, {.scale_factor = {2}});
  CHECK(up.shape() == Shape{1, 1, 4, 4});
  CHECK(up.at(0, 0, 3, 3) == doctest::Approx(2 * xf.at(0, 0, 1, 1)));
  CHECK(up.at(0, 0, 1, 2) == doctest::Approx(2 * xf.at(0, 0, 0, 1)));
  // Integers take the nearest modes; 16-bit floats are computed in float.
  const Tensor<int64_t> xi = dl::arange<int64_t>(6).reshape({1, 1, 2, 3});
  const Tensor<int64_t> ui = F::interpolate(xi, {.size = {4, 6}});
  CHECK(ui.at(0, 0, 3, 5) == 5);
  CHECK(ui.at(0, 0, 1, 2) == 1);
  CHECK_THROWS_WITH_AS(F::interpolate(xi, {.size = {4, 6}, .mode = "bilinear"}), Contains("needs a floating-point input"), dl::Error);
  const Tensor<dl::BFloat16> xb = xf.bfloat16();
  const Tensor<dl::BFloat16> ub = F::interpolate(xb, {.size = {3, 3}, .mode = "bilinear", .align_corners = true});
  CHECK(dl::allclose(ub.to_float(), F::interpolate(xb.to_float(), {.size = {3, 3}, .mode = "bilinear", .align_corners = true}), 1e-2, 1e-2));
  // Same size: the input's values (nearest is then a no-op; linear with align_corners as well).
  CHECK(dl::allclose(F::interpolate(xf, {.size = {2, 2}, .mode = "bilinear", .align_corners = true}), xf));
  CHECK(dl::allclose(F::interpolate(xf, {.scale_factor = {1}}), xf));
}

TEST_CASE("interpolate: PyTorch's errors") {
  const Tensor<float> x = det<float>({1, 2, 4, 4}, 16);
  auto err = [&](const Tensor<float>& in, F::InterpolateOptions o, const char* msg) {
    CAPTURE(msg);
    CHECK_THROWS_WITH_AS(F::interpolate(in, o), Contains(msg), dl::Error);
  };
  err(x, {}, "either size or scale_factor should be defined");
  err(x, {.size = {2, 2}, .scale_factor = {2}}, "only one of size or scale_factor should be defined");
  err(x, {.size = {2, 2, 2}}, "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of [4, 4] and output size of [2, 2, 2]");
  err(x, {.scale_factor = {2, 2, 2}}, "Input and scale_factor must have the same number of spatial dimensions");
  err(x, {.size = {2, 2}, .align_corners = true}, "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
  err(x, {.size = {2, 2}, .mode = "linear"}, "Got 4D input, but linear mode needs 3D input");
  err(x, {.size = {2, 2}, .mode = "trilinear"}, "Got 4D input, but trilinear mode needs 5D input");
  err(det<float>({1, 2, 4}, 1), {.size = {2}, .mode = "bilinear"}, "Got 3D input, but bilinear mode needs 4D input");
  err(det<float>({1, 2, 4}, 1), {.size = {2}, .mode = "bicubic"}, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 3D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got bicubic)");
  err(x, {.size = {2, 2}, .mode = "cubic"}, "(got 4D) for the modes");
  err(det<float>({4, 4}, 1), {.size = {2}}, "(got 2D)");
  err(x, {.size = {2, 2}, .recompute_scale_factor = true}, "recompute_scale_factor is not meaningful with an explicit size.");
  err(x, {.size = {0, 2}}, "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 2)");
  err(x, {.scale_factor = {0.1}}, "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 0, W: 0)");
  err(det<float>({1, 1, 3}, 1), {.size = {0}}, "but got input (W: 3) output (W: 0)");
  err(x, {.size = {8, 8}, .mode = "bilinear", .antialias = true}, "antialias=true is not supported yet");
}

TEST_CASE_TEMPLATE("unfold and fold match PyTorch: kernel, dilation, padding, stride; batched and unbatched", T, float, double) {
  const refbin::File fref("fold_ref.bin");
  int cases = 0;
  for (const char* op : {"unfold", "fold"})
    for (int k = 0; fref.has(std::string(op) + "/" + std::to_string(k) + "/params"); ++k, ++cases) {
      const std::string c = std::string(op) + "/" + std::to_string(k);
      CAPTURE(c);
      const auto p = fref.params(c);
      const int nd = int(p[0]);
      Shape shape;
      for (int d = 0; d < nd; ++d) shape.push_back(int64_t(p[size_t(1 + d)]));
      const auto pair = [&](int i) { return dl::Size2(int64_t(p[size_t(1 + nd + 2 * i)]), int64_t(p[size_t(2 + nd + 2 * i)])); };
      const bool is_fold = std::string(op) == "fold";
      Tensor<T> x = leaf(det<T>(shape, 80 * k + (is_fold ? 7 : 0)));
      const Tensor<T> out = is_fold ? F::fold(x, pair(4), pair(0), pair(1), pair(2), pair(3))
                                    : F::unfold(x, pair(0), pair(1), pair(2), pair(3));
      fref.check(out, c + "/out");
      backward_weighted(out);
      fref.check(x.grad(), c + "/gx");
    }
  CHECK(cases == 11);
}

TEST_CASE("unfold and fold: finite differences (double), fold is unfold's adjoint, expressions and integers") {
  namespace ag = dl::autograd;
  const Tensor<double> x = det<double>({2, 2, 5, 4}, 21), cols = det<double>({2, 12, 6}, 22);
  auto un = [](auto& in) { return F::unfold(in[0], {2, 3}, {2, 1}, 1, {1, 2}); };
  CHECK(ag::gradcheck(un, {x}));
  CHECK(ag::gradgradcheck(un, {x}));
  auto fo = [](auto& in) { return F::fold(in[0], {4, 5}, 2, 1, {0, 1}, {2, 2}); };
  CHECK(ag::gradcheck(fo, {cols}));
  CHECK(ag::gradgradcheck(fo, {cols}));
  // <unfold(x), c> == <x, fold(c)> for the same geometry.
  const Tensor<double> img = det<double>({2, 3, 6, 7}, 23);
  const Tensor<double> c = det<double>({2, 3 * 6, 12}, 24);  // 3x2 kernel, stride (2, 2), padding 1: 4 x 3 blocks
  const double lhs = (F::unfold(img, {3, 2}, 1, 1, 2) * c).sum().item();
  const double rhs = (img * F::fold(c, {6, 7}, {3, 2}, 1, 1, 2)).sum().item();
  CHECK(lhs == doctest::Approx(rhs).epsilon(1e-12));
  // unfold then fold with non-overlapping blocks that tile the image gives the image back.
  const Tensor<float> xf = det<float>({1, 2, 4, 6}, 25);
  CHECK(dl::equal(F::fold(F::unfold(xf, 2, 1, 0, 2), {4, 6}, 2, 1, 0, 2), xf));
  // An expression input, and integers (unfold is a gather, fold a sum).
  const Tensor<float> e = F::unfold(xf * 2.0f, {4, 6});
  CHECK(e.shape() == Shape{1, 48, 1});
  CHECK(e.at(0, 7, 0) == 2 * xf.at(0, 0, 1, 1));
  const Tensor<int64_t> xi = dl::arange<int64_t>(12).reshape({1, 3, 4});
  const Tensor<int64_t> ci = F::unfold(xi, 2, 1, 0, 2);
  CHECK(ci.shape() == Shape{4, 2});
  CHECK(ci.at(3, 1) == 7);
  CHECK(F::fold(dl::ones<int64_t>({4, 9}), {4, 4}, 2).at(0, 1, 1) == 4);
}

TEST_CASE("unfold and fold: PyTorch's errors") {
  const Tensor<float> x = det<float>({2, 3, 5, 6}, 26), c = det<float>({2, 12, 20}, 27);
  auto err = [](auto&& f, const char* msg) {
    CAPTURE(msg);
    CHECK_THROWS_WITH_AS(f(), Contains(msg), dl::Error);
  };
  err([&] { return F::unfold(x, {0, 2}); }, "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 2");
  err([&] { return F::unfold(x, 2, 1, 0, {0, 1}); }, "stride should be greater than zero, but got stride_height: 0 stride_width: 1");
  err([&] { return F::unfold(x, 2, {1, 0}); }, "dilation should be greater than zero, but got dilation_height: 1 dilation_width: 0");
  err([&] { return F::unfold(x, 2, 1, {-1, 0}); }, "padding should be non-negative, but got pad_height: -1 pad_width: 0");
  err([&] { return F::unfold(x, {6, 2}); },
      "Given input with spatial size (5, 6), kernel_size=(6, 2), dilation=(1, 1), padding=(0, 0), calculated shape of the array of "
      "sliding blocks as (0, 5), but its components must be at least one.");
  err([&] { return F::unfold(det<float>({2, 0, 5, 6}, 1), 2); },
      "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: [2, 0, 5, 6]");
  err([&] { return F::unfold(det<float>({5, 6}, 1), 2); }, "but got: [5, 6]");
  err([&] { return F::fold(det<float>({2, 10, 20}, 1), {5, 6}, 2); },
      "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=10 and kernel_size=(2, 2).");
  err([&] { return F::fold(c, {5, 6}, 1); },
      "Given output_size=(5, 6), kernel_size=(1, 1), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of input's "
      "dimension 2 to match the calculated number of sliding blocks 5 * 6 = 30, but got input.size(2)=20.");
  err([&] { return F::fold(c, {0, 6}, 2); }, "sliding blocks -1 * 5 = -5, but got input.size(2)=20.");
  err([&] { return F::fold(det<float>({20}, 1), {5, 6}, 2); },
      "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: [20]");
  err([&] { return F::fold(det<float>({2, 12, 0}, 1), {5, 6}, 2); }, "but got: [2, 12, 0]");
  err([&] { return F::fold(c, {5, 6}, 2, 0); }, "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0");
  // An empty batch is allowed, as PyTorch's.
  CHECK(F::unfold(det<float>({0, 3, 5, 6}, 1), 2).shape() == Shape{0, 12, 20});
  CHECK(F::fold(det<float>({0, 12, 20}, 1), {5, 6}, 2).shape() == Shape{0, 3, 5, 6});
}

// ============================================================================== finite differences

TEST_CASE("conv3d, conv_transpose1d, 1-d pooling and bilinear: finite differences, first and second order (double)") {
  namespace ag = dl::autograd;
  const Tensor<double> x5 = det<double>({1, 4, 4, 4, 3}, 1), w5 = det<double>({2, 2, 2, 3, 2}, 2), b2 = det<double>({2}, 3);
  auto c3 = [](auto& in) { return F::conv3d(in[0], in[1], in[2], {2, 1, 1}, {1, 1, 0}, {1, 1, 2}, 2); };
  CHECK(ag::gradcheck(c3, {x5, w5, b2}));
  CHECK(ag::gradgradcheck(c3, {x5, w5, b2}));
  const Tensor<double> x3 = det<double>({2, 4, 5}, 4), wt = det<double>({4, 3, 3}, 5), b6 = det<double>({6}, 6);
  auto ct = [](auto& in) { return F::conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2, 1); };
  CHECK(ag::gradcheck(ct, {x3, wt, b6}));
  CHECK(ag::gradgradcheck(ct, {x3, wt, b6}));
  const Tensor<double> xp = det<double>({2, 3, 11}, 7);
  CHECK(ag::gradcheck([](auto& in) { return F::max_pool1d(in[0], 3, 2, 1, 2, true); }, {xp}));
  CHECK(ag::gradgradcheck([](auto& in) { return F::max_pool1d(in[0], 3, 2, 1); }, {xp}));
  CHECK(ag::gradcheck([](auto& in) { return F::avg_pool1d(in[0], 3, 2, 1, true, false); }, {xp}));
  CHECK(ag::gradgradcheck([](auto& in) { return F::avg_pool1d(in[0], 3, 2, 1); }, {xp}));
  CHECK(ag::gradcheck([](auto& in) { return F::adaptive_avg_pool1d(in[0], 4); }, {xp}));
  CHECK(ag::gradcheck([](auto& in) { return F::adaptive_max_pool1d(in[0], 4); }, {xp}));
  const Tensor<double> a = det<double>({2, 3, 4}, 8), b = det<double>({2, 3, 2}, 9), wb = det<double>({5, 4, 2}, 10), bb = det<double>({5}, 11);
  auto bil = [](auto& in) { return F::bilinear(in[0], in[1], in[2], in[3]); };
  CHECK(ag::gradcheck(bil, {a, b, wb, bb}));
  CHECK(ag::gradgradcheck(bil, {a, b, wb, bb}));
}

// ============================================================================== shapes and errors

TEST_CASE("conv_extra: unbatched forms, expression inputs and empty pooling results") {
  auto max_diff = [](const Tensor<float>& a_, const Tensor<float>& b_) {
    const Tensor<float> a = a_.contiguous(), b = b_.contiguous();
    REQUIRE(a.shape() == b.shape());
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, double(std::abs(a.data()[i] - b.data()[i])));
    return m;
  };
  const Tensor<float> x = det<float>({2, 3, 4, 5, 6}, 1), w = det<float>({4, 3, 2, 2, 2}, 2);
  const Tensor<float> y = F::conv3d(x, w, {}, 1, 1);
  CHECK(y.shape() == Shape{2, 4, 5, 6, 7});
  CHECK(max_diff(F::conv3d(x[1], w, {}, 1, 1), y[1]) < 1e-5);
  CHECK(max_diff(F::conv3d(x * 2.0f, w, {}, 1, 1), Tensor<float>(y * 2.0f)) < 1e-4);
  const Tensor<float> s = det<float>({2, 3, 10}, 3);
  CHECK(max_diff(F::max_pool1d(s[0], 3), F::max_pool1d(s, 3)[0]) == 0);
  CHECK(max_diff(F::avg_pool1d(s * 1.0f, 4, 2), F::avg_pool1d(s, 4, 2)) == 0);
  // A window longer than the padded input: PyTorch's max_pool1d returns an empty result.
  Tensor<float> sl = leaf(s);
  const auto [e, ei] = F::max_pool1d_with_indices(sl, 12);
  CHECK(e.shape() == Shape{2, 3, 0});
  CHECK(ei.shape() == Shape{2, 3, 0});
  CHECK(e.requires_grad());
  CHECK(F::adaptive_avg_pool1d(s, 0).shape() == Shape{2, 3, 0});
  CHECK(F::bilinear(det<float>({3}, 4), det<float>({2}, 5), det<float>({4, 3, 2}, 6)).shape() == Shape{4});
}

TEST_CASE("conv_extra: errors") {
  const Tensor<float> x = dl::zeros({1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(F::conv3d(dl::zeros({2, 3, 4}), dl::zeros({2, 3, 1, 1, 1})),
                       "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [2, 3, 4]", dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(x, dl::zeros({2, 3, 1, 1, 1})),
                       "Given groups=1, weight of size [2, 3, 1, 1, 1], expected input[1, 2, 3, 4, 5] to have 3 channels, but got 2 channels "
                       "instead",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(dl::zeros({1, 3, 3, 4, 5}), dl::zeros({2, 3, 4, 1, 1})),
                       "Calculated padded input size per channel: (3 x 4 x 5). Kernel size: (4 x 1 x 1). Kernel size can't be greater than "
                       "actual input size",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(x, dl::zeros({2, 2, 1, 1})), Contains("expected a 5-D weight"), dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(dl::zeros({1, 4, 3, 4, 5}), dl::zeros({3, 2, 1, 1, 1}), {}, 1, 0, 1, 2),
                       "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 1, 1, 1] instead",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(dl::zeros({1, 4, 3, 4, 5}), dl::zeros({4, 2, 1, 1, 1}), dl::zeros({3}), 1, 0, 1, 2),
                       "Given weight of size [4, 2, 1, 1, 1], expected bias to be 1-dimensional with 4 elements, but got bias of size [3] "
                       "instead",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::conv3d(x, dl::zeros({2, 2, 1, 1, 1}), {}, {1, 0, 1}), Contains("non-positive stride"), dl::Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose1d(dl::zeros({2, 3, 4, 5}), dl::zeros({3, 2, 3})),
                       "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: [2, 3, 4, 5]", dl::Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose1d(dl::zeros({2, 3, 5}), dl::zeros({4, 2, 3})),
                       Contains("expected input[2, 3, 1, 5] to have 4 channels, but got 3 channels instead"), dl::Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose1d(dl::zeros({2, 3, 5}), dl::zeros({3, 2})), Contains("expected a 3-D weight"), dl::Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose1d(dl::zeros({2, 3, 5}), dl::zeros({3, 2, 3}), {}, 2, 0, 2),
                       Contains("output padding must be smaller than stride"), dl::Error);
  const Tensor<float> s = dl::zeros({2, 3, 10});
  CHECK_THROWS_WITH_AS(F::max_pool1d(s, 0), "max_pool1d() kernel_size must be greater than zero, but got 0", dl::Error);
  CHECK_THROWS_WITH_AS(F::max_pool1d(s, 3, 0), "max_pool1d() stride must be greater than zero, but got 0", dl::Error);
  CHECK_THROWS_WITH_AS(F::max_pool1d(s, 3, 1, 2), "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::max_pool1d(s, 3, 1, -1), "max_pool1d() padding must be non-negative, but got -1", dl::Error);
  CHECK_THROWS_WITH_AS(F::max_pool1d(s, 3, 1, 1, 0), "max_pool1d() dilation must be greater than zero, but got 0", dl::Error);
  CHECK_THROWS_WITH_AS(F::max_pool1d(dl::zeros({10}), 2),
                       "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[10]", dl::Error);
  CHECK_THROWS_WITH_AS(F::avg_pool1d(dl::zeros({10}), 2),
                       "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments for avg_pool1d)",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::avg_pool1d(s, 3, 0), "stride should not be zero", dl::Error);
  CHECK_THROWS_WITH_AS(F::avg_pool1d(s, 3, 1, 2), Contains("pad should be at most half of kernel size, but got pad=2 and kernel_size=3"), dl::Error);
  CHECK_THROWS_WITH_AS(F::avg_pool1d(s, 12), Contains("Output size is too small"), dl::Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool1d(dl::zeros({10}), 2), Contains("while checking arguments for adaptive_avg_pool1d"), dl::Error);
  CHECK_THROWS_WITH_AS(F::adaptive_max_pool1d(dl::zeros({2, 3, 4, 5}), 2), Contains("while checking arguments for adaptive_max_pool1d"),
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::adaptive_max_pool1d(dl::zeros({2, 3, 0}), 2),
                       Contains("Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 3, 1, 0]"), dl::Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool1d(s, -1), Contains("output_size must be non-negative"), dl::Error);
  const Tensor<float> w = dl::zeros({6, 3, 4});
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({2, 4, 5}), w), "bilinear(): input dimensions do not match: got 2 and 3",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({3, 4}), w), "bilinear(): input batch dimensions do not match at dim 0: got 2 and 3",
                       dl::Error);
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({2, 4}), dl::zeros({6, 2, 4})),
                       "bilinear(): input1 size does not match weight size: got 3 but expected 2", dl::Error);
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({2, 4}), dl::zeros({6, 3, 5})),
                       "bilinear(): input2 size does not match weight size: got 4 but expected 5", dl::Error);
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({2, 4}), w, dl::zeros({5})),
                       "bilinear(): bias size does not match weight size: got 5 but expected 6", dl::Error);
  CHECK_THROWS_WITH_AS(F::bilinear(dl::zeros({2, 3}), dl::zeros({2, 4}), dl::zeros({3, 4})), Contains("weight must be 3-D"), dl::Error);
}
