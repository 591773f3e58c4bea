// dl/models/vgg.hpp — VGG-11 with batch normalisation (torchvision's vgg11_bn: the same module
// names, printout and parameter count). Untrained.
#pragma once

#include "../nn.hpp"

namespace dl::models {

// ------------------------------------------------------------------------------ declarations

/// torchvision's VGG: features (convolutions), a 7x7 adaptive average pool and a 3-layer classifier.
class VGG : public nn::Module {
 public:
  VGG(nn::Sequential<> features, int64_t num_classes = 1000, double dropout = 0.5);
  nn::Sequential<> features;
  nn::AdaptiveAvgPool2d avgpool{{7, 7}};
  nn::Sequential<> classifier;
  Tensor<float> forward(const Tensor<float>& x) { return classifier(avgpool(features(x)).flatten(1)); }
  DL_MODULE(VGG, features, avgpool, classifier)
};

/// VGG-11 ("A": 8 convolutions) with BatchNorm after each convolution; 132,868,840 parameters.
VGG vgg11_bn(int64_t num_classes = 1000);

// ------------------------------------------------------------------------------ implementation

inline VGG::VGG(nn::Sequential<> f, int64_t num_classes, double dropout) : features(std::move(f)) {
  classifier.push_back(nn::Linear(512 * 7 * 7, 4096))
      .push_back(nn::ReLU(true))
      .push_back(nn::Dropout(dropout))
      .push_back(nn::Linear(4096, 4096))
      .push_back(nn::ReLU(true))
      .push_back(nn::Dropout(dropout))
      .push_back(nn::Linear(4096, num_classes));
  // torchvision's initialisation.
  apply([](nn::Module& m) {
    if (auto* c = m.as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0, "fan_out", "relu");
      if (c->bias.defined()) nn::init::zeros_(c->bias);
    } else if (auto* l = m.as<nn::Linear>()) {
      nn::init::normal_(l->weight, 0, 0.01);
      nn::init::zeros_(l->bias);
    }
  });
}

inline VGG vgg11_bn(int64_t num_classes) {
  nn::Sequential<> f;
  int64_t in = 3;
  for (int64_t v : {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1}) {
    if (v < 0) {
      f.push_back(nn::MaxPool2d(2, {.stride = 2}));
      continue;
    }
    f.push_back(nn::Conv2d(in, v, 3, {.padding = 1})).push_back(nn::BatchNorm2d(v)).push_back(nn::ReLU(true));
    in = v;
  }
  return VGG(std::move(f), num_classes);
}

}  // namespace dl::models
