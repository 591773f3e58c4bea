// dl/config.hpp — build-wide macros and limits shared by every dl header.
#pragma once

#include <cstddef>
#include <cstdint>

// One annotation for functions that must run on the host and, later, inside CUDA kernels.
#if defined(__CUDACC__)
#define DL_HD __host__ __device__
#else
#define DL_HD
#endif

// Force inlining of the tiny evaluation functions of expression trees: a fused loop is only
// fused if every node's load/apply collapses into the loop body.
#if defined(__GNUC__)
#define DL_INLINE inline __attribute__((always_inline))
#else
#define DL_INLINE inline
#endif

namespace dl {

/// Largest number of dimensions a tensor may have. Shapes and strides are stored inline (no heap)
/// so that they, and the kernel views built from them, stay trivially copyable.
inline constexpr int kMaxDims = 8;

}  // namespace dl
