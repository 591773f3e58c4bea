// bench/conv.cpp — convolution and pooling: LeNet's two convolutions and poolings at batch 64
// (forward, and forward + backward as in training), and a 3x3, 64-channel, 56x56 layer. Prints
// milliseconds; bench/conv.py measures PyTorch, bench/run_kernels.py compares.
#include <dl/dl.hpp>

#include "common.hpp"

namespace F = dl::nn::functional;

namespace {

/// Forward, and forward + backward (dL/dy given) of one layer; reported in ms.
template <class Fwd>
void layer(const std::string& name, Fwd fwd, const std::vector<dl::Tensor<float>>& params) {
  dl::Tensor<float> y;
  {
    dl::NoGradGuard no_grad;
    bench::report(name + "_fwd/dl", 1e3 * bench::median_seconds([&] { y = fwd(); }, 15), "ms");
  }
  y = fwd();
  const auto gy = dl::randn(y.shape());
  bench::report(name + "_fwdbwd/dl", 1e3 * bench::median_seconds([&] {
                  for (const auto& p : params) p.mutable_grad() = dl::Tensor<float>();
                  fwd().backward(gy);
                }, 15), "ms");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "builtin") dl::set_gemm_backend(dl::GemmBackend::builtin);
  const int64_t batch = 64;
  {  // LeNet conv1: 1 -> 6 channels, 5x5, padding 2, on 28x28 (the input needs no gradient)
    const auto x = dl::randn({batch, 1, 28, 28});
    auto w = dl::randn({6, 1, 5, 5}).requires_grad_(), b = dl::randn({6}).requires_grad_();
    layer("lenet_conv1", [&] { return F::conv2d(x, w, b, 1, 2); }, {w, b});
  }
  {  // LeNet conv2: 6 -> 16 channels, 5x5 on 14x14
    auto x = dl::randn({batch, 6, 14, 14}).requires_grad_();
    auto w = dl::randn({16, 6, 5, 5}).requires_grad_(), b = dl::randn({16}).requires_grad_();
    layer("lenet_conv2", [&] { return F::conv2d(x, w, b); }, {x, w, b});
  }
  {  // LeNet poolings
    auto x1 = dl::randn({batch, 6, 28, 28}).requires_grad_();
    layer("lenet_pool1", [&] { return F::max_pool2d(x1, 2); }, {x1});
    auto x2 = dl::randn({batch, 16, 10, 10}).requires_grad_();
    layer("lenet_pool2", [&] { return F::max_pool2d(x2, 2); }, {x2});
  }
  for (int64_t n : {1, 8}) {  // ResNet-style 3x3 layer, 64 -> 64 channels on 56x56
    auto x = dl::randn({n, 64, 56, 56}).requires_grad_();
    auto w = dl::randn({64, 64, 3, 3}).requires_grad_();
    layer("conv3x3_64_56_b" + std::to_string(n), [&] { return F::conv2d(x, w, {}, 1, 1); }, {x, w});
  }
}
