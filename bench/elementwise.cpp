// Elementwise benchmark: y = sigmoid(a*b + c) * d and sum(a) on 16M floats, 2 threads.
// dl's fused expression against a hand-written fused AVX-512 loop and against PyTorch eager
// (plain and with jemalloc), measured interleaved. Prints medians and ratios.
#include <immintrin.h>

#include <cmath>
#include <cstdio>
#include <string>

#include <dl/tensor.hpp>

#include "common.hpp"

namespace {

#if defined(__AVX512F__)
void hand_fused(const float* a, const float* b, const float* c, const float* d, float* y, int64_t n) {
  bench::static_halves(n, 16, [&](int64_t, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i += 16) {
      const __m512 t = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), _mm512_loadu_ps(c + i));
      const __m512 s = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), bench::exp512(_mm512_sub_ps(_mm512_setzero_ps(), t))));
      _mm512_storeu_ps(y + i, _mm512_mul_ps(s, _mm512_loadu_ps(d + i)));
    }
  });
}

float hand_sum(const float* a, int64_t n) {
  float part_sum[2] = {0, 0};
  bench::static_halves(n, 64, [&](int64_t part, int64_t lo, int64_t hi) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t i = lo; i < hi; i += 64) {
      s0 = _mm512_add_ps(s0, _mm512_loadu_ps(a + i));
      s1 = _mm512_add_ps(s1, _mm512_loadu_ps(a + i + 16));
      s2 = _mm512_add_ps(s2, _mm512_loadu_ps(a + i + 32));
      s3 = _mm512_add_ps(s3, _mm512_loadu_ps(a + i + 48));
    }
    part_sum[part] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  });
  return part_sum[0] + part_sum[1];
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = int64_t(1) << 24;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  dl::Tensor<float> a = dl::randn({n}), b = dl::randn({n}), c = dl::randn({n}), d = dl::randn({n});
  dl::Tensor<float> ref = dl::empty<float>({n});
  std::vector<double> t_dl, t_hand, t_torch, t_torch_je, t_sum_dl, t_sum_hand, t_sum_torch;
  const std::string script = std::string(DL_BENCH_DIR) + "/elementwise.py";
  for (int r = 0; r < rounds; ++r) {
    t_dl.push_back(bench::median_ms(7, [&] { dl::Tensor<float> y = dl::sigmoid(a * b + c) * d; }));
#if defined(__AVX512F__)
    t_hand.push_back(bench::median_ms(7, [&] { hand_fused(a.data(), b.data(), c.data(), d.data(), ref.data(), n); }));
    t_sum_hand.push_back(bench::median_ms(15, [&] { volatile float s = hand_sum(a.data(), n); (void)s; }));
#endif
    t_sum_dl.push_back(bench::median_ms(15, [&] { volatile float s = a.sum().item(); (void)s; }));
    if (with_torch) {
      t_torch.push_back(bench::run_number(bench::python() + " " + script + " chain " + std::to_string(n) + " 7"));
      t_torch_je.push_back(bench::run_number(bench::python_jemalloc() + " " + script + " chain " + std::to_string(n) + " 7"));
      t_sum_torch.push_back(bench::run_number(bench::python() + " " + script + " sum " + std::to_string(n) + " 15"));
    }
  }
  // Correctness: dl agrees with the hand-written loop.
  dl::Tensor<float> y = dl::sigmoid(a * b + c) * d;
#if defined(__AVX512F__)
  hand_fused(a.data(), b.data(), c.data(), d.data(), ref.data(), n);
  std::printf("max |dl - hand| = %.2e\n", double(dl::abs(y - ref).max().item()));
#endif
  const double gb = 5.0 * 4 * double(n) / 1e9;  // 4 reads + 1 write
  const double dl_ms = bench::median(t_dl), hand_ms = bench::median(t_hand);
  std::printf("y = sigmoid(a*b + c) * d, 16M floats, 2 threads, medians of %d interleaved rounds\n", rounds);
  std::printf("  dl fused expression      %8.2f ms  %6.1f GB/s\n", dl_ms, gb / dl_ms * 1e3);
  std::printf("  hand-written AVX-512     %8.2f ms  %6.1f GB/s   dl / hand = %.2f\n", hand_ms, gb / hand_ms * 1e3, dl_ms / hand_ms);
  if (with_torch && bench::median(t_torch) > 0) {
    std::printf("  PyTorch eager            %8.2f ms            PyTorch / dl = %.1fx\n", bench::median(t_torch), bench::median(t_torch) / dl_ms);
    std::printf("  PyTorch eager + jemalloc %8.2f ms            PyTorch / dl = %.1fx\n", bench::median(t_torch_je), bench::median(t_torch_je) / dl_ms);
  }
  const double sum_gb = 4.0 * double(n) / 1e9;
  std::printf("sum of 16M floats\n");
  std::printf("  dl sum                   %8.2f ms  %6.1f GB/s\n", bench::median(t_sum_dl), sum_gb / bench::median(t_sum_dl) * 1e3);
  std::printf("  hand-written AVX-512 sum %8.2f ms  %6.1f GB/s   dl / hand = %.2f\n", bench::median(t_sum_hand),
              sum_gb / bench::median(t_sum_hand) * 1e3, bench::median(t_sum_dl) / bench::median(t_sum_hand));
  if (with_torch && bench::median(t_sum_torch) > 0)
    std::printf("  PyTorch sum              %8.2f ms            PyTorch / dl = %.1fx\n", bench::median(t_sum_torch),
                bench::median(t_sum_torch) / bench::median(t_sum_dl));
}
