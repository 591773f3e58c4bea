// dl/nn/functional/dropout-inl.hpp — the bodies of dl/nn/functional/dropout.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "dropout.hpp"

namespace dl::nn::functional::detail {

DL_API void check_dropout_p(double p) {
  DL_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
}

DL_API Shape feature_mask_shape(const Shape& s) {
  Shape m = Dims::filled(s.size(), 1);
  m[0] = s[0];
  m[1] = s[1];
  return m;
}

}  // namespace dl::nn::functional::detail
