// dl/dl.hpp — everything in dl that needs no GPU: tensors and autograd, the compute kernels, dl::nn
// (modules, layers, losses, init, functional), dl::optim (optimizers and schedulers), dl::data,
// save/load of state dicts, and dl::utils (progress bar, SVG charts). The model zoo is separate,
// as torchvision is: include <dl/models.hpp> (it compiles every model's kernels).
#pragma once

#include "autograd/gradcheck.hpp"
#include "data/data.hpp"
#include "distributions.hpp"
#include "deterministic.hpp"
#include "io/serialize.hpp"
#include "linalg.hpp"
#include "nn.hpp"
#include "ops/conv.hpp"
#include "ops/einsum.hpp"
#include "ops/gemm.hpp"
#include "ops/indexing.hpp"
#include "ops/matmul.hpp"
#include "ops/pool.hpp"
#include "ops/rearrange.hpp"
#include "ops/scan.hpp"
#include "ops/sorting.hpp"
#include "ops/windows.hpp"
#include "optim.hpp"
#include "profiler.hpp"
#include "tensor.hpp"
#include "utils/plot.hpp"
#include "utils/progress.hpp"
