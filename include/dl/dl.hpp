// dl/dl.hpp — everything in dl that needs no GPU.
#pragma once

#include "autograd/gradcheck.hpp"
#include "data/data.hpp"
#include "nn/functional.hpp"
#include "ops/conv.hpp"
#include "ops/gemm.hpp"
#include "ops/indexing.hpp"
#include "ops/matmul.hpp"
#include "ops/pool.hpp"
#include "tensor.hpp"
