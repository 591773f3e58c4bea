// 16-bit floats on the CPU: y = sigmoid(a*b + c) * d, sum(a), the float -> 16-bit conversion and a
// square product, on 4M-element dl::Half / dl::BFloat16 tensors with 2 threads, against PyTorch
// eager on the same tensors (bench/half.py), interleaved, then bfloat16 square products of 512 and
// 1024. Prints medians and ratios.
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <dl/dl.hpp>

#include "common.hpp"

namespace {

template <class T>
void run(const char* name, int64_t n, int rounds, bool with_torch) {
  dl::manual_seed(0);
  const dl::Tensor<T> a = dl::randn({n}).template to<T>(), b = dl::randn({n}).template to<T>(),
                      c = dl::randn({n}).template to<T>(), d = dl::randn({n}).template to<T>();
  const dl::Tensor<float> f32 = dl::randn({n});
  const int64_t m = std::llround(std::sqrt(double(n)) / 8);
  const dl::Tensor<T> p = dl::randn({m, m}).template to<T>(), q = dl::randn({m, m}).template to<T>();
  const std::string script = std::string(DL_BENCH_DIR) + "/half.py";
  const char* what[] = {"chain", "sum", "cast", "mm"};
  std::vector<double> t_dl[4], t_torch[4];
  for (int r = 0; r < rounds; ++r) {
    t_dl[0].push_back(bench::median_ms(7, [&] { dl::Tensor<T> y = dl::sigmoid(a * b + c) * d; }));
    t_dl[1].push_back(bench::median_ms(7, [&] { volatile float s = float(a.sum().item()); (void)s; }));
    t_dl[2].push_back(bench::median_ms(7, [&] { dl::Tensor<T> y = f32.template to<T>(); }));
    t_dl[3].push_back(bench::median_ms(7, [&] { dl::Tensor<T> y = dl::matmul(p, q); }));
    if (with_torch)
      for (int k = 0; k < 4; ++k)
        t_torch[k].push_back(bench::run_number(bench::python() + " " + script + " " + what[k] + " " + name + " " +
                                               std::to_string(n) + " 7"));
  }
  std::printf("%s, %lld elements (mm: %lld x %lld), 2 threads, medians of %d interleaved rounds\n", name, (long long)n,
              (long long)m, (long long)m, rounds);
  if constexpr (std::is_same_v<T, dl::BFloat16>) {
    // Both bfloat16 product paths (dl/ops/gemm_bf16.hpp): the CPU's dot-product instruction and the
    // operands widened to float; "mm" above is the one dl picks here.
    std::printf("  mm path: %s (AVX512-BF16 on this CPU: %s)\n", dl::bf16_dot_enabled() ? "dot product" : "widened to float",
                dl::detail::cpu_has_bf16_dot() ? "yes" : "no");
    if (dl::detail::cpu_has_bf16_dot()) {
      std::vector<double> dot, wide;
      for (int r = 0; r < rounds; ++r) {
        dl::set_bf16_dot(dl::Bf16Dot::on);
        dot.push_back(bench::median_ms(7, [&] { dl::Tensor<T> y = dl::matmul(p, q); }));
        dl::set_bf16_dot(dl::Bf16Dot::off);
        wide.push_back(bench::median_ms(7, [&] { dl::Tensor<T> y = dl::matmul(p, q); }));
      }
      dl::set_bf16_dot(dl::Bf16Dot::automatic);
      std::printf("  mm on the dot product %.3f ms, widened %.3f ms\n", bench::median(dot), bench::median(wide));
    }
  }
  for (int k = 0; k < 4; ++k) {
    const double dl_ms = bench::median(t_dl[k]);
    if (!with_torch) {
      std::printf("  %-6s dl %8.3f ms\n", what[k], dl_ms);
      continue;
    }
    const double torch_ms = bench::median(t_torch[k]);
    if (std::isnan(torch_ms)) std::printf("  %-6s dl %8.3f ms   PyTorch: no CPU kernel for this dtype\n", what[k], dl_ms);
    else std::printf("  %-6s dl %8.3f ms   PyTorch %8.3f ms   dl / PyTorch = %.2f\n", what[k], dl_ms, torch_ms, dl_ms / torch_ms);
  }
}

/// bfloat16 square products at larger sizes, m x m times m x m, against PyTorch in the same run.
void mm_sizes(int rounds, bool with_torch) {
  const std::string script = std::string(DL_BENCH_DIR) + "/half.py";
  std::printf("bfloat16 mm by size, 2 threads, medians of %d interleaved rounds (path: %s)\n", rounds,
              dl::bf16_dot_enabled() ? "dot product" : "widened to float");
  for (const int64_t m : {512, 1024}) {
    dl::manual_seed(0);
    const dl::Tensor<dl::BFloat16> p = dl::randn({m, m}).to<dl::BFloat16>(), q = dl::randn({m, m}).to<dl::BFloat16>();
    std::vector<double> t_dl, t_torch;
    for (int r = 0; r < rounds; ++r) {
      t_dl.push_back(bench::median_ms(5, [&] { dl::Tensor<dl::BFloat16> y = dl::matmul(p, q); }));
      if (with_torch) t_torch.push_back(bench::run_number(bench::python() + " " + script + " mm bfloat16 0 5 " + std::to_string(m)));
    }
    const double dl_ms = bench::median(t_dl), gf = 2.0 * double(m) * double(m) * double(m) / dl_ms / 1e6;
    if (!with_torch) {
      std::printf("  %4lld: dl %8.3f ms (%.0f GFLOP/s)\n", (long long)m, dl_ms, gf);
      continue;
    }
    const double torch_ms = bench::median(t_torch);
    std::printf("  %4lld: dl %8.3f ms (%.0f GFLOP/s)   PyTorch %8.3f ms   dl / PyTorch = %.2f\n", (long long)m, dl_ms, gf,
                torch_ms, dl_ms / torch_ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = int64_t(1) << 22;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  run<dl::Half>("float16", n, rounds, with_torch);
  run<dl::BFloat16>("bfloat16", n, rounds, with_torch);
  mm_sizes(rounds, with_torch);
}
