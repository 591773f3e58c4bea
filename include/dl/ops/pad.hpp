// dl/ops/pad.hpp — the padding kernels: every padding mode (constant, reflect, replicate,
// circular, and cropping by negative pads) is a per-dimension map from output to input positions,
// so one gather kernel pads and one scatter-add kernel, its adjoint, computes the gradient. Each is
// the other's backward: derivatives of any order.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "../tensor.hpp"
#include "kernel_backward.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// Output-to-input position maps of the last k dims of a tensor: out[..., o_1, ..., o_k] reads
/// in[..., maps[0][o_1], ..., maps[k-1][o_k]], or is the fill value where any map gives -1.
struct PadMaps {
  Shape in, out;                            ///< full shapes; they differ in the last k dims only
  std::vector<std::vector<int64_t>> maps;   ///< one per padded dim, maps[j].size() == out[nd - k + j]
};

/// out = the gather of x (any strides) through the maps, `value` where a map gives -1.
template <class T>
Tensor<T> pad_gather_raw(const Tensor<T>& x, const PadMaps& m, T value);
/// The adjoint: gx (shape m.in) with gx[map(o)] += g[o] for every mapped output position o.
template <class T>
Tensor<T> pad_scatter_raw(const Tensor<T>& g, const PadMaps& m);

/// Differentiable forms (each records the other as its backward).
template <class T>
Tensor<T> pad_gather_op(const Tensor<T>& x, std::shared_ptr<const PadMaps> m, T value);
template <class T>
Tensor<T> pad_scatter_op(const Tensor<T>& g, std::shared_ptr<const PadMaps> m);

// ------------------------------------------------------------------------------ implementation

namespace pad_kernels {

/// Sizes shared by the kernels: B leading rows of the unpadded dims, and per padded dim sizes.
struct Layout {
  int nd, k;
  int64_t B = 1;        // product of the unpadded dims
  int64_t out_rows = 1;  // output rows (all padded dims but the last) per leading index
};

inline Layout layout(const PadMaps& m) {
  Layout l{m.out.size(), int(m.maps.size())};
  for (int d = 0; d < l.nd - l.k; ++d) l.B *= m.in[d];
  for (int d = l.nd - l.k; d < l.nd - 1; ++d) l.out_rows *= m.out[d];
  return l;
}

/// The input row (offset of its first element, in elements of the contiguous input, relative to
/// the leading index) that output row r reads, or -1 when the row lies in the fill region.
inline int64_t source_row(const PadMaps& m, const Layout& l, int64_t r) {
  int64_t off = 0, stride = m.in[l.nd - 1];
  for (int j = l.k - 2; j >= 0; --j) {
    const int d = l.nd - l.k + j;
    const int64_t o = r % m.out[d];
    r /= m.out[d];
    const int64_t i = m.maps[size_t(j)][size_t(o)];
    if (i < 0) return -1;
    off += i * stride;
    stride *= m.in[d];
  }
  return off;
}

}  // namespace pad_kernels

template <class T>
Tensor<T> pad_gather_raw(const Tensor<T>& x_, const PadMaps& m, T value) {
  namespace pk = pad_kernels;
  const Tensor<T> x = x_.contiguous();
  Tensor<T> out = empty<T>(m.out);
  const pk::Layout l = pk::layout(m);
  const int64_t out_w = m.out[l.nd - 1], in_plane = numel(m.in) / std::max<int64_t>(l.B, 1);
  if (out.numel() == 0) return out;
  const std::vector<int64_t>& mw = m.maps.back();
  // The interior of each row: the longest run of outputs reading consecutive inputs (a copy).
  int64_t lo = 0, hi = 0;
  for (int64_t j = 0, start = 0; j < out_w; ++j) {
    if (j > start && !(mw[size_t(j)] >= 0 && mw[size_t(j)] == mw[size_t(j - 1)] + 1)) start = j;
    if (mw[size_t(start)] < 0) start = j + 1;
    else if (j + 1 - start > hi - lo) lo = start, hi = j + 1;
  }
  const T* src = x.data();
  T* dst = out.data();
  const int64_t rows = l.B * l.out_rows;
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(out_w, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* o = dst + r * out_w;
      const int64_t b = r / l.out_rows, srow = pk::source_row(m, l, r % l.out_rows);
      if (srow < 0) {
        std::fill(o, o + out_w, value);
        continue;
      }
      const T* s = src + b * in_plane + srow;
      for (int64_t j = 0; j < lo; ++j) o[j] = mw[size_t(j)] < 0 ? value : s[mw[size_t(j)]];
      if (hi > lo) std::memcpy(o + lo, s + mw[size_t(lo)], size_t(hi - lo) * sizeof(T));
      for (int64_t j = hi; j < out_w; ++j) o[j] = mw[size_t(j)] < 0 ? value : s[mw[size_t(j)]];
    }
  });
  return out;
}

template <class T>
Tensor<T> pad_scatter_raw(const Tensor<T>& g_, const PadMaps& m) {
  namespace pk = pad_kernels;
  const Tensor<T> g = g_.contiguous();
  Tensor<T> gx = zeros<T>(m.in);
  const pk::Layout l = pk::layout(m);
  const int64_t out_w = m.out[l.nd - 1], in_plane = numel(m.in) / std::max<int64_t>(l.B, 1);
  if (g.numel() == 0 || gx.numel() == 0) return gx;
  const std::vector<int64_t>& mw = m.maps.back();
  const T* src = g.data();
  T* dst = gx.data();
  // Several output rows may map to one input row (reflect, replicate, circular): each leading
  // index is done by one thread, its rows in order, so sums do not depend on the thread count.
  parallel_for(0, l.B, std::max<int64_t>(1, 16384 / std::max<int64_t>(l.out_rows * out_w, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t r = 0; r < l.out_rows; ++r) {
        const int64_t srow = pk::source_row(m, l, r);
        if (srow < 0) continue;
        const T* gr = src + (b * l.out_rows + r) * out_w;
        T* d = dst + b * in_plane + srow;
        for (int64_t j = 0; j < out_w; ++j)
          if (mw[size_t(j)] >= 0) d[mw[size_t(j)]] += gr[j];
      }
  });
  return gx;
}

template <class T>
Tensor<T> pad_gather_op(const Tensor<T>& x, std::shared_ptr<const PadMaps> m, T value) {
  Tensor<T> out = pad_gather_raw(x, *m, value);
  return record_kernel(out, "PadBackward", {}, [m](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{pad_scatter_op(g, m).impl()};
  }, x);
}

template <class T>
Tensor<T> pad_scatter_op(const Tensor<T>& g, std::shared_ptr<const PadMaps> m) {
  Tensor<T> out = pad_scatter_raw(g, *m);
  return record_kernel(out, "PadBackwardBackward", {}, [m](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{pad_gather_op(gg, m, T(0)).impl()};
  }, g);
}

}  // namespace dl::detail
