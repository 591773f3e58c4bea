// dl/ops/rearrange.hpp — reordering elements and index grids: flip, roll, rot90, meshgrid,
// tril_indices, triu_indices. flip/roll/rot90/meshgrid are differentiable.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "../tensor.hpp"
#include "kernel_backward.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// A copy of x with the order of elements reversed along each of dims (negative dims count from
/// the end; a dim may appear once).
template <scalar_type T>
Tensor<T> flip(const Tensor<T>& x, Dims dims);
/// A copy of x shifted circularly by shifts[i] along dims[i] (elements leaving at one end come
/// back at the other). Without dims, x is rolled as a flattened tensor (one shift) and keeps its
/// shape. [0, 1, 2, 3] rolled by 1 -> [3, 0, 1, 2].
template <scalar_type T>
Tensor<T> roll(const Tensor<T>& x, Dims shifts, Dims dims = {});
/// x rotated by 90 degrees k times in the plane of dims (from dims[0] towards dims[1]); k may be
/// negative. x must have at least 2 dims.
template <scalar_type T>
Tensor<T> rot90(const Tensor<T>& x, int64_t k = 1, Dims dims = {0, 1});
/// Coordinate grids of 0-d or 1-d tensors: with sizes s0, s1, ... every output has shape
/// [s0, s1, ...] ("ij") and output i varies along dim i; "xy" swaps the first two dims of every
/// output (Cartesian indexing). The outputs are expanded views of the inputs.
template <scalar_type T>
std::vector<Tensor<T>> meshgrid(const std::vector<Tensor<T>>& tensors, std::string_view indexing = "ij");
template <scalar_type T>
std::vector<Tensor<T>> meshgrid(std::initializer_list<Tensor<T>> tensors, std::string_view indexing = "ij") {
  return meshgrid(std::vector<Tensor<T>>(tensors), indexing);
}
/// Coordinates of the lower (upper) triangle of a row x col matrix, row by row, as a [2, N]
/// int64 tensor; `offset` moves the diagonal up (> 0) or down (< 0), as in tril/triu.
Tensor<int64_t> tril_indices(int64_t row, int64_t col, int64_t offset = 0);
Tensor<int64_t> triu_indices(int64_t row, int64_t col, int64_t offset = 0);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// out[i0, i1, ...] = x[src[0][i0], src[1][i1], ...] with out contiguous (an empty src[d] means
/// the identity along d). Per-dim offset tables are built once; rows of the last dim run in
/// parallel.
template <class T>
Tensor<T> remap(const Tensor<T>& x, const std::vector<std::vector<int64_t>>& src) {
  Tensor<T> out = empty<T>(x.shape());
  const int nd = x.dim();
  if (out.numel() == 0) return out;
  if (nd == 0) {
    out.data()[0] = x.data()[0];
    return out;
  }
  std::vector<std::vector<int64_t>> off(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) {
    off[size_t(d)].resize(size_t(x.shape()[d]));
    for (int64_t i = 0; i < x.shape()[d]; ++i) off[size_t(d)][size_t(i)] = (src[size_t(d)].empty() ? i : src[size_t(d)][size_t(i)]) * x.strides()[d];
  }
  const int64_t last = x.shape()[nd - 1], rows = out.numel() / last;
  const T* in = x.data();
  T* o = out.data();
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / last), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t base = 0, rem = r;
      for (int d = nd - 2; d >= 0; --d) {
        base += off[size_t(d)][size_t(rem % x.shape()[d])];
        rem /= x.shape()[d];
      }
      const int64_t* lo = off[size_t(nd - 1)].data();
      T* dst = o + r * last;
      for (int64_t j = 0; j < last; ++j) dst[j] = in[base + lo[j]];
    }
  });
  return out;
}

/// Wrapped dims, each at most once (PyTorch's "dim 0 appears multiple times" error).
inline Dims unique_dims(const Dims& dims, int ndim, const char* what) {
  Dims out;
  for (int64_t d : dims) {
    const int w = wrap_dim(d, ndim, what);
    DL_CHECK(std::find(out.begin(), out.end(), w) == out.end(), "dim ", w, " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

}  // namespace detail

template <scalar_type T>
Tensor<T> flip(const Tensor<T>& x, Dims dims) {
  const Dims ds = detail::unique_dims(dims, x.dim(), "flip");
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(x.dim()));
  for (int64_t d : ds) {
    if (x.dim() == 0) continue;
    const int64_t n = x.shape()[d];
    for (int64_t i = 0; i < n; ++i) src[size_t(d)].push_back(n - 1 - i);
  }
  Tensor<T> out = detail::remap(x, src);
  return detail::record_kernel(std::move(out), "FlipBackward0", {}, [ds](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{flip(g, ds).impl()};
  }, x);
}

template <scalar_type T>
Tensor<T> roll(const Tensor<T>& x, Dims shifts, Dims dims) {
  DL_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    DL_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
    return roll(x.flatten(), shifts, Dims{0}).view(x.shape());
  }
  DL_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  // The total shift per dim (a dim may be named more than once; its shifts add up).
  std::vector<int64_t> total(static_cast<size_t>(std::max(x.dim(), 1)), 0);
  for (int i = 0; i < dims.size(); ++i) total[size_t(wrap_dim(dims[i], x.dim(), "roll"))] += shifts[i];
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(x.dim()));
  for (int d = 0; d < x.dim(); ++d) {
    const int64_t n = x.shape()[d];
    if (n == 0 || total[size_t(d)] % n == 0) continue;
    const int64_t s = ((total[size_t(d)] % n) + n) % n;
    for (int64_t i = 0; i < n; ++i) src[size_t(d)].push_back((i - s + n) % n);
  }
  Tensor<T> out = detail::remap(x, src);
  Dims back = shifts;
  for (int64_t& s : back) s = -s;
  return detail::record_kernel(std::move(out), "RollBackward0", {}, [back, dims](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{roll(g, back, dims).impl()};
  }, x);
}

template <scalar_type T>
Tensor<T> rot90(const Tensor<T>& x, int64_t k, Dims dims) {
  DL_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
  DL_CHECK(x.dim() >= 2, "expected total dims >= 2, but got total dims = ", x.dim());
  DL_CHECK(dims[0] != dims[1] && std::abs(dims[0] - dims[1]) != x.dim(), "expected rotation dims to be different, but got dim0 = ",
           dims[0], " and dim1 = ", dims[1]);
  const int d0 = wrap_dim(dims[0], x.dim(), "rot90"), d1 = wrap_dim(dims[1], x.dim(), "rot90");
  switch (((k % 4) + 4) % 4) {
    case 1: return flip(x, {d1}).transpose(d0, d1);
    case 2: return flip(x, {d0, d1});
    case 3: return flip(x, {d0}).transpose(d0, d1);
    default: return x.clone();
  }
}

template <scalar_type T>
std::vector<Tensor<T>> meshgrid(const std::vector<Tensor<T>>& tensors, std::string_view indexing) {
  DL_CHECK(!tensors.empty(), "meshgrid expects a non-empty TensorList");
  DL_CHECK(indexing == "ij" || indexing == "xy", "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  for (const auto& t : tensors)
    DL_CHECK(t.dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: tensor of shape ", t.shape());
  // "xy" is "ij" of the first two inputs swapped, with the first two outputs swapped back.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  std::vector<Tensor<T>> in = tensors;
  if (swap) std::swap(in[0], in[1]);
  Shape shape;
  for (const auto& t : in) shape.push_back(t.numel());
  std::vector<Tensor<T>> out;
  for (int i = 0; i < int(in.size()); ++i) {
    Shape view = Dims::filled(shape.size(), 1);
    view[i] = -1;
    Tensor<T> g = in[size_t(i)].reshape(view).expand(shape);
    out.push_back(g);
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

namespace detail {
inline Tensor<int64_t> triangle_indices(int64_t row, int64_t col, int64_t offset, bool lower) {
  DL_CHECK(row >= 0, "row must be non-negative, got ", row);
  DL_CHECK(col >= 0, "col must be non-negative, got ", col);
  std::vector<int64_t> rs, cs;
  for (int64_t r = 0; r < row; ++r)
    for (int64_t c = 0; c < col; ++c)
      if (lower ? c - r <= offset : c - r >= offset) rs.push_back(r), cs.push_back(c);
  Tensor<int64_t> out = empty<int64_t>({2, int64_t(rs.size())});
  std::copy(rs.begin(), rs.end(), out.data());
  std::copy(cs.begin(), cs.end(), out.data() + rs.size());
  return out;
}
}  // namespace detail

inline Tensor<int64_t> tril_indices(int64_t row, int64_t col, int64_t offset) { return detail::triangle_indices(row, col, offset, true); }
inline Tensor<int64_t> triu_indices(int64_t row, int64_t col, int64_t offset) { return detail::triangle_indices(row, col, offset, false); }

// ---- Tensor members

template <scalar_type T>
Tensor<T> Tensor<T>::flip(Dims dims) const { return dl::flip(*this, dims); }
template <scalar_type T>
Tensor<T> Tensor<T>::roll(Dims shifts, Dims dims) const { return dl::roll(*this, shifts, dims); }
template <scalar_type T>
Tensor<T> Tensor<T>::rot90(int64_t k, Dims dims) const { return dl::rot90(*this, k, dims); }

}  // namespace dl
