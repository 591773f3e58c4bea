// dl/expr/reduce_kernels.hpp — reduction kernels on kernel views (sum, prod, max, min, all, any),
// over every element or over a set of dims, fusing the elementwise expression they read.
// Work is split in fixed blocks of the flattened index space and partial results are combined in
// a fixed order, so results are bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "loop.hpp"

namespace dl::expr {

/// Elements per reduction block (the unit of deterministic partial sums).
inline constexpr int64_t kReduceBlock = 32768;

// ---------------------------------------------------------------------------------------------
// Reducers: identity and combine for an accumulator type A (scalar or batch of A).
// ---------------------------------------------------------------------------------------------

template <class A>
struct SumReducer {
  DL_HD static constexpr A identity() { return A(0); }
  template <class V>
  DL_HD DL_INLINE static V combine(const V& a, const V& b) {
    if constexpr (std::is_same_v<V, bool>) return a || b;
    else return a + b;
  }
};
template <class A>
struct ProdReducer {
  DL_HD static constexpr A identity() { return A(1); }
  template <class V>
  DL_HD DL_INLINE static V combine(const V& a, const V& b) {
    if constexpr (std::is_same_v<V, bool>) return a && b;
    else return a * b;
  }
};
/// Max with NaN propagation (a NaN anywhere makes the result NaN, as in PyTorch).
template <class A>
struct MaxReducer {
  DL_HD static constexpr A identity() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  template <class V>
  DL_HD DL_INLINE static V combine(const V& a, const V& b) {
    if constexpr (floating_scalar<scalar_of_t<V>>) return select((b > a) | nan_lanes(b), b, a);
    else return select(b > a, b, a);
  }
};
template <class A>
struct MinReducer {
  DL_HD static constexpr A identity() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  template <class V>
  DL_HD DL_INLINE static V combine(const V& a, const V& b) {
    if constexpr (floating_scalar<scalar_of_t<V>>) return select((b < a) | nan_lanes(b), b, a);
    else return select(b < a, b, a);
  }
};
struct AllReducer {
  DL_HD static constexpr bool identity() { return true; }
  DL_HD DL_INLINE static bool combine(bool a, bool b) { return a && b; }
};
struct AnyReducer {
  DL_HD static constexpr bool identity() { return false; }
  DL_HD DL_INLINE static bool combine(bool a, bool b) { return a || b; }
};

// ---------------------------------------------------------------------------------------------
// Row and range reduction
// ---------------------------------------------------------------------------------------------

/// Whether a view can be reduced with SIMD accumulators of type A: its lanes are A and its values
/// are numbers (a comparison's lanes are A but its values are masks).
template <class View, class A>
inline constexpr bool simd_reducible = std::is_same_v<typename View::simd_type, A> && std::is_same_v<typename View::value_type, A>;

/// Combines row elements [j0, j1) of a seeked view into acc (in SIMD batches when `lanes`: the
/// row's operands have inner stride 0 or 1).
template <class R, class A, Access K, class View>
DL_INLINE A reduce_row(const View& v, int64_t j0, int64_t j1, A acc, bool lanes = true) {
  int64_t j = j0;
  if constexpr (K != Access::Strided && simd_reducible<View, A>) {
    constexpr int64_t W = batch<A>::size;
    if (lanes && j1 - j0 >= 4 * W) {
      // Four independent accumulators hide the add latency.
      batch<A> a0(R::identity()), a1(R::identity()), a2(R::identity()), a3(R::identity());
      for (; j + 4 * W <= j1; j += 4 * W) {
        a0 = R::combine(a0, v.template at<K, true>(j));
        a1 = R::combine(a1, v.template at<K, true>(j + W));
        a2 = R::combine(a2, v.template at<K, true>(j + 2 * W));
        a3 = R::combine(a3, v.template at<K, true>(j + 3 * W));
      }
      for (; j + W <= j1; j += W) a0 = R::combine(a0, v.template at<K, true>(j));
      a0 = R::combine(R::combine(a0, a1), R::combine(a2, a3));
      alignas(64) A lanes[W];
      a0.store_aligned(lanes);
      for (int64_t l = 0; l < W; ++l) acc = R::combine(acc, lanes[l]);
    }
  }
  for (; j < j1; ++j) acc = R::combine(acc, static_cast<A>(v.template at<K, false>(j)));
  return acc;
}

/// part[j - c0] = combine(part[j - c0], v[j]) for the full SIMD batches of columns [c0, c1) of a
/// seeked view; returns the first column left for the scalar loop. (A function of its own: nvcc
/// does not discard an `if constexpr` branch inside the generic lambda that calls it.)
template <class R, class A, Access K, class View>
DL_INLINE int64_t combine_columns_simd(const View& v, A* part, int64_t c0, int64_t c1, bool lanes = true) {
  int64_t j = c0;
  if constexpr (K != Access::Strided && simd_reducible<View, A>) {
    constexpr int64_t W = batch<A>::size;
    if (lanes)
      for (; j + W <= c1; j += W) {
        auto cur = batch<A>::load_aligned(part + (j - c0));
        R::combine(cur, v.template at<K, true>(j)).store_aligned(part + (j - c0));
      }
  }
  return j;
}

/// Sizes of a coalesced iteration space (outer dims then the row).
struct Space {
  int nd = 1;
  int64_t size[kMaxDims] = {1};
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < nd; ++d) n *= size[d];
    return n;
  }
};

/// Combines the elements of flattened range [lo, hi) of the space into acc.
template <class R, class A, Access K, class View>
A reduce_range(View& v, const Space& s, int64_t lo, int64_t hi, A acc, bool lanes = true) {
  const int64_t row = s.size[s.nd - 1];
  const int nouter = s.nd - 1;
  int64_t idx[kMaxDims] = {};
  int64_t q = lo / row, j = lo % row;
  for (int d = nouter - 1; d >= 0; --d) {
    idx[d] = q % s.size[d];
    q /= s.size[d];
  }
  while (lo < hi) {
    const int64_t n = std::min(row - j, hi - lo);
    v.seek(idx, nouter);
    acc = reduce_row<R, A, K>(v, j, j + n, acc, lanes);
    lo += n;
    j = 0;
    for (int d = nouter - 1; d >= 0; --d) {
      if (++idx[d] < s.size[d]) break;
      idx[d] = 0;
    }
  }
  return acc;
}


/// Reduces the view over the dims whose bit is set in `reduce` and writes one value per kept
/// position into `out` (contiguous, laid out as the keepdim shape). `shape` is the view's shape.
/// An empty reduction writes the identity.
template <class R, class A, class View>
void reduce_into(View view, const Shape& shape, uint32_t reduce, A* out) {
  const int nd = shape.size();
  // Output strides aligned to shape: contiguous over kept dims, 0 over reduced ones.
  int64_t out_st[kMaxDims] = {};
  {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; --d) {
      const bool red = (reduce >> d) & 1;
      out_st[d] = red ? 0 : s;
      if (!red) s *= shape[d];
    }
  }
  int64_t out_count = 1, red_count = 1;
  for (int d = 0; d < nd; ++d) ((reduce >> d) & 1 ? red_count : out_count) *= shape[d];
  if (out_count == 0) return;
  if (red_count == 0) {
    std::fill(out, out + out_count, R::identity());
    return;
  }

  std::array<int64_t*, 72> ops;
  size_t nops = 0;
  view.for_each_stride([&](int64_t* st) { ops[nops++] = st; });
  ops[nops++] = out_st;
  const std::span<int64_t* const> operands(ops.data(), nops);
  const std::span<int64_t* const> inputs(ops.data(), nops - 1);

  // Reorder dims: kept dims outside, reduced dims inside ("inner" mode); but when the innermost
  // non-trivial dim is kept, keep it innermost so SIMD runs along it ("outer" mode).
  int last = -1;
  for (int d = nd - 1; d >= 0; --d)
    if (shape[d] > 1) {
      last = d;
      break;
    }
  const bool outer_mode = last >= 0 && !((reduce >> last) & 1) && red_count > 1;
  int order[kMaxDims], n = 0;
  for (int d = 0; d < nd; ++d)
    if (!((reduce >> d) & 1) && !(outer_mode && d == last)) order[n++] = d;
  const int kept_outer = n;
  for (int d = 0; d < nd; ++d)
    if ((reduce >> d) & 1) order[n++] = d;
  if (outer_mode) order[n++] = last;

  int64_t size[kMaxDims];
  for (int i = 0; i < nd; ++i) size[i] = shape[order[i]];
  for (int64_t* st : operands) {
    int64_t tmp[kMaxDims];
    for (int i = 0; i < nd; ++i) tmp[i] = st[order[i]];
    for (int i = 0; i < nd; ++i) st[i] = tmp[i];
  }
  // Coalesce each group separately so kept and reduced dims never merge.
  auto coalesce_group = [&](int begin, int end) {
    int64_t gsize[kMaxDims];
    std::array<int64_t*, 72> gops;
    const int len = end - begin;
    if (len <= 0) return 0;
    for (int i = 0; i < len; ++i) gsize[i] = size[begin + i];
    for (size_t o = 0; o < nops; ++o) gops[o] = operands[o] + begin;
    const int k = coalesce(len, gsize, std::span(gops.data(), nops));
    for (int i = 0; i < k; ++i) size[begin + i] = gsize[i];
    return k;
  };
  // Groups: [0, kept_outer), [kept_outer, kept_outer + reduced), [last] (outer mode).
  const int nred = n - kept_outer - (outer_mode ? 1 : 0);
  const int k1 = coalesce_group(0, kept_outer);
  // Move the reduced group (and the column dim) down next to the coalesced kept group.
  auto move_dims = [&](int from, int to, int len) {
    for (int i = 0; i < len; ++i) {
      size[to + i] = size[from + i];
      for (int64_t* st : operands) st[to + i] = st[from + i];
    }
  };
  move_dims(kept_outer, k1, nred + (outer_mode ? 1 : 0));
  const int k2 = coalesce_group(k1, k1 + nred);
  if (outer_mode) move_dims(k1 + nred, k1 + k2, 1);

  Space s;
  s.nd = k1 + k2 + (outer_mode ? 1 : 0);
  for (int i = 0; i < s.nd; ++i) s.size[i] = size[i];
  if (s.nd == 0) {  // every dim had size 1
    s.nd = 1;
    s.size[0] = 1;
    for (int64_t* st : operands) st[0] = 0;
  }
  // One loop for every access kind (see run_loop): Contig runs as Mixed, Strided as Mixed's scalar
  // path (`lanes` false); a second instantiation would double the code of every reduction.
  const bool lanes = pick_access(s.nd, inputs, {}) != Access::Strided;
  constexpr Access K = Access::Mixed;

  if (!outer_mode) {
    // out[m] = reduction of flattened range [m * red, (m + 1) * red).
    const int64_t red = red_count, M = out_count;
    // Outputs follow the kept dims in order, so position m is out + m.
    if (red <= kReduceBlock) {
      const int64_t grain = std::max<int64_t>(1, kReduceBlock / red);
      detail::parallel_for(0, M, grain, [&](int64_t b, int64_t e) {
        View local = view;
        for (int64_t m = b; m < e; ++m)
          out[m] = reduce_range<R, A, K>(local, s, m * red, (m + 1) * red, R::identity(), lanes);
      });
    } else {
      const int64_t nb = (red + kReduceBlock - 1) / kReduceBlock;
      std::unique_ptr<A[]> partial(new A[size_t(M * nb)]);
      detail::parallel_for(0, M * nb, 1, [&](int64_t b, int64_t e) {
        View local = view;
        for (int64_t w = b; w < e; ++w) {
          const int64_t m = w / nb, blk = w % nb;
          const int64_t lo = m * red + blk * kReduceBlock, hi = std::min(lo + kReduceBlock, (m + 1) * red);
          partial[w] = reduce_range<R, A, K>(local, s, lo, hi, R::identity(), lanes);
        }
      });
      for (int64_t m = 0; m < M; ++m) {
        A acc = R::identity();
        for (int64_t blk = 0; blk < nb; ++blk) acc = R::combine(acc, partial[m * nb + blk]);
        out[m] = acc;
      }
    }
    return;
  }

  // Outer mode: dims [kept outer (k1) | reduced (k2) | columns]. For each kept position and block
  // of columns, accumulate rows of the reduced space into a column buffer.
  const int64_t C = s.size[s.nd - 1];
  int64_t Ko = 1, Rn = 1;
  for (int i = 0; i < k1; ++i) Ko *= s.size[i];
  for (int i = k1; i < k1 + k2; ++i) Rn *= s.size[i];
  constexpr int64_t CB = 512;
  const int64_t ncb = (C + CB - 1) / CB;
  // Split the reduced rows into blocks when there are few work items; the split depends only on
  // sizes, never on the thread count.
  int64_t rows_per_block = std::max<int64_t>(1, kReduceBlock / std::min(C, CB));
  rows_per_block = std::max(rows_per_block, (Rn + 63) / 64);
  const int64_t nrb = (Rn + rows_per_block - 1) / rows_per_block;
  std::unique_ptr<A[]> partial(nrb > 1 ? new A[size_t(Ko * C * nrb)] : nullptr);
  const int nouter = s.nd - 1;

  detail::parallel_for(0, Ko * ncb * nrb, 1, [&](int64_t b, int64_t e) {
    View local = view;
    // Two-level (cascade) accumulation: rows go into `part` and every kCascade rows `part` is
    // folded into `acc`, so float sums over many rows keep their accuracy.
    constexpr int64_t kCascade = 32;
    alignas(64) A acc[CB];
    alignas(64) A part[CB];
    for (int64_t w = b; w < e; ++w) {
      const int64_t rb = w % nrb, cb = (w / nrb) % ncb, o = w / (nrb * ncb);
      const int64_t c0 = cb * CB, c1 = std::min(C, c0 + CB), width = c1 - c0;
      for (int64_t c = 0; c < width; ++c) acc[c] = part[c] = R::identity();
      int64_t idx[kMaxDims] = {};
      int64_t q = o;
      for (int d = k1 - 1; d >= 0; --d) {
        idx[d] = q % s.size[d];
        q /= s.size[d];
      }
      const int64_t r0 = rb * rows_per_block, r1 = std::min(Rn, r0 + rows_per_block);
      for (int64_t r = r0; r < r1; ++r) {
        int64_t rq = r;
        for (int d = k1 + k2 - 1; d >= k1; --d) {
          idx[d] = rq % s.size[d];
          rq /= s.size[d];
        }
        local.seek(idx, nouter);
        int64_t j = combine_columns_simd<R, A, K>(local, part, c0, c1, lanes);
        for (; j < c1; ++j) part[j - c0] = R::combine(part[j - c0], static_cast<A>(local.template at<K, false>(j)));
        if ((r - r0) % kCascade == kCascade - 1 || r + 1 == r1)
          for (int64_t c = 0; c < width; ++c) {
            acc[c] = R::combine(acc[c], part[c]);
            part[c] = R::identity();
          }
      }
      A* dst = nrb > 1 ? partial.get() + (rb * Ko + o) * C + c0 : out + o * C + c0;
      std::copy(acc, acc + width, dst);
    }
  });
  if (nrb > 1) {
    for (int64_t i = 0; i < Ko * C; ++i) {
      A a = partial[size_t(i)];
      for (int64_t rb = 1; rb < nrb; ++rb) a = R::combine(a, partial[size_t(rb * Ko * C + i)]);
      out[i] = a;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CUDA reductions: the host side (the kernels are in dl/cuda/kernels.hpp, compiled by nvcc)
// ---------------------------------------------------------------------------------------------

template <class R, class A, class View>
struct DeviceReduce;
template <class R, class A, class View>
struct DeviceReduceKey {};

/// reduce_into on a CUDA device: the (kept dims | reduced dims) space is coalesced here and each
/// output combines its row of reduced elements in a fixed order. `out` is device memory.
template <class R, class A, class View>
void reduce_into_device(View view, const Shape& shape, uint32_t reduce, A* out, Device device) {
  const int nd = shape.size();
  int64_t out_st[kMaxDims] = {};
  int64_t out_count = 1, red_count = 1;
  for (int d = 0; d < nd; ++d) ((reduce >> d) & 1 ? red_count : out_count) *= shape[d];
  if (out_count == 0) return;
  std::array<int64_t*, 72> ops;
  size_t nops = 0;
  view.for_each_stride([&](int64_t* st) { ops[nops++] = st; });
  ops[nops++] = out_st;
  int order[kMaxDims], n = 0;
  for (int d = 0; d < nd; ++d)
    if (!((reduce >> d) & 1)) order[n++] = d;
  const int kept = n;
  for (int d = 0; d < nd; ++d)
    if ((reduce >> d) & 1) order[n++] = d;
  int64_t size[kMaxDims];
  for (int i = 0; i < nd; ++i) size[i] = shape[order[i]];
  for (size_t o = 0; o < nops; ++o) {
    int64_t tmp[kMaxDims];
    for (int i = 0; i < nd; ++i) tmp[i] = ops[o][order[i]];
    for (int i = 0; i < nd; ++i) ops[o][i] = tmp[i];
  }
  // Coalesce the kept group and the reduced group separately (they must never merge).
  auto coalesce_group = [&](int begin, int len) {
    if (len <= 0) return 0;
    int64_t gsize[kMaxDims];
    std::array<int64_t*, 72> gops;
    for (int i = 0; i < len; ++i) gsize[i] = size[begin + i];
    for (size_t o = 0; o < nops; ++o) gops[o] = ops[o] + begin;
    const int k = coalesce(len, gsize, std::span(gops.data(), nops));
    for (int i = 0; i < k; ++i) size[begin + i] = gsize[i];
    return k;
  };
  const int k1 = coalesce_group(0, kept);
  for (int i = 0; i < nd - kept; ++i) {
    size[k1 + i] = size[kept + i];
    for (size_t o = 0; o < nops; ++o) ops[o][k1 + i] = ops[o][kept + i];
  }
  const int k2 = coalesce_group(k1, nd - kept);
  Space s;
  s.nd = k1 + k2;
  for (int i = 0; i < s.nd; ++i) s.size[i] = size[i];
  if (s.nd == 0) {
    s.nd = 1;
    s.size[0] = 1;
    for (size_t o = 0; o < nops; ++o) ops[o][0] = 0;
  }
  using Fn = void (*)(const View&, const Space&, int64_t, int64_t, A*, int);
#if defined(__CUDACC__)
  (void)DeviceReduce<R, A, View>::registered;
#endif
  static const Fn fn = reinterpret_cast<Fn>(dl::detail::KernelRegistry::instance().find(typeid(DeviceReduceKey<R, A, View>)));
  if (!fn) dl::detail::no_cuda_kernel("reduction", typeid(DeviceReduceKey<R, A, View>));
  fn(view, s, red_count, out_count, out, device.index);
}

/// reduce_into on the device that holds `out`.
template <class R, class A, class View>
void reduce_into(View view, const Shape& shape, uint32_t reduce, A* out, Device device) {
  if (device.is_cuda()) reduce_into_device<R, A>(view, shape, reduce, out, device);
  else reduce_into<R, A>(view, shape, reduce, out);
}

}  // namespace dl::expr
