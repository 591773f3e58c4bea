// dl/ops/index_geometry.hpp — how gather, scatter, index_select/add/copy/fill, advanced indexing
// (x[idx...]) and index_put address their operands on a GPU, and the hooks <dl/cuda.hpp> fills in
// to run them there.
//
// Every one of these ops is an "indexed copy" over an iteration space: element p of the space has
// an offset in a dense operand (the output of a gather, the source of a scatter) and an offset in
// the indexed operand, part fixed strides and part read from index tensors:
//
//   indexed(p) = sum_d p[d] * base[d] + sum_i wrap(idx_i[p . idx_stride_i]) * step_i
//
// gather(x, d, index): space = index's shape, base = x's strides with 0 at d, one index tensor
// stepping x's stride d. x[i0, i1] with trailing dims: space = broadcast(index shapes) ++ x's
// trailing shape, base = 0 over the broadcast dims and x's strides over the trailing ones, one
// index tensor per leading dim of x. The element rule (index_offsets) is __host__ __device__: the
// CUDA kernel (dl/cuda/indexing.hpp) runs it on the GPU and tests/device_dispatch.cpp runs it on
// the CPU against the CPU ops, so the geometry is checked without a GPU.
#pragma once

#include <cstdint>
#include <memory>

#include "../config.hpp"
#include "../dtype.hpp"
#include "../error.hpp"
#include "../backend/dispatch.hpp"
#include "../storage.hpp"

namespace dl::detail {

/// The addressing of one indexed copy (see the file comment). Trivially copyable: passed to the
/// CUDA kernel by value (under 1 KB of parameters).
struct IndexGeometry {
  int nd = 0;                             // dims of the iteration space
  int nidx = 0;                           // index tensors
  int64_t numel = 1;                      // elements of the iteration space
  int64_t size[kMaxDims] = {};            // the iteration space
  int64_t dense[kMaxDims] = {};           // strides of the dense operand over the space (0: a scalar)
  int64_t base[kMaxDims] = {};            // fixed strides of the indexed operand over the space
  const int64_t* idx[kMaxDims] = {};      // index tensors' data (on the operands' device)
  int64_t idx_stride[kMaxDims][kMaxDims] = {};  // their strides over the space (0: broadcast)
  int64_t bound[kMaxDims] = {};           // size of the dim index tensor i addresses
  int64_t step[kMaxDims] = {};            // the indexed operand's stride along that dim
  int dim_of[kMaxDims] = {};              // that dim (for error messages)
};

/// Offsets of element j of the space in the dense and the indexed operand. An index outside
/// [-bound, bound) makes it return false with the index tensor's number in *which and the value
/// in *bad; negative indices count from the end.
DL_HD inline bool index_offsets(const IndexGeometry& g, int64_t j, int64_t* dense, int64_t* indexed, int* which, int64_t* bad) {
  int64_t p[kMaxDims];
  for (int d = g.nd - 1; d >= 0; --d) {
    p[d] = j % g.size[d];
    j /= g.size[d];
  }
  int64_t o_dense = 0, o_indexed = 0;
  for (int d = 0; d < g.nd; ++d) {
    o_dense += p[d] * g.dense[d];
    o_indexed += p[d] * g.base[d];
  }
  for (int i = 0; i < g.nidx; ++i) {
    int64_t o = 0;
    for (int d = 0; d < g.nd; ++d) o += p[d] * g.idx_stride[i][d];
    int64_t k = g.idx[i][o];
    if (k < -g.bound[i] || k >= g.bound[i]) {
      *which = i;
      *bad = k;
      return false;
    }
    if (k < 0) k += g.bound[i];
    o_indexed += k * g.step[i];
  }
  *dense = o_dense;
  *indexed = o_indexed;
  return true;
}

/// What an indexed copy does with its two operands.
enum class IndexMode : int {
  Gather,  // dense(p) = indexed(p)
  Assign,  // indexed(p) = dense(p) (or the value)
  Add,     // indexed(p) += dense(p) (atomic: duplicates accumulate, in no fixed order)
};

/// The hooks for a CUDA tensor, or the error that says how to get them.
inline const DeviceBackend& index_hooks_for(Device d) {
  const DeviceBackend& h = device_backend(d.type);
  if (!h.indexed_copy) [[unlikely]]
    throw Error(cat("cannot index a tensor on ", d,
                    ": the CUDA indexing kernels are not in this program (include <dl/cuda.hpp> in a translation unit "
                    "compiled by nvcc; build with the CUDA toolkit: Meson option -Dcuda=enabled)"));
  return h;
}

}  // namespace dl::detail
