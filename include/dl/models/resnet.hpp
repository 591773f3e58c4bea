// dl/models/resnet.hpp — ResNet-18 and ResNet-34 (torchvision's architecture: the same module
// names, printout and parameter count, so a torchvision state dict loads directly), and their
// CIFAR-style variant with a 3x3 stride-1 stem and no max pooling for 32 x 32 images. Untrained.
//   auto net = dl::models::resnet18(/*num_classes=*/1000);      // 11,689,512 parameters
//   net.load_state_dict(dl::load("resnet18.pth"));               // torch.save(model.state_dict(), ...)
#pragma once

#include <vector>

#include "../nn.hpp"

namespace dl::models {

// ------------------------------------------------------------------------------ declarations

/// Two 3x3 convolutions with batch norm and a residual connection (torchvision's BasicBlock).
class BasicBlock : public nn::Module {
 public:
  static constexpr int64_t expansion = 1;
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride = 1, std::optional<nn::Sequential<>> downsample = std::nullopt);
  nn::Conv2d<> conv1, conv2;
  nn::BatchNorm2d<> bn1, bn2;
  nn::ReLU relu{/*inplace=*/true};
  std::optional<nn::Sequential<>> downsample;
  Tensor<float> forward(const Tensor<float>& x);
  DL_MODULE(BasicBlock, conv1, bn1, relu, conv2, bn2, downsample)
};

struct ResNetOptions {
  int64_t num_classes = 1000;
  /// A 3x3 stride-1 first convolution and no max pooling (nn::Identity in its place): for 32 x 32
  /// images such as CIFAR-10.
  bool cifar_stem = false;
  /// Start each residual branch at zero (the last BatchNorm's weight), as torchvision's option.
  bool zero_init_residual = false;
};

/// torchvision's ResNet with BasicBlocks; blocks per stage, e.g. {2, 2, 2, 2} for ResNet-18.
class ResNet : public nn::Module {
 public:
  ResNet(const std::vector<int64_t>& blocks, const ResNetOptions& o = {});
  nn::Conv2d<> conv1;
  nn::BatchNorm2d<> bn1;
  nn::ReLU relu{/*inplace=*/true};
  nn::AnyModule maxpool;  // MaxPool2d(3, stride 2, padding 1), or Identity with the CIFAR stem
  nn::Sequential<> layer1, layer2, layer3, layer4;
  nn::AdaptiveAvgPool2d avgpool{{1, 1}};
  nn::Linear<> fc;
  /// [N, 3, H, W] -> [N, num_classes] logits.
  Tensor<float> forward(const Tensor<float>& x);
  DL_MODULE(ResNet, conv1, bn1, relu, maxpool, layer1, layer2, layer3, layer4, avgpool, fc)

 private:
  int64_t inplanes_ = 64;
  nn::Sequential<> make_layer(int64_t planes, int64_t blocks, int64_t stride);
};

ResNet resnet18(int64_t num_classes = 1000);
ResNet resnet34(int64_t num_classes = 1000);
/// The CIFAR-style variants (3x3 stem, no max pooling).
ResNet resnet18_cifar(int64_t num_classes = 10);
ResNet resnet34_cifar(int64_t num_classes = 10);

// ------------------------------------------------------------------------------ implementation

inline BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride, std::optional<nn::Sequential<>> ds)
    : conv1(inplanes, planes, 3, {.stride = stride, .padding = 1, .bias = false}),
      conv2(planes, planes, 3, {.stride = 1, .padding = 1, .bias = false}),
      bn1(planes),
      bn2(planes),
      downsample(std::move(ds)) {}

inline Tensor<float> BasicBlock::forward(const Tensor<float>& x) {
  Tensor<float> out = relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  const Tensor<float> identity = downsample ? (*downsample)(x) : x;
  return relu(Tensor<float>(out + identity));
}

inline ResNet::ResNet(const std::vector<int64_t>& blocks, const ResNetOptions& o)
    : conv1(o.cifar_stem ? nn::Conv2d<>(3, 64, 3, {.stride = 1, .padding = 1, .bias = false})
                         : nn::Conv2d<>(3, 64, 7, {.stride = 2, .padding = 3, .bias = false})),
      bn1(64),
      maxpool(o.cifar_stem ? nn::AnyModule(nn::Identity()) : nn::AnyModule(nn::MaxPool2d(3, {.stride = 2, .padding = 1}))),
      fc(512 * BasicBlock::expansion, o.num_classes) {
  DL_CHECK(blocks.size() == 4, "ResNet: expected 4 stages of blocks, got ", blocks.size());
  layer1 = make_layer(64, blocks[0], 1);
  layer2 = make_layer(128, blocks[1], 2);
  layer3 = make_layer(256, blocks[2], 2);
  layer4 = make_layer(512, blocks[3], 2);
  // torchvision's initialisation: He-normal (fan_out) convolutions, unit BatchNorm.
  apply([&](nn::Module& m) {
    if (auto* c = m.as<nn::Conv2d>()) nn::init::kaiming_normal_(c->weight, 0, "fan_out", "relu");
  });
  if (o.zero_init_residual)
    apply([](nn::Module& m) {
      if (auto* b = m.as<BasicBlock>()) nn::init::zeros_(b->bn2.weight);
    });
}

inline nn::Sequential<> ResNet::make_layer(int64_t planes, int64_t blocks, int64_t stride) {
  std::optional<nn::Sequential<>> downsample;
  if (stride != 1 || inplanes_ != planes * BasicBlock::expansion)
    downsample = nn::Sequential<>(nn::Conv2d(inplanes_, planes * BasicBlock::expansion, 1, {.stride = stride, .bias = false}),
                                  nn::BatchNorm2d(planes * BasicBlock::expansion));
  nn::Sequential<> layer;
  layer.push_back(BasicBlock(inplanes_, planes, stride, std::move(downsample)));
  inplanes_ = planes * BasicBlock::expansion;
  for (int64_t i = 1; i < blocks; ++i) layer.push_back(BasicBlock(inplanes_, planes));
  return layer;
}

inline Tensor<float> ResNet::forward(const Tensor<float>& x) {
  Tensor<float> y = maxpool(relu(bn1(conv1(x))));
  y = layer4(layer3(layer2(layer1(y))));
  return fc(avgpool(y).flatten(1));
}

inline ResNet resnet18(int64_t num_classes) { return ResNet({2, 2, 2, 2}, {.num_classes = num_classes}); }
inline ResNet resnet34(int64_t num_classes) { return ResNet({3, 4, 6, 3}, {.num_classes = num_classes}); }
inline ResNet resnet18_cifar(int64_t num_classes) { return ResNet({2, 2, 2, 2}, {.num_classes = num_classes, .cifar_stem = true}); }
inline ResNet resnet34_cifar(int64_t num_classes) { return ResNet({3, 4, 6, 3}, {.num_classes = num_classes, .cifar_stem = true}); }

}  // namespace dl::models
