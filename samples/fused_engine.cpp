// The fused expression engine on real sizes: y = sigmoid(a*b + c) * d over 16M floats.
// dl evaluates the whole expression in one multi-threaded SIMD pass; compare with the same math
// done op by op (one temporary per op, as eager frameworks do) and with a plain scalar loop.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <dl/tensor.hpp>

template <class F>
double best_ms(F&& f, int reps = 5) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc > 1) {  // no options: --help says what the program does
    const std::string arg = argv[1];
    std::printf("%s\nusage: %s   (no options)\n", "Times y = sigmoid(a*b + c) * d over 16M floats: dl's fused expression, the same math op by op, and a scalar loop.", argv[0]);
    return arg == "--help" || arg == "-h" ? 0 : 2;
  }
  const int64_t n = int64_t(1) << 24;
  dl::manual_seed(0);
  dl::Tensor<float> a = dl::randn({n}), b = dl::randn({n}), c = dl::randn({n}), d = dl::randn({n});

  // One fused pass: the expression's type is the computation; assigning it to a Tensor runs it.
  dl::Tensor<float> y;
  const double fused = best_ms([&] { y = dl::sigmoid(a * b + c) * d; });

  // The same math op by op: four passes and three temporaries.
  dl::Tensor<float> y2;
  const double unfused = best_ms([&] {
    dl::Tensor<float> t1 = a * b;
    dl::Tensor<float> t2 = t1 + c;
    dl::Tensor<float> t3 = dl::sigmoid(t2);
    y2 = t3 * d;
  });

  // A plain loop, one thread, no SIMD library.
  std::vector<float> y3(static_cast<size_t>(n));
  const double naive = best_ms([&] {
    const float *pa = a.data(), *pb = b.data(), *pc = c.data(), *pd = d.data();
    for (int64_t i = 0; i < n; ++i) y3[size_t(i)] = 1.0f / (1.0f + std::exp(-(pa[i] * pb[i] + pc[i]))) * pd[i];
  }, 2);

  const float diff = dl::abs(y - y2).max().item();
  const float diff3 = dl::abs(y - dl::from_blob(y3.data(), {n})).max().item();
  std::printf("y = sigmoid(a*b + c) * d over %lld floats, %d threads\n", static_cast<long long>(n), dl::get_num_threads());
  std::printf("  dl fused expression : %7.2f ms\n", fused);
  std::printf("  dl op by op         : %7.2f ms  (%.1fx slower)\n", unfused, unfused / fused);
  std::printf("  naive scalar loop   : %7.2f ms  (%.1fx slower)\n", naive, naive / fused);
  std::printf("  max difference: %.2g (op by op), %.2g (scalar loop)\n", double(diff), double(diff3));
  std::printf("  mean of y = %.6f\n", double(y.mean().item()));
  return diff < 1e-5f && diff3 < 1e-5f ? 0 : 1;
}
