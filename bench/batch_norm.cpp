// bench/batch_norm.cpp — BatchNorm2d in training mode (batch statistics, running statistics
// updated, weight and bias): forward, and forward + backward to input, weight and bias, on the
// shapes of small CNNs, one larger than the caches and BatchNorm1d's [256, 512], against PyTorch
// (plain and with jemalloc) run in child processes between dl rounds (bench/batch_norm.py),
// 2 threads. Prints medians and ratios (> 1: dl is faster).
//   build/bench/bench_batch_norm [rounds] [--no-torch]
#include <cstdio>
#include <string>
#include <vector>

#include <dl/nn/functional/normalization.hpp>

#include "common.hpp"

namespace F = dl::nn::functional;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  const std::string script = std::string(DL_BENCH_DIR) + "/batch_norm.py";
  const std::vector<dl::Shape> shapes{{64, 32, 28, 28}, {128, 16, 14, 14}, {32, 64, 56, 56}, {256, 512}};
  std::printf("train-mode batch_norm, float, 2 threads, medians over %d rounds (ms)\n", rounds);
  std::printf("%-22s %-7s %9s %9s %11s %10s %12s\n", "shape", "pass", "dl", "PyTorch", "+jemalloc", "PT / dl", "PT+je / dl");
  for (const dl::Shape& shape : shapes) {
    const int64_t C = shape[1];
    auto x = dl::randn(shape).requires_grad_();
    auto w = dl::rand({C}).requires_grad_(), b = dl::randn({C}).requires_grad_();
    dl::Tensor<float> rm = dl::zeros({C}), rv = dl::ones({C});
    const auto gy = dl::randn(shape);
    auto fwd = [&] {
      dl::NoGradGuard no_grad;
      dl::Tensor<float> y = F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
    };
    auto fwdbwd = [&] {
      for (auto* t : {&x, &w, &b}) t->mutable_grad() = dl::Tensor<float>();
      F::batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5).backward(gy);
    };
    std::string dims;
    for (int64_t s : shape) dims += (dims.empty() ? "" : " ") + std::to_string(s);
    std::string label;
    for (int64_t s : shape) label += (label.empty() ? "[" : ", ") + std::to_string(s);
    label += "]";
    for (const char* pass : {"fwd", "fwdbwd"}) {
      const bool both = std::string(pass) == "fwdbwd";
      std::vector<double> t_dl, t_pt, t_je;
      for (int r = 0; r < rounds; ++r) {
        t_dl.push_back(both ? bench::median_ms(20, fwdbwd) : bench::median_ms(20, fwd));
        if (with_torch) {
          const std::string args = std::string(" ") + pass + " 20 " + dims;
          t_pt.push_back(bench::run_number(bench::python() + " " + script + args));
          t_je.push_back(bench::run_number(bench::python_jemalloc() + " " + script + args));
        }
      }
      const double d = bench::median(t_dl), p = bench::median(t_pt), j = bench::median(t_je);
      if (with_torch && p > 0)
        std::printf("%-22s %-7s %9.3f %9.3f %11.3f %9.2fx %11.2fx\n", label.c_str(), pass, d, p, j, p / d, j / d);
      else
        std::printf("%-22s %-7s %9.3f\n", label.c_str(), pass, d);
      std::fflush(stdout);
    }
  }
}
