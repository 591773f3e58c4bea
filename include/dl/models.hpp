// dl/models.hpp — dl::models, the model zoo (untrained; no downloads): mlp, lenet5, resnet18/34
// (torchvision's architecture and a CIFAR-style variant), vgg11_bn. Printouts, parameter names and
// counts are PyTorch's, so weights saved by PyTorch load directly.
#pragma once

#include "models/resnet.hpp"
#include "models/small.hpp"
#include "models/vgg.hpp"
