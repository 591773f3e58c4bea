// dl/data/data.hpp — the whole data pipeline (PyTorch's torch.utils.data and torchvision's
// datasets/transforms): datasets, samplers, collation, DataLoader, transforms, file readers.
#pragma once

#include "collate.hpp"
#include "dataloader.hpp"
#include "dataset.hpp"
#include "io.hpp"
#include "rng.hpp"
#include "sampler.hpp"
#include "transforms.hpp"
#include "vision.hpp"
