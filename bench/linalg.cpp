// Linear-algebra benchmark: dl::linalg::solve (A [n, n], B [n, n]), svd (reduced), cholesky, qr
// (reduced) and eigh on n x n float32 matrices against torch.linalg in the same run
// (bench/linalg.py), interleaved round by round; medians and ratios. Both sides call LAPACK (dl:
// Debian's LAPACKE over the system LAPACK, OpenBLAS's; PyTorch: the LAPACK it was built with),
// each with 2 threads. n defaults to 64, 256, 512 and 1024 in turn.
//   build/bench/bench_linalg [n] [rounds] [--no-torch]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <dl/linalg.hpp>

#include "common.hpp"

// OpenBLAS's thread count, when the LAPACK underneath is OpenBLAS (weak: absent elsewhere).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

constexpr int kOps = 5;

std::vector<std::vector<double>> torch_times(int64_t n) {
  const std::string cmd = bench::python() + " " + std::string(DL_BENCH_DIR) + "/linalg.py " + std::to_string(n) + " 1 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  double v[kOps] = {};
  std::vector<std::vector<double>> t(kOps);
  while (f && std::fscanf(f, "%lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4]) == kOps)
    for (int i = 0; i < kOps; ++i) t[size_t(i)].push_back(v[i]);
  if (f) pclose(f);
  return t;
}

void run(int64_t n, int rounds, bool with_torch) {
  dl::manual_seed(0);
  const dl::Tensor<float> A = dl::randn({n, n}) + dl::eye<float>(n) * std::sqrt(float(n));
  const dl::Tensor<float> B = dl::randn({n, n});
  const dl::Tensor<float> S = dl::matmul(A, A.t()) + dl::eye<float>(n);
  const int reps = n <= 512 ? 7 : 3;
  std::vector<double> d[kOps], t[kOps];
  for (int r = 0; r < rounds; ++r) {
    d[0].push_back(bench::median_ms(reps, [&] { (void)dl::linalg::solve(A, B); }));
    d[1].push_back(bench::median_ms(reps, [&] { (void)dl::linalg::svd(A, false); }));
    d[2].push_back(bench::median_ms(reps, [&] { (void)dl::linalg::cholesky(S); }));
    d[3].push_back(bench::median_ms(reps, [&] { (void)dl::linalg::qr(A); }));
    d[4].push_back(bench::median_ms(reps, [&] { (void)dl::linalg::eigh(S); }));
    if (with_torch) {
      const auto tt = torch_times(n);
      for (int i = 0; i < kOps; ++i)
        if (!tt[size_t(i)].empty()) t[i].push_back(tt[size_t(i)][0]);
    }
  }
  const char* names[kOps] = {"solve (B n columns)", "svd (reduced)", "cholesky", "qr (reduced)", "eigh"};
  std::printf("n = %lld\n", static_cast<long long>(n));
  for (int i = 0; i < kOps; ++i) {
    const double dm = bench::median(d[i]), tm = t[i].empty() ? -1 : bench::median(t[i]);
    std::printf("  %-22s %10.3f %10.3f %14.2f\n", names[i], dm, tm, tm > 0 ? tm / dm : -1.0);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t only = argc > 1 ? std::atoll(argv[1]) : 0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const bool with_torch = !(argc > 3 && std::string(argv[3]) == "--no-torch");
  dl::set_num_threads(2);
  if (openblas_set_num_threads) openblas_set_num_threads(2);
  std::printf("torch.linalg on n x n float32, 2 threads; medians of %d interleaved rounds (ms per call)\n", rounds);
  std::printf("  %-22s %10s %10s %14s\n", "op", "dl", "PyTorch", "PyTorch / dl");
  for (const int64_t n : {64, 256, 512, 1024})
    if (only == 0 || only == n) run(n, rounds, with_torch);
  return 0;
}
