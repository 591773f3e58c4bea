// Profiler and anomaly-mode hook overhead: a loop of tiny ops (a 16-element multiply, no autograd;
// the same with autograd and backward) and a small MLP training step (32-64-10, batch 16, SGD),
// timed in this build (hooks in, no profiler active) and in bench_profiler_nohooks, the same
// source built with -DDL_PROFILER_HOOKS=0 -DDL_ANOMALY_HOOKS=0 (hooks compiled out), run
// alternately round by round (best round of each: the machine is shared); then the same loops
// under an active profiler (recording cost).
//   build/bench/bench_profiler [rounds]      (bench_profiler_nohooks prints its own figures)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <dl/nn.hpp>
#include <dl/optim.hpp>
#include <dl/profiler.hpp>
#include <dl/tensor.hpp>

#include "common.hpp"

using dl::Tensor;
namespace nn = dl::nn;

namespace {

struct Figures {
  double tiny_ns = 0, tiny_grad_ns = 0, mlp_us = 0;
};

struct Workload {
  Tensor<float> a = dl::randn({16}), b = dl::randn({16});
  Tensor<float> w = dl::randn({16});
  nn::Sequential<nn::Linear<32, 64>, nn::ReLU, nn::Linear<64, 10>> mlp{nn::Linear<32, 64>(), nn::ReLU(), nn::Linear<64, 10>()};
  dl::optim::SGD<float> opt{mlp.parameters(), {.lr = 0.01}};
  Tensor<float> x = dl::randn({16, 32});
  Tensor<int64_t> y = dl::randint<int64_t>(0, 10, {16});
  Workload() { w.requires_grad_(); }

  /// Medians of per-call times; `scale` divides the number of calls (profiled runs keep every event).
  Figures run(int scale = 1) {
    Figures f;
    f.tiny_ns = 1e6 * bench::per_call_ms([&] { Tensor<float> c = a * b; }, 20000 / scale);
    f.tiny_grad_ns = 1e6 * bench::per_call_ms([&] {
      Tensor<float> c = a * w;
      c.backward(b);
    }, 5000 / scale);
    f.mlp_us = 1e3 * bench::per_call_ms([&] {
      Tensor<float> loss = nn::functional::cross_entropy(mlp(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }, 500 / scale);
    return f;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  dl::set_num_threads(1);
  dl::manual_seed(0);
  Workload work;
#if defined(DL_PROFILER_HOOKS) && DL_PROFILER_HOOKS == 0
  // The twin without hooks: print one round's figures per line for the parent.
  for (int r = 0; r < rounds; ++r) {
    const Figures f = work.run();
    std::printf("%.2f %.2f %.3f\n", f.tiny_ns, f.tiny_grad_ns, f.mlp_us);
    std::fflush(stdout);
  }
#else
  std::vector<double> hooks[3], bare[3];
  for (int r = 0; r < rounds; ++r) {
    const Figures f = work.run();
    hooks[0].push_back(f.tiny_ns), hooks[1].push_back(f.tiny_grad_ns), hooks[2].push_back(f.mlp_us);
    const std::string cmd = std::string(DL_BENCH_BUILD_DIR) + "/bench_profiler_nohooks 2";
    if (FILE* p = popen(cmd.c_str(), "r")) {
      double t = 0, g = 0, m = 0;
      while (std::fscanf(p, "%lf %lf %lf", &t, &g, &m) == 3) bare[0].push_back(t), bare[1].push_back(g), bare[2].push_back(m);
      pclose(p);
    }
  }
  const char* names[3] = {"tiny op (16-element mul), ns", "tiny op + backward, ns", "MLP 32-64-10 training step, us"};
  // Best of the rounds: on a shared machine the medians swing by 3x with the neighbours' load.
  std::printf("%-34s %12s %12s %9s\n", "workload (1 thread, best round)", "hooks in", "hooks out", "overhead");
  for (int i = 0; i < 3; ++i) {
    const double h = *std::min_element(hooks[i].begin(), hooks[i].end());
    const double b = bare[i].empty() ? 0 : *std::min_element(bare[i].begin(), bare[i].end());
    std::printf("%-34s %12.2f %12.2f %8.1f%%\n", names[i], h, b, b > 0 ? 100.0 * (h - b) / b : 0.0);
  }
  // Recording cost: the same loops under an active profiler.
  Figures on;
  {
    dl::profiler::profile prof;
    on = work.run(10);
  }
  Figures shapes;
  {
    dl::profiler::profile prof({.record_shapes = true, .profile_memory = true});
    shapes = work.run(10);
  }
  std::printf("under a profiler (names, times):  tiny %.0f ns, tiny + backward %.0f ns, MLP step %.1f us\n", on.tiny_ns,
              on.tiny_grad_ns, on.mlp_us);
  std::printf("with record_shapes + profile_memory: tiny %.0f ns, tiny + backward %.0f ns, MLP step %.1f us\n",
              shapes.tiny_ns, shapes.tiny_grad_ns, shapes.mlp_us);
#endif
  return 0;
}
