// Tests of dl/ops/{gemm,matmul,conv,pool}.hpp and dl/nn/functional.hpp: values and gradients
// against PyTorch (tests/data/kernels_ref.bin, written by tests/gen_kernels_reference.py), finite
// differences in double, the built-in GEMM against a naive product, both GEMM backends, errors.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <dl/dl.hpp>

#include "refbin.hpp"

namespace F = dl::nn::functional;
using dl::Shape;

namespace {

// ------------------------------------------------------------------------------ references

const refbin::File kref("kernels_ref.bin");
bool has_ref(const std::string& name) { return kref.has(name); }
std::vector<double> params(const std::string& c) { return kref.params(c); }
using refbin::backward_weighted;
using refbin::det;

template <class T>
void check_ref(const dl::Tensor<T>& got, const std::string& name) {
  kref.check(got, name);
}
void check_ref_int(const dl::Tensor<int64_t>& got, const std::string& name) { kref.check(got, name); }

/// Runs the body once per GEMM backend (built-in, and CBLAS when dl has it).
template <class F>
void for_each_backend(F&& body) {
  std::vector<dl::GemmBackend> backends{dl::GemmBackend::builtin};
  if (dl::has_cblas()) backends.push_back(dl::GemmBackend::blas);
  for (auto b : backends) {
    dl::set_gemm_backend(b);
    CAPTURE(int(b));
    body();
  }
  dl::set_gemm_backend(dl::GemmBackend::automatic);
}

std::string case_name(const char* family, int k) { return std::string(family) + "/" + std::to_string(k); }

template <class T>
dl::Tensor<T> matrix(int64_t r, int64_t c, int layout, int64_t seed) {
  switch (layout) {
    case 0: return det<T>({r, c}, seed);
    case 1: return det<T>({c, r}, seed).t();
    case 2: return det<T>({r, 2 * c}, seed).slice(1, 0, INT64_MAX, 2);
    default: return det<T>({1, c}, seed).expand({r, c});
  }
}

/// A leaf that keeps the view's strides (PyTorch's view.detach().requires_grad_()).
template <class T>
dl::Tensor<T> leaf(const dl::Tensor<T>& t) {
  dl::Tensor<T> l = t.detach();
  l.requires_grad_();
  return l;
}

template <class T>
dl::Tensor<T> maybe(bool has, const Shape& shape, int64_t seed) {
  if (!has) return {};
  return leaf(det<T>(shape, seed));
}

Shape shape_from(const std::vector<double>& p, size_t at) {
  Shape s;
  for (int d = 0; d < int(p[at]); ++d) s.push_back(int64_t(p[at + 1 + d]));
  return s;
}

}  // namespace

// ============================================================================== matrix products

TEST_CASE_TEMPLATE("mm matches PyTorch for every layout and odd sizes", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("mm", k) + "/params"); ++k) {
      const std::string c = case_name("mm", k);
      const auto p = params(c);
      CAPTURE(c);
      auto a = leaf(matrix<T>(int64_t(p[0]), int64_t(p[1]), int(p[3]), 2 * k));
      auto b = leaf(matrix<T>(int64_t(p[1]), int64_t(p[2]), int(p[4]), 2 * k + 1));
      auto out = dl::mm(a, b);
      check_ref(out, c + "/out");
      CHECK(a.mm(b).shape() == out.shape());
      if (has_ref(c + "/ga")) {
        backward_weighted(out);
        check_ref(a.grad(), c + "/ga");
        check_ref(b.grad(), c + "/gb");
      }
    }
  });
}

TEST_CASE_TEMPLATE("addmm: bias broadcasting, beta and alpha", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("addmm", k) + "/params"); ++k) {
      const std::string c = case_name("addmm", k);
      const auto p = params(c);
      CAPTURE(c);
      const int64_t M = int64_t(p[0]), K = int64_t(p[1]), N = int64_t(p[2]);
      const int kind = int(p[3]);
      const Shape bias_shapes[] = {{N}, {M, 1}, {M, N}, {}, {1, N}, {N}};
      dl::Tensor<T> s = det<T>(bias_shapes[kind], 3 * k);
      if (kind == 5) s.fill_(std::numeric_limits<T>::quiet_NaN());
      s = leaf(s);
      auto a = leaf(det<T>({M, K}, 3 * k + 1));
      auto b = leaf(det<T>({K, N}, 3 * k + 2));
      auto out = dl::addmm(s, a, b, p[4], p[5]);
      check_ref(out, c + "/out");
      backward_weighted(out);
      if (p[4] != 0) check_ref(s.grad(), c + "/gs");
      check_ref(a.grad(), c + "/ga");
      check_ref(b.grad(), c + "/gb");
    }
  });
}

TEST_CASE_TEMPLATE("matmul: 1-D, 2-D and broadcast batched operands", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("matmul", k) + "/params"); ++k) {
      const std::string c = case_name("matmul", k);
      const auto p = params(c);
      CAPTURE(c);
      const Shape sa = shape_from(p, 0), sb = shape_from(p, 5);
      dl::Tensor<T> a;
      if (p[10] != 0) {
        Shape swapped = sa;
        std::swap(swapped[sa.size() - 1], swapped[sa.size() - 2]);
        a = det<T>(swapped, 2 * k).transpose(-1, -2);
      } else {
        a = det<T>(sa, 2 * k);
      }
      a = leaf(a);
      auto b = leaf(det<T>(sb, 2 * k + 1));
      auto out = dl::matmul(a, b);
      check_ref(out, c + "/out");
      CHECK(a.matmul(b).shape() == out.shape());
      backward_weighted(out);
      check_ref(a.grad(), c + "/ga");
      check_ref(b.grad(), c + "/gb");
    }
  });
}

TEST_CASE_TEMPLATE("bmm, baddbmm, addbmm", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("bmm", k) + "/params"); ++k) {
      const std::string c = case_name("bmm", k);
      const auto p = params(c);
      CAPTURE(c);
      const int64_t B = int64_t(p[0]), M = int64_t(p[1]), K = int64_t(p[2]), N = int64_t(p[3]);
      const int layout = int(p[4]);
      auto a = leaf(layout == 2 ? det<T>({M, B, K}, 2 * k).permute({1, 0, 2}) : det<T>({B, M, K}, 2 * k));
      auto b = leaf(layout == 1 ? det<T>({B, N, K}, 2 * k + 1).transpose(1, 2) : det<T>({B, K, N}, 2 * k + 1));
      auto out = dl::bmm(a, b);
      check_ref(out, c + "/out");
      backward_weighted(out);
      check_ref(a.grad(), c + "/ga");
      check_ref(b.grad(), c + "/gb");
    }
    for (const char* family : {"baddbmm", "addbmm"}) {
      for (int k = 0; has_ref(case_name(family, k) + "/params"); ++k) {
        const std::string c = case_name(family, k);
        const auto p = params(c);
        CAPTURE(c);
        const int64_t B = int64_t(p[0]), M = int64_t(p[1]), K = int64_t(p[2]), N = int64_t(p[3]);
        const int kind = int(p[4]);
        const bool bad = std::string(family) == "baddbmm";
        const Shape shape = bad ? (kind == 0 ? Shape{B, M, N} : kind == 1 ? Shape{M, N} : Shape{1, 1, N})
                                : (kind == 0 ? Shape{M, N} : Shape{N});
        auto s = leaf(det<T>(shape, 3 * k));
        auto a = leaf(det<T>({B, M, K}, 3 * k + 1));
        auto b = leaf(det<T>({B, K, N}, 3 * k + 2));
        auto out = bad ? dl::baddbmm(s, a, b, p[5], p[6]) : dl::addbmm(s, a, b, p[5], p[6]);
        check_ref(out, c + "/out");
        backward_weighted(out);
        check_ref(s.grad(), c + "/gs");
        check_ref(a.grad(), c + "/ga");
        check_ref(b.grad(), c + "/gb");
      }
    }
  });
}

TEST_CASE_TEMPLATE("dot, mv, addmv, addr", T, float, double) {
  for (int k = 0; has_ref(case_name("dot", k) + "/params"); ++k) {
    const std::string c = case_name("dot", k);
    const int64_t n = int64_t(params(c)[0]);
    auto a = leaf(det<T>({n}, 2 * k));
    auto b = leaf(det<T>({2 * n}, 2 * k + 1).slice(0, 0, INT64_MAX, 2));
    auto out = dl::dot(a, b);
    check_ref(out, c + "/out");
    CHECK(dl::matmul(a, b).dim() == 0);
    backward_weighted(out);
    check_ref(a.grad(), c + "/ga");
    check_ref(b.grad(), c + "/gb");
  }
  for (int k = 0; has_ref(case_name("mv", k) + "/params"); ++k) {
    const std::string c = case_name("mv", k);
    const auto p = params(c);
    auto a = leaf(matrix<T>(int64_t(p[0]), int64_t(p[1]), int(p[2]), 2 * k));
    auto x = leaf(det<T>({int64_t(p[1])}, 2 * k + 1));
    auto out = dl::mv(a, x);
    check_ref(out, c + "/out");
    backward_weighted(out);
    check_ref(a.grad(), c + "/ga");
    check_ref(x.grad(), c + "/gx");
  }
  for (int k = 0; has_ref(case_name("addmv", k) + "/params"); ++k) {
    const std::string c = case_name("addmv", k);
    const auto p = params(c);
    const int64_t M = int64_t(p[0]), K = int64_t(p[1]);
    auto s = leaf(det<T>({M}, 3 * k));
    auto a = leaf(det<T>({M, K}, 3 * k + 1));
    auto x = leaf(det<T>({K}, 3 * k + 2));
    auto out = dl::addmv(s, a, x, p[2], p[3]);
    check_ref(out, c + "/out");
    backward_weighted(out);
    if (p[2] != 0) check_ref(s.grad(), c + "/gs");
    check_ref(a.grad(), c + "/ga");
    check_ref(x.grad(), c + "/gx");
  }
  for (int k = 0; has_ref(case_name("addr", k) + "/params"); ++k) {
    const std::string c = case_name("addr", k);
    const auto p = params(c);
    const int64_t M = int64_t(p[0]), N = int64_t(p[1]);
    auto s = leaf(det<T>({M, N}, 3 * k));
    auto u = leaf(det<T>({M}, 3 * k + 1));
    auto v = leaf(det<T>({N}, 3 * k + 2));
    auto out = dl::addr(s, u, v, p[2], p[3]);
    check_ref(out, c + "/out");
    backward_weighted(out);
    if (p[2] != 0) check_ref(s.grad(), c + "/gs");
    check_ref(u.grad(), c + "/gu");
    check_ref(v.grad(), c + "/gv");
  }
}

TEST_CASE_TEMPLATE("linear with the fused bias + activation epilogue", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("linear", k) + "/params"); ++k) {
      const std::string c = case_name("linear", k);
      const auto p = params(c);
      CAPTURE(c);
      const int64_t rows = int64_t(p[0]), in = int64_t(p[1]), out_f = int64_t(p[2]);
      const bool has_bias = p[3] != 0;
      const int act = int(p[4]);
      auto x = leaf(det<T>({rows, in}, 3 * k));
      auto w = leaf(det<T>({out_f, in}, 3 * k + 1));
      auto b = maybe<T>(has_bias, {out_f}, 3 * k + 2);
      dl::Tensor<T> out = act == 0   ? F::linear(x, w, b)
                          : act == 1 ? F::linear(x, w, b, dl::expr::Relu{})
                                     : F::linear(x, w, b, dl::expr::Sigmoid{});
      check_ref(out, c + "/out");
      {  // the same values without autograd (the fused path that records nothing)
        dl::NoGradGuard no_grad;
        dl::Tensor<T> again = act == 0   ? F::linear(x, w, b)
                              : act == 1 ? F::linear(x, w, b, dl::expr::Relu{})
                                         : F::linear(x, w, b, dl::expr::Sigmoid{});
        check_ref(again, c + "/out");
      }
      backward_weighted(out);
      check_ref(x.grad(), c + "/gx");
      check_ref(w.grad(), c + "/gw");
      if (has_bias) check_ref(b.grad(), c + "/gb");
    }
  });
}

TEST_CASE("second derivatives through mm and conv2d (create_graph)") {
  using T = double;
  {
    auto a = leaf(det<T>({4, 5}, 1));
    auto b = leaf(det<T>({5, 3}, 2));
    auto y = dl::mm(a, b);
    dl::Tensor<T> loss = (y * y).sum();
    auto ga = dl::autograd::grad<T>({loss}, {a}, {}, {}, true)[0];
    check_ref(ga, "mm2/ga");
    dl::Tensor<T> z = (ga * det<T>({4, 5}, 3)).sum();
    z.backward();
    check_ref(a.grad(), "mm2/a_grad");
    check_ref(b.grad(), "mm2/b_grad");
  }
  {
    auto x = leaf(det<T>({1, 2, 5, 5}, 4));
    auto w = leaf(det<T>({3, 2, 3, 3}, 5));
    auto y = F::conv2d(x, w, {}, 2, 1);
    dl::Tensor<T> loss = (y * y).sum();
    auto gx = dl::autograd::grad<T>({loss}, {x}, {}, {}, true)[0];
    check_ref(gx, "conv2nd/gx");
    dl::Tensor<T> z = (gx * det<T>({1, 2, 5, 5}, 6)).sum();
    z.backward();
    check_ref(x.grad(), "conv2nd/x_grad");
    check_ref(w.grad(), "conv2nd/w_grad");
  }
}

// ============================================================================== built-in GEMM

namespace {
/// Naive double-precision product of strided operands, the built-in GEMM's oracle.
template <class T>
std::vector<double> naive(int64_t M, int64_t N, int64_t K, const dl::Tensor<T>& a, const dl::Tensor<T>& b) {
  std::vector<double> c(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const double av = a.at(i, k);
      for (int64_t j = 0; j < N; ++j) c[size_t(i * N + j)] += av * double(b.at(k, j));
    }
  return c;
}
}  // namespace

TEST_CASE_TEMPLATE("built-in GEMM: blocking, threads, layouts, alpha/beta and epilogue vs a naive product", T, float, double) {
  dl::set_gemm_backend(dl::GemmBackend::builtin);
  const int saved_threads = dl::get_num_threads();
  struct Case { int64_t M, K, N; int la, lb; };
  // K > KC (several K blocks), M and N with edge panels, every operand layout.
  for (const Case& cs : {Case{300, 520, 270, 0, 0}, Case{131, 300, 97, 1, 1}, Case{61, 257, 333, 2, 0}, Case{1, 600, 65, 0, 1},
                         Case{77, 1, 40, 1, 0}, Case{200, 64, 1, 0, 3}, Case{12, 700, 32, 0, 0}, Case{150, 33, 7, 1, 2}}) {
    for (int threads : {1, 2}) {
      dl::set_num_threads(threads);
      CAPTURE(cs.M);
      CAPTURE(cs.K);
      CAPTURE(cs.N);
      CAPTURE(threads);
      const auto a = matrix<T>(cs.M, cs.K, cs.la, 11);
      const auto b = matrix<T>(cs.K, cs.N, cs.lb, 12);
      const auto ref = naive(cs.M, cs.N, cs.K, a, b);
      dl::Tensor<T> c = dl::mm(a, b);
      // alpha/beta with the epilogue: c2 = relu(0.5 * a @ b - 2 * c0 + bias)
      dl::Tensor<T> c2 = det<T>({cs.M, cs.N}, 13);
      const dl::Tensor<T> c0 = c2.clone();
      const dl::Tensor<T> bias = det<T>({cs.N}, 14);
      dl::detail::Epilogue<T, dl::expr::Relu> ep;
      ep.bias = {bias.data(), 0, 1};
      dl::detail::gemm<T>(cs.M, cs.N, cs.K, T(0.5), dl::detail::matrix_ref(a), dl::detail::matrix_ref(b), T(-2), c2.data(),
                          cs.N, ep);
      double err = 0, err2 = 0, scale = 1;
      for (int64_t i = 0; i < cs.M; ++i)
        for (int64_t j = 0; j < cs.N; ++j) {
          const double r = ref[size_t(i * cs.N + j)];
          scale = std::max(scale, std::abs(r));
          err = std::max(err, std::abs(double(c.at(i, j)) - r));
          const double r2 = std::max(0.0, 0.5 * r - 2 * double(c0.at(i, j)) + double(bias.at(j)));
          err2 = std::max(err2, std::abs(double(c2.at(i, j)) - r2));
        }
      const double tol = std::is_same_v<T, float> ? 2e-6 * std::sqrt(double(cs.K)) : 1e-13 * std::sqrt(double(cs.K));
      CHECK(err <= tol * scale);
      CHECK(err2 <= tol * scale);
    }
  }
  dl::set_num_threads(saved_threads);
  dl::set_gemm_backend(dl::GemmBackend::automatic);
}

TEST_CASE("built-in GEMM and CBLAS agree; transposed operands are not copied") {
  const auto a = det<float>({400, 300}, 21), b = det<float>({500, 300}, 22);  // a @ b.t()
  dl::set_gemm_backend(dl::GemmBackend::builtin);
  const dl::Tensor<float> bt = b.t().contiguous();
  auto peak_of = [](auto&& f) {
    const auto before = dl::memory_stats().allocated_bytes;
    dl::reset_peak_memory_stats();
    f();
    return dl::memory_stats().peak_allocated_bytes - before;
  };
  dl::Tensor<float> builtin;
  const int64_t dense = peak_of([&] { builtin = dl::mm(a, bt); });
  const int64_t strided = peak_of([&] { builtin = dl::mm(a, b.t()); });
  // The same output and packing buffers: a copy of b.t() would add 600 KB.
  CHECK(strided <= dense);
  if (dl::has_cblas()) {
    dl::set_gemm_backend(dl::GemmBackend::blas);
    const dl::Tensor<float> blas = dl::mm(a.t().t(), b.t());
    double err = 0;
    for (int64_t i = 0; i < builtin.numel(); ++i) err = std::max(err, double(std::abs(builtin.data()[i] - blas.data()[i])));
    CHECK(err < 1e-3);
  }
  dl::set_gemm_backend(dl::GemmBackend::automatic);
}

// ============================================================================== convolution

TEST_CASE_TEMPLATE("conv2d: stride, padding, dilation, groups, bias; values and gradients", T, float, double) {
  for_each_backend([] {
    for (int k = 0; has_ref(case_name("conv2d", k) + "/params"); ++k) {
      const std::string c = case_name("conv2d", k);
      const auto p = params(c);
      CAPTURE(c);
      std::vector<int64_t> q(p.begin(), p.end());
      const int64_t N = q[0], C = q[1], H = q[2], W = q[3], O = q[4], groups = q[13];
      auto x = leaf(det<T>({N, C, H, W}, 3 * k));
      auto w = leaf(det<T>({O, C / groups, q[5], q[6]}, 3 * k + 1));
      auto b = maybe<T>(q[14] != 0, {O}, 3 * k + 2);
      auto out = F::conv2d(x, w, b, {q[7], q[8]}, {q[9], q[10]}, {q[11], q[12]}, groups);
      check_ref(out, c + "/out");
      backward_weighted(out);
      check_ref(x.grad(), c + "/gx");
      check_ref(w.grad(), c + "/gw");
      if (b.defined()) check_ref(b.grad(), c + "/gb");
    }
  });
}

TEST_CASE_TEMPLATE("conv1d and conv_transpose2d", T, float, double) {
  for (int k = 0; has_ref(case_name("conv1d", k) + "/params"); ++k) {
    const std::string c = case_name("conv1d", k);
    const auto p = params(c);
    std::vector<int64_t> q(p.begin(), p.end());
    auto x = leaf(det<T>({q[0], q[1], q[2]}, 3 * k));
    auto w = leaf(det<T>({q[3], q[1] / q[8], q[4]}, 3 * k + 1));
    auto b = maybe<T>(q[9] != 0, {q[3]}, 3 * k + 2);
    auto out = F::conv1d(x, w, b, q[5], q[6], q[7], q[8]);
    check_ref(out, c + "/out");
    backward_weighted(out);
    check_ref(x.grad(), c + "/gx");
    check_ref(w.grad(), c + "/gw");
    if (b.defined()) check_ref(b.grad(), c + "/gb");
  }
  for (int k = 0; has_ref(case_name("convt", k) + "/params"); ++k) {
    const std::string c = case_name("convt", k);
    const auto p = params(c);
    CAPTURE(c);
    std::vector<int64_t> q(p.begin(), p.end());
    const int64_t groups = q[15];
    auto x = leaf(det<T>({q[0], q[1], q[2], q[3]}, 3 * k));
    auto w = leaf(det<T>({q[1], q[4], q[5], q[6]}, 3 * k + 1));
    auto b = maybe<T>(q[16] != 0, {q[4] * groups}, 3 * k + 2);
    auto out = F::conv_transpose2d(x, w, b, {q[7], q[8]}, {q[9], q[10]}, {q[11], q[12]}, groups, {q[13], q[14]});
    check_ref(out, c + "/out");
    backward_weighted(out);
    check_ref(x.grad(), c + "/gx");
    check_ref(w.grad(), c + "/gw");
    if (b.defined()) check_ref(b.grad(), c + "/gb");
  }
}

TEST_CASE("dl::nn::grad::conv2d_input / conv2d_weight equal the backward of conv2d") {
  auto x = leaf(det<double>({2, 4, 7, 6}, 1));
  auto w = leaf(det<double>({6, 2, 3, 2}, 2));
  auto y = F::conv2d(x, w, {}, {2, 1}, 1, {1, 2}, 2);
  const auto gy = det<double>(y.shape(), 3);
  y.backward(gy);
  const auto gx = dl::nn::grad::conv2d_input(x.shape(), w.detach(), gy, {2, 1}, 1, {1, 2}, 2);
  const auto gw = dl::nn::grad::conv2d_weight(x.detach(), w.shape(), gy, {2, 1}, 1, {1, 2}, 2);
  double ex = 0, ew = 0;
  for (int64_t i = 0; i < gx.numel(); ++i) ex = std::max(ex, std::abs(gx.data()[i] - x.grad().data()[i]));
  for (int64_t i = 0; i < gw.numel(); ++i) ew = std::max(ew, std::abs(gw.data()[i] - w.grad().data()[i]));
  CHECK(ex < 1e-12);
  CHECK(ew < 1e-12);
  CHECK_THROWS_AS(dl::nn::grad::conv2d_input(Shape{2, 4, 7, 6}, w.detach(), gy, 1), dl::Error);
}

TEST_CASE("conv2d accepts unbatched input and elementwise expressions") {
  auto x = det<float>({3, 6, 6}, 1);
  auto w = det<float>({2, 3, 3, 3}, 2);
  auto y = F::conv2d(x, w, {}, 1, 1);
  CHECK(y.shape() == Shape{2, 6, 6});
  auto y4 = F::conv2d(x.unsqueeze(0), w, {}, 1, 1);
  auto fused = F::conv2d(dl::relu(x.unsqueeze(0) * 2.0f), w);
  auto explicit_ = F::conv2d(dl::Tensor<float>(dl::relu(x.unsqueeze(0) * 2.0f)), w);
  for (int64_t i = 0; i < y.numel(); ++i) CHECK(y.data()[i] == y4.data()[i]);
  for (int64_t i = 0; i < fused.numel(); ++i) CHECK(fused.data()[i] == explicit_.data()[i]);
}

// ============================================================================== pooling

TEST_CASE_TEMPLATE("max_pool2d: values, indices, backward; avg_pool2d; adaptive pools", T, float, double) {
  for (int k = 0; has_ref(case_name("maxpool", k) + "/params"); ++k) {
    const std::string c = case_name("maxpool", k);
    const auto p = params(c);
    CAPTURE(c);
    std::vector<int64_t> q(p.begin(), p.end());
    auto x = leaf(det<T>({q[0], q[1], q[2], q[3]}, k));
    auto [out, idx] = F::max_pool2d_with_indices(x, {q[4], q[5]}, dl::Size2{q[6], q[7]}, {q[8], q[9]}, {q[10], q[11]}, q[12] != 0);
    check_ref(out, c + "/out");
    check_ref_int(idx, c + "/idx");
    auto values = F::max_pool2d(x, {q[4], q[5]}, dl::Size2{q[6], q[7]}, {q[8], q[9]}, {q[10], q[11]}, q[12] != 0);
    check_ref(values, c + "/out");
    backward_weighted(out);
    check_ref(x.grad(), c + "/gx");
    // the standalone backward from indices
    dl::NoGradGuard no_grad;
    const auto g = det<T>(out.shape(), 999);
    check_ref(F::max_pool2d_backward(g, idx, x.shape()), c + "/gx");
  }
  for (int k = 0; has_ref(case_name("avgpool", k) + "/params"); ++k) {
    const std::string c = case_name("avgpool", k);
    const auto p = params(c);
    CAPTURE(c);
    std::vector<int64_t> q(p.begin(), p.end());
    auto x = leaf(det<T>({q[0], q[1], q[2], q[3]}, k));
    auto out = F::avg_pool2d(x, {q[4], q[5]}, dl::Size2{q[6], q[7]}, {q[8], q[9]}, q[10] != 0, q[11] != 0, q[12]);
    check_ref(out, c + "/out");
    backward_weighted(out);
    check_ref(x.grad(), c + "/gx");
  }
  for (int k = 0; has_ref(case_name("adaptiveavg", k) + "/params"); ++k) {
    for (const char* family : {"adaptiveavg", "adaptivemax"}) {
      const std::string c = case_name(family, k);
      const auto p = params(c);
      CAPTURE(c);
      std::vector<int64_t> q(p.begin(), p.end());
      auto x = leaf(det<T>({q[0], q[1], q[2], q[3]}, k));
      if (std::string(family) == "adaptiveavg") {
        auto out = F::adaptive_avg_pool2d(x, {q[4], q[5]});
        check_ref(out, c + "/out");
        if (has_ref(c + "/gx")) {
          backward_weighted(out);
          check_ref(x.grad(), c + "/gx");
        }
      } else if (has_ref(c + "/out")) {
        auto [out, idx] = F::adaptive_max_pool2d_with_indices(x, {q[4], q[5]});
        check_ref(out, c + "/out");
        check_ref_int(idx, c + "/idx");
        backward_weighted(out);
        check_ref(x.grad(), c + "/gx");
      }
    }
  }
}

TEST_CASE("pooling: unbatched input, NaN propagation, LeNet shapes") {
  auto x = det<float>({2, 6, 6}, 3);
  CHECK(F::max_pool2d(x, 2).shape() == Shape{2, 3, 3});
  CHECK(F::avg_pool2d(x, 3, 1, 1).shape() == Shape{2, 6, 6});
  CHECK(F::adaptive_avg_pool2d(x, 1).shape() == Shape{2, 1, 1});
  x.at(0, 1, 1) = std::numeric_limits<float>::quiet_NaN();
  auto [v, i] = F::max_pool2d_with_indices(x, 2);
  CHECK(std::isnan(v.at(0, 0, 0)));
  CHECK(i.at(0, 0, 0) == 7);
  CHECK(F::max_pool2d(dl::zeros<float>({64, 6, 28, 28}), 2).shape() == Shape{64, 6, 14, 14});
}

// ============================================================================== finite differences

namespace {
/// Central differences of loss = sum(f(inputs) * w) against backward, in double.
template <class Fn>
void gradcheck(Fn f, std::vector<dl::Tensor<double>> inputs, double eps = 1e-6, double tol = 1e-7) {
  for (auto& t : inputs) t.requires_grad_();
  dl::Tensor<double> out = f(inputs);
  const auto w = det<double>(out.shape(), 4242);
  dl::Tensor<double> loss = (out * w).sum();
  loss.backward();
  dl::NoGradGuard no_grad;
  for (size_t n = 0; n < inputs.size(); ++n) {
    dl::Tensor<double> g = inputs[n].grad();
    REQUIRE(g.defined());
    for (int64_t i = 0; i < inputs[n].numel(); ++i) {
      double* p = inputs[n].data() + i;
      const double saved = *p;
      *p = saved + eps;
      const double up = dl::Tensor<double>((f(inputs) * w).sum()).item();
      *p = saved - eps;
      const double down = dl::Tensor<double>((f(inputs) * w).sum()).item();
      *p = saved;
      const double numeric = (up - down) / (2 * eps);
      CHECK_MESSAGE(std::abs(numeric - g.contiguous().data()[i]) <= tol * (1 + std::abs(numeric)), "input ", n, " element ", i,
                    ": numeric ", numeric, " analytic ", g.contiguous().data()[i]);
    }
  }
}
}  // namespace

TEST_CASE("gradients by central differences (double)") {
  using V = std::vector<dl::Tensor<double>>;
  SUBCASE("matmul with broadcast batch and transposed operand") {
    gradcheck([](const V& in) { return dl::matmul(in[0], in[1].transpose(-1, -2)); },
              {det<double>({2, 1, 3, 4}, 1), det<double>({3, 5, 4}, 2)});
  }
  SUBCASE("addmm, baddbmm, addbmm, addmv, addr") {
    gradcheck([](const V& in) { return dl::addmm(in[0], in[1], in[2], 0.5, -1.5); },
              {det<double>({3, 1}, 1), det<double>({3, 4}, 2), det<double>({4, 2}, 3)});
    gradcheck([](const V& in) { return dl::baddbmm(in[0], in[1], in[2], 2.0, 0.5); },
              {det<double>({3, 2}, 1), det<double>({2, 3, 4}, 2), det<double>({2, 4, 2}, 3)});
    gradcheck([](const V& in) { return dl::addbmm(in[0], in[1], in[2], 2.0, 0.5); },
              {det<double>({3, 2}, 1), det<double>({2, 3, 4}, 2), det<double>({2, 4, 2}, 3)});
    gradcheck([](const V& in) { return dl::addmv(in[0], in[1], in[2], 2.0, 0.5); },
              {det<double>({3}, 1), det<double>({3, 4}, 2), det<double>({4}, 3)});
    gradcheck([](const V& in) { return dl::addr(in[0], in[1], in[2], 2.0, 0.5); },
              {det<double>({3, 4}, 1), det<double>({3}, 2), det<double>({4}, 3)});
  }
  SUBCASE("conv2d with stride, dilation, groups and bias") {
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); },
              {det<double>({2, 4, 6, 7}, 1), det<double>({6, 2, 3, 2}, 2), det<double>({6}, 3)});
  }
  SUBCASE("stride-1 input gradients: flipped weights, scattered taps (padding beyond the kernel), dilation") {
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], in[2], 1, {2, 1}, {1, 2}); },
              {det<double>({2, 3, 6, 7}, 1), det<double>({4, 3, 3, 2}, 2), det<double>({4}, 3)});
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], {}, 1, 1); }, {det<double>({1, 2, 4, 5}, 4), det<double>({3, 2, 1, 1}, 5)});
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1]); }, {det<double>({2, 2, 9, 8}, 6), det<double>({3, 2, 5, 5}, 7)});
  }
  SUBCASE("weight gradient of small images with many channels (the channels-last product), stride and dilation") {
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], {}, {2, 1}, {1, 0}, {1, 2}); },
              {det<double>({1, 32, 5, 4}, 1), det<double>({2, 32, 3, 2}, 2)});
  }
  SUBCASE("forward and input gradient of small images with many channels (channels-last products)") {
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], in[2], 1, 1); },
              {det<double>({1, 64, 3, 4}, 1), det<double>({2, 64, 3, 3}, 2), det<double>({2}, 3)});
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], {}, 1, 1); }, {det<double>({1, 2, 3, 3}, 4), det<double>({64, 2, 3, 3}, 5)});
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], {}, {2, 3}, {1, 0}, {1, 2}); },
              {det<double>({1, 2, 6, 7}, 6), det<double>({64, 2, 3, 2}, 7)});
  }
  SUBCASE("1x1 convolutions with a stride (a pointwise product of the pixels they read)") {
    gradcheck([](const V& in) { return F::conv2d(in[0], in[1], in[2], {2, 3}); },
              {det<double>({2, 3, 5, 7}, 8), det<double>({4, 3, 1, 1}, 9), det<double>({4}, 10)});
  }
  SUBCASE("conv_transpose2d and conv1d") {
    gradcheck([](const V& in) { return F::conv_transpose2d(in[0], in[1], in[2], 2, 1, 1, 2); },
              {det<double>({1, 4, 3, 3}, 1), det<double>({4, 1, 3, 3}, 2), det<double>({2}, 3)});
    gradcheck([](const V& in) { return F::conv1d(in[0], in[1], in[2], 2, 1, 2); },
              {det<double>({2, 3, 9}, 1), det<double>({4, 3, 3}, 2), det<double>({4}, 3)});
  }
  SUBCASE("pooling") {
    gradcheck([](const V& in) { return F::max_pool2d(in[0], 3, 2, 1, 1, true); }, {det<double>({1, 2, 7, 6}, 1)});
    gradcheck([](const V& in) { return F::avg_pool2d(in[0], 3, 2, 1, true, false); }, {det<double>({1, 2, 7, 6}, 2)});
    gradcheck([](const V& in) { return F::adaptive_avg_pool2d(in[0], {3, 4}); }, {det<double>({1, 2, 7, 6}, 3)});
    gradcheck([](const V& in) { return F::adaptive_max_pool2d(in[0], {3, 4}); }, {det<double>({1, 2, 7, 6}, 4)});
  }
  SUBCASE("linear + relu epilogue") {
    gradcheck([](const V& in) { return F::linear(in[0], in[1], in[2], dl::expr::Relu{}); },
              {det<double>({5, 4}, 1), det<double>({3, 4}, 2), det<double>({3}, 3)});
  }
}

// ============================================================================== errors

TEST_CASE("shape errors name the shapes involved") {
  using dl::Error;
  using doctest::Contains;
  auto z = [](Shape s) { return dl::zeros<float>(s); };
  CHECK_THROWS_WITH_AS(dl::mm(z({64, 784}), z({256, 128})), Contains("mat1 and mat2 shapes cannot be multiplied (64x784 and 256x128)"), Error);
  CHECK_THROWS_WITH_AS(dl::mm(z({3}), z({3, 3})), Contains("self must be a matrix"), Error);
  CHECK_THROWS_WITH_AS(dl::mm(z({3, 3}), z({3})), Contains("mat2 must be a matrix"), Error);
  CHECK_THROWS_WITH_AS(dl::matmul(z({}), z({3, 3})), Contains("both arguments to matmul need to be at least 1D, but they are 0D and 2D"), Error);
  CHECK_THROWS_WITH_AS(dl::matmul(z({2, 3, 4}), z({5, 6})), Contains("mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)"), Error);
  CHECK_THROWS_WITH_AS(dl::matmul(z({2, 3, 4}), z({3, 4, 5})), Contains("The size of tensor a (2) must match the size of tensor b (3)"), Error);
  CHECK_THROWS_WITH_AS(dl::matmul(z({2, 3, 4}), z({2, 5, 6})), Contains("cannot be multiplied"), Error);
  CHECK_THROWS_WITH_AS(dl::dot(z({3}), z({4})), Contains("inconsistent tensor size, expected tensor [3] and src [4]"), Error);
  CHECK_THROWS_WITH_AS(dl::dot(z({3, 1}), z({3})), Contains("1D tensors expected, but got 2D and 1D tensors"), Error);
  CHECK_THROWS_WITH_AS(dl::mv(z({3, 4}), z({5})), Contains("size mismatch, got 3, 3x4,5"), Error);
  CHECK_THROWS_WITH_AS(dl::bmm(z({2, 3, 4}), z({3, 4, 5})), Contains("Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."), Error);
  CHECK_THROWS_WITH_AS(dl::bmm(z({3, 4}), z({2, 4, 5})), Contains("batch1 must be a 3D tensor"), Error);
  CHECK_THROWS_WITH_AS(dl::addmm(z({3, 5}), z({2, 3}), z({3, 4})), Contains("The expanded size of the tensor (4) must match the existing size (5)"), Error);
  CHECK_THROWS_WITH_AS(dl::addr(z({2, 3}), z({2, 1}), z({3})), Contains("addr: Expected 1-D argument vec1, but got 2-D"), Error);
  CHECK_THROWS_WITH_AS(F::linear(z({64, 783}), z({128, 784})), Contains("input has 783 features but the layer expects 784"), Error);

  CHECK_THROWS_WITH_AS(F::conv2d(z({1, 3, 5, 5}), z({4, 2, 3, 3})), Contains("expected input[1, 3, 5, 5] to have 2 channels, but got 3 channels instead"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({1, 4, 5, 5}), z({4, 2, 3, 3}), {}, 1, 0, 1, 3), Contains("Given groups=3, expected weight to be divisible by 3 at dimension 0"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({1, 3, 2, 2}), z({4, 3, 3, 3})), Contains("Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({1, 3, 5, 5}), z({4, 3, 3, 3}), {}, 1, 0, 3), Contains("Kernel size: (7 x 7)"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3})), Contains("expected a 4-D weight"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3}), z({4, 3, 3, 3})), Contains("Expected 3D (unbatched) or 4D (batched) input to conv2d"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3, 3}), {}, 0), Contains("non-positive stride is not supported"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3, 3}), {}, 1, -1), Contains("negative padding is not supported"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3, 3}), {}, 1, 0, 0), Contains("non-positive dilation is not supported"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3, 3}), {}, 1, 0, 1, 0), Contains("non-positive groups is not supported"), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(z({2, 3, 5, 5}), z({4, 3, 3, 3}), z({3})), Contains("expected bias to be 1-dimensional with 4 elements, but got bias of size [3]"), Error);
  CHECK_THROWS_WITH_AS(F::conv1d(z({2, 3, 5, 5}), z({4, 3, 3})), Contains("Expected 2D (unbatched) or 3D (batched) input to conv1d"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(z({1, 4, 5, 5}), z({3, 2, 3, 3})), Contains("Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 5, 5] to have 3 channels"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(z({1, 4, 5, 5}), z({4, 2, 3, 3}), {}, 2, 0, 2), Contains("output padding must be smaller than stride"), Error);

  CHECK_THROWS_WITH_AS(F::max_pool2d(z({1, 1, 4, 4}), 5), Contains("Given input size: (1x4x4). Calculated output size: (1x0x0). Output size is too small"), Error);
  CHECK_THROWS_WITH_AS(F::max_pool2d(z({1, 1, 4, 4}), 2, std::nullopt, 2), Contains("pad should be at most half of kernel size, but got pad=2 and kernel_size=2"), Error);
  CHECK_THROWS_WITH_AS(F::max_pool2d(z({1, 1, 4, 4}), 2, dl::Size2{0}), Contains("stride should be greater than zero"), Error);
  CHECK_THROWS_WITH_AS(F::max_pool2d(z({1, 1, 4, 4}), 0), Contains("kernel size should be greater than zero"), Error);
  CHECK_THROWS_WITH_AS(F::max_pool2d(z({4, 4}), 2), Contains("Expected 3D (unbatched) or 4D (batched) input to max_pool2d"), Error);
  CHECK_THROWS_WITH_AS(F::max_pool2d(z({1, 0, 4, 4}), 2), Contains("non-empty 3D or 4D (batch mode) tensor expected"), Error);
  CHECK_THROWS_WITH_AS(F::avg_pool2d(z({1, 1, 4, 4}), 2, std::nullopt, 2), Contains("pad should be at most half of kernel size"), Error);
  CHECK_THROWS_WITH_AS(F::adaptive_avg_pool2d(z({1, 1, 0, 4}), {2, 2}), Contains("Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 1, 0, 4] with dimension 2 being empty"), Error);
  CHECK_THROWS_WITH_AS(F::adaptive_max_pool2d(z({4, 4}), {2, 2}), Contains("Expected 3D (unbatched) or 4D (batched) input to adaptive_max_pool2d"), Error);
  if (!dl::has_cblas())
    CHECK_THROWS_WITH_AS(dl::set_gemm_backend(dl::GemmBackend::blas), Contains("without a CBLAS backend"), Error);
}

TEST_CASE("products accept elementwise expressions and record through them") {
  auto a = leaf(det<float>({5, 7}, 1));
  auto b = det<float>({7, 3}, 2);
  const dl::Tensor<float> direct = dl::matmul(a, b);
  const dl::Tensor<float> fused = (a * 2.0f).matmul(b);
  for (int64_t i = 0; i < direct.numel(); ++i) CHECK(fused.data()[i] == doctest::Approx(2 * direct.data()[i]));
  dl::Tensor<float> loss = fused.sum();
  loss.backward();
  CHECK(a.grad().at(0, 0) == doctest::Approx(2 * (b.at(0, 0) + b.at(0, 1) + b.at(0, 2))));
}

TEST_CASE("empty dimensions") {
  auto z = [](Shape s) { return dl::zeros<float>(s); };
  CHECK(dl::mm(z({0, 3}), z({3, 4})).shape() == Shape{0, 4});
  auto k0 = dl::mm(dl::ones<float>({2, 0}), dl::ones<float>({0, 3}));
  CHECK(k0.shape() == Shape{2, 3});
  CHECK(k0.sum().item() == 0.0f);
  CHECK(dl::addmm(dl::ones<float>({3}), z({2, 0}), z({0, 3}), 2.0).sum().item() == 12.0f);
  CHECK(F::conv2d(z({0, 3, 5, 5}), z({4, 3, 3, 3})).shape() == Shape{0, 4, 3, 3});
  CHECK(F::conv2d(z({1, 0, 5, 5}), z({4, 0, 3, 3}), dl::ones<float>({4})).sum().item() == 36.0f);
  CHECK(F::max_pool2d(z({0, 3, 5, 5}), 2).shape() == Shape{0, 3, 2, 2});
  CHECK(dl::bmm(z({0, 2, 3}), z({0, 3, 4})).shape() == Shape{0, 2, 4});
  CHECK(dl::matmul(z({2, 3, 0}), z({0, 5})).shape() == Shape{2, 3, 5});
}

TEST_CASE("max_pool2d 2x2 fast path: every row width, NaNs and ties in PyTorch's order; pooling a relu") {
  // A plain reference: raster order over the window, an element taken when larger or NaN.
  for (int64_t W : {2, 3, 6, 14, 28, 30, 32, 34, 62, 66}) {
    for (int64_t H : {2, 5}) {
      CAPTURE(W);
      CAPTURE(H);
      dl::Tensor<float> x = det<float>({2, 3, H, W}, W * 7 + H);
      x.data()[5] = NAN;
      x.data()[11] = x.data()[10];  // a tie
      for (int64_t i = 0; i < x.numel(); i += 9) x.data()[i] = 0.25f;  // more ties
      auto [y, idx] = F::max_pool2d_with_indices(x, 2);
      const int64_t OH = H / 2, OW = W / 2;
      REQUIRE(y.shape() == Shape({2, 3, OH, OW}));
      int64_t bad = 0;
      for (int64_t q = 0; q < 6; ++q)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const float* in = x.data() + q * H * W;
            float m = in[2 * oh * W + 2 * ow];
            int64_t mi = 2 * oh * W + 2 * ow;
            for (int64_t dh = 0; dh < 2; ++dh)
              for (int64_t dw = 0; dw < 2; ++dw) {
                const int64_t i = (2 * oh + dh) * W + 2 * ow + dw;
                if (in[i] > m || std::isnan(in[i])) m = in[i], mi = i;
              }
            const int64_t o = (q * OH + oh) * OW + ow;
            const float got = y.data()[o];
            bad += !((std::isnan(m) && std::isnan(got)) || got == m) || idx.data()[o] != mi;
          }
      CHECK(bad == 0);
    }
  }
  // max_pool2d(relu(x)) pools first and applies relu to the result: the same values and gradient.
  dl::Tensor<double> a = det<double>({2, 3, 8, 6}, 3).requires_grad_();
  dl::Tensor<double> b = a.detach().clone().requires_grad_();
  dl::Tensor<double> fused = F::max_pool2d(dl::relu(a), 2);
  dl::Tensor<double> plain = F::max_pool2d(dl::Tensor<double>(dl::relu(b)), 2);
  CHECK(dl::equal(fused, plain));
  const dl::Tensor<double> g = det<double>(fused.shape(), 9);
  fused.backward(g);
  plain.backward(g);
  CHECK(dl::equal(a.grad(), b.grad()));
  CHECK(dl::autograd::gradcheck([](auto& in) { return F::max_pool2d(dl::relu(in[0] * 1.0), 2); }, {a}));
}

// ------------------------------------------------------------------------------ the thread team

TEST_CASE("parallel_for: every index once, for any size, grain and thread count; nested calls run serially") {
  const int saved_threads = dl::get_num_threads();
  for (int threads : {1, 2, 3, 4}) {
    dl::set_num_threads(threads);
    for (int64_t n : {int64_t(1), int64_t(2), int64_t(7), int64_t(64), int64_t(1000), int64_t(100003)})
      for (int64_t grain : {int64_t(1), int64_t(3), int64_t(256), int64_t(1) << 20}) {
        CAPTURE(threads);
        CAPTURE(n);
        CAPTURE(grain);
        std::vector<std::atomic<int>> seen(size_t(n) + 2);
        std::atomic<int> nested_serial{0}, calls{0}, in_team{0}, empty{0};
        dl::detail::parallel_for(1, n + 1, grain, [&](int64_t b, int64_t e) {
          calls.fetch_add(1);
          empty.fetch_add(int(b >= e));
          for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1);
          // A kernel inside a chunk gets the whole range in one serial call.
          int inner = 0;
          dl::detail::parallel_for(0, 50, 1, [&](int64_t b2, int64_t e2) { inner += int(b2 == 0 && e2 == 50); });
          const bool team = dl::detail::in_parallel_region();
          nested_serial.fetch_add(int(team && inner == 1));
          in_team.fetch_add(int(team));
        });
        // One serial call when one thread suffices (or the team paused: see the last test), else
        // chunks of at least grain, all inside the team.
        CHECK(empty == 0);
        if (threads == 1 || n <= grain) CHECK(calls == 1);
        CHECK(in_team == (calls > 1 ? calls.load() : 0));
        CHECK(seen[0] == 0);
        CHECK(seen[size_t(n) + 1] == 0);
        int once = 0;
        for (int64_t i = 1; i <= n; ++i) once += seen[size_t(i)] == 1;
        CHECK(once == n);
        CHECK(nested_serial == in_team);
        CHECK(calls <= 4 * threads);
      }
  }
  dl::set_num_threads(saved_threads);
}

TEST_CASE("parallel_for: an exception in one chunk reaches the caller, and the team keeps working") {
  const int saved_threads = dl::get_num_threads();
  dl::set_num_threads(2);
  CHECK_THROWS_WITH_AS(dl::detail::parallel_for(0, 1000, 1,
                                                [](int64_t b, int64_t e) {
                                                  if (b <= 700 && 700 < e) throw dl::Error("chunk failed at 700");
                                                }),
                       "chunk failed at 700", dl::Error);
  std::atomic<int64_t> sum{0};
  dl::detail::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  CHECK(sum == 999 * 1000 / 2);
  dl::set_num_threads(saved_threads);
}

TEST_CASE("the thread team: two threads running kernels at once (one runs serially) get correct results") {
  const int saved_threads = dl::get_num_threads();
  dl::set_num_threads(2);
  dl::set_gemm_backend(dl::GemmBackend::builtin);
  const auto a = det<float>({96, 300}, 1), b = det<float>({300, 80}, 2);
  const dl::Tensor<float> ref = dl::mm(a, b);
  const dl::Tensor<float> x = det<float>({1 << 16}, 3);
  const dl::Tensor<float> xref = dl::exp(x) * 2.0f + x;
  std::atomic<int> bad{0};
  auto work = [&] {
    for (int r = 0; r < 20; ++r) {
      const dl::Tensor<float> c = dl::mm(a, b);
      const dl::Tensor<float> y = dl::exp(x) * 2.0f + x;
      if (!dl::equal(c, ref) || !dl::equal(y, xref)) bad.fetch_add(1);
    }
  };
  std::thread other(work);
  work();
  other.join();
  CHECK(bad == 0);
  dl::set_gemm_backend(dl::GemmBackend::automatic);
  dl::set_num_threads(saved_threads);
}

TEST_CASE("the thread team: a late worker never runs a finished job; every index once across many short jobs") {
  // parallel_for does not wait for a worker that has not joined when the caller finishes its
  // part: the worker must then find the job closed, never run its body after parallel_for
  // returned, and still join later jobs. Gaps of 0-120 us between jobs let the worker be spinning,
  // waking up or asleep when a job is published.
  const int saved_threads = dl::get_num_threads();
  const auto caller = std::this_thread::get_id();
  std::atomic<int64_t> current{-1};
  std::atomic<int> stale{0}, wrong{0}, shared{0};
  for (int threads : {2, 3}) {
    dl::set_num_threads(threads);
    for (int64_t job = 0; job < 3000; ++job) {
      current = job;
      const int64_t n = 1 + job % 97;
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int> on_worker{0};
      dl::detail::parallel_for(0, n, 1, [&, job](int64_t b, int64_t e) {
        if (current.load() != job) stale.fetch_add(1);
        on_worker.fetch_add(int(std::this_thread::get_id() != caller));
        for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1);
      });
      current = -1;  // a body running from now on belongs to a finished job
      for (auto& v : seen) wrong.fetch_add(int(v.load() != 1));
      shared.fetch_add(int(on_worker.load() > 0));
      if (job % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(job % 120));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a worker still inside a stale body would show now
  CHECK(stale == 0);
  CHECK(wrong == 0);
  CHECK(shared > 0);  // and the workers did join jobs
  dl::set_num_threads(saved_threads);
}

TEST_CASE("the thread team: when a worker keeps finishing late the caller works alone for a while, then shares again") {
  const int saved_threads = dl::get_num_threads();
  dl::set_num_threads(2);
  const auto caller = std::this_thread::get_id();
  // Two chunks: the caller's waits until the worker has taken the other, which sleeps 2 ms, as a
  // thread whose core another process holds would. Returns how many chunks the worker ran.
  auto late_job = [&] {
    std::atomic<int> entered{0}, on_worker{0};
    dl::detail::parallel_for(0, 2, 1, [&](int64_t b, int64_t e) {
      entered.fetch_add(1);
      if (std::this_thread::get_id() != caller) {
        on_worker.fetch_add(int(e - b));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      } else if (e - b == 1) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (entered < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      }
    });
    return on_worker.load();
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past any pause earlier tests caused
  int on_worker = 0;
  for (int r = 0; r < 20; ++r) on_worker += late_job();  // > 10 ms of job time, mostly waiting
  CHECK(on_worker > 0);
  int later = 0;  // now every chunk runs on the calling thread
  for (int r = 0; r < 10; ++r) later += late_job();
  CHECK(later == 0);
  // After the pause (200 ms) the team takes the worker again: both threads get inside at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::atomic<int> inside{0};
  std::atomic<bool> both{false};
  dl::detail::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    inside.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (inside < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    if (inside == 2) both = true;
  });
  CHECK(both);
  dl::set_num_threads(saved_threads);
}

TEST_CASE("the thread team: a child process made by fork() runs kernels on its own team") {
  const int saved_threads = dl::get_num_threads();
  dl::set_num_threads(2);
  const dl::Tensor<float> x = det<float>({1 << 16}, 4);
  const dl::Tensor<float> ref = dl::exp(x) + x;  // the parent's team has its worker now
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);  // a hang (waiting for the parent's workers) fails the test instead of blocking it
    const dl::Tensor<float> y = dl::exp(x) + x;
    _exit(dl::equal(y, ref) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  dl::set_num_threads(saved_threads);
}
