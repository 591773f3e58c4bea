// bench/conv.cpp — convolution and pooling: LeNet's two convolutions and poolings at batch 64
// (forward, and forward + backward as in training), a 3x3, 64-channel, 56x56 layer, and every
// convolution shape of ResNet-18 on CIFAR (32x32 inputs, batch 64) pass by pass (forward, input
// gradient, weight gradient) in GFLOP/s beside the machine's FMA peak. bench/conv.py measures
// PyTorch, bench/run_kernels.py compares.
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

/// The convolution shapes of ResNet-18 on 32x32 inputs (torchvision's layers with CIFAR's 3x3
/// stem): name, in channels, out channels, input size, kernel, stride.
struct ResNetConv {
  const char* name;
  int64_t c, o, h, k, s;
};
constexpr ResNetConv kResNet18Cifar[] = {
    {"stem_3_64_32", 3, 64, 32, 3, 1},        {"c64_64_32", 64, 64, 32, 3, 1},        {"c64_128_32_s2", 64, 128, 32, 3, 2},
    {"c128_128_16", 128, 128, 16, 3, 1},      {"sc64_128_32_s2", 64, 128, 32, 1, 2},  {"c128_256_16_s2", 128, 256, 16, 3, 2},
    {"c256_256_8", 256, 256, 8, 3, 1},        {"sc128_256_16_s2", 128, 256, 16, 1, 2}, {"c256_512_8_s2", 256, 512, 8, 3, 2},
    {"c512_512_4", 512, 512, 4, 3, 1},        {"sc256_512_8_s2", 256, 512, 8, 1, 2},
};

/// Forward, input gradient and weight gradient of one layer, each in GFLOP/s.
void resnet_layer(const ResNetConv& l, int64_t batch) {
  const auto x = dl::randn({batch, l.c, l.h, l.h}), w = dl::randn({l.o, l.c, l.k, l.k});
  const int64_t pad = l.k / 2, oh = (l.h + 2 * pad - l.k) / l.s + 1;
  const auto gy = dl::randn({batch, l.o, oh, oh});
  const double flops = 2.0 * double(batch * l.o * oh * oh * l.c * l.k * l.k);
  const std::string name = std::string("resnet18_") + l.name;
  dl::NoGradGuard no_grad;
  dl::Tensor<float> r;
  bench::report(name + "_fwd/dl", flops / bench::median_seconds([&] { r = F::conv2d(x, w, {}, l.s, pad); }) * 1e-9, "GFLOP/s");
  bench::report(name + "_input/dl",
                flops / bench::median_seconds([&] { r = dl::nn::grad::conv2d_input(x.shape(), w, gy, l.s, pad); }) * 1e-9, "GFLOP/s");
  bench::report(name + "_weight/dl",
                flops / bench::median_seconds([&] { r = dl::nn::grad::conv2d_weight(x, w.shape(), gy, l.s, pad); }) * 1e-9, "GFLOP/s");
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
  for (const ResNetConv& l : kResNet18Cifar) resnet_layer(l, 64);
  bench::report("fma_peak/dl", bench::fma_peak_gflops(dl::get_num_threads()), "GFLOP/s");
}
