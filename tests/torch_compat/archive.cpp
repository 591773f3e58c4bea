// torch::save and torch::load of a module (with a Sequential child, a BatchNorm's buffers), a tensor,
// a list of tensors and two optimizers with state (SGD with momentum, Adam), written for libtorch and
// compiled unchanged against dl (see mnist.cpp). After loading, one more step of each optimizer shows
// that their state (momentum buffers, moments, step counts) came back.
//   archive save DIR        writes DIR/net.pt, DIR/tensor.pt, DIR/tensors.pt, DIR/sgd.pt, DIR/adam.pt
//   archive load DIR        reads them into fresh objects and prints what it read
//   archive roundtrip DIR   both
// tests/gen_torch_compat.sh writes tests/data/torch_compat_archive/ with libtorch (which dl's build
// must read: the suite runs `load` on it) and checks that libtorch reads what dl's build saves.
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv(torch::nn::Conv2dOptions(1, 2, 3).bias(false)),
        bn(2),
        head(torch::nn::Linear(8, 4), torch::nn::ReLU(), torch::nn::Linear(4, 3)) {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("head", head);
    scale = register_parameter("scale", torch::ones({3}));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Sequential head;
  torch::Tensor scale;
};
TORCH_MODULE(Net);

void step(Net& net, torch::optim::Optimizer& optimizer) {
  optimizer.zero_grad();
  auto loss = (net->head->forward(torch::ones({2, 8}) * 0.5) * net->scale).pow(2).sum();
  loss.backward();
  optimizer.step();
}

void print(Net& net, const torch::Tensor& t, const std::vector<torch::Tensor>& ts) {
  for (auto& p : net->named_parameters())
    std::printf("parameter %s sum %.4f\n", p.key().c_str(), p.value().sum().item<float>());
  for (auto& b : net->named_buffers())
    std::printf("buffer %s sum %.4f\n", b.key().c_str(), b.value().to(torch::kFloat).sum().item<float>());
  std::printf("tensor %ld x %ld sum %.4f\n", long(t.size(0)), long(t.size(1)), t.sum().item<float>());
  std::printf("tensors %zu: %.4f %.4f\n", ts.size(), ts.at(0).sum().item<float>(), ts.at(1).sum().item<float>());
}

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: archive save|load|roundtrip DIR\n"), 2;
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "save" || mode == "roundtrip") {
    Net net;
    torch::NoGradGuard no_grad;
    int k = 0;
    for (auto& p : net->parameters()) p.copy_(torch::sin(torch::arange(p.numel(), torch::kFloat) + ++k).view_as(p));
    net->bn->running_mean.fill_(0.25);
    net->bn->running_var.fill_(2.0);
    torch::save(net, dir + "/net.pt");
    torch::save(torch::arange(6, torch::kFloat).view({2, 3}) * 0.5, dir + "/tensor.pt");
    torch::save(std::vector<torch::Tensor>{torch::ones({2}), torch::full({3}, 2.0)}, dir + "/tensors.pt");
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true));
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(0.005).betas({0.8, 0.99}).weight_decay(0.01));
    {
      torch::AutoGradMode enable(true);
      for (int i = 0; i < 3; ++i) step(net, sgd);
      for (int i = 0; i < 3; ++i) step(net, adam);
    }
    torch::save(net, dir + "/net.pt");
    torch::save(sgd, dir + "/sgd.pt");
    torch::save(adam, dir + "/adam.pt");
  }
  if (mode == "load" || mode == "roundtrip") {
    Net net;
    torch::Tensor t;
    std::vector<torch::Tensor> ts;
    torch::load(net, dir + "/net.pt");
    torch::load(t, dir + "/tensor.pt");
    torch::load(ts, dir + "/tensors.pt");
    print(net, t, ts);
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(1.0));
    torch::optim::Adam adam(net->parameters());
    torch::load(sgd, dir + "/sgd.pt");
    torch::load(adam, dir + "/adam.pt");
    step(net, sgd);
    step(net, adam);
    std::printf("after one more step of each loaded optimizer:\n");
    print(net, t, ts);
  }
}
