// dl/nn.hpp — dl::nn: modules (Module, DL_MODULE, Sequential, ModuleList, ...), the layer and loss
// library, dl::nn::functional (F), dl::nn::init, and dl::save / dl::load of state dicts.
//
//   namespace nn = dl::nn;  namespace F = dl::nn::functional;
//   auto net = nn::Sequential(nn::Linear<784, 128>(), nn::ReLU(), nn::Linear<128, 10>());
//   nn::CrossEntropyLoss criterion;
//   auto loss = criterion(net(x), y);  loss.backward();
//   dl::save(net.state_dict(), "net.safetensors");
#pragma once

#include "io/serialize.hpp"
#include "nn/activation.hpp"
#include "nn/container.hpp"
#include "nn/conv.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/functional.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/module.hpp"
#include "nn/normalization.hpp"
#include "nn/padding.hpp"
#include "nn/pixel_shuffle.hpp"
#include "nn/pooling.hpp"
#include "nn/upsample.hpp"
#include "nn/fold.hpp"
#include "nn/utils/clip_grad.hpp"
