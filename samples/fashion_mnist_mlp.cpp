// An MLP trained on the real Fashion-MNIST: a static nn::Sequential (its adjacent sizes checked when
// compiled, each Linear+ReLU pair run as one GEMM with the ReLU in its epilogue), cross entropy and
// SGD with momentum, over the threaded DataLoader.
//   usage: fashion_mnist_mlp [dataset dir] [epochs]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/optim.hpp>

namespace nn = dl::nn;
namespace data = dl::data;
using dl::Tensor;

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: fashion_mnist_mlp [dataset dir (default /usr/share/datasets/fashion-mnist)] [epochs (default 3)]\n");
    return 0;
  }
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
  dl::manual_seed(0);
  try {
    const auto normalize = data::transforms::Normalize({0.2860f}, {0.3530f});
    auto train = data::FashionMNIST(root, /*train=*/true, normalize);
    auto test = data::FashionMNIST(root, /*train=*/false, normalize);
    data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
    data::DataLoader test_loader(test, {.batch_size = 1000});

    auto net = nn::Sequential(nn::Flatten(), nn::Linear<784, 256>(), nn::ReLU(), nn::Linear<256, 128>(), nn::ReLU(),
                              nn::Linear<128, 10>());
    std::cout << net << "\n";
    dl::optim::SGD opt(net.parameters(), {.lr = 0.05, .momentum = 0.9});
    nn::CrossEntropyLoss criterion;

    for (int epoch = 1; epoch <= epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      double total_loss = 0;
      int64_t batches = 0;
      net.train();
      for (auto& [images, labels] : loader) {
        Tensor<float> loss = criterion(net(images), labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
        total_loss += loss.item();
        ++batches;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

      dl::NoGradGuard no_grad;
      net.eval();
      int64_t correct = 0;
      for (auto& [images, labels] : test_loader) correct += dl::sum(net(images).argmax(1) == labels).item();
      std::printf("epoch %d  train loss %.4f  test accuracy %.2f%%  (%.2f s)\n", epoch, total_loss / double(batches),
                  100.0 * double(correct) / double(test.size()), seconds);
    }
    dl::save(net.state_dict(), "fashion_mnist_mlp.safetensors");
    std::printf("weights written to fashion_mnist_mlp.safetensors\n");
  } catch (const dl::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
