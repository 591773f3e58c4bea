// bench/common.hpp — timing helpers shared by the benchmarks: medians of repeated runs, and running
// the PyTorch side of a workload in a child process between dl rounds (so both are measured
// interleaved: memory bandwidth on this machine drifts by 2x over seconds).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

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
inline std::string python_jemalloc() {
  return "env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp "
         "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/bin/python3";
}

}  // namespace bench
