// dl/nn/functional/pooling-inl.hpp — the bodies of dl/nn/functional/pooling.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "pooling.hpp"

namespace dl::nn::functional::detail {

DL_API void check_pool1d_dims(const Shape& x, const char* what) {
  DL_CHECK(x.size() == 2 || x.size() == 3, "Expected 2 to 3 dimensions, but got ", x.size(),
           "-dimensional tensor for argument #1 'self' (while checking arguments for ", what, ")");
}

}  // namespace dl::nn::functional::detail
