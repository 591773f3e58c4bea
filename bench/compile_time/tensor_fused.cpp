// Compile-time workload: the smallest tensor program — only dl/tensor.hpp and dl/ops/matmul.hpp,
// one fused elementwise expression, a matrix product and a sum. bench/compile_time.sh times its
// build (budget: 5 s).
#include <iostream>
#include <dl/tensor.hpp>
#include <dl/ops/matmul.hpp>
int main() {
  dl::Tensor<float> a = dl::randn({256, 256}), b = dl::randn({256, 256});
  dl::Tensor<float> y = dl::sigmoid(a * b + 1.0f) * 2.0f;
  dl::Tensor<float> c = dl::matmul(y, b);
  std::cout << c.sum().item() << "\n";
}
