// Compile-time workload, libtorch twin of lenet_train.cpp: the same LeNet, cross entropy, SGD and
// training loop over Fashion-MNIST, written against libtorch (Debian's libtorch-dev, 1.13), so
// bench/compile_time.sh can put libtorch's figure beside dl's. Not built by Meson.
#include <cstdio>

#include <torch/torch.h>

struct LeNetImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 6, 5).padding(2)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(6, 16, 5)};
  torch::nn::Linear fc1{16 * 5 * 5, 120}, fc2{120, 84}, fc3{84, 10};
  LeNetImpl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2).flatten(1);
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
};
TORCH_MODULE(LeNet);

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "fashion-mnist";  // uncompressed IDX files
  auto train = torch::data::datasets::MNIST(root)
                   .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                   .map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(std::move(train), 64);
  LeNet net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::nn::CrossEntropyLoss criterion;
  for (auto& batch : *loader) {
    torch::Tensor loss = criterion(net->forward(batch.data), batch.target);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  torch::save(net, "lenet.pt");
  std::printf("done\n");
}
