// bench/gemm.cpp — matrix products: square GEMM 256..2048 and the MLP's Linear products (forward
// x @ W.t() + b with relu, backward g.t() @ x and g @ W), with the built-in GEMM and, when dl has
// it, CBLAS. Prints GFLOP/s lines; bench/gemm.py measures PyTorch, bench/run_kernels.py compares.
#include <dl/dl.hpp>

#include "common.hpp"

namespace F = dl::nn::functional;

namespace {

void run(const char* backend_name) {
  dl::NoGradGuard no_grad;
  for (int64_t n : {256, 512, 1024, 2048}) {
    const auto a = dl::randn({n, n}), b = dl::randn({n, n});
    dl::Tensor<float> c;
    const double s = bench::median_seconds([&] { c = dl::mm(a, b); }, n >= 1024 ? 5 : 9);
    bench::report(std::string("gemm") + std::to_string(n) + "/" + backend_name, 2.0 * double(n * n * n) / s * 1e-9, "GFLOP/s");
  }
  // The MLP of the samples: 784 -> 256 -> 128 -> 10 at batch 128.
  const int64_t batch = 128;
  const std::vector<std::pair<int64_t, int64_t>> layers{{784, 256}, {256, 128}, {128, 10}};
  for (auto [in, out] : layers) {
    const auto x = dl::randn({batch, in}), w = dl::randn({out, in}), bias = dl::randn({out}), g = dl::randn({batch, out});
    const double flops = 2.0 * double(batch * in * out);
    const std::string shape = std::to_string(batch) + "x" + std::to_string(in) + "x" + std::to_string(out);
    dl::Tensor<float> y;
    double s = bench::median_seconds([&] { y = F::linear(x, w, bias, dl::expr::Relu{}); });
    bench::report("linear_relu_" + shape + "/" + backend_name, flops / s * 1e-9, "GFLOP/s");
    s = bench::median_seconds([&] { y = dl::mm(g.t(), x); });
    bench::report("grad_w_" + shape + "/" + backend_name, flops / s * 1e-9, "GFLOP/s");
    s = bench::median_seconds([&] { y = dl::mm(g, w); });
    bench::report("grad_x_" + shape + "/" + backend_name, flops / s * 1e-9, "GFLOP/s");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  if (which == "all" || which == "builtin") {
    dl::set_gemm_backend(dl::GemmBackend::builtin);
    run("dl");
  }
  if ((which == "all" || which == "blas") && dl::has_cblas()) {
    dl::set_gemm_backend(dl::GemmBackend::blas);
    run("dl+openblas");
  }
}
