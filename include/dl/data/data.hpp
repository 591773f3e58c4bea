// dl/data/data.hpp — the whole data pipeline (torch.utils.data plus torchvision's datasets and
// transforms): datasets, samplers, collation, DataLoader, transforms, file readers.
//
//   namespace data = dl::data;
//   auto train = data::FashionMNIST("/usr/share/datasets/fashion-mnist", /*train=*/true,
//                                   data::transforms::Normalize({0.2860f}, {0.3530f}));
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = 2, .seed = 0});
//   for (auto& [images, labels] : loader) { /* Tensor<float> [128, 1, 28, 28], Tensor<int64_t> [128] */ }
#pragma once

#include "collate.hpp"
#include "dataloader.hpp"
#include "dataset.hpp"
#include "io.hpp"
#include "rng.hpp"
#include "sampler.hpp"
#include "transforms.hpp"
#include "vision.hpp"

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
// The loaders of the built-in image datasets with their usual transform (see data/vision.hpp).
DL_EXTERN_TEMPLATE(data, class dl::data::DataLoader<dl::data::FashionMNIST<dl::data::transforms::Normalize>>)
DL_EXTERN_TEMPLATE(data, class dl::data::DataLoader<dl::data::MNIST<dl::data::transforms::Normalize>>)
