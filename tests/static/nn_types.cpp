// Type-level checks of dl::nn: compiling this file is the test. tests/static/sequential_mismatch.cpp
// is the negative twin (it must fail to compile with the one-sentence message).
#include <type_traits>

#include <dl/nn.hpp>

namespace nn = dl::nn;

struct NoForward : nn::Module {
  DL_MODULE(NoForward)
};

int main() {
  // std::span's convention: static sizes, run-time sizes (deduced or empty arguments), and the
  // static form is-a run-time form.
  static_assert(std::is_same_v<decltype(nn::Linear(784, 128)), nn::Linear<>>);
  static_assert(std::is_same_v<nn::Linear<>, nn::Linear<nn::dynamic, nn::dynamic>>);
  static_assert(std::is_base_of_v<nn::Linear<>, nn::Linear<784, 128>>);
  static_assert(std::is_base_of_v<nn::Conv2d<>, nn::Conv2d<1, 6>>);
  static_assert(std::is_same_v<decltype(nn::Conv2d(1, 6, 5, {.stride = 1, .padding = 2, .bias = false})), nn::Conv2d<>>);
  static_assert(std::is_same_v<decltype(nn::BatchNorm2d(16, {.momentum = 0.1})), nn::BatchNorm2d<>>);
  static_assert(std::is_base_of_v<nn::GroupNorm<>, nn::GroupNorm<2, 6>>);
  static_assert(std::is_same_v<decltype(nn::Embedding(10, 3)), nn::Embedding<>>);

  // Sequential: static layer types from the arguments; the empty form is the dynamic one.
  using Mlp = decltype(nn::Sequential(nn::Linear<784, 128>(), nn::ReLU(), nn::Linear<128, 10>()));
  static_assert(std::is_same_v<Mlp, nn::Sequential<nn::Linear<784, 128>, nn::ReLU, nn::Linear<128, 10>>>);
  static_assert(Mlp::size() == 3);
  static_assert(std::is_same_v<decltype(nn::Sequential()), nn::Sequential<>>);
  static_assert(std::is_same_v<decltype(nn::Sequential({{"relu", nn::ReLU()}})), nn::Sequential<>>);
  // Sizes that agree through size-keeping layers (activations, dropout, batch norm, pooling).
  using Cnn = decltype(nn::Sequential(nn::Conv2d<1, 6>(5), nn::BatchNorm2d<6>(), nn::ReLU(), nn::MaxPool2d(2), nn::Conv2d<6, 16>(5)));
  static_assert(Cnn::size() == 5);

  // A module call materialises lazy results: modules hand out tensors.
  static_assert(std::is_same_v<decltype(std::declval<nn::ReLU&>()(std::declval<dl::Tensor<float>>())), dl::Tensor<float>>);
  static_assert(std::is_same_v<decltype(std::declval<Mlp&>()(std::declval<dl::Tensor<float>>())), dl::Tensor<float>>);
  // ...and is not callable with arguments forward does not take, or without a forward (the call
  // operator chosen then is deleted: tests/static/module_forward_errors.cpp checks its message).
  static_assert(!std::is_invocable_v<nn::Linear<>&, int>);
  static_assert(!std::is_invocable_v<nn::Embedding<>&, dl::Tensor<float>>);
  static_assert(std::is_invocable_v<nn::Embedding<>&, dl::Tensor<int64_t>>);
  static_assert(!std::is_invocable_v<NoForward&, dl::Tensor<float>>);
  static_assert(!std::is_invocable_v<NoForward&>);
  return 0;
}
