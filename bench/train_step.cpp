// Training-step benchmark: one step (forward, cross entropy, backward, SGD-with-momentum update) of
//  - the MLP 784-256-128-10, batch 128, written as an nn::Sequential and as plain functional calls
//    on raw tensors (the module overhead), and
//  - LeNet-5 (dl::models::lenet5), batch 64,
// against the same steps in PyTorch (2 threads, its best BLAS setup) run interleaved, round by
// round, in a child process; medians and ratios (steps per second).
//   build/bench/bench_train_step [rounds] [--no-torch]      (DL_BENCH_THREADS=n: n threads instead of 2)
#include <cstdio>
#include <string>
#include <vector>

#include <dl/dl.hpp>
#include <dl/models.hpp>
#include <dl/nn.hpp>
#include <dl/optim.hpp>

#include "common.hpp"

namespace nn = dl::nn;
namespace F = dl::nn::functional;
using dl::Tensor;

namespace {


std::vector<double> torch_ms(int rounds) {
  const std::string cmd = bench::python() + " " + std::string(DL_BENCH_DIR) + "/train_step.py " + std::to_string(rounds) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::vector<double> mlp, lenet;
  double a = 0, b = 0;
  while (p && std::fscanf(p, "%lf %lf", &a, &b) == 2) mlp.push_back(a), lenet.push_back(b);
  if (p) pclose(p);
  if (mlp.empty()) return {-1, -1};
  return {bench::median(mlp), bench::median(lenet)};
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(std::getenv("DL_BENCH_THREADS") ? std::atoi(std::getenv("DL_BENCH_THREADS")) : 2);
  dl::manual_seed(0);
  const Tensor<float> x = dl::randn({128, 784});
  const Tensor<int64_t> y = dl::randint(0, 10, {128});
  const Tensor<float> img = dl::randn({64, 1, 28, 28});
  const Tensor<int64_t> yl = dl::randint(0, 10, {64});

  // The MLP as a module: the Linear+ReLU pairs run as GEMMs with the ReLU in the epilogue.
  auto mlp = nn::Sequential(nn::Linear<784, 256>(), nn::ReLU(), nn::Linear<256, 128>(), nn::ReLU(), nn::Linear<128, 10>());
  dl::optim::SGD opt(mlp.parameters(), {.lr = 0.01, .momentum = 0.9});
  nn::CrossEntropyLoss criterion;
  auto module_step = [&] {
    Tensor<float> loss = criterion(mlp(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  // The same MLP with functional calls on raw tensors and the same optimizer class.
  std::vector<Tensor<float>> w;
  for (auto& p : mlp.parameters()) w.push_back(p.detach().clone().requires_grad_());
  dl::optim::SGD opt2(w, {.lr = 0.01, .momentum = 0.9});
  auto functional_step = [&] {
    Tensor<float> h = F::linear(x, w[0], w[1], dl::expr::Relu{});
    h = F::linear(h, w[2], w[3], dl::expr::Relu{});
    Tensor<float> loss = F::cross_entropy(F::linear(h, w[4], w[5]), y);
    opt2.zero_grad();
    loss.backward();
    opt2.step();
  };
  auto lenet = dl::models::lenet5();
  dl::optim::SGD opt3(lenet.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto lenet_step = [&] {
    Tensor<float> loss = criterion(lenet(img), yl);
    opt3.zero_grad();
    loss.backward();
    opt3.step();
  };

  std::vector<double> m, f, l, tm, tl;
  for (int r = 0; r < rounds; ++r) {
    m.push_back(bench::per_call_ms(module_step, 50, 9));
    f.push_back(bench::per_call_ms(functional_step, 50, 9));
    l.push_back(bench::per_call_ms(lenet_step, 20, 9));
    if (with_torch) {
      const auto t = torch_ms(1);
      tm.push_back(t[0]);
      tl.push_back(t[1]);
    }
  }
  const double mm = bench::median(m), ff = bench::median(f), ll = bench::median(l);
  const double tmm = with_torch ? bench::median(tm) : -1, tll = with_torch ? bench::median(tl) : -1;
  std::printf("Training step (forward, cross entropy, backward, SGD momentum), float, 2 threads; medians of %d interleaved rounds\n",
              rounds);
  std::printf("%-40s %10s %12s %14s %12s\n", "workload", "dl ms", "dl steps/s", "PyTorch ms", "dl speedup");
  std::printf("%-40s %10.3f %12.0f %14.3f %11.2fx\n", "MLP 784-256-128-10, batch 128 (module)", mm, 1e3 / mm, tmm, tmm > 0 ? tmm / mm : -1);
  std::printf("%-40s %10.3f %12.0f %14s %12s\n", "  same step, functional calls", ff, 1e3 / ff, "", "");
  std::printf("%-40s %10.3f %12.0f %14.3f %11.2fx\n", "LeNet-5, batch 64", ll, 1e3 / ll, tll, tll > 0 ? tll / ll : -1);
  std::printf("module overhead over functional calls: %+.1f%%\n", 100 * (mm / ff - 1));
  return 0;
}
