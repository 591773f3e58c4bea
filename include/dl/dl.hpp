// dl/dl.hpp — everything in dl that needs no GPU.
#pragma once

#include "autograd/gradcheck.hpp"
#include "data/data.hpp"
#include "ops/indexing.hpp"
#include "tensor.hpp"
