// A user's CUDA program built against dl by tests/packaging/check.sh (nvcc through pkg-config's
// dl-cuda.pc and CMake's dl::cuda). It builds and links everywhere; it computes only where a GPU is
// present, and there checks a generated kernel, a reduction and cuBLAS against the CPU.
#include <dl/tensor.hpp>
#include <dl/ops/matmul.hpp>
#include <dl/cuda.hpp>

#include <cstdio>

int main() {
  if (!dl::cuda::is_available()) return std::puts("cuda: built and linked (no GPU here)"), 0;
  const dl::Device gpu("cuda:0");
  auto a = dl::randn({1000}), b = dl::randn({1000});
  const dl::Tensor<float> cpu = dl::sigmoid(a * b + 1.0f) * 2.0f;
  const dl::Tensor<float> dev = dl::sigmoid(a.to(gpu) * b.to(gpu) + 1.0f) * 2.0f;
  if (!dl::allclose(dev.cpu(), cpu, 1e-5, 1e-6)) return std::puts("cuda: fused kernel differs"), 1;
  const auto m = dl::randn({32, 16});
  if (!dl::allclose(dl::matmul(m.to(gpu), m.t().to(gpu)).cpu(), dl::matmul(m, m.t()), 1e-4, 1e-5))
    return std::puts("cuda: cuBLAS product differs"), 1;
  std::printf("cuda: ok on %s\n", dl::cuda::get_device_name().c_str());
  return 0;
}
