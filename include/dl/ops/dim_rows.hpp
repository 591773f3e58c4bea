// dl/ops/dim_rows.hpp — the 1-d rows of a strided tensor along one dim, shared by the kernels that
// work row by row (sort, topk, median, cumsum, searchsorted...).
#pragma once

#include "../shape.hpp"

namespace dl::detail {

/// Row r (r in [0, count)) of a (shape, strides) tensor along `dim` starts at offset(r) and steps
/// by `stride`; rows enumerate the other dims in row-major order. A 0-d tensor is one row of one
/// element. Example: shape [2, 3, 4], dim 1 -> 8 rows of n = 3 elements.
struct DimRows {
  Shape outer_shape;
  Strides outer_strides;
  int64_t count = 1, n = 1, stride = 1;

  DimRows(const Shape& shape, const Strides& strides, int dim) {
    for (int d = 0; d < shape.size(); ++d) {
      if (d == dim) {
        n = shape[d];
        stride = strides[d];
      } else {
        outer_shape.push_back(shape[d]);
        outer_strides.push_back(strides[d]);
        count *= shape[d];
      }
    }
  }
  int64_t offset(int64_t r) const {
    int64_t o = 0;
    for (int d = outer_shape.size() - 1; d >= 0; --d) {
      o += (r % outer_shape[d]) * outer_strides[d];
      r /= outer_shape[d];
    }
    return o;
  }
  /// Rows per parallel chunk so that a chunk holds roughly 32K elements.
  int64_t grain() const { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)); }
};

}  // namespace dl::detail
