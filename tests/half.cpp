// Tests of dl::Half and dl::BFloat16 (dl/half.hpp) and of Tensor<Half>/Tensor<BFloat16>:
// conversions bit for bit against PyTorch's (tests/data/half_ref.bin, written by
// tests/gen_half_reference.py), every binary16 pattern decoded exactly, type promotion, elementwise
// expressions, reductions (float accumulation), matrix products, autograd through 16-bit tensors
// and conversions, printing, and error paths.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <dl/dl.hpp>

#include "refbin.hpp"

using dl::BFloat16;
using dl::Half;
using dl::Shape;
using dl::Tensor;

namespace {

const refbin::File ref("half_ref.bin");

#define CHECK_ERROR(expr, text) CHECK_THROWS_WITH_AS(expr, doctest::Contains(text), dl::Error)

/// The value of a binary16 pattern, by the IEEE definition (independent of dl's decoder).
double half_value(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(double(m), -24) : e == 31 ? (m ? std::nan("") : INFINITY) : std::ldexp(double(1024 + m), e - 25);
  return sign ? -v : v;
}

template <class T>
Tensor<T> det16(const Shape& shape, int64_t seed) {
  return refbin::det<double>(shape, seed).template to<T>();  // det's doubles rounded once, as torch's .to()
}

template <class T>
void check16(const Tensor<T>& got, const std::string& key) {
  static_assert(dl::half_float<T>);
  // 16-bit results agree with PyTorch's to the last bit or one unit in the last place (libm's
  // exp/tanh may round the float intermediate differently from PyTorch's vectorised ones).
  ref.check(got, key, std::is_same_v<T, Half> ? 2e-3 : 1.6e-2);
}

}  // namespace

TEST_CASE("half: float -> float16 / bfloat16 rounding, bit for bit against PyTorch") {
  const Tensor<double> in = ref.tensor<double>("conv/inputs");
  const Tensor<int64_t> f16 = ref.tensor<int64_t>("conv/f16_bits"), bf16 = ref.tensor<int64_t>("conv/bf16_bits");
  int bad16 = 0, badbf = 0;
  for (int64_t i = 0; i < in.numel(); ++i) {
    const float x = float(in.data()[i]);
    const uint16_t h = Half(x).bits(), b = BFloat16(x).bits();
    if (std::isnan(x)) {  // any NaN pattern (PyTorch's vectorised bfloat16 path gives 0xffff, its scalar one 0x7fc0)
      CHECK(std::isnan(float(Half(x))));
      CHECK(std::isnan(float(BFloat16(x))));
      CHECK(std::isnan(float(BFloat16::from_bits(uint16_t(bf16.data()[i])))));
      continue;
    }
    if (h != uint16_t(f16.data()[i])) {
      ++bad16;
      MESSAGE("float16 of ", x, ": dl ", h, ", PyTorch ", f16.data()[i]);
    }
    if (b != uint16_t(bf16.data()[i])) {
      ++badbf;
      MESSAGE("bfloat16 of ", x, ": dl ", b, ", PyTorch ", bf16.data()[i]);
    }
  }
  CHECK(bad16 == 0);
  CHECK(badbf == 0);
  // The tensor conversions use the same rounding.
  const Tensor<Half> th = in.to<float>().half();
  const Tensor<BFloat16> tb = in.to<float>().bfloat16();
  for (int64_t i = 0; i < in.numel(); ++i) {
    if (std::isnan(in.data()[i])) continue;
    CHECK(th.data()[i].bits() == uint16_t(f16.data()[i]));
    CHECK(tb.data()[i].bits() == uint16_t(bf16.data()[i]));
  }
}

TEST_CASE("half: every float16 pattern decodes exactly and survives the round trip") {
  int bad = 0;
  for (uint32_t u = 0; u < 65536; ++u) {
    const Half h = Half::from_bits(uint16_t(u));
    const float f = h;
    const double want = half_value(uint16_t(u));
    if (std::isnan(want)) {
      bad += !std::isnan(f) || !std::isnan(float(Half(f)));
      continue;
    }
    bad += double(f) != want || Half(f).bits() != u;
  }
  CHECK(bad == 0);
  for (uint32_t u = 0; u < 65536; u += 3) {
    const BFloat16 b = BFloat16::from_bits(uint16_t(u));
    const float f = b;
    if (std::isnan(f)) continue;
    CHECK(BFloat16(f).bits() == u);
  }
}

TEST_CASE("half: limits are torch.finfo's") {
  using LH = std::numeric_limits<Half>;
  using LB = std::numeric_limits<BFloat16>;
  CHECK(float(LH::max()) == 65504.0f);
  CHECK(float(LH::lowest()) == -65504.0f);
  CHECK(float(LH::epsilon()) == 0.0009765625f);
  CHECK(float(LH::min()) == std::ldexp(1.0f, -14));
  CHECK(float(LH::denorm_min()) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(float(LH::infinity())));
  CHECK(std::isnan(float(LH::quiet_NaN())));
  CHECK(float(LB::max()) == doctest::Approx(3.3895313892515355e38));
  CHECK(float(LB::epsilon()) == 0.0078125f);
  CHECK(float(LB::min()) == std::numeric_limits<float>::min());
  CHECK(std::isinf(float(LB::infinity())));
  CHECK(std::isnan(float(LB::quiet_NaN())));
}

TEST_CASE("half: dtypes, names and PyTorch's promotion") {
  static_assert(std::is_same_v<dl::promote_t<Half, float>, float>);
  static_assert(std::is_same_v<dl::promote_t<Half, double>, double>);
  static_assert(std::is_same_v<dl::promote_t<int64_t, Half>, Half>);
  static_assert(std::is_same_v<dl::promote_t<bool, BFloat16>, BFloat16>);
  static_assert(std::is_same_v<dl::promote_t<Half, BFloat16>, float>);
  static_assert(std::is_same_v<dl::promote_t<BFloat16, BFloat16>, BFloat16>);
  static_assert(dl::floating_scalar<Half> && dl::floating_scalar<BFloat16>);
  static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);
  const Tensor<Half> h = dl::zeros<Half>({2, 3});
  CHECK(h.dtype() == dl::kHalf);
  CHECK(h.dtype() == dl::kFloat16);
  CHECK(dl::dtype_name(h.dtype()) == "float16");
  CHECK(dl::dtype_name(dl::kBFloat16) == "bfloat16");
  CHECK(dl::element_size(dl::kHalf) == 2);
  CHECK(h.type_name() == "torch.HalfTensor");
  CHECK(dl::ones<BFloat16>({1}).type_name() == "torch.BFloat16Tensor");
  // A number keeps a 16-bit tensor 16-bit; a float32 tensor widens it; float16 with bfloat16 is float32.
  auto x = det16<Half>({3, 7}, 1);
  static_assert(std::is_same_v<dl::expr::value_type_t<decltype(x + 2.5)>, Half>);
  static_assert(std::is_same_v<dl::expr::value_type_t<decltype(x + dl::ones<float>({3, 7}))>, float>);
  static_assert(std::is_same_v<dl::expr::value_type_t<decltype(x + dl::ones<BFloat16>({3, 7}))>, float>);
  static_assert(std::is_same_v<dl::expr::value_type_t<decltype(x + dl::ones<int64_t>({3, 7}))>, Half>);
  CHECK_ERROR(dl::zeros<Half>({2}, dl::dtype(dl::kFloat32)), "Tensor<dl::Half>");
  CHECK_ERROR(dl::zeros<float>({2}, dl::dtype(dl::kBFloat16)), "dl::zeros<dl::BFloat16>");
}

TEST_CASE_TEMPLATE("half: elementwise expressions, reductions and products against PyTorch", T, Half, BFloat16) {
  const std::string k = std::is_same_v<T, Half> ? "f16/" : "bf16/";
  const Tensor<T> a = det16<T>({3, 7}, 1), b = det16<T>({3, 7}, 2), c = det16<T>({3, 7}, 3), d = det16<T>({3, 7}, 4);
  // Each op computes in float and rounds its result, as eager PyTorch; a fused expression rounds
  // at the same points (every node's value has the node's type).
  const Tensor<T> y = dl::sigmoid(a * b + c) * d;
  check16(y, k + "expr");
  check16(Tensor<T>(dl::exp(a)), k + "exp");
  check16(Tensor<T>(a / b), k + "div");
  check16(Tensor<T>(dl::tanh(b)), k + "tanh");
  check16(Tensor<T>(a + 2.5), k + "add_scalar");
  // float accumulation: a 16-bit accumulator would stall long before 4096 terms
  check16(det16<T>({4096}, 5).sum(), k + "sum_all");
  const Tensor<T> m = det16<T>({8, 512}, 6);
  check16(m.mean(1), k + "mean_dim1");
  check16(m.sum(0), k + "sum_dim0");
  check16(m.amax(1), k + "amax_dim1");
  check16(dl::matmul(det16<T>({5, 64}, 7), det16<T>({64, 3}, 8)), k + "mm");
  const Tensor<float> mixed = a + refbin::det<float>({3, 7}, 9);
  ref.check(mixed, k + "mixed", 1e-6);
  // Views, joins, indexing and in-place ops move 16-bit elements unchanged.
  const Tensor<T> j = dl::cat({a, b}, 0);
  CHECK(j.shape() == Shape{6, 7});
  CHECK(j[4][5].item().bits() == b[1][5].item().bits());
  const Tensor<T> sel = dl::index_select(a.t(), 0, dl::tensor<int64_t>({6, 0}));
  CHECK(sel[0][2].item().bits() == a[2][6].item().bits());
  Tensor<T> z = a.clone();
  z.mul_(2.0);
  CHECK(float(z[1][1].item()) == float(T(float(a[1][1].item()) * 2.0f)));
  z.fill_(0.1);
  CHECK(z[0][0].item().bits() == T(0.1f).bits());
}

TEST_CASE_TEMPLATE("half: autograd through 16-bit tensors and conversions", T, Half, BFloat16) {
  const std::string k = std::is_same_v<T, Half> ? "f16/" : "bf16/";
  Tensor<T> x = det16<T>({3, 7}, 10).requires_grad_();
  const Tensor<T> wt = det16<T>({3, 7}, 999);
  Tensor<T> loss = (x * x * wt).sum();
  loss.backward();
  REQUIRE(x.grad().defined());
  static_assert(std::is_same_v<decltype(x.grad()), Tensor<T>>);
  check16(x.grad(), k + "grad_sq");
  // Conversions are differentiable both ways: the gradient is converted back (torch's
  // ToCopyBackward). A finite-difference check does not apply to a rounding (piecewise constant);
  // the rule is checked exactly instead.
  Tensor<float> f = refbin::det<float>({4}, 11).requires_grad_();
  Tensor<T> fh = f.template to<T>();
  CHECK(fh.grad_fn() != nullptr);
  (fh * T(3.0f)).sum().backward();
  REQUIRE(f.grad().defined());
  for (int64_t i = 0; i < 4; ++i) CHECK(f.grad().data()[i] == 3.0f);
  Tensor<T> h = det16<T>({4}, 12).requires_grad_();
  (h.to_float() * refbin::det<float>({4}, 13)).sum().backward();
  for (int64_t i = 0; i < 4; ++i)
    CHECK(h.grad().data()[i].bits() == T(refbin::det<float>({4}, 13).data()[i]).bits());
}

TEST_CASE("half: printing, item, random tensors and errors") {
  const Tensor<Half> h = dl::tensor<float>({1.5f, -2.25f, 65504.0f}).half();
  std::ostringstream os;
  os << h;
  CHECK(os.str() == "tensor([ 1.5000e+00, -2.2500e+00,  6.5504e+04], dtype=float16)");
  std::ostringstream ob;
  ob << dl::tensor<float>({0.1f, 2.0f}).bfloat16();
  CHECK(ob.str() == "tensor([0.1001, 2.0000], dtype=bfloat16)");
  CHECK(h[1].item<double>() == -2.25);
  CHECK(dl::AnyTensor(h).to<float>().data()[0] == 1.5f);
  // Overflow and NaN, as PyTorch
  const Tensor<Half> o = dl::tensor<float>({1e5f, -1e5f, NAN}).half();
  CHECK(std::isinf(float(o.data()[0])));
  CHECK(float(o.data()[1]) < 0);
  CHECK(std::isnan(float(o.data()[2])));
  CHECK(Tensor<bool>(dl::isnan(o)).to<int64_t>().sum().item() == 1);
  // random draws: the same Philox values as float64 draws, rounded
  dl::manual_seed(5);
  const Tensor<Half> r = dl::rand<Half>({1000});
  dl::manual_seed(5);
  const Tensor<double> rd = dl::rand<double>({1000});
  int same = 0;
  for (int64_t i = 0; i < 1000; ++i) same += r.data()[i].bits() == Half(float(rd.data()[i])).bits();
  CHECK(same == 1000);
  CHECK(float(r.min().item()) >= 0.0f);
  CHECK(float(r.max().item()) <= 1.0f);
  // errors name the dtypes
  CHECK_ERROR(dl::AnyTensor(h).as<float>(), "expected a tensor of dtype float32 but got float16");
}

TEST_CASE_TEMPLATE("half: linear, activations and softmax compute in float and round once", T, Half, BFloat16) {
  namespace F = dl::nn::functional;
  // Bit for bit against float's own rounding: the widening path (the dot-product path sums in
  // another order; the next test case compares it).
  dl::set_bf16_dot(dl::Bf16Dot::off);
  struct Restore {
    ~Restore() { dl::set_bf16_dot(dl::Bf16Dot::automatic); }
  } restore;
  const Tensor<T> x = det16<T>({4, 16}, 20), w = det16<T>({5, 16}, 21), b = det16<T>({5}, 22);
  const Tensor<T> y = F::linear(x, w, b);
  const Tensor<float> yf = F::linear(x.to_float(), w.to_float(), b.to_float());
  static_assert(std::is_same_v<decltype(F::linear(x, w, b)), Tensor<T>>);
  for (int64_t i = 0; i < y.numel(); ++i) CHECK(y.data()[i].bits() == T(yf.data()[i]).bits());
  const Tensor<T> r = F::linear(x, w, b, dl::expr::Relu{});
  for (int64_t i = 0; i < r.numel(); ++i) CHECK(float(r.data()[i]) == std::max(0.0f, float(T(yf.data()[i]))));
  const Tensor<T> s = F::softmax(y, 1);
  const Tensor<float> sf = F::softmax(y.to_float(), 1);
  for (int64_t i = 0; i < s.numel(); ++i) CHECK(s.data()[i].bits() == T(sf.data()[i]).bits());
  // nn::Linear's parameters in 16 bits: forward and backward
  Tensor<T> xs = x.clone().requires_grad_();
  Tensor<T> ws = w.clone().requires_grad_();
  F::linear(xs, ws).sum().backward();
  REQUIRE(ws.grad().defined());
  const Tensor<float> gw = x.to_float().sum(0).unsqueeze(0).expand({5, 16});
  for (int64_t i = 0; i < 16; ++i) CHECK(float(ws.grad()[2][i].item()) == doctest::Approx(gw[2][i].item()).epsilon(1e-2));
}

namespace {

/// Within one bfloat16 rounding of each other, plus float accumulation's error relative to
/// bound = |a| @ |b| (both results are float sums of the same products, in different orders, each
/// rounded once).
void check_bf16_close(const Tensor<BFloat16>& got, const Tensor<BFloat16>& want, const Tensor<float>& bound, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  const Tensor<float> g = got.to_float().contiguous(), w = want.to_float().contiguous();
  const Tensor<float> b = bound.expand(want.shape()).contiguous();
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel(); ++i)
    bad += std::fabs(g.data()[i] - w.data()[i]) > std::ldexp(std::fabs(w.data()[i]), -7) + 1e-5f * b.data()[i];
  CHECK(bad == 0);
}

Tensor<float> abs_f(const Tensor<BFloat16>& t) { return Tensor<float>(dl::abs(t.to_float())); }

}  // namespace

TEST_CASE("half: bfloat16 products on the CPU's dot-product instruction agree with the widening path") {
  namespace F = dl::nn::functional;
  struct Restore {
    ~Restore() { dl::set_bf16_dot(dl::Bf16Dot::automatic); }
  } restore;
  dl::set_bf16_dot(dl::Bf16Dot::off);
  CHECK_FALSE(dl::bf16_dot_enabled());
  dl::set_bf16_dot(dl::Bf16Dot::on);
  if (!dl::bf16_dot_enabled()) {
    MESSAGE("this CPU has no AVX512-BF16: bfloat16 products widen to float (checked above)");
    return;
  }
  using B = BFloat16;
  // Both paths on the same operands: `f` run natively and widened.
  auto both = [](auto f) {
    dl::set_bf16_dot(dl::Bf16Dot::on);
    Tensor<B> native = f();
    dl::set_bf16_dot(dl::Bf16Dot::off);
    Tensor<B> wide = f();
    dl::set_bf16_dot(dl::Bf16Dot::on);
    return std::pair{native, wide};
  };
  // Odd sizes (edge panels of 1..11 rows and 1..31 columns, odd K: a half-empty last pair), K over
  // one block (512 pairs), and every transpose combination. Even K with a row-major A reads A in
  // place (no A panels), also over several K blocks (1026, 1200); rows 4 KB apart (K = 2048) pack.
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 7, 7}, {17, 17, 17}, {1, 33, 5}, {13, 1, 9}, {25, 70, 3}, {12, 32, 1023},
                              {1023, 17, 2}, {40, 600, 31}, {30, 50, 1200}, {13, 45, 1026}, {3, 20, 2048}};
  int64_t seed = 100;
  for (const auto& s : sizes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    const Tensor<B> a = det16<B>({M, K}, seed++), b = det16<B>({K, N}, seed++);
    const Tensor<B> at = det16<B>({K, M}, seed++).t(), bt = det16<B>({N, K}, seed++).t();
    for (int t = 0; t < 4; ++t) {
      const Tensor<B>& x = t & 1 ? at : a;
      const Tensor<B>& y = t & 2 ? bt : b;
      const auto [native, wide] = both([&] { return dl::mm(x, y); });
      check_bf16_close(native, wide, dl::mm(abs_f(x), abs_f(y)),
                       "mm " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + " transposes " + std::to_string(t));
    }
  }
  // bmm, matmul's vector and batched forms (broadcast batch, a folded 3-d x 2-d), linear with bias and relu.
  const Tensor<B> ba = det16<B>({3, 17, 53}, 200), bb = det16<B>({3, 53, 9}, 201), m = det16<B>({53, 29}, 202), v = det16<B>({53}, 203);
  {
    const auto [n, w] = both([&] { return dl::bmm(ba, bb); });
    check_bf16_close(n, w, dl::bmm(abs_f(ba), abs_f(bb)), "bmm");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(v, v); });
    CHECK(n.dim() == 0);
    check_bf16_close(n, w, dl::matmul(abs_f(v), abs_f(v)), "matmul vector . vector");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(m.t(), v); });
    check_bf16_close(n, w, dl::matmul(abs_f(m.t()), abs_f(v)), "matmul matrix @ vector");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(v, m); });
    check_bf16_close(n, w, dl::matmul(abs_f(v), abs_f(m)), "matmul vector @ matrix");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(ba, m); });
    CHECK(n.shape() == Shape{3, 17, 29});
    check_bf16_close(n, w, dl::matmul(abs_f(ba), abs_f(m)), "matmul 3-d @ 2-d");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(ba, v); });
    check_bf16_close(n, w, dl::matmul(abs_f(ba), abs_f(v)), "matmul 3-d @ vector");
  }
  {
    const auto [n, w] = both([&] { return dl::matmul(ba, bb[1]); });
    check_bf16_close(n, w, dl::matmul(abs_f(ba), abs_f(bb[1])), "matmul 3-d @ 2-d, transposed batch");
  }
  {
    const Tensor<B> w4 = det16<B>({4, 5, 53, 7}, 204), b4 = det16<B>({5, 7, 6}, 205);
    const auto [n, w] = both([&] { return dl::matmul(w4, b4); });
    CHECK(n.shape() == Shape{4, 5, 53, 6});
    check_bf16_close(n, w, dl::matmul(abs_f(w4), abs_f(b4)), "matmul broadcast batch");
  }
  const Tensor<B> x = det16<B>({2, 17, 53}, 206), wl = det16<B>({29, 53}, 207), bl = det16<B>({29}, 208);
  {
    const auto [n, w] = both([&] { return F::linear(x, wl, bl); });
    const Tensor<float> bound = Tensor<float>(dl::matmul(abs_f(x), abs_f(wl).t()) + abs_f(bl));
    check_bf16_close(n, w, bound, "linear with bias");
    const auto [nr, wr] = both([&] { return F::linear(x, wl, Tensor<B>{}, dl::expr::Relu{}); });
    check_bf16_close(nr, wr, dl::matmul(abs_f(x), abs_f(wl).t()), "linear relu");
    for (int64_t i = 0; i < nr.numel(); ++i) CHECK(float(nr.contiguous().data()[i]) >= 0.0f);
  }
  {  // the bias added in the last of three K blocks (A read in place, B column-major)
    const Tensor<B> xk = det16<B>({5, 1100}, 209), wk = det16<B>({40, 1100}, 210), bk = det16<B>({40}, 211);
    const auto [n, w] = both([&] { return F::linear(xk, wk, bk); });
    check_bf16_close(n, w, Tensor<float>(dl::matmul(abs_f(xk), abs_f(wk).t()) + abs_f(bk)), "linear with bias, K = 1100");
  }
  // The one rounding is to nearest even, as BFloat16(float): ties 1 + 2^-8 -> 1 and
  // 1 + 2^-7 + 2^-8 -> 1 + 2^-6; NaN stays NaN, infinities stay.
  {
    const float t = std::ldexp(1.0f, -8), nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const Tensor<B> lhs = dl::tensor<float>({1.0f, t, 1.0f + 2 * t, t, nan, 1.0f, -inf, 1.0f}).reshape({4, 2}).to<B>();
    const Tensor<B> ones2 = dl::ones<float>({2, 1}).to<B>();
    dl::set_bf16_dot(dl::Bf16Dot::on);
    const Tensor<B> y = dl::mm(lhs, ones2).contiguous();
    CHECK(float(y.data()[0]) == 1.0f);
    CHECK(float(y.data()[1]) == 1.0f + 4 * t);
    CHECK(std::isnan(float(y.data()[2])));
    CHECK(float(y.data()[3]) == -inf);
  }
  // The bias is added in float before the one rounding: 256 + 1 + 0.5 rounds to 258 (bfloat16
  // keeps 8 bits), where rounding the product first (257 -> 256) and adding 0.5 would give 256.
  {
    const Tensor<B> one = dl::ones<float>({1, 2}).to<B>(), w2 = dl::tensor<float>({256.0f, 1.0f}).reshape({1, 2}).to<B>(), half = dl::tensor<float>({0.5f}).to<B>();
    const Tensor<B> y = F::linear(one, w2, half);
    CHECK(float(y[0][0].item()) == 258.0f);
  }
  // Gradients through the native path: the same products, against the widening path's.
  auto grads = [&](bool native) {
    dl::set_bf16_dot(native ? dl::Bf16Dot::on : dl::Bf16Dot::off);
    Tensor<B> xi = x.detach().requires_grad_(), wi = wl.detach().requires_grad_(), bi = bl.detach().requires_grad_();
    Tensor<B> p = ba.detach().requires_grad_(), q = m.detach().requires_grad_();
    const Tensor<float> up = refbin::det<float>({2, 17, 29}, 209);
    (F::linear(xi, wi, bi).to_float() * up).sum().backward();
    (dl::matmul(p, q).to_float() * refbin::det<float>({3, 17, 29}, 210)).sum().backward();
    dl::set_bf16_dot(dl::Bf16Dot::on);
    return std::vector<Tensor<B>>{xi.grad(), wi.grad(), bi.grad(), p.grad(), q.grad()};
  };
  const auto gn = grads(true), gw = grads(false);
  const char* names[] = {"linear grad input", "linear grad weight", "linear grad bias", "matmul grad a", "matmul grad b"};
  for (int i = 0; i < 5; ++i) {
    REQUIRE(gn[i].defined());
    // The bound: the gradient's products in absolute value (a generous stand-in: the same scale).
    check_bf16_close(gn[i], gw[i], Tensor<float>(dl::ones<float>(gw[i].shape()) * 8.0f), names[i]);
  }
  // Shapes that do not multiply raise float's messages on the native path too.
  CHECK_ERROR(dl::mm(m, m), "mat1 and mat2 shapes cannot be multiplied (53x29 and 53x29)");
  CHECK_ERROR(dl::matmul(ba, bb[0].t()), "cannot be multiplied");
  CHECK_ERROR(F::linear(x, wl.t(), bl), "linear: input has 53 features but the layer expects 29");
}

TEST_CASE("half: the integer conversions agree with the hardware's") {
  // dl::Half uses F16C where the CPU has it and the integer routine elsewhere (and in nvcc's
  // host code without it): both must give the same bits.
  int bad = 0;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 65521) {
    const float f = std::bit_cast<float>(uint32_t(u));
    if (std::isnan(f)) continue;
    bad += dl::detail::float_to_half_bits_soft(f) != dl::detail::float_to_half_bits(f);
  }
  CHECK(bad == 0);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = dl::detail::half_bits_to_float_soft(uint16_t(h)), b = dl::detail::half_bits_to_float(uint16_t(h));
    if (std::isnan(a)) CHECK(std::isnan(b));
    else bad += std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(b);
  }
  CHECK(bad == 0);
}

TEST_CASE_TEMPLATE("half: SIMD and scalar evaluation give the same bits", T, Half, BFloat16) {
  // A contiguous operand runs in SIMD float lanes (rounded at every 16-bit node); a strided one
  // runs the scalar loop. Both must agree bit for bit, forward and backward, tails included.
  const int64_t n = 1003;
  const Tensor<T> wide = det16<T>({2 * n}, 30), wide_b = det16<T>({2 * n}, 31);
  const Tensor<T> xs = wide.slice(0, 0, 2 * n, 2), bs = wide_b.slice(0, 0, 2 * n, 2);  // strided
  const Tensor<T> xc = xs.contiguous(), bc = bs.contiguous();
  using View = dl::expr::view_t<decltype(dl::expr::as_node(xc * bc + 0.5))>;
  static_assert(std::is_same_v<typename View::simd_type, std::conditional_t<dl::expr::simd_half<T>, float, void>>);
#if defined(__F16C__) || defined(__SSE2__)
  if constexpr (std::is_same_v<T, BFloat16>) CHECK(dl::expr::simd_half<T>);  // integer lanes: every x86-64
#endif
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, Half>) CHECK(dl::expr::simd_half<T>);  // F16C conversions
#endif
  const Tensor<T> ys = dl::sigmoid(xs * bs + 0.5) * xs - dl::exp(bs), yc = dl::sigmoid(xc * bc + 0.5) * xc - dl::exp(bc);
  const Tensor<float> mixed_s = xs * refbin::det<float>({n}, 32) + 1.0f, mixed_c = xc * refbin::det<float>({n}, 32) + 1.0f;
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bad += ys.data()[i].bits() != yc.data()[i].bits();
    bad += mixed_s.data()[i] != mixed_c.data()[i];
  }
  CHECK(bad == 0);
  // the fused backward: strided inputs (scalar) against contiguous ones (SIMD)
  Tensor<T> a1 = wide.slice(0, 0, 2 * n, 2).detach().requires_grad_(), a2 = xc.clone().requires_grad_();
  const Tensor<T> w = det16<T>({n}, 33);
  (dl::tanh(a1 * a1 + 0.25) * w).sum().backward();
  (dl::tanh(a2 * a2 + 0.25) * w).sum().backward();
  for (int64_t i = 0; i < n; ++i) bad += a1.grad().contiguous().data()[i].bits() != a2.grad().data()[i].bits();
  CHECK(bad == 0);
  // converting casts in SIMD lanes: float -> 16-bit rounds as the scalar constructor
  const Tensor<float> f = refbin::det<float>({n}, 34) * 1000.0f;
  const Tensor<T> fc = f.template to<T>();
  for (int64_t i = 0; i < n; ++i) bad += fc.data()[i].bits() != T(f.data()[i]).bits();
  CHECK(bad == 0);
}

namespace {

/// Distance in units of the last place between two 16-bit values of the same sign (NaN: 0 when
/// both are NaN).
template <class T>
int ulps(T a, T b) {
  const float fa = a, fb = b;
  if (std::isnan(fa) || std::isnan(fb)) return std::isnan(fa) && std::isnan(fb) ? 0 : 1 << 20;
  if (fa == fb) return 0;
  if ((a.bits() >> 15) != (b.bits() >> 15)) return 1 << 20;
  return std::abs(int(a.bits()) - int(b.bits()));
}

/// f on 16-bit inputs uniform in [lo, hi): contiguous (SIMD float lanes) against strided (scalar
/// loop) operands, forward and gradient, within one unit in the last place (the SIMD math
/// functions and libm may differ by a float ulp before the rounding); and against f in float.
template <class T, class F>
void check_op16(const char* name, F f, float lo, float hi, double tol) {
  const std::string op = name;
  INFO(op);
  const int64_t n = 4099;
  dl::manual_seed(17);
  const Tensor<T> x = Tensor<float>(dl::rand({n}) * (hi - lo) + lo).template to<T>();
  Tensor<T> wide = dl::zeros<T>({2 * n});
  wide.slice(0, 0, 2 * n, 2).copy_(x);
  Tensor<T> xc = x.clone().requires_grad_();
  Tensor<T> xs = wide.slice(0, 0, 2 * n, 2).detach().requires_grad_();
  const auto yc = dl::detail::materialize(f(xc)), ys = dl::detail::materialize(f(xs));
  using Y = typename std::remove_cvref_t<decltype(yc)>::value_type;
  int worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (dl::half_float<Y>) worst = std::max(worst, ulps(yc.data()[i], ys.data()[i]));
    else worst = std::max(worst, yc.data()[i] == ys.data()[i] || std::abs(yc.data()[i] - ys.data()[i]) <= 1e-6f * std::abs(yc.data()[i]) ? 0 : 99);
  }
  CHECK(worst <= 1);
  // against the op in float (one rounding at the end versus one per node)
  const Tensor<float> yf = dl::detail::materialize(f(x.to_float()));
  double err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = float(yc.data()[i]), b = yf.data()[i];
    err = std::max(err, std::abs(a - b) / (1 + std::abs(b)));
  }
  CHECK(err <= tol);
  const Tensor<Y> w = refbin::det<float>({n}, 40).template to<Y>();
  dl::sum(yc * w).backward();
  dl::sum(ys * w).backward();
  REQUIRE(xc.grad().defined());
  REQUIRE(xs.grad().defined());
  const Tensor<T> gs = xs.grad().contiguous();
  int gworst = 0;
  for (int64_t i = 0; i < n; ++i) gworst = std::max(gworst, ulps(xc.grad().data()[i], gs.data()[i]));
  CHECK(gworst <= 2);
}

}  // namespace

TEST_CASE_TEMPLATE("half: every elementwise op and its derivative in 16 bits", T, Half, BFloat16) {
  using namespace dl::expr;
  const double tol = std::is_same_v<T, Half> ? 6e-3 : 5e-2;  // a few rounding steps of the type
  check_op16<T>("neg", [](const auto& t) { return -t; }, -2, 2, tol);
  check_op16<T>("abs", [](const auto& t) { return dl::abs(t); }, -2, 2, tol);
  check_op16<T>("exp", [](const auto& t) { return dl::exp(t); }, -3, 3, 4 * tol);
  check_op16<T>("expm1", [](const auto& t) { return dl::expm1(t); }, -2, 2, tol);
  check_op16<T>("log", [](const auto& t) { return dl::log(t); }, 0.1f, 5, tol);
  check_op16<T>("log1p", [](const auto& t) { return dl::log1p(t); }, -0.5f, 3, tol);
  check_op16<T>("sqrt rsqrt", [](const auto& t) { return dl::sqrt(t) + dl::rsqrt(t); }, 0.2f, 4, tol);
  check_op16<T>("sin cos", [](const auto& t) { return dl::sin(t) * dl::cos(t); }, -4, 4, tol);
  check_op16<T>("tan atan", [](const auto& t) { return dl::tan(t) + dl::atan(t); }, -1.2f, 1.2f, 4 * tol);
  check_op16<T>("asin acos", [](const auto& t) { return dl::asin(t) - dl::acos(t); }, -0.9f, 0.9f, tol);
  check_op16<T>("sinh cosh tanh", [](const auto& t) { return dl::sinh(t) + dl::cosh(t) * dl::tanh(t); }, -3, 3, 4 * tol);
  check_op16<T>("erf sigmoid", [](const auto& t) { return dl::erf(t) + dl::sigmoid(t); }, -3, 3, tol);
  check_op16<T>("reciprocal square", [](const auto& t) { return dl::reciprocal(t) + dl::square(t); }, 0.2f, 3, 4 * tol);
  check_op16<T>("relu clamp", [](const auto& t) { return dl::relu(t) + dl::clamp(t, -0.5f, 0.7f); }, -2, 2, tol);
  check_op16<T>("pow", [](const auto& t) { return dl::pow(t, 3) + dl::pow(t, 2.5) + dl::pow(2.0f, t); }, 0.1f, 2, 4 * tol);
  check_op16<T>("add sub mul div", [](const auto& t) { return (t + 1.0f) * (t - 2.0f) / (t * t + 1.0f); }, -3, 3, tol);
  check_op16<T>("maximum minimum", [](const auto& t) { return dl::maximum(t, t * t - 1.0f) + dl::minimum(t, 0.5f - t); }, -2, 2, tol);
  // (thresholds exact in 16 bits: dl rounds a number operand to the tensor's 16-bit type, where
  // PyTorch keeps it in float; 0.3f would become 0.30005 here)
  check_op16<T>("where comparisons", [](const auto& t) { return dl::where((t > 0.25f) | (t <= -1.0f), t * 2.0f, t * t); }, -2, 2, tol);
  check_op16<T>("lerp xlogy", [](const auto& t) { return dl::lerp(t, t * t, 0.3f) + dl::xlogy(t, t + 1.0f); }, 0.1f, 3, tol);
  check_op16<T>("leaky_relu elu", [](const auto& t) { return apply(LeakyRelu<float>{0.1f}, t) + apply(Elu<float>{1.0f, 1.0f, 1.0f}, t); }, -2, 2, tol);
  check_op16<T>("gelu", [](const auto& t) { return apply(Gelu<float>{false}, t) + apply(Gelu<float>{true}, t); }, -3, 3, tol);
  check_op16<T>("silu mish softplus", [](const auto& t) { return apply(Silu{}, t) + apply(Mish{}, t) + apply(Softplus<float>{1.0f, 20.0f}, t); }, -4, 4, 4 * tol);
  check_op16<T>("hard*", [](const auto& t) { return apply(Hardtanh<float>{-1.0f, 1.0f}, t) + apply(Hardsigmoid{}, t) + apply(Hardswish{}, t); }, -4, 4, tol);
  check_op16<T>("logsigmoid softsign tanhshrink", [](const auto& t) { return apply(LogSigmoid{}, t) + apply(Softsign{}, t) + apply(Tanhshrink{}, t); }, -3, 3, tol);
  check_op16<T>("threshold prelu", [](const auto& t) { return apply(Threshold<float>{0.1f, -1.0f}, t) + apply(Prelu{}, t, t * 0.1f); }, -2, 2, tol);
  check_op16<T>("lgamma digamma erfinv", [](const auto& t) { return dl::lgamma(t + 1.0f) + dl::digamma(t + 1.0f) + dl::erfinv(t * 0.4f); }, 0.2f, 2, 4 * tol);
  check_op16<T>("casts", [](const auto& t) { return dl::cast<float>(dl::cast<double>(t) * 2.0); }, -2, 2, tol);
}
