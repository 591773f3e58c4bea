// Training steps written against libtorch's C++ API (#include <torch/torch.h>), built twice from this
// one source: against dl/torch.hpp (bench/torch_shim) and against Debian's libtorch 1.13
// (bench/torch_step.sh does both and runs them interleaved). Built against dl it also times the
// same steps written in native dl (functional calls on typed dl tensors, as bench_train_step does),
// the cost of libtorch's spelling: holders, option builders and torch::relu as separate passes.
//  - MLP 784-256-128-10, batch 128: Linear holders, torch::relu, cross entropy, SGD momentum 0.9;
//  - LeNet-5, batch 64: Conv2d/Linear holders, max_pool2d, the same loss and optimizer.
//   torch_step [rounds]   prints "variant ms_per_step" lines, one per round and variant
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#ifdef DL_BENCH_NATIVE
#include <dl/models.hpp>
#endif

struct MLPImpl : torch::nn::Module {
  MLPImpl() : fc1(784, 256), fc2(256, 128), fc3(128, 10) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(MLP);

struct LeNetImpl : torch::nn::Module {
  LeNetImpl()
      : conv1(torch::nn::Conv2dOptions(1, 6, 5).padding(2)), conv2(torch::nn::Conv2dOptions(6, 16, 5)), fc1(400, 120), fc2(120, 84),
        fc3(84, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(LeNet);

template <class F>
double ms_per_call(F&& f, int calls) {
  for (int i = 0; i < 3; ++i) f();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / calls;
}

#ifdef DL_BENCH_NATIVE
// The same steps in native dl: typed tensors, dl's modules and functional calls.
namespace F = dl::nn::functional;
struct NativeMLP {
  dl::nn::Linear<> fc1{784, 256}, fc2{256, 128}, fc3{128, 10};
  std::vector<dl::Tensor<float>> parameters() { return {fc1.weight, fc1.bias, fc2.weight, fc2.bias, fc3.weight, fc3.bias}; }
  dl::Tensor<float> operator()(const dl::Tensor<float>& x) {
    dl::Tensor<float> h = F::linear(x, fc1.weight, fc1.bias, dl::expr::Relu{});
    h = F::linear(h, fc2.weight, fc2.bias, dl::expr::Relu{});
    return F::linear(h, fc3.weight, fc3.bias);
  }
};
#endif

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  torch::manual_seed(0);
  auto x = torch::randn({128, 784});
  auto y = torch::randint(10, {128});
  auto img = torch::randn({64, 1, 28, 28});
  auto yl = torch::randint(10, {64});

  MLP mlp;
  torch::optim::SGD opt(mlp->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto mlp_step = [&] {
    opt.zero_grad();
    auto loss = torch::cross_entropy_loss(mlp->forward(x), y);
    loss.backward();
    opt.step();
  };
  LeNet lenet;
  torch::optim::SGD opt2(lenet->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto lenet_step = [&] {
    opt2.zero_grad();
    auto loss = torch::cross_entropy_loss(lenet->forward(img), yl);
    loss.backward();
    opt2.step();
  };
#ifdef DL_BENCH_NATIVE
  NativeMLP native;
  dl::optim::SGD<float> opt3(native.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto native_mlp_step = [&] {
    opt3.zero_grad();
    dl::Tensor<float> loss = F::cross_entropy(native(x), y);
    loss.backward();
    opt3.step();
  };
  auto native_lenet = dl::models::lenet5();
  dl::optim::SGD<float> opt4(native_lenet.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto native_lenet_step = [&] {
    opt4.zero_grad();
    dl::Tensor<float> loss = F::cross_entropy(native_lenet(img), yl);
    loss.backward();
    opt4.step();
  };
#endif
  for (int r = 0; r < rounds; ++r) {
    std::printf("mlp %.4f\n", ms_per_call(mlp_step, 100));
    std::printf("lenet %.4f\n", ms_per_call(lenet_step, 40));
#ifdef DL_BENCH_NATIVE
    std::printf("native_mlp %.4f\n", ms_per_call(native_mlp_step, 100));
    std::printf("native_lenet %.4f\n", ms_per_call(native_lenet_step, 40));
#endif
    std::fflush(stdout);
  }
}
