// bench/common.hpp — helpers shared by the benchmarks: medians of repeated runs, "name value unit"
// result lines (collected by bench/run_kernels.py), and running the PyTorch side of a workload in
// a child process between dl rounds (so both are measured interleaved: memory bandwidth on this
// machine drifts by 2x over seconds).
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dl/parallel.hpp>
#include <dl/xsimd.hpp>

namespace bench {

/// Runs body(part, lo, hi) on the two halves of [0, n) (split at a multiple of `align`) on dl's
/// thread team, the threads dl's own kernels run on. The hand-written reference loops run here
/// rather than in OpenMP regions of their own: libgomp's threads keep spinning for milliseconds
/// after each region and would hold the core dl's worker needs in the measurement that follows
/// (two thread pools on two cores; measured: dl's sum of 16M floats 0.66 -> 1.34 ms next to
/// OpenMP loops).
template <class F>
void static_halves(int64_t n, int64_t align, F&& body) {
  const int64_t mid = (n / 2) / align * align;
  dl::detail::parallel_for(0, 2, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) body(part, part == 0 ? 0 : mid, part == 0 ? mid : n);
  });
}

/// The machine's float FMA peak in GFLOP/s on `threads` threads of dl's team: 12 independent
/// accumulators of full-width fused multiply-adds per thread (what a GEMM micro-kernel can reach).
inline double fma_peak_gflops(int threads) {
  using B = xsimd::batch<float>;
  constexpr int64_t kIters = 20000000;
  std::vector<double> rate(size_t(threads), 0.0);
  dl::detail::parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      B acc[12];
      for (int i = 0; i < 12; ++i) acc[i] = B(1.0f + float(i) * 1e-7f);
      const B m(0.999999f), a(1e-7f);
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t k = 0; k < kIters; ++k) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) {
          acc[i] = xsimd::fma(acc[i], m, a);
          // Each result is live: without this GCC folded two of the twelve chains away and the
          // figure came out 12/10 of the truth.
          asm volatile("" : "+v"(acc[i].data));
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      B sum = acc[0];
      for (int i = 1; i < 12; ++i) sum += acc[i];
      volatile float sink = xsimd::hadd(sum);
      (void)sink;
      rate[size_t(t)] = double(kIters) * 12 * B::size * 2 / s * 1e-9;
    }
  });
  double total = 0;
  for (double r : rate) total += r;
  return total;
}

template <class F>
double time_ms(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Median of `reps` timings of f after one warm-up call.
template <class F>
double median_ms(int reps, F&& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(time_ms(f));
  return median(t);
}

/// Median over `samples` of the mean time (ms) of `calls` consecutive calls of f, after `calls`
/// warm-up calls: for steps too short to time one by one.
template <class F>
double per_call_ms(F&& f, int64_t calls, int samples = 15) {
  for (int64_t i = 0; i < calls; ++i) f();
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) t.push_back(time_ms([&] {
    for (int64_t i = 0; i < calls; ++i) f();
  }) / double(calls));
  return median(t);
}

/// Median wall time of f() in seconds over `reps` runs (after two warm-up runs), at least
/// `min_seconds` of measurement in total.
template <class F>
double median_seconds(F&& f, int reps = 7, double min_seconds = 0.2) {
  f();
  f();
  std::vector<double> ts;
  double total = 0;
  while (int(ts.size()) < reps || total < min_seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ts.push_back(s);
    total += s;
    if (ts.size() > 2000) break;
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

/// One result line: "<name>\t<value>\t<unit>".
inline void report(const std::string& name, double value, const char* unit) {
  std::printf("%s\t%.4g\t%s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

/// Runs a command and returns the number it prints last (-1 when it fails, e.g. no PyTorch).
inline double run_number(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  double last = -1;
  while (fgets(buf, sizeof buf, p)) {
    char* end = nullptr;
    const double v = std::strtod(buf, &end);
    if (end != buf) last = v;
  }
  return pclose(p) == 0 ? last : -1;
}

/// The python that has torch: Debian's /usr/bin/python3 (not the pyenv one on PATH).
inline std::string python() { return "env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3"; }
/// PyTorch at its best: jemalloc, told to keep freed pages (with its default decay it still hands
/// them back and eager PyTorch keeps page-faulting on every fresh 64 MiB temporary).
inline std::string python_jemalloc() {
  return "env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp "
         "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 "
         "/usr/bin/python3";
}

#if defined(__AVX512F__)
// exp for the hand-written loop: Cody-Waite range reduction and a degree-6 polynomial (the same
// accuracy class as xsimd's exp), so the reference does comparable arithmetic.
inline __m512 exp512(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504f), ln2hi = _mm512_set1_ps(0.693359375f), ln2lo = _mm512_set1_ps(-2.12194440e-4f);
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-88.3762626647949f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, ln2hi, x);
  r = _mm512_fnmadd_ps(k, ln2lo, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, k);
}

#endif

}  // namespace bench
