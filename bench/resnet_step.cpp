// ResNet-18 training-step benchmark: dl::models::resnet18_cifar (torchvision's ResNet-18 with
// CIFAR's 3x3 stem, 11.2 M parameters) on 32x32 inputs, one step of forward, cross entropy,
// backward and SGD momentum, against the same network written in torch.nn (bench/resnet_step.py)
// run in a child process between dl's rounds; medians and the ratio.
//   build/bench/bench_resnet_step [batch] [rounds] [--no-torch]
#include <cstdio>
#include <string>
#include <vector>

#include <dl/dl.hpp>
#include <dl/models.hpp>

#include "common.hpp"

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool with_torch = !(argc > 3 && std::string(argv[3]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  auto net = dl::models::resnet18_cifar(10);
  dl::optim::SGD opt(net.parameters(), {.lr = 0.01, .momentum = 0.9});
  const auto x = dl::randn({batch, 3, 32, 32});
  const auto y = dl::randint(0, 10, {batch});
  auto step = [&] {
    dl::Tensor<float> loss = dl::nn::functional::cross_entropy(net(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  std::vector<double> d, t;
  for (int r = 0; r < rounds; ++r) {
    d.push_back(bench::median_ms(5, step));
    if (with_torch) {
      const double ms = bench::run_number(bench::python() + " " + std::string(DL_BENCH_DIR) + "/resnet_step.py " + std::to_string(batch));
      if (ms > 0) t.push_back(ms);
    }
  }
  const double dm = bench::median(d), tm = t.empty() ? -1 : bench::median(t);
  std::printf("ResNet-18 (CIFAR stem), batch %lld, 32x32, training step (SGD momentum), 2 threads; medians of %d interleaved rounds\n",
              static_cast<long long>(batch), rounds);
  std::printf("dl %.1f ms (%.0f images/s)   PyTorch %.1f ms   dl speedup %.2fx\n", dm, double(batch) / dm * 1e3, tm,
              tm > 0 ? tm / dm : -1.0);
  return 0;
}
