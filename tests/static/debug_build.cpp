// Built without optimisation (-O0, the debug build type Meson gives user projects by default) and
// run: GCC's unoptimised AVX-512BW intrinsics are macros that xsimd's batches cannot be cast to, so
// fused math (log, exp, selects on integer lanes) failed to compile at -O0 before dl/xsimd.hpp.
#include <cmath>
#include <cstdio>

#include <dl/tensor.hpp>

int main() {
  dl::Tensor<float> x = dl::linspace(0.5, 4.0, 37);
  x.requires_grad_();
  dl::Tensor<float> y = dl::log(x) * dl::exp(-x) + dl::sigmoid(x) - dl::where(x > 2.0f, x, 0.0f);
  dl::Tensor<float> s = y.sum();
  s.backward();
  dl::Tensor<double> d = dl::tanh(x.detach().to<double>()) + dl::sqrt(x.detach().to<double>());
  dl::Tensor<int32_t> i = dl::where(dl::arange<int32_t>(0, 64) > 10, dl::arange<int32_t>(0, 64), 0);
  const float x3 = x.detach().at(3);
  const float want = std::log(x3) * std::exp(-x3) + 1.0f / (1.0f + std::exp(-x3)) - (x3 > 2.0f ? x3 : 0.0f);
  const bool ok = std::fabs(y.detach().at(3) - want) < 1e-5f && x.grad().defined() && d.numel() == 37 &&
                  i.at(5) == 0 && i.at(40) == 40;
  std::printf("%s\n", ok ? "debug build: ok" : "debug build: WRONG VALUES");
  return ok ? 0 : 1;
}
