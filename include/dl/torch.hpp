// dl/torch.hpp — libtorch's C++ spellings over dl: a libtorch program compiles with its include line
// changed from <torch/torch.h> to <dl/torch.hpp> (README, "Coming from libtorch", lists what else
// changes). Nothing here is a second implementation: every name is a thin spelling of dl's own
// tensors, modules, optimizers and data pipeline, so dl's speed and checks apply.
//
//   torch::Tensor                       dl::Tensor<float> (other dtypes: dl::Tensor<int64_t>, or auto)
//   torch::kFloat, torch::kLong, ...    dtype tags: torch::zeros({3}, torch::kLong) is a Tensor<int64_t>
//   torch::relu, max_pool2d, nll_loss   functions of torch::Tensor (dl/torch/core.hpp)
//   torch::nn::Module, TORCH_MODULE     dl::nn::Module; module holders with shared ownership (dl/torch/nn.hpp)
//   torch::nn::Conv2dOptions(1, 8, 3).stride(2)
//                                       builder options over dl's layers (XImpl is dl's layer;
//                                       embeddings, norms, LSTM/GRU, attention, losses: dl/torch/layers.hpp)
//   torch::nn::functional::conv2d(x, w, F::Conv2dFuncOptions().stride(2))
//                                       the functional API with its option classes (dl/torch/functional.hpp)
//   torch::optim::SGDOptions(0.1).momentum(0.9)
//                                       dl's options with chainable setters (dl/torch/optim.hpp)
//   torch::data::datasets::MNIST, transforms::Normalize/Stack/Lambda, make_data_loader
//                                       libtorch's data API over dl's DataLoader (dl/torch/data.hpp)
//   torch::save(net, "net.pt"), torch::load(net, "net.pt")
//                                       modules and tensors in libtorch's archive format (dl/torch/serialize.hpp)
#pragma once

#include "torch/core.hpp"
#include "torch/data.hpp"
#include "torch/functional.hpp"
#include "torch/layers.hpp"
#include "torch/nn.hpp"
#include "torch/optim.hpp"
#include "torch/serialize.hpp"
