// Compile-time workload: the smallest useful program — dl/dl.hpp included, a matrix product and a
// fused elementwise expression, printed. bench/compile_time.sh times its build.
#include <iostream>

#include <dl/dl.hpp>

int main() {
  auto a = dl::randn({256, 128}), b = dl::randn({128, 64});
  dl::Tensor<float> c = dl::sigmoid(dl::matmul(a, b) * 0.5f + 1.0f);
  std::cout << c.sum().item() << "\n";
}
