// dl/dl.hpp — everything in dl that needs no GPU.
#pragma once

#include "ops/indexing.hpp"
#include "tensor.hpp"
