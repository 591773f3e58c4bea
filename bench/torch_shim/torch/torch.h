// The include line of a libtorch program, pointed at dl: bench/torch_step.cpp (like tests/torch_compat/*.cpp) is written for
// libtorch (#include <torch/torch.h>) and built unchanged against dl with -Ibench/torch_shim.
#pragma once
#include <dl/torch.hpp>
