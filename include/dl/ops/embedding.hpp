// dl/ops/embedding.hpp — the row kernels of embedding: gathering rows of a table by index and its
// adjoint, scatter-adding rows into a table (gradients of repeated indices accumulate), each with
// an optional skipped index (padding_idx) and per-index scale (scale_grad_by_freq). The two
// differentiable forms record each other as backward.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "../tensor.hpp"
#include "kernel_backward.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// out[i, :] = table[index[i], :] * scale[i]; zeros where index[i] == skip. index contiguous
/// [n] with values in [0, V) (checked by the caller), table [V, D] any strides, scale [n] or
/// undefined.
template <class T>
Tensor<T> gather_rows_raw(const Tensor<T>& table, const Tensor<int64_t>& index, int64_t skip, const Tensor<T>& scale);
/// The adjoint: out [V, D] with out[v, :] = sum of src[i, :] * scale[i] over i with
/// index[i] == v != skip, accumulated in index order (independent of the thread count).
template <class T>
Tensor<T> scatter_rows_raw(const Tensor<T>& src, const Tensor<int64_t>& index, int64_t V, int64_t skip, const Tensor<T>& scale);

/// Differentiable forms; each records the other as its backward.
template <class T>
Tensor<T> gather_rows_op(const Tensor<T>& table, const Tensor<int64_t>& index, int64_t skip, const Tensor<T>& scale);
template <class T>
Tensor<T> scatter_rows_op(const Tensor<T>& src, const Tensor<int64_t>& index, int64_t V, int64_t skip, const Tensor<T>& scale);

// ------------------------------------------------------------------------------ implementation

template <class T>
Tensor<T> gather_rows_raw(const Tensor<T>& table, const Tensor<int64_t>& index, int64_t skip, const Tensor<T>& scale) {
  const int64_t n = index.numel(), D = table.size(1);
  Tensor<T> out = empty<T>({n, D});
  const T* w = table.data();
  const int64_t rs = table.stride(0), cs = table.stride(1);
  const int64_t* idx = index.data();
  const T* sc = scale.defined() ? scale.data() : nullptr;
  T* o = out.data();
  parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T* dst = o + i * D;
      if (idx[i] == skip) {
        std::fill(dst, dst + D, T(0));
        continue;
      }
      const T* src = w + idx[i] * rs;
      if (!sc && cs == 1) {
        std::memcpy(dst, src, size_t(D) * sizeof(T));
      } else {
        const T s = sc ? sc[i] : T(1);
        for (int64_t j = 0; j < D; ++j) dst[j] = src[j * cs] * s;
      }
    }
  });
  return out;
}

template <class T>
Tensor<T> scatter_rows_raw(const Tensor<T>& src_, const Tensor<int64_t>& index, int64_t V, int64_t skip, const Tensor<T>& scale) {
  const Tensor<T> src = src_.contiguous();
  const int64_t n = index.numel(), D = src.size(1);
  Tensor<T> out = zeros<T>({V, D});
  const int64_t* idx = index.data();
  const T* sc = scale.defined() ? scale.data() : nullptr;
  const T* g = src.data();
  T* o = out.data();
  // Each thread owns a range of table rows and scans every index: a row is summed by one thread,
  // in index order.
  parallel_for(0, V, std::max<int64_t>(1, V / 64), [&](int64_t v0, int64_t v1) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[i];
      if (v < v0 || v >= v1 || v == skip) continue;
      T* dst = o + v * D;
      const T* row = g + i * D;
      if (sc) {
        const T s = sc[i];
        for (int64_t j = 0; j < D; ++j) dst[j] += row[j] * s;
      } else {
        for (int64_t j = 0; j < D; ++j) dst[j] += row[j];
      }
    }
  });
  return out;
}

template <class T>
Tensor<T> gather_rows_op(const Tensor<T>& table, const Tensor<int64_t>& index, int64_t skip, const Tensor<T>& scale) {
  Tensor<T> out = gather_rows_raw(table, index, skip, scale);
  const int64_t V = table.size(0);
  return record_kernel(out, "EmbeddingBackward", {}, {index.impl()},
                       [index, V, skip, scale](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                         return std::vector<TensorImplPtr>{scatter_rows_op(g, index, V, skip, scale).impl()};
                       },
                       table);
}

template <class T>
Tensor<T> scatter_rows_op(const Tensor<T>& src, const Tensor<int64_t>& index, int64_t V, int64_t skip, const Tensor<T>& scale) {
  Tensor<T> out = scatter_rows_raw(src, index, V, skip, scale);
  return record_kernel(out, "EmbeddingDenseBackward", {}, {index.impl()},
                       [index, skip, scale](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                         return std::vector<TensorImplPtr>{gather_rows_op(g, index, skip, scale).impl()};
                       },
                       src);
}

}  // namespace dl::detail
