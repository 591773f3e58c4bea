// bench/bench_util.hpp — timing helpers shared by the benchmark programs: the median of several
// timed runs after a warm-up, and the "name value unit" lines that bench/run_kernels.py collects.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

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

}  // namespace bench
