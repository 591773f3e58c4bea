// GPU tests (issue 12, CUDA part 1): every op that runs on CUDA tensors against the CPU
// implementation as the reference (values and gradients), the random streams CPU-equal, the caching
// allocator's reuse, streams and events, pinned asynchronous copies and the error paths. Without a
// GPU the executable exits 77, which meson reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dl/dl.hpp>
#include <dl/cuda.hpp>

#include <cstdio>
#include <string>

namespace {

const dl::Device kGpu("cuda:0");

/// Largest |a - b| relative to (1 + |b|) over all elements; both copied to the CPU.
template <class T>
double max_rel_diff(const dl::Tensor<T>& a, const dl::Tensor<T>& b) {
  REQUIRE(a.shape() == b.shape());
  const dl::Tensor<double> x = a.cpu().template to<double>().contiguous(), y = b.cpu().template to<double>().contiguous();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double d = std::abs(x.data()[i] - y.data()[i]) / (1.0 + std::abs(y.data()[i]));
    if (d > m || d != d) m = d != d ? 1e300 : d;
  }
  return m;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Host-only translation unit (tests/cuda_host.cpp, compiled by g++): evaluates on CUDA tensors.
dl::Tensor<float> host_tu_fused(const dl::Tensor<float>& a, const dl::Tensor<float>& b);
dl::Tensor<float> host_tu_unregistered(const dl::Tensor<float>& a);
dl::Tensor<float> host_tu_matmul(const dl::Tensor<float>& a, const dl::Tensor<float>& b);

TEST_CASE("devices") {
  CHECK(dl::cuda::is_available());
  CHECK(dl::cuda::device_count() >= 1);
  CHECK(dl::cuda::current_device() == 0);
  const auto p = dl::cuda::get_device_properties(0);
  std::printf("GPU: %s, sm_%d%d, %d SMs, %.1f GiB\n", p.name.c_str(), p.major, p.minor, p.multi_processor_count,
              double(p.total_memory) / (1 << 30));
  CHECK(!p.name.empty());
  CHECK(p.total_memory > 0);
  CHECK(dl::cuda::get_device_name() == p.name);
  {
    dl::cuda::DeviceGuard g(0);
    CHECK(dl::cuda::current_device() == 0);
  }
  CHECK(error_of([] { dl::cuda::set_device(999); }).find("CUDA device 999 is not available") != std::string::npos);
  CHECK(dl::Device("cuda:0") == dl::Device(dl::kCUDA, 0));
  dl::cuda::synchronize();
}

TEST_CASE("creation and copies between devices") {
  auto z = dl::zeros({3, 4}, kGpu);
  CHECK(z.device() == kGpu);
  CHECK(z.is_cuda());
  CHECK(dl::equal(z.cpu(), dl::zeros({3, 4})));
  CHECK(dl::equal(dl::ones<double>({5}, kGpu).cpu(), dl::ones<double>({5})));
  CHECK(dl::equal(dl::full({2, 2}, 7, kGpu).cpu(), dl::full({2, 2}, 7)));
  CHECK(dl::full({2, 2}, 7, kGpu).dtype() == dl::ScalarType::Int64);
  auto opt = dl::ones({2}, {.device = kGpu, .requires_grad = true});
  CHECK(opt.is_cuda());
  CHECK(opt.requires_grad());

  // Round trips, strided sources on both sides (the transpose is made contiguous by a kernel on the GPU).
  const auto x = dl::randn({37, 53});
  CHECK(dl::equal(x.cuda().cpu(), x));
  CHECK(dl::equal(x.t().cuda().cpu(), x.t().contiguous()));
  CHECK(dl::equal(x.cuda().t().contiguous().cpu(), x.t().contiguous()));
  CHECK(dl::equal(x.cuda().slice(1, 3, 40, 3).cpu(), x.slice(1, 3, 40, 3).contiguous()));
  CHECK(error_of([&] { (void)x.cuda().item(); }).find("cannot be converted to Scalar") != std::string::npos);
  CHECK(dl::tensor<float>({2.5f}).cuda().item() == 2.5f);
  // dtypes.
  CHECK(dl::equal(dl::arange(10).cuda().cpu(), dl::arange(10)));
  CHECK(dl::equal(dl::Tensor<bool>(dl::arange(10) > 4).cuda().cpu(), dl::arange(10) > 4));
  CHECK(dl::equal(x.cuda().to<double>().cpu(), x.to<double>()));
  // copy_ across devices, and printing.
  auto y = dl::empty({37, 53}, kGpu);
  y.copy_(x);
  CHECK(dl::equal(y.cpu(), x));
  const std::string s = dl::to_string(dl::tensor<float>({1, 2}).cuda());
  CHECK(s == "tensor([1., 2.], device='cuda:0')");
  // Host access to device memory is refused, not a crash.
  CHECK(error_of([&] { (void)y.data(); }).find("the tensor is on cuda:0") != std::string::npos);
  CHECK(error_of([&] { (void)y.at(0, 0); }).find("needs host memory") != std::string::npos);
}

TEST_CASE("random numbers: the same stream on the CPU and the GPU") {
  dl::manual_seed(123);
  const auto a = dl::randn({1000});
  const auto u = dl::rand({77});
  dl::manual_seed(123);
  const auto b = dl::randn({1000}, kGpu);
  const auto v = dl::rand({77}, kGpu);
  // Drawn by the GPU (dl/cuda/random.hpp): uniforms bit-equal; normals through the GPU's double
  // log/cos/sin, equal to float rounding.
  CHECK(max_rel_diff(b, a) < 1e-6);
  CHECK(dl::equal(u, v.cpu()));
  // Every kind, dtype and an odd size, and the generator advanced alike (the draw after it equal).
  for (int64_t n : {1, 5, 64, 1001, 1 << 20}) {
    dl::manual_seed(77);
    const dl::Tensor<double> c1 = dl::rand<double>({n}), c2 = dl::randn<double>({n});
    const dl::Tensor<float> c3 = dl::randn({n});
    const dl::Tensor<int64_t> c4 = dl::randint(-3, 1000, {n});
    const dl::Tensor<int32_t> c5 = dl::randint<int32_t>(0, 7, {n});
    const dl::Tensor<float> c6 = dl::rand({3});
    dl::manual_seed(77);
    const dl::Tensor<double> g1 = dl::rand<double>({n}, kGpu), g2 = dl::randn<double>({n}, kGpu);
    const dl::Tensor<float> g3 = dl::randn({n}, kGpu);
    const dl::Tensor<int64_t> g4 = dl::randint(-3, 1000, {n}, kGpu);
    const dl::Tensor<int32_t> g5 = dl::randint<int32_t>(0, 7, {n}, kGpu);
    const dl::Tensor<float> g6 = dl::rand({3}, kGpu);
    CHECK(dl::equal(g1.cpu(), c1));
    CHECK(max_rel_diff(g2, c2) < 1e-12);
    CHECK(max_rel_diff(g3, c3) < 1e-6);
    CHECK(dl::equal(g4.cpu(), c4));
    CHECK(dl::equal(g5.cpu(), c5));
    CHECK(dl::equal(g6.cpu(), c6));
  }
  // Dropout masks: the same elements dropped on both devices.
  {
    const auto ones = dl::ones({3, 1000});
    dl::manual_seed(8);
    const dl::Tensor<float> dc = dl::nn::functional::dropout(ones, 0.3, true);
    dl::manual_seed(8);
    const dl::Tensor<float> dg = dl::nn::functional::dropout(ones.cuda(), 0.3, true);
    CHECK(dg.is_cuda());
    CHECK(dl::equal(dg.cpu(), dc));
  }
  dl::manual_seed(5);
  const auto p = dl::randperm(50);
  dl::manual_seed(5);
  CHECK(dl::equal(p, dl::randperm(50, kGpu).cpu()));
  auto w = dl::empty({64}, kGpu);
  dl::manual_seed(9);
  w.normal_(1.0, 2.0);
  dl::manual_seed(9);
  auto wc = dl::empty({64});
  wc.normal_(1.0, 2.0);
  CHECK(dl::equal(w.cpu(), wc));
}

TEST_CASE("fused elementwise expressions against the CPU") {
  dl::manual_seed(1);
  const auto a = dl::randn({1 << 20}), b = dl::randn({1 << 20}), c = dl::randn({1 << 20}), d = dl::randn({1 << 20});
  const auto ga = a.cuda(), gb = b.cuda(), gc = c.cuda(), gd = d.cuda();
  dl::Tensor<float> y = dl::sigmoid(ga * gb + gc) * gd;
  CHECK(y.is_cuda());
  CHECK(max_rel_diff(y, dl::Tensor<float>(dl::sigmoid(a * b + c) * d)) < 1e-6);
  // Broadcasting, strided (transposed) operands, odd sizes, scalars and several ops.
  const auto m = dl::randn({129, 67}), r = dl::randn({1, 67}), col = dl::randn({129, 1});
  dl::Tensor<float> g1 = dl::tanh(m.cuda() * r.cuda() - col.cuda()) + dl::exp(m.cuda() * 0.1f);
  CHECK(max_rel_diff(g1, dl::Tensor<float>(dl::tanh(m * r - col) + dl::exp(m * 0.1f))) < 1e-6);
  const auto mt = dl::randn({67, 129});
  dl::Tensor<float> g2 = m.cuda() + mt.cuda().t();
  CHECK(max_rel_diff(g2, dl::Tensor<float>(m + mt.t())) < 1e-7);
  // Comparisons, where, casts, integers and doubles.
  dl::Tensor<float> g3 = dl::where(m.cuda() > 0.5f, m.cuda(), dl::relu(-m.cuda()));
  CHECK(max_rel_diff(g3, dl::Tensor<float>(dl::where(m > 0.5f, m, dl::relu(-m)))) == 0);
  const auto i = dl::randint(-50, 50, {1000});
  dl::Tensor<int64_t> g4 = dl::remainder(i.cuda() * 3, 7);
  CHECK(dl::equal(g4.cpu(), dl::Tensor<int64_t>(dl::remainder(i * 3, 7))));
  const auto dd = dl::randn<double>({999});
  dl::Tensor<double> g5 = dl::log1p(dl::abs(dd.cuda())) / (dd.cuda() * dd.cuda() + 1.0);
  CHECK(max_rel_diff(g5, dl::Tensor<double>(dl::log1p(dl::abs(dd)) / (dd * dd + 1.0))) < 1e-15);
  // In-place ops on a CUDA tensor (and on a strided view of one).
  auto z = m.cuda().clone();
  z.mul_(2.0f).add_(1.0f);
  z.t().slice(0, 0, 10).zero_();
  auto zc = m.clone();
  zc.mul_(2.0f).add_(1.0f);
  zc.t().slice(0, 0, 10).zero_();
  CHECK(max_rel_diff(z, zc) == 0);
  // Empty tensors launch nothing.
  dl::Tensor<float> e = dl::empty({0, 5}, kGpu) * 2.0f;
  CHECK(e.numel() == 0);
}

/// f's forward and gradient on the GPU against the CPU, for inputs uniform in [lo, hi). The
/// derivative rules' device code is checked here op by op: nvcc compiles a rule that calls a
/// host-only function into a kernel that silently skips the call.
template <class F>
void check_op(const char* name, F f, float lo, float hi, double tol = 2e-5) {
  INFO(name);
  dl::manual_seed(11);
  const dl::Tensor<float> x = dl::rand({4099}) * (hi - lo) + lo;
  auto xc = x.clone().requires_grad_();
  auto xg = x.cuda().requires_grad_();
  dl::Tensor<float> yc = f(xc), yg = f(xg);
  CHECK(yg.is_cuda());
  CHECK(max_rel_diff(yg, yc) < tol);
  const auto w = dl::randn({4099});
  dl::sum(yc * w).backward();
  dl::sum(yg * w.cuda()).backward();
  REQUIRE(xg.grad().defined());
  CHECK(max_rel_diff(xg.grad(), xc.grad()) < 10 * tol);
}

TEST_CASE("every elementwise op and its derivative against the CPU") {
  using namespace dl::expr;
  check_op("neg", [](const auto& t) { return -t; }, -2, 2);
  check_op("abs", [](const auto& t) { return dl::abs(t); }, -2, 2);
  check_op("exp", [](const auto& t) { return dl::exp(t); }, -3, 3);
  check_op("expm1", [](const auto& t) { return dl::expm1(t); }, -3, 3);
  check_op("log", [](const auto& t) { return dl::log(t); }, 0.1f, 5);
  check_op("log1p", [](const auto& t) { return dl::log1p(t); }, -0.5f, 5);
  check_op("log2", [](const auto& t) { return dl::log2(t); }, 0.1f, 5);
  check_op("log10", [](const auto& t) { return dl::log10(t); }, 0.1f, 5);
  check_op("sqrt", [](const auto& t) { return dl::sqrt(t); }, 0.1f, 5);
  check_op("rsqrt", [](const auto& t) { return dl::rsqrt(t); }, 0.1f, 5);
  check_op("sin", [](const auto& t) { return dl::sin(t); }, -4, 4);
  check_op("cos", [](const auto& t) { return dl::cos(t); }, -4, 4);
  check_op("tan", [](const auto& t) { return dl::tan(t); }, -1.2f, 1.2f);
  check_op("asin", [](const auto& t) { return dl::asin(t); }, -0.9f, 0.9f);
  check_op("acos", [](const auto& t) { return dl::acos(t); }, -0.9f, 0.9f);
  check_op("atan", [](const auto& t) { return dl::atan(t); }, -4, 4);
  check_op("sinh", [](const auto& t) { return dl::sinh(t); }, -3, 3);
  check_op("cosh", [](const auto& t) { return dl::cosh(t); }, -3, 3);
  check_op("tanh", [](const auto& t) { return dl::tanh(t); }, -3, 3);
  check_op("erf", [](const auto& t) { return dl::erf(t); }, -3, 3);
  check_op("sigmoid", [](const auto& t) { return dl::sigmoid(t); }, -6, 6);
  check_op("reciprocal", [](const auto& t) { return dl::reciprocal(t); }, 0.2f, 5);
  check_op("relu", [](const auto& t) { return dl::relu(t); }, -2, 2);
  check_op("square", [](const auto& t) { return dl::square(t); }, -2, 2);
  check_op("sign floor ceil trunc round", [](const auto& t) { return t * dl::sign(t) + dl::floor(t) + dl::ceil(t) + dl::trunc(t) + dl::round(t); }, -3, 3);
  check_op("pow 3", [](const auto& t) { return dl::pow(t, 3); }, -2, 2);
  check_op("pow 2.5", [](const auto& t) { return dl::pow(t, 2.5); }, 0.1f, 2);
  check_op("pow tensor", [](const auto& t) { return dl::pow(t, t * 0.5f); }, 0.1f, 2);
  check_op("2 ** x", [](const auto& t) { return dl::pow(2.0f, t); }, -2, 2);
  check_op("clamp", [](const auto& t) { return dl::clamp(t, -0.5f, 0.7f); }, -2, 2);
  check_op("lgamma", [](const auto& t) { return dl::lgamma(t); }, 0.2f, 6, 1e-4);
  check_op("digamma", [](const auto& t) { return dl::digamma(t); }, 0.5f, 6, 1e-4);
  check_op("erfinv", [](const auto& t) { return dl::erfinv(t); }, -0.9f, 0.9f, 1e-4);
  check_op("xlogy", [](const auto& t) { return dl::xlogy(t, t + 1.0f); }, 0.1f, 3);
  check_op("add sub mul div", [](const auto& t) { return (t + 1.0f) * (t - 2.0f) / (t * t + 1.0f); }, -3, 3);
  check_op("maximum minimum", [](const auto& t) { return dl::maximum(t, t * t - 1.0f) + dl::minimum(t, 0.5f - t); }, -2, 2);
  check_op("where comparisons", [](const auto& t) { return dl::where((t > 0.3f) | (t <= -1.0f), t * 2.0f, t * t); }, -2, 2);
  check_op("lerp", [](const auto& t) { return dl::lerp(t, t * t, 0.3f); }, -2, 2);
  check_op("leaky_relu", [](const auto& t) { return apply(LeakyRelu<float>{0.1f}, t); }, -2, 2);
  check_op("elu", [](const auto& t) { return apply(Elu<float>{1.0f, 1.0f, 1.0f}, t); }, -2, 2);
  check_op("gelu", [](const auto& t) { return apply(Gelu<float>{false}, t); }, -3, 3);
  check_op("gelu tanh", [](const auto& t) { return apply(Gelu<float>{true}, t); }, -3, 3);
  check_op("silu", [](const auto& t) { return apply(Silu{}, t); }, -4, 4);
  check_op("mish", [](const auto& t) { return apply(Mish{}, t); }, -4, 4);
  check_op("softplus", [](const auto& t) { return apply(Softplus<float>{1.0f, 20.0f}, t); }, -4, 4);
  check_op("hardtanh", [](const auto& t) { return apply(Hardtanh<float>{-1.0f, 1.0f}, t); }, -2, 2);
  check_op("hardsigmoid", [](const auto& t) { return apply(Hardsigmoid{}, t); }, -4, 4);
  check_op("hardswish", [](const auto& t) { return apply(Hardswish{}, t); }, -4, 4);
  check_op("logsigmoid", [](const auto& t) { return apply(LogSigmoid{}, t); }, -4, 4);
  check_op("softsign", [](const auto& t) { return apply(Softsign{}, t); }, -4, 4);
  check_op("tanhshrink", [](const auto& t) { return apply(Tanhshrink{}, t); }, -2, 2);
  check_op("threshold", [](const auto& t) { return apply(Threshold<float>{0.1f, -1.0f}, t); }, -2, 2);
  check_op("prelu", [](const auto& t) { return apply(Prelu{}, t, t * 0.1f); }, -2, 2);
  check_op("casts", [](const auto& t) { return dl::cast<float>(dl::cast<double>(t) * 2.0); }, -2, 2);
}

TEST_CASE("a host-only translation unit runs kernels registered by .cu files") {
  const auto a = dl::randn({300}), b = dl::randn({300});
  // The same expression type is evaluated here, so its kernel is registered.
  dl::Tensor<float> here = a.cuda() * b.cuda() + 1.0f;
  CHECK(max_rel_diff(host_tu_fused(a.cuda(), b.cuda()), here) == 0);
  // An expression no .cu file evaluates: a clear error, not a crash.
  const std::string msg = error_of([&] { (void)host_tu_unregistered(a.cuda()); });
  CHECK(msg.find("no CUDA kernel for this expression") != std::string::npos);
  CHECK(msg.find("nvcc") != std::string::npos);
  // cuBLAS products work from any translation unit.
  const auto x = dl::randn({20, 30}), w = dl::randn({30, 10});
  CHECK(max_rel_diff(host_tu_matmul(x.cuda(), w.cuda()), dl::matmul(x, w)) < 1e-5);
}

TEST_CASE("reductions against the CPU") {
  dl::manual_seed(2);
  for (const dl::Shape& s : {dl::Shape{1 << 20}, dl::Shape{1000, 33}, dl::Shape{7, 9, 11}, dl::Shape{3, 1 << 18}}) {
    const auto x = dl::randn(s);
    const auto g = x.cuda();
    CHECK(max_rel_diff(g.sum(), x.sum()) < 1e-5);
    CHECK(max_rel_diff(dl::mean(g), dl::mean(x)) < 1e-5);
    CHECK(max_rel_diff(dl::amax(g), dl::amax(x)) == 0);
    CHECK(max_rel_diff(dl::amin(g), dl::amin(x)) == 0);
    for (int d = 0; d < x.dim(); ++d) {
      CHECK(max_rel_diff(g.sum(d), x.sum(d)) < 1e-5);
      CHECK(max_rel_diff(g.sum(d, true), x.sum(d, true)) < 1e-5);
      CHECK(max_rel_diff(dl::amax(g, d), dl::amax(x, d)) == 0);
    }
    // Fused with their elementwise input.
    CHECK(max_rel_diff(dl::sum(g * g + 1.0f, -1), dl::sum(x * x + 1.0f, -1)) < 1e-5);
  }
  const auto x = dl::randn({64, 48, 5});
  CHECK(max_rel_diff(dl::sum(x.cuda(), {0, 2}, true), dl::sum(x, {0, 2}, true)) < 1e-5);
  CHECK(max_rel_diff(dl::prod(x.cuda() * 0.1f + 1.0f, 1), dl::prod(x * 0.1f + 1.0f, 1)) < 1e-5);
  {  // prod's gradient on the GPU, with zeros in the rows, against the CPU
    dl::Tensor<float> z = x.slice(0, 0, 8) * 0.1f + 1.0f;
    z.select(2, 1).select(0, 3).zero_();
    auto zg = z.cuda().requires_grad_();
    auto zc = z.clone().requires_grad_();
    dl::prod(zg, 1).sum().backward();
    dl::prod(zc, 1).sum().backward();
    REQUIRE(zg.grad().defined());
    CHECK(zg.grad().is_cuda());
    CHECK(max_rel_diff(zg.grad(), zc.grad()) < 1e-5);
  }
  CHECK(dl::all(x.cuda() > -100.0f).item() == true);
  CHECK(dl::any(x.cuda() > 100.0f).item() == false);
  CHECK(dl::sum(dl::empty({0, 3}, kGpu), 0).cpu().sum().item() == 0);
  // Deterministic: the same sum twice gives the same bits.
  const auto big = dl::randn({1 << 22}).cuda();
  CHECK(big.sum().item() == big.sum().item());
}

TEST_CASE("autograd on the GPU: fused backward against the CPU") {
  dl::manual_seed(3);
  auto make = [](const dl::Shape& s, bool gpu) {
    dl::manual_seed(uint64_t(s[0]) * 31 + uint64_t(s.size()));
    auto t = dl::randn(s);
    if (gpu) t = t.cuda();
    return t.requires_grad_();
  };
  auto a = make({50, 40}, false), b = make({1, 40}, false), c = make({50, 1}, false), d = make({40}, false);
  auto ga = make({50, 40}, true), gb = make({1, 40}, true), gc = make({50, 1}, true), gd = make({40}, true);
  dl::Tensor<float> y = dl::sigmoid(a * b + c) * d;
  dl::Tensor<float> gy = dl::sigmoid(ga * gb + gc) * gd;
  (y * y).sum().backward();
  (gy * gy).sum().backward();
  CHECK(max_rel_diff(gy, y) < 1e-6);
  CHECK(ga.grad().is_cuda());
  CHECK(max_rel_diff(ga.grad(), a.grad()) < 1e-5);
  CHECK(max_rel_diff(gb.grad(), b.grad()) < 1e-5);
  CHECK(max_rel_diff(gc.grad(), c.grad()) < 1e-5);
  CHECK(max_rel_diff(gd.grad(), d.grad()) < 1e-5);
  // Gradients flow back across a device copy.
  auto h = dl::randn({10}).requires_grad_();
  dl::Tensor<float> hg = h.cuda() * 3.0f;
  hg.sum().backward();
  CHECK(!h.grad().is_cuda());
  CHECK(dl::equal(h.grad(), dl::full({10}, 3.0f)));
  // Matrix products: values and gradients.
  auto p = dl::randn({33, 17}).requires_grad_(), q = dl::randn({17, 9}).requires_grad_();
  auto gp = p.detach().cuda().requires_grad_(), gq = q.detach().cuda().requires_grad_();
  dl::Tensor<float> out = dl::matmul(p, q), gout = dl::matmul(gp, gq);
  CHECK(max_rel_diff(gout, out) < 1e-5);
  dl::sum(out * out).backward();
  dl::sum(gout * gout).backward();
  CHECK(max_rel_diff(gp.grad(), p.grad()) < 1e-4);
  CHECK(max_rel_diff(gq.grad(), q.grad()) < 1e-4);
}

TEST_CASE("indexing and joining ops against the CPU") {
  dl::manual_seed(11);
  const auto x = dl::randn({6, 5, 4});
  const auto g = x.cuda();
  // Joining: the result stays on the device.
  const dl::Tensor<float> g2 = g * 2.0f, x2 = x * 2.0f;
  CHECK(dl::cat({g, g2}, 1).is_cuda());
  CHECK(max_rel_diff(dl::cat({g, g2}, 1), dl::cat({x, x2}, 1)) == 0);
  CHECK(max_rel_diff(dl::stack({g, g}, 2), dl::stack({x, x}, 2)) == 0);
  CHECK(max_rel_diff(g.repeat({2, 1, 3}), x.repeat({2, 1, 3})) == 0);
  // gather / scatter / scatter_add, with negative and repeated indices, strided operands.
  const auto idx = dl::randint(-5, 5, {6, 3, 4});
  CHECK(max_rel_diff(dl::gather(g, 1, idx.cuda()), dl::gather(x, 1, idx)) == 0);
  CHECK(max_rel_diff(dl::gather(g.transpose(0, 2), 1, idx.permute({2, 1, 0}).contiguous().cuda()),
                     dl::gather(x.transpose(0, 2), 1, idx.permute({2, 1, 0}).contiguous())) == 0);
  const auto perm = dl::randperm(5).reshape({1, 5, 1}).expand({6, 5, 4}).contiguous();  // no duplicates
  const auto src = dl::randn({6, 5, 4});
  CHECK(max_rel_diff(dl::scatter(g, 1, perm.cuda(), src.cuda()), dl::scatter(x, 1, perm, src)) == 0);
  CHECK(max_rel_diff(dl::scatter(g, 1, perm.cuda(), 2.5f), dl::scatter(x, 1, perm, 2.5f)) == 0);
  CHECK(max_rel_diff(dl::scatter_add(g, 1, idx.cuda(), src.cuda()), dl::scatter_add(x, 1, idx, src)) < 1e-5);
  auto inplace = g.clone();
  inplace.scatter_add_(1, idx.cuda(), src.cuda());
  CHECK(max_rel_diff(inplace, dl::scatter_add(x, 1, idx, src)) < 1e-5);
  auto ints = dl::zeros<int64_t>({4}, kGpu);
  ints.scatter_add_(0, dl::tensor<int64_t>({0, 0, 3, 0}).cuda(), dl::tensor<int64_t>({1, 2, 3, 4}).cuda());
  CHECK(dl::equal(ints.cpu(), dl::tensor<int64_t>({7, 0, 0, 3})));
  // index_select / index_add / index_copy / index_fill.
  const auto sel = dl::tensor<int64_t>({3, 0, -1, 3});
  for (int d = 0; d < 3; ++d) {
    CHECK(max_rel_diff(dl::index_select(g, d, sel.cuda()), dl::index_select(x, d, sel)) == 0);
    CHECK(max_rel_diff(dl::index_fill(g, d, sel.cuda(), -7.0f), dl::index_fill(x, d, sel, -7.0f)) == 0);
  }
  const auto rows = dl::randn({6, 4, 4});
  CHECK(max_rel_diff(dl::index_add(g, 1, sel.cuda(), rows.cuda(), 0.5f), dl::index_add(x, 1, sel, rows, 0.5f)) < 1e-6);
  const auto distinct = dl::tensor<int64_t>({4, 1, 0});
  const auto rows3 = dl::randn({6, 3, 4});
  CHECK(max_rel_diff(dl::index_copy(g, 1, distinct.cuda(), rows3.cuda()), dl::index_copy(x, 1, distinct, rows3)) == 0);
  // Advanced indexing, index_put, nonzero, masked_select, put_.
  const auto i0 = dl::tensor<int64_t>({{0, 5}, {-1, 2}}), i1 = dl::tensor<int64_t>({1, 4});
  CHECK(max_rel_diff(dl::index(g, {i0.cuda(), i1.cuda()}), dl::index(x, {i0, i1})) == 0);
  CHECK(max_rel_diff(dl::index(g.permute({2, 0, 1}), {i1.cuda()}), dl::index(x.permute({2, 0, 1}), {i1})) == 0);
  const auto vals = dl::randn({2, 2, 4});
  CHECK(max_rel_diff(dl::index_put(g, {i0.cuda(), i1.cuda()}, vals.cuda()), dl::index_put(x, {i0, i1}, vals)) == 0);
  const auto dup = dl::tensor<int64_t>({1, 1, 2});
  CHECK(max_rel_diff(dl::index_put(g, {dup.cuda()}, dl::ones({4}).cuda(), true), dl::index_put(x, {dup}, dl::ones({4}), true)) < 1e-6);
  CHECK(dl::equal(dl::nonzero(g > 0.5f).cpu(), dl::nonzero(x > 0.5f)));
  const auto big = dl::randn({3, 70000});  // several compaction tiles
  CHECK(dl::equal(dl::nonzero(big.cuda() > 1.0f).cpu(), dl::nonzero(big > 1.0f)));
  CHECK(dl::nonzero(dl::zeros({5}, kGpu)).shape() == dl::Shape{0, 1});
  CHECK(max_rel_diff(dl::masked_select(g, g > 0.0f), dl::masked_select(x, x > 0.0f)) == 0);
  const dl::Tensor<bool> gm = g > 0.0f, xm = x > 0.0f;  // a mask broadcast over dim 0
  CHECK(max_rel_diff(dl::masked_select(g, gm.slice(0, 0, 1)), dl::masked_select(x, xm.slice(0, 0, 1))) == 0);
  auto flat = g.clone(), flat_cpu = x.clone();
  dl::put_(flat, dl::tensor<int64_t>({0, 7}).cuda(), dl::tensor<float>({1.0f, 2.0f}).cuda());
  dl::put_(flat_cpu, dl::tensor<int64_t>({0, 7}), dl::tensor<float>({1.0f, 2.0f}));
  CHECK(max_rel_diff(flat, flat_cpu) == 0);
  // max/min/argmax/argmin along a dim: short dims (a thread per output), long ones (a block),
  // NaN and ties as the CPU.
  for (const dl::Shape& s : {dl::Shape{300, 7}, dl::Shape{3, 5000}, dl::Shape{20000}}) {
    const auto t = dl::randint(0, 50, s).to<float>();  // many ties
    const auto gt = t.cuda();
    for (int d = 0; d < t.dim(); ++d) {
      const auto a = dl::max(t, d), b = dl::max(gt, d);
      CHECK(max_rel_diff(b.values, a.values) == 0);
      CHECK(dl::equal(b.indices.cpu(), a.indices));
      CHECK(dl::equal(dl::argmin(gt, d).cpu(), dl::argmin(t, d)));
      CHECK(dl::equal(dl::min(gt, d, true).indices.cpu(), dl::min(t, d, true).indices));
    }
    CHECK(dl::argmax(gt).item() == dl::argmax(t).item());
  }
  auto withnan = dl::randn({4, 300});
  withnan.at(2, 100) = std::nanf("");
  CHECK(dl::equal(dl::argmax(withnan.cuda(), 1).cpu(), dl::argmax(withnan, 1)));
  CHECK(dl::equal(dl::argmax(dl::tensor<int64_t>({3, 9, 9, 1}).cuda()).cpu(), dl::argmax(dl::tensor<int64_t>({3, 9, 9, 1}))));
  // Errors: out-of-range indices name the index, dim and size; devices must agree.
  CHECK(error_of([&] { (void)dl::gather(g, 1, dl::full<int64_t>({6, 1, 4}, 9).cuda()); })
            .find("gather: index 9 is out of bounds for dimension 1 with size 5") != std::string::npos);
  CHECK(error_of([&] { (void)dl::index_select(g, 0, dl::tensor<int64_t>({6}).cuda()); })
            .find("index 6 is out of bounds for dimension 0 with size 6") != std::string::npos);
  CHECK(error_of([&] { (void)dl::index(g, {dl::tensor<int64_t>({0}).cuda(), dl::tensor<int64_t>({-6}).cuda()}); })
            .find("index -6 is out of bounds for dimension 1 with size 5") != std::string::npos);
  CHECK(error_of([&] { (void)dl::gather(g, 1, idx); }).find("Expected all tensors to be on the same device") != std::string::npos);
  CHECK(error_of([&] { (void)dl::cat({g, x}); }).find("cuda:0 and cpu") != std::string::npos);
  CHECK(error_of([&] { (void)dl::index_add(dl::zeros<uint8_t>({3}, kGpu), 0, dl::tensor<int64_t>({0}).cuda(), dl::ones<uint8_t>({1}, kGpu)); })
            .find("accumulating on CUDA is supported for float, double, float16, bfloat16, int32 and int64") != std::string::npos);
}

TEST_CASE("gradients of indexing ops on the GPU against the CPU") {
  dl::manual_seed(12);
  const auto x0 = dl::randn({5, 6});
  auto a = x0.clone().requires_grad_(), ga = x0.cuda().requires_grad_();
  const auto idx = dl::randint(0, 6, {5, 3}), sel = dl::tensor<int64_t>({4, 0, 4});
  const auto i0 = dl::tensor<int64_t>({1, 1, 3});
  const auto w = dl::randn({5, 3});
  auto loss = [&](const dl::Tensor<float>& t, bool gpu) {
    auto dev = [&](const auto& u) { return gpu ? u.cuda() : u; };
    dl::Tensor<float> l = dl::sum(dl::gather(t, 1, dev(idx)) * dev(w)) + dl::sum(dl::index_select(t, 1, dev(sel)) * dev(w)) +
                          dl::sum(dl::index(t, {dev(i0)})) + dl::sum(dl::max(t, 1).values) +
                          dl::sum(dl::cat({t, dl::Tensor<float>(t * 3.0f)}, 0) * dl::cat({t, t}, 0));
    return l;
  };
  loss(a, false).backward();
  loss(ga, true).backward();
  CHECK(ga.grad().is_cuda());
  CHECK(max_rel_diff(ga.grad(), a.grad()) < 1e-5);
}

TEST_CASE("matrix products through cuBLAS") {
  dl::manual_seed(4);
  const auto a = dl::randn({64, 48}), b = dl::randn({48, 80});
  CHECK(max_rel_diff(dl::mm(a.cuda(), b.cuda()), dl::mm(a, b)) < 1e-5);
  CHECK(max_rel_diff(dl::mm(a.t().contiguous().cuda().t(), b.cuda()), dl::mm(a, b)) < 1e-5);  // column-major operand
  CHECK(max_rel_diff(dl::mm(a.cuda(), b.t().contiguous().cuda().t()), dl::mm(a, b)) < 1e-5);
  CHECK(max_rel_diff(dl::mm(a.cuda().slice(1, 0, 48, 2), b.cuda().slice(0, 0, 48, 2)), dl::mm(a.slice(1, 0, 48, 2), b.slice(0, 0, 48, 2))) < 1e-5);
  const auto x = dl::randn({5, 64, 48}), y = dl::randn({5, 48, 32}), yb = dl::randn({48, 32});
  CHECK(max_rel_diff(dl::bmm(x.cuda(), y.cuda()), dl::bmm(x, y)) < 1e-5);
  CHECK(max_rel_diff(dl::matmul(x.cuda(), yb.cuda()), dl::matmul(x, yb)) < 1e-5);
  const auto v = dl::randn({48});
  CHECK(max_rel_diff(dl::mv(a.cuda(), v.cuda()), dl::mv(a, v)) < 1e-5);
  CHECK(max_rel_diff(dl::matmul(v.cuda(), b.cuda()), dl::matmul(v, b)) < 1e-5);
  CHECK(max_rel_diff(dl::dot(v.cuda(), v.cuda()), dl::dot(v, v)) < 1e-5);
  const auto bias = dl::randn({80});
  CHECK(max_rel_diff(dl::addmm(bias.cuda(), a.cuda(), b.cuda(), 0.5, 2.0), dl::addmm(bias, a, b, 0.5, 2.0)) < 1e-5);
  // addmv, baddbmm, addbmm (values and gradients against the CPU).
  const auto self_v = dl::randn({64}), self_b = dl::randn({1, 80}), self_bb = dl::randn({5, 64, 1});
  CHECK(max_rel_diff(dl::addmv(self_v.cuda(), a.cuda(), v.cuda(), 0.5, 2.0), dl::addmv(self_v, a, v, 0.5, 2.0)) < 1e-5);
  const auto xb = dl::randn({5, 64, 48}), yb2 = dl::randn({5, 48, 80});
  CHECK(max_rel_diff(dl::addbmm(self_b.cuda(), xb.cuda(), yb2.cuda(), 0.5, 2.0), dl::addbmm(self_b, xb, yb2, 0.5, 2.0)) < 1e-5);
  CHECK(max_rel_diff(dl::addbmm(self_b.cuda(), xb.cuda(), yb2.cuda(), 0.0, 1.0), dl::addbmm(self_b, xb, yb2, 0.0, 1.0)) < 1e-5);
  CHECK(max_rel_diff(dl::baddbmm(self_bb.cuda(), xb.cuda(), y.cuda(), 0.5, 2.0), dl::baddbmm(self_bb, xb, y, 0.5, 2.0)) < 1e-5);
  {
    auto s1 = self_v.clone().requires_grad_(), m1 = a.clone().requires_grad_(), v1 = v.clone().requires_grad_();
    auto s2 = self_v.cuda().requires_grad_(), m2 = a.cuda().requires_grad_(), v2 = v.cuda().requires_grad_();
    dl::sum(dl::addmv(s1, m1, v1, 0.5, 2.0) * dl::addmv(s1, m1, v1, 0.5, 2.0)).backward();
    dl::sum(dl::addmv(s2, m2, v2, 0.5, 2.0) * dl::addmv(s2, m2, v2, 0.5, 2.0)).backward();
    CHECK(max_rel_diff(s2.grad(), s1.grad()) < 1e-4);
    CHECK(max_rel_diff(m2.grad(), m1.grad()) < 1e-4);
    CHECK(max_rel_diff(v2.grad(), v1.grad()) < 1e-4);
    auto p1 = xb.clone().requires_grad_(), p2 = xb.cuda().requires_grad_();
    dl::sum(dl::addbmm(self_b, p1, yb2)).backward();
    dl::sum(dl::addbmm(self_b.cuda(), p2, yb2.cuda())).backward();
    CHECK(max_rel_diff(p2.grad(), p1.grad()) < 1e-4);
  }
  const auto ad = dl::randn<double>({30, 20}), bd = dl::randn<double>({20, 10});
  CHECK(max_rel_diff(dl::mm(ad.cuda(), bd.cuda()), dl::mm(ad, bd)) < 1e-12);
  // TF32 is off by default: float products are exact to float rounding.
  CHECK(!dl::backends::cuda::matmul::allow_tf32);
  const auto k = dl::randn({512, 512});
  CHECK(max_rel_diff(dl::mm(k.cuda(), k.cuda()), dl::mm(k, k)) < 1e-5);
  dl::backends::cuda::matmul::allow_tf32 = true;
  const double tf32 = max_rel_diff(dl::mm(k.cuda(), k.cuda()), dl::mm(k, k));
  dl::backends::cuda::matmul::allow_tf32 = false;
  CHECK(tf32 < 1e-2);
  // Errors.
  CHECK(error_of([&] { (void)dl::mm(a.cuda(), b); }).find("Expected all tensors to be on the same device") != std::string::npos);
  CHECK(error_of([&] { (void)dl::mm(a.cuda(), a.cuda()); }).find("cannot be multiplied") != std::string::npos);
}

TEST_CASE("nn::Linear and F::linear on the GPU against the CPU") {
  dl::manual_seed(13);
  dl::nn::Linear cpu(20, 7), gpu(20, 7);
  gpu.weight.detach().copy_(cpu.weight.detach());
  gpu.bias.detach().copy_(cpu.bias.detach());
  gpu.to(kGpu);
  CHECK(gpu.weight.is_cuda());
  const auto x = dl::randn({5, 3, 20});
  const dl::Tensor<float> yc = cpu.forward(x), yg = gpu.forward(x.cuda());
  CHECK(yg.is_cuda());
  CHECK(yg.shape() == dl::Shape{5, 3, 7});
  CHECK(max_rel_diff(yg, yc) < 1e-5);
  dl::sum(yc * yc).backward();
  dl::sum(yg * yg).backward();
  CHECK(max_rel_diff(gpu.weight.grad(), cpu.weight.grad()) < 1e-4);
  CHECK(max_rel_diff(gpu.bias.grad(), cpu.bias.grad()) < 1e-4);
  // With an activation, and without a bias.
  CHECK(max_rel_diff(dl::nn::functional::linear(x.cuda(), gpu.weight.detach(), gpu.bias.detach(), dl::expr::Relu{}),
                     dl::nn::functional::linear(x, cpu.weight.detach(), cpu.bias.detach(), dl::expr::Relu{})) < 1e-5);
  CHECK(max_rel_diff(dl::nn::functional::linear(x.cuda(), gpu.weight.detach()), dl::nn::functional::linear(x, cpu.weight.detach())) < 1e-5);
  CHECK(error_of([&] { (void)gpu.forward(x); }).find("Expected all tensors to be on the same device") != std::string::npos);
  // ReLU with autograd (cuBLASLt with the bias, then the ReLU kernel), double (cuBLAS + kernels),
  // a transposed weight (not cuBLASLt's layout: cuBLAS).
  {
    auto wc = cpu.weight.detach().clone().requires_grad_(), wg = cpu.weight.detach().cuda().requires_grad_();
    const dl::Tensor<float> rc = dl::nn::functional::linear(x, wc, cpu.bias.detach(), dl::expr::Relu{});
    const dl::Tensor<float> rg = dl::nn::functional::linear(x.cuda(), wg, cpu.bias.detach().cuda(), dl::expr::Relu{});
    CHECK(max_rel_diff(rg, rc) < 1e-5);
    dl::sum(rc * rc).backward();
    dl::sum(rg * rg).backward();
    CHECK(max_rel_diff(wg.grad(), wc.grad()) < 1e-4);
    const auto xd = dl::randn<double>({4, 20}), wd = dl::randn<double>({7, 20}), bd = dl::randn<double>({7});
    CHECK(max_rel_diff(dl::nn::functional::linear(xd.cuda(), wd.cuda(), bd.cuda()), dl::nn::functional::linear(xd, wd, bd)) < 1e-12);
    const auto wt = dl::randn({20, 7});
    CHECK(max_rel_diff(dl::nn::functional::linear(x.cuda(), wt.cuda().t(), cpu.bias.detach().cuda()),
                       dl::nn::functional::linear(x, wt.t(), cpu.bias.detach())) < 1e-5);
  }
}

TEST_CASE_TEMPLATE("float16 and bfloat16 tensors on the GPU against the CPU", T, dl::Half, dl::BFloat16) {
  const double ulp = std::is_same_v<T, dl::Half> ? 1e-3 : 8e-3;  // one unit in the last place
  dl::manual_seed(21);
  const dl::Tensor<T> a = dl::randn({3, 4099}).template to<T>(), b = dl::randn({3, 4099}).template to<T>();
  // conversions on the device (cvt instructions) round as the CPU's bit routine: equal bits
  const dl::Tensor<float> f = dl::randn({1 << 16}) * 100.0f;
  CHECK(dl::equal(f.cuda().template to<T>().cpu().template to<float>(), f.template to<T>().template to<float>()));
  CHECK(dl::equal(a.cuda().to_float().cpu(), a.to_float()));
  // a fused expression: float math per op, rounded per op (libm vs CUDA's expf: one ulp at most)
  dl::Tensor<T> y = dl::sigmoid(a.cuda() * b.cuda() + 1.0) * 2.0;
  CHECK(y.is_cuda());
  CHECK(max_rel_diff(y, dl::Tensor<T>(dl::sigmoid(a * b + 1.0) * 2.0)) <= 2 * ulp);
  // reductions accumulate in float on both devices
  CHECK(max_rel_diff(a.cuda().sum(1), a.sum(1)) <= ulp);
  CHECK(max_rel_diff(a.cuda().mean(), a.mean()) <= ulp);
  CHECK(max_rel_diff(a.cuda().amax(1), a.amax(1)) == 0);
  // products (through float and cuBLAS)
  const dl::Tensor<T> p = dl::randn({33, 65}).template to<T>(), q = dl::randn({65, 17}).template to<T>();
  CHECK(max_rel_diff(dl::matmul(p.cuda(), q.cuda()), dl::matmul(p, q)) <= 2 * ulp);
  // accumulating index ops: the 16-bit compare-and-swap atomic add
  const auto idx = dl::randint(0, 7, {4099});
  const dl::Tensor<T> src = dl::rand({4099}).template to<T>();
  const dl::Tensor<T> acc = dl::zeros<T>({7}, kGpu).index_add(0, idx.cuda(), src.cuda());
  const dl::Tensor<float> want = dl::zeros<float>({7}).index_add(0, idx, src.to_float());
  CHECK(max_rel_diff(acc.cpu().to_float(), want) < 4099 * ulp);  // rounding after every addition
  // gradients on the device
  auto x = a.cuda().requires_grad_();
  auto xc = a.clone().requires_grad_();
  (x * x).sum().backward();
  (xc * xc).sum().backward();
  CHECK(max_rel_diff(x.grad(), xc.grad()) == 0);
  // random draws: the same values on both devices
  dl::manual_seed(3);
  const dl::Tensor<T> rg = dl::rand<T>({1000}, kGpu);
  dl::manual_seed(3);
  const dl::Tensor<T> rc = dl::rand<T>({1000});
  CHECK(dl::equal(rg.cpu().to_float(), rc.to_float()));
}

TEST_CASE("caching allocator: reuse, statistics, out of memory") {
  dl::cuda::synchronize();
  const int64_t base = dl::cuda::memory_allocated();
  {
    auto t = dl::empty({1 << 20}, kGpu);  // 4 MiB
    CHECK(dl::cuda::memory_allocated() == base + (4 << 20));
    CHECK(dl::cuda::max_memory_allocated() >= base + (4 << 20));
    CHECK(dl::cuda::memory_reserved() >= dl::cuda::memory_allocated());
  }
  CHECK(dl::cuda::memory_allocated() == base);
  // A steady loop makes no cudaMalloc after its first iteration.
  auto step = [] {
    const auto x = dl::randn({256, 256}).cuda();
    dl::Tensor<float> y = dl::sigmoid(x * 2.0f) + x;
    const auto z = dl::mm(y, x);
    return z.sum().item();
  };
  (void)step();
  const int64_t mallocs = dl::cuda::memory_stats().num_raw_mallocs;
  for (int i = 0; i < 50; ++i) (void)step();
  CHECK(dl::cuda::memory_stats().num_raw_mallocs == mallocs);
  CHECK(dl::cuda::memory_summary().find("Allocated memory") != std::string::npos);
  dl::cuda::reset_peak_memory_stats();
  CHECK(dl::cuda::max_memory_allocated() == dl::cuda::memory_allocated());
  // Out of memory: PyTorch's message, and the allocator still works after it.
  const std::string oom = error_of([] { (void)dl::empty({int64_t(1) << 40}, kGpu); });
  CHECK(oom.find("CUDA out of memory. Tried to allocate") != std::string::npos);
  CHECK(oom.find("4096.00 GiB") != std::string::npos);
  bool typed = false;
  try {
    (void)dl::empty({int64_t(1) << 40}, kGpu);
  } catch (const dl::cuda::OutOfMemoryError&) {
    typed = true;
  }
  CHECK(typed);
  CHECK(dl::zeros({10}, kGpu).sum().item() == 0);
  dl::cuda::empty_cache();
  CHECK(dl::cuda::memory_reserved() <= dl::cuda::memory_allocated() + (20 << 20));
}

TEST_CASE("streams and events") {
  dl::cuda::Stream s;
  CHECK(s.device_index() == 0);
  CHECK(dl::cuda::current_stream() == dl::cuda::default_stream());
  const auto x = dl::randn({1 << 22}).cuda();
  dl::cuda::Event start(true), stop(true);
  dl::Tensor<float> y;
  {
    dl::cuda::StreamGuard g(s);
    CHECK(dl::cuda::current_stream() == s);
    s.wait_stream(dl::cuda::default_stream());  // x was written on the default stream
    start.record();
    y = dl::sigmoid(x) * 2.0f;  // runs on s
    stop.record();
  }
  CHECK(dl::cuda::current_stream() == dl::cuda::default_stream());
  stop.synchronize();
  CHECK(stop.query());
  CHECK(s.query());
  CHECK(start.elapsed_time(stop) >= 0.0f);
  dl::cuda::default_stream().wait_stream(s);
  CHECK(max_rel_diff(y, dl::Tensor<float>(dl::sigmoid(x.cpu()) * 2.0f)) < 1e-6);
  const auto [lo, hi] = dl::cuda::Stream::priority_range();
  dl::cuda::Stream high(hi);
  CHECK(high.priority() == hi);
  (void)lo;
  dl::cuda::Event untimed;
  untimed.record(s);
  CHECK(error_of([&] { (void)untimed.elapsed_time(stop); }).find("enable_timing") != std::string::npos);
}

TEST_CASE("pinned memory and asynchronous copies") {
  const auto x = dl::randn({1 << 20});
  CHECK(!x.is_pinned());
  const auto p = x.pin_memory();
  CHECK(p.is_pinned());
  CHECK(dl::equal(p, x));
  CHECK(p.pin_memory().is_same(p));
  const auto g = p.to(kGpu, /*non_blocking=*/true);
  dl::cuda::synchronize();
  CHECK(dl::equal(g.cpu(), x));
  CHECK(dl::cuda::host_memory_stats().allocated_bytes >= 4 << 20);
  CHECK(error_of([&] { (void)g.pin_memory(); }).find("only dense CPU tensors can be pinned") != std::string::npos);
}

TEST_CASE("errors") {
  const auto a = dl::randn({4}), b = dl::randn({4}).cuda();
  const std::string mixed = error_of([&] { dl::Tensor<float> c = a * b; });
  CHECK(mixed == "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
  CHECK(error_of([&] { (void)dl::sum(b * a); }).find("Expected all tensors to be on the same device") != std::string::npos);
  // An op without a CUDA implementation refuses instead of reading device memory on the host.
  CHECK(error_of([&] { (void)dl::sort(b); }).find("has no CUDA implementation yet") != std::string::npos);
  CHECK(error_of([&] { (void)dl::argmax(b); }).find("has no CUDA implementation yet") != std::string::npos);
}

int main(int argc, char** argv) {
  if (!dl::cuda::is_available()) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
