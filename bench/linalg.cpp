// Linear-algebra benchmark: dl::linalg::solve (A [512, 512], B [512, 512]), svd (reduced) and
// cholesky on 512 x 512 float32 matrices against torch.linalg in the same run (bench/linalg.py),
// interleaved round by round; medians and ratios. Both sides call LAPACK (dl: Debian's LAPACKE
// over the system LAPACK; PyTorch: its own LAPACK build), each with 2 threads.
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

std::vector<std::vector<double>> torch_times(int64_t n) {
  const std::string cmd = bench::python() + " " + std::string(DL_BENCH_DIR) + "/linalg.py " + std::to_string(n) + " 1 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  double a = 0, b = 0, c = 0;
  std::vector<std::vector<double>> t(3);
  while (f && std::fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) t[0].push_back(a), t[1].push_back(b), t[2].push_back(c);
  if (f) pclose(f);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 512;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const bool with_torch = !(argc > 3 && std::string(argv[3]) == "--no-torch");
  dl::set_num_threads(2);
  if (openblas_set_num_threads) openblas_set_num_threads(2);
  dl::manual_seed(0);
  const dl::Tensor<float> A = dl::randn({n, n}) + dl::eye<float>(n) * std::sqrt(float(n));
  const dl::Tensor<float> B = dl::randn({n, n});
  const dl::Tensor<float> S = dl::matmul(A, A.t()) + dl::eye<float>(n);
  std::printf("torch.linalg on %lld x %lld float32, 2 threads; medians of %d interleaved rounds (ms per call)\n",
              static_cast<long long>(n), static_cast<long long>(n), rounds);
  std::vector<double> d[3], t[3];
  for (int r = 0; r < rounds; ++r) {
    d[0].push_back(bench::median_ms(7, [&] { (void)dl::linalg::solve(A, B); }));
    d[1].push_back(bench::median_ms(5, [&] { (void)dl::linalg::svd(A, false); }));
    d[2].push_back(bench::median_ms(7, [&] { (void)dl::linalg::cholesky(S); }));
    if (with_torch) {
      const auto tt = torch_times(n);
      for (int i = 0; i < 3; ++i)
        if (!tt[i].empty()) t[i].push_back(tt[i][0]);
    }
  }
  const char* names[3] = {"solve (B 512 columns)", "svd (reduced)", "cholesky"};
  std::printf("%-24s %10s %10s %14s\n", "op", "dl", "PyTorch", "PyTorch / dl");
  for (int i = 0; i < 3; ++i) {
    const double dm = bench::median(d[i]), tm = t[i].empty() ? -1 : bench::median(t[i]);
    std::printf("%-24s %10.3f %10.3f %14.2f\n", names[i], dm, tm, tm > 0 ? tm / dm : -1.0);
  }
  return 0;
}
