// dl/nn/functional/normalization-inl.hpp — the bodies of dl/nn/functional/normalization.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "normalization.hpp"

namespace dl::nn::functional::detail {

DL_API void check_param(const char* what, int64_t expected, const Shape& got) {
  DL_CHECK(numel(got) == expected, what, " should contain ", expected, " elements not ", numel(got));
}

}  // namespace dl::nn::functional::detail
