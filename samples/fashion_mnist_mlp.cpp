// An MLP trained on the real Fashion-MNIST with the pieces dl has today: the threaded DataLoader,
// linear layers with a fused ReLU epilogue, log-softmax and cross-entropy written as expressions,
// autograd, and SGD with momentum written by hand (dl::nn modules and dl::optim come later).
//   usage: fashion_mnist_mlp [dataset dir] [epochs]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <dl/dl.hpp>

namespace F = dl::nn::functional;
namespace data = dl::data;
using dl::Tensor;

// Cross-entropy of class indices: mean of -log_softmax(logits)[label].
Tensor<float> cross_entropy(const Tensor<float>& logits, const Tensor<int64_t>& labels) {
  const Tensor<float> log_probs = logits - logits.logsumexp({1}, /*keepdim=*/true);
  return -dl::gather(log_probs, 1, labels.unsqueeze(1)).mean();
}

// PyTorch's default init for Linear: uniform in +-1/sqrt(fan_in).
Tensor<float> uniform(dl::Shape shape, int64_t fan_in) {
  Tensor<float> t = dl::empty<float>(shape);
  const double bound = 1.0 / std::sqrt(double(fan_in));
  t.uniform_(-bound, bound);
  return t.requires_grad_();
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
  dl::manual_seed(0);
  const auto normalize = data::transforms::Normalize({0.2860f}, {0.3530f});
  auto train = data::FashionMNIST(root, /*train=*/true, normalize);
  auto test = data::FashionMNIST(root, /*train=*/false, normalize);
  data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
  data::DataLoader test_loader(test, {.batch_size = 1000});

  std::vector<Tensor<float>> params = {uniform({256, 784}, 784), uniform({256}, 784), uniform({10, 256}, 256),
                                       uniform({10}, 256)};
  std::vector<Tensor<float>> velocity;
  for (const auto& p : params) velocity.push_back(dl::zeros_like(p));
  const float lr = 0.05f, momentum = 0.9f;

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    double total_loss = 0;
    int64_t batches = 0;
    for (auto& [images, labels] : loader) {
      const Tensor<float> x = images.reshape({-1, 784});
      const Tensor<float> hidden = F::linear(x, params[0], params[1], dl::expr::Relu{});  // relu(x W1^T + b1), one pass
      const Tensor<float> logits = F::linear(hidden, params[2], params[3]);
      const Tensor<float> loss = cross_entropy(logits, labels);
      loss.backward();
      {
        dl::NoGradGuard no_grad;
        for (size_t i = 0; i < params.size(); ++i) {
          velocity[i].mul_(momentum).add_(params[i].grad());
          params[i] -= lr * velocity[i];
          params[i].grad().zero_();
        }
      }
      total_loss += loss.item();
      ++batches;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    dl::NoGradGuard no_grad;
    int64_t correct = 0;
    for (auto& [images, labels] : test_loader) {
      const Tensor<float> hidden = F::linear(images.reshape({-1, 784}), params[0], params[1], dl::expr::Relu{});
      const Tensor<float> logits = F::linear(hidden, params[2], params[3]);
      correct += dl::sum(logits.argmax(1) == labels).item();
    }
    std::printf("epoch %d  train loss %.4f  test accuracy %.2f%%  (%.2f s)\n", epoch, total_loss / double(batches),
                100.0 * double(correct) / double(test.size()), seconds);
  }
  return 0;
}
