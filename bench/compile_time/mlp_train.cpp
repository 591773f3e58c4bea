// Compile-time workload: an MLP training loop as a user writes it — a static nn::Sequential, cross
// entropy, SGD with momentum, the threaded DataLoader over Fashion-MNIST, an evaluation pass and a
// checkpoint. bench/compile_time.sh times its build.
#include <cstdio>

#include <dl/dl.hpp>

namespace nn = dl::nn;

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const auto normalize = dl::data::transforms::Normalize({0.2860f}, {0.3530f});
  auto train = dl::data::FashionMNIST(root, true, normalize);
  auto test = dl::data::FashionMNIST(root, false, normalize);
  dl::data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
  dl::data::DataLoader test_loader(test, {.batch_size = 1000});
  auto net = nn::Sequential(nn::Flatten(), nn::Linear<784, 256>(), nn::ReLU(), nn::Linear<256, 128>(), nn::ReLU(),
                            nn::Linear<128, 10>());
  dl::optim::SGD opt(net.parameters(), {.lr = 0.05, .momentum = 0.9});
  nn::CrossEntropyLoss criterion;
  for (auto& [images, labels] : loader) {
    dl::Tensor<float> loss = criterion(net(images), labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  dl::NoGradGuard no_grad;
  int64_t correct = 0;
  for (auto& [images, labels] : test_loader) correct += dl::sum(net(images).argmax(1) == labels).item();
  std::printf("accuracy %.2f%%\n", 100.0 * double(correct) / double(test.size()));
  dl::save(net.state_dict(), "mlp.safetensors");
}
