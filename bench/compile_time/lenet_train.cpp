// Compile-time workload: the translation unit of a typical user program — a LeNet written as a
// dl::nn module, cross entropy, SGD and a training loop over Fashion-MNIST. bench/compile_time.sh
// times its build at -O2 and reports peak memory (the budget: about 15-20 s and 1.5 GB here).
#include <cstdio>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/optim.hpp>

namespace nn = dl::nn;
namespace F = dl::nn::functional;

struct LeNet : nn::Module {
  nn::Conv2d<1, 6> conv1{5, {.padding = 2}};
  nn::Conv2d<6, 16> conv2{5};
  nn::Linear<16 * 5 * 5, 120> fc1;
  nn::Linear<120, 84> fc2;
  nn::Linear<84, 10> fc3;
  DL_MODULE(LeNet, conv1, conv2, fc1, fc2, fc3)
  dl::Tensor<float> forward(const dl::Tensor<float>& x) {
    auto y = F::max_pool2d(F::relu(conv1(x)), 2);
    y = F::max_pool2d(F::relu(conv2(y)), 2).flatten(1);
    return fc3(F::relu(fc2(F::relu(fc1(y)))));
  }
};

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  auto train = dl::data::FashionMNIST(root, true, dl::data::transforms::Normalize({0.2860f}, {0.3530f}));
  dl::data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 0});
  LeNet net;
  dl::optim::SGD opt(net.parameters(), {.lr = 0.05, .momentum = 0.9});
  nn::CrossEntropyLoss criterion;
  for (auto& [images, labels] : loader) {
    dl::Tensor<float> loss = criterion(net(images), labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  dl::save(net.state_dict(), "lenet.safetensors");
  std::printf("done\n");
}
