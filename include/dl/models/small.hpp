// dl/models/small.hpp — small networks for 28 x 28 images: an MLP and LeNet-5. Untrained.
//   auto net = dl::models::lenet5();                 // [N, 1, 28, 28] -> [N, 10]
//   auto mlp = dl::models::mlp(784, {256, 128}, 10);  // Flatten, Linear+ReLU..., Linear
#pragma once

#include <vector>

#include "../nn.hpp"

namespace dl::models {

// ------------------------------------------------------------------------------ declarations

/// Flatten, then Linear + ReLU for each hidden size, then a Linear to out_features
/// (PyTorch: nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), ...)).
nn::Sequential<> mlp(int64_t in_features = 784, const std::vector<int64_t>& hidden = {256, 128}, int64_t out_features = 10);

/// LeNet-5 with ReLU and max pooling: conv 5x5 (padding 2) -> pool -> conv 5x5 -> pool ->
/// 120 -> 84 -> classes, for [N, in_channels, 28, 28] images (61,706 parameters for 10 classes).
class LeNet5 : public nn::Module {
 public:
  explicit LeNet5(int64_t num_classes = 10, int64_t in_channels = 1)
      : conv1(in_channels, 6, 5, {.padding = 2}), conv2(6, 16, 5), fc1(16 * 5 * 5, 120), fc2(120, 84), fc3(84, num_classes) {}
  nn::Conv2d<> conv1, conv2;
  nn::Linear<> fc1, fc2, fc3;
  Tensor<float> forward(const Tensor<float>& x) {
    namespace F = nn::functional;
    Tensor<float> y = F::max_pool2d(F::relu(conv1(x)), 2);
    y = F::max_pool2d(F::relu(conv2(y)), 2).flatten(1);
    return fc3(fc2.forward_with_activation(fc1.forward_with_activation(y, expr::Relu{}), expr::Relu{}));
  }
  DL_MODULE(LeNet5, conv1, conv2, fc1, fc2, fc3)
};

inline LeNet5 lenet5(int64_t num_classes = 10, int64_t in_channels = 1) { return LeNet5(num_classes, in_channels); }

// ------------------------------------------------------------------------------ implementation

inline nn::Sequential<> mlp(int64_t in_features, const std::vector<int64_t>& hidden, int64_t out_features) {
  nn::Sequential<> net;
  net.push_back(nn::Flatten());
  int64_t in = in_features;
  for (int64_t h : hidden) {
    net.push_back(nn::Linear(in, h)).push_back(nn::ReLU());
    in = h;
  }
  net.push_back(nn::Linear(in, out_features));
  return net;
}

}  // namespace dl::models
