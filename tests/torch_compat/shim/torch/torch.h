// The include line of a libtorch program, pointed at dl: tests/torch_compat/*.cpp are written for
// libtorch (#include <torch/torch.h>) and built unchanged against dl with -Itests/torch_compat/shim.
#pragma once
#include <dl/torch.hpp>
