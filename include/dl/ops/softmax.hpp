// dl/ops/softmax.hpp — softmax and log_softmax kernels along any dim. Each row is one numerically
// stable pass (max, sum of exponentials, write) over a tensor or a lazy expression read fused; SIMD
// along the row when it is contiguous, across neighbouring rows when the dim is not the last one.
// The backward rules need only the output, and give second derivatives too (create_graph).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <span>

#include "../tensor.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// softmax (Log = false) or log_softmax (Log = true) of a floating tensor or expression along `dim`
/// (negative counts from the end; a 0-d input takes 0 or -1); errors name `what`. The result is
/// contiguous and recorded for autograd. An expression input is read fused, also when it requires
/// grad: the backward rule needs only the output.
template <bool Log, expression E>
Tensor<expr::value_type_t<E>> softmax_op(const E& input, int64_t dim, const char* what);

/// The input gradient of softmax, y * (g - sum(g * y, dim)), or of log_softmax,
/// g - exp(y) * sum(g, dim), from the output y (contiguous) and its gradient g; one pass per row,
/// not recorded.
template <bool Log, class T>
Tensor<T> softmax_backward_raw(const Tensor<T>& g, const Tensor<T>& y, int dim);

/// A shape seen as [outer, rows, inner] around `dim`: (N, C, H, W) around dim 1 is (N, C, H * W).
struct RowGeometry {
  int64_t outer = 1, rows = 1, inner = 1;
};
inline RowGeometry row_geometry(const Shape& shape, int dim);

// ------------------------------------------------------------------------------ implementation

inline RowGeometry row_geometry(const Shape& shape, int dim) {
  RowGeometry g;
  for (int d = 0; d < shape.size(); ++d) (d < dim ? g.outer : d == dim ? g.rows : g.inner) *= shape[d];
  return g;
}

template <class T>
inline constexpr T kNegInf = -std::numeric_limits<T>::infinity();

/// Positions per block when rows are walked across the inner dim (buffers live on the stack).
inline constexpr int64_t kColumnBlock = 256;

/// A batch of the n < W values get(0..n) padded with `fill`: short rows and tails stay in SIMD
/// (exp(-inf) = 0 adds nothing to a sum).
template <class T, class Get>
DL_INLINE expr::batch<T> partial_batch(int64_t n, T fill, Get&& get) {
  alignas(64) T buf[expr::batch<T>::size];
  for (int64_t l = 0; l < int64_t(expr::batch<T>::size); ++l) buf[l] = l < n ? T(get(l)) : fill;
  return expr::batch<T>::load_aligned(buf);
}

/// Stores the first n < W lanes of b at p.
template <class T>
DL_INLINE void store_partial(T* p, int64_t n, const expr::batch<T>& b) {
  alignas(64) T buf[expr::batch<T>::size];
  b.store_aligned(buf);
  std::copy(buf, buf + n, p);
}

/// Lanes [0, n) of a batch of T.
template <class T>
DL_INLINE auto first_lanes(int64_t n) {
  using B = expr::batch<T>;
  alignas(64) T iota[B::size];
  for (size_t l = 0; l < B::size; ++l) iota[l] = T(l);
  return B::load_aligned(iota) < B(T(n));
}

template <class T>
DL_INLINE T hmax(const expr::batch<T>& b) {
  alignas(64) T buf[expr::batch<T>::size];
  b.store_aligned(buf);
  T m = buf[0];
  for (size_t l = 1; l < expr::batch<T>::size; ++l) m = std::max(m, buf[l]);
  return m;
}

/// Rows shorter than this are processed a batch of rows at a time, one row per SIMD lane (gathered
/// loads): a short row would leave most lanes of a batch idle and spend its time in horizontal
/// reductions ([128, 10] float cross entropy: forward 7.4 -> 1.6 us, with backward 12.1 -> 3.9 us).
/// Up to 1.5 batches of classes this wins, beyond it the gathers cost more than the row overhead.
template <class T>
inline constexpr int64_t kLaneRowClasses = 3 * int64_t(expr::batch<T>::size) / 2;

/// Calls f(row, false) for each of `rows` rows of C contiguous classes, in parallel; short rows
/// come as f(first, true) for each full batch of W rows.
template <class T, class F>
void for_row_blocks(int64_t rows, int64_t C, F&& f) {
  constexpr int64_t W = expr::batch<T>::size;
  if (C > 0 && C < kLaneRowClasses<T>) {
    const int64_t blocks = (rows + W - 1) / W;
    parallel_for(0, blocks, std::max<int64_t>(1, 16384 / (W * C)), [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        if ((blk + 1) * W <= rows) f(blk * W, true);
        else
          for (int64_t o = blk * W; o < rows; ++o) f(o, false);
      }
    });
    return;
  }
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) f(o, false);
  });
}

/// Element offsets l * C of the lanes of a batch: lane l reads row l of a [W, C] block.
template <class T>
DL_INLINE auto lane_rows(int64_t C) {
  using IB = xsimd::batch<xsimd::as_integer_t<T>>;
  alignas(64) xsimd::as_integer_t<T> off[IB::size];
  for (size_t l = 0; l < IB::size; ++l) off[l] = xsimd::as_integer_t<T>(int64_t(l) * C);
  return IB::load_aligned(off);
}

/// Lane l of the result is p[idx[l]] (one instruction with AVX-512 or AVX2: xsimd 8.1 gathers
/// floating lanes one by one).
template <class T>
DL_INLINE expr::batch<T> gather_lanes(const T* p, const xsimd::batch<xsimd::as_integer_t<T>>& idx) {
#if defined(__AVX512F__)
  if constexpr (sizeof(expr::batch<T>) == 64) {
    if constexpr (std::is_same_v<T, float>) return _mm512_i32gather_ps(idx, p, 4);
    else return _mm512_i64gather_pd(idx, p, 8);
  }
#endif
#if defined(__AVX2__)
  if constexpr (sizeof(expr::batch<T>) == 32) {
    if constexpr (std::is_same_v<T, float>) return _mm256_i32gather_ps(p, idx, 4);
    else return _mm256_i64gather_pd(p, idx, 8);
  }
#endif
  return expr::batch<T>::gather(p, idx);
}

/// p[idx[l]] = lane l of v.
template <class T>
DL_INLINE void scatter_lanes(T* p, const xsimd::batch<xsimd::as_integer_t<T>>& idx, const expr::batch<T>& v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(expr::batch<T>) == 64) {
    if constexpr (std::is_same_v<T, float>) _mm512_i32scatter_ps(p, idx, v, 4);
    else _mm512_i64scatter_pd(p, idx, v, 8);
    return;
  }
#endif
  constexpr size_t W = expr::batch<T>::size;
  alignas(64) T val[W];
  alignas(64) xsimd::as_integer_t<T> at[W];
  v.store_aligned(val);
  idx.store_aligned(at);
  for (size_t l = 0; l < W; ++l) p[at[l]] = val[l];
}

/// A contiguous row read as a kernel view (what softmax_row reads).
template <class T>
struct RowView {
  using value_type = T;
  using simd_type = T;
  const T* p;
  template <expr::Access K, bool Simd>
  DL_INLINE auto at(int64_t j) const {
    if constexpr (Simd) return expr::batch<T>::load_unaligned(p + j);
    else return p[j];
  }
};

/// Whether a kernel view can be read in SIMD batches of T.
template <class View, class T, expr::Access K>
inline constexpr bool simd_view = K != expr::Access::Strided && std::is_same_v<typename View::simd_type, T> &&
                                  std::is_same_v<typename View::value_type, T>;

/// One row of n elements of a view seeked to its start; o is the contiguous output row.
template <bool Log, expr::Access K, class T, class View>
DL_INLINE void softmax_row(const View& v, int64_t n, T* __restrict o) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  auto at = [&](int64_t j) { return T(v.template at<K, false>(j)); };
  if constexpr (simd_view<View, T, K>) {
    const int64_t full = n / W * W, rest = n - full;
    B bm(kNegInf<T>);
    for (int64_t j = 0; j < full; j += W) bm = xsimd::max(bm, v.template at<K, true>(j));
    if (rest) bm = xsimd::max(bm, partial_batch<T>(rest, kNegInf<T>, [&](int64_t l) { return at(full + l); }));
    const T m = hmax(bm);
    const B vm(m);
    B bs(T(0));
    for (int64_t j = 0; j < full; j += W) {
      const B e = xsimd::exp(v.template at<K, true>(j) - vm);
      if constexpr (!Log) e.store_unaligned(o + j);
      bs += e;
    }
    if (rest) {
      const B e = xsimd::exp(partial_batch<T>(rest, kNegInf<T>, [&](int64_t l) { return at(full + l); }) - vm);
      if constexpr (!Log) store_partial(o + full, rest, e);
      bs += xsimd::select(first_lanes<T>(rest), e, B(T(0)));  // padding lanes are NaN when m is -inf
    }
    const T s = xsimd::hadd(bs);
    if constexpr (Log) {
      const T c = m + std::log(s);
      for (int64_t j = 0; j < full; j += W) (v.template at<K, true>(j) - B(c)).store_unaligned(o + j);
      if (rest) store_partial(o + full, rest, partial_batch<T>(rest, T(0), [&](int64_t l) { return at(full + l); }) - B(c));
    } else {
      const T r = T(1) / s;
      for (int64_t j = 0; j < full; j += W) (B::load_unaligned(o + j) * B(r)).store_unaligned(o + j);
      for (int64_t j = full; j < n; ++j) o[j] *= r;
    }
  } else {
    T m = kNegInf<T>;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, at(j));
    T s = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T e = std::exp(at(j) - m);
      if constexpr (!Log) o[j] = e;
      s += e;
    }
    if constexpr (Log) {
      const T c = m + std::log(s);
      for (int64_t j = 0; j < n; ++j) o[j] = at(j) - c;
    } else {
      const T r = T(1) / s;
      for (int64_t j = 0; j < n; ++j) o[j] *= r;
    }
  }
}

/// Positions [j0, j1) of the inner dim for every one of R rows: the view's row dim is the inner
/// dim, idx[nouter - 1] selects the row. o points at the output of row 0, position 0 of this outer
/// index; rows are I apart. SIMD runs across positions.
template <bool Log, expr::Access K, class T, class View>
void softmax_columns(View& v, int64_t* idx, int nouter, int64_t R, int64_t I, int64_t j0, int64_t j1, T* __restrict o) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  constexpr bool simd = simd_view<View, T, K>;
  alignas(64) T mx[kColumnBlock], sm[kColumnBlock];
  const int64_t n = j1 - j0;
  std::fill(mx, mx + n, kNegInf<T>);
  std::fill(sm, sm + n, T(0));
  auto seek = [&](int64_t r) {
    idx[nouter - 1] = r;
    v.seek(idx, nouter);
  };
  for (int64_t r = 0; r < R; ++r) {
    seek(r);
    int64_t j = 0;
    if constexpr (simd)
      for (; j + W <= n; j += W) xsimd::max(B::load_aligned(mx + j), v.template at<K, true>(j0 + j)).store_aligned(mx + j);
    for (; j < n; ++j) mx[j] = std::max(mx[j], T(v.template at<K, false>(j0 + j)));
  }
  for (int64_t r = 0; r < R; ++r) {
    seek(r);
    T* orow = o + r * I + j0;
    int64_t j = 0;
    if constexpr (simd)
      for (; j + W <= n; j += W) {
        const B e = xsimd::exp(v.template at<K, true>(j0 + j) - B::load_aligned(mx + j));
        if constexpr (!Log) e.store_unaligned(orow + j);
        (B::load_aligned(sm + j) + e).store_aligned(sm + j);
      }
    for (; j < n; ++j) {
      const T e = std::exp(T(v.template at<K, false>(j0 + j)) - mx[j]);
      if constexpr (!Log) orow[j] = e;
      sm[j] += e;
    }
  }
  if constexpr (Log) {
    for (int64_t j = 0; j < n; ++j) mx[j] += std::log(sm[j]);
    for (int64_t r = 0; r < R; ++r) {
      seek(r);
      T* orow = o + r * I + j0;
      int64_t j = 0;
      if constexpr (simd)
        for (; j + W <= n; j += W) (v.template at<K, true>(j0 + j) - B::load_aligned(mx + j)).store_unaligned(orow + j);
      for (; j < n; ++j) orow[j] = T(v.template at<K, false>(j0 + j)) - mx[j];
    }
  } else {
    for (int64_t j = 0; j < n; ++j) sm[j] = T(1) / sm[j];
    for (int64_t r = 0; r < R; ++r) {
      T* orow = o + r * I + j0;
      int64_t j = 0;
      if constexpr (simd)
        for (; j + W <= n; j += W) (B::load_unaligned(orow + j) * B::load_aligned(sm + j)).store_unaligned(orow + j);
      for (; j < n; ++j) orow[j] *= sm[j];
    }
  }
}

/// Calls f with the access kind (Mixed or Strided) of the row dim `at` of every operand.
template <class F>
void dispatch_row_access(std::span<int64_t* const> ops, int at, F&& f) {
  bool simd = true;
  for (int64_t* st : ops) simd = simd && (st[at] == 0 || st[at] == 1);
  if (simd) f(std::integral_constant<expr::Access, expr::Access::Mixed>{});
  else f(std::integral_constant<expr::Access, expr::Access::Strided>{});
}

/// softmax / log_softmax of W short contiguous rows of R elements, one row per lane.
template <bool Log, class T>
DL_INLINE void softmax_lanes(const T* x, int64_t R, T* o) {
  using B = expr::batch<T>;
  const auto idx = lane_rows<T>(R);
  B m(kNegInf<T>), s(T(0));
  for (int64_t c = 0; c < R; ++c) m = xsimd::max(m, gather_lanes<T>(x + c, idx));
  for (int64_t c = 0; c < R; ++c) s += xsimd::exp(gather_lanes<T>(x + c, idx) - m);
  if constexpr (Log) {
    const B l = m + xsimd::log(s);
    for (int64_t c = 0; c < R; ++c) scatter_lanes<T>(o + c, idx, gather_lanes<T>(x + c, idx) - l);
  } else {
    const B r = B(T(1)) / s;
    for (int64_t c = 0; c < R; ++c) scatter_lanes<T>(o + c, idx, xsimd::exp(gather_lanes<T>(x + c, idx) - m) * r);
  }
}

/// softmax / log_softmax of O contiguous rows of R < kLaneRowClasses elements.
template <bool Log, class T>
void softmax_short_rows(const T* x, int64_t O, int64_t R, T* out) {
  for_row_blocks<T>(O, R, [&](int64_t o, bool lanes) {
    if (lanes) softmax_lanes<Log>(x + o * R, R, out + o * R);
    else softmax_row<Log, expr::Access::Contig>(RowView<T>{x + o * R}, R, out + o * R);
  });
}

/// Writes softmax / log_softmax of node n (of shape `shape`, non-empty) along dim d into the
/// contiguous `out`. The dims before d and after d are each coalesced; when the dims after d do
/// not merge into one (a strided operand) the node is materialised first.
template <bool Log, class T, class N>
void softmax_forward(const N& n, const Shape& shape_in, int d, T* out) {
  const Shape shape = shape_in.size() ? shape_in : Shape{1};
  auto v = expr::lower(n, shape);
  using View = decltype(v);
  std::array<int64_t*, 64> ops_buf;
  size_t nops = 0;
  v.for_each_stride([&](int64_t* st) { ops_buf[nops++] = st; });
  const std::span<int64_t* const> ops(ops_buf.data(), nops);
  const int nd = shape.size();
  int64_t size[kMaxDims];
  for (int i = 0; i < nd; ++i) size[i] = shape[i];
  // [outer dims | d | inner dims] -> [outer (k1 dims) | R | inner (0 or 1 dim)]
  const int k1 = d > 0 ? expr::coalesce(d, size, ops) : 0;
  int64_t O = 1;
  for (int i = 0; i < k1; ++i) O *= size[i];
  const int64_t R = shape[d];
  size[k1] = R;
  for (int64_t* st : ops) st[k1] = st[d];
  const int tail = nd - d - 1;
  int64_t I = 1;
  int k3 = 0;
  if (tail > 0) {
    for (int i = 0; i < tail; ++i) {
      size[k1 + 1 + i] = shape[d + 1 + i];
      for (int64_t* st : ops) st[k1 + 1 + i] = st[d + 1 + i];
    }
    std::array<int64_t*, 64> inner_ops;
    for (size_t o = 0; o < nops; ++o) inner_ops[o] = ops[o] + k1 + 1;
    k3 = expr::coalesce(tail, size + k1 + 1, std::span(inner_ops.data(), nops));
    for (int i = 0; i < k3; ++i) I *= size[k1 + 1 + i];
  }
  if (I > 1 && k3 > 1) {
    softmax_forward<Log, T>(expr::Leaf<T>{expr::evaluate_raw(n)}, shape, d, out);
    return;
  }
  if (I == 1) {
    // Rows along d, outer index in k1 dims.
    dispatch_row_access(ops, k1, [&](auto Kc) {
      constexpr expr::Access K = Kc.value;
      parallel_for(0, O, std::max<int64_t>(1, 32768 / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
        View local = v;
        int64_t idx[kMaxDims] = {};
        for (int64_t row = b; row < e; ++row) {
          int64_t q = row;
          for (int i = k1 - 1; i >= 0; --i) {
            idx[i] = q % size[i];
            q /= size[i];
          }
          local.seek(idx, k1);
          softmax_row<Log, K>(local, R, out + row * R);
        }
      });
    });
    return;
  }
  // Rows across the inner dim, in blocks of positions.
  const int64_t nb = (I + kColumnBlock - 1) / kColumnBlock;
  dispatch_row_access(ops, k1 + 1, [&](auto Kc) {
    constexpr expr::Access K = Kc.value;
    parallel_for(0, O * nb, std::max<int64_t>(1, 32768 / std::max<int64_t>(R * std::min(I, kColumnBlock), 1)),
                 [&](int64_t b, int64_t e) {
                   View local = v;
                   int64_t idx[kMaxDims] = {};
                   for (int64_t w = b; w < e; ++w) {
                     const int64_t o = w / nb, blk = w % nb;
                     int64_t q = o;
                     for (int i = k1 - 1; i >= 0; --i) {
                       idx[i] = q % size[i];
                       q /= size[i];
                     }
                     const int64_t j0 = blk * kColumnBlock, j1 = std::min(I, j0 + kColumnBlock);
                     softmax_columns<Log, K>(local, idx, k1 + 1, R, I, j0, j1, out + o * R * I);
                   }
                 });
  });
}

/// Backward of softmax / log_softmax. The output is saved detached (no cycle through this node);
/// under create_graph it is re-attached to this node, so that the gradient's own gradient reaches
/// the input through the output, as PyTorch's saved outputs do.
template <class T, bool Log>
class SoftmaxBackward : public autograd::Node {
 public:
  SoftmaxBackward(const Tensor<T>& out, int dim)
      : result_(out.detach().impl(), Log ? "LogSoftmaxBackward" : "SoftmaxBackward"), dim_(dim) {}
  std::string name() const override { return Log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  void release_variables() override { result_.release(); }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    const Tensor<T> y(result_.unpack()), g(grads[0]);
    if (!is_grad_enabled()) return {softmax_backward_raw<Log>(g, y, dim_).impl()};
    auto impl = view_impl(y.impl(), y.shape(), y.strides(), y.storage_offset());
    impl->is_view = false;
    auto& m = autograd::detail::meta(impl);
    m.grad_fn = shared_from_this();
    m.output_nr = 0;
    const Tensor<T> yg(impl);
    if constexpr (Log) return {Tensor<T>(g - expr::exp(yg) * dl::sum(g, Dims{dim_}, true)).impl()};
    else return {Tensor<T>(yg * (g - dl::sum(g * yg, Dims{dim_}, true))).impl()};
  }

 private:
  autograd::SavedTensor result_;
  int dim_;
};

template <bool Log, expression E>
Tensor<expr::value_type_t<E>> softmax_op(const E& input, int64_t dim, const char* what) {
  using T = expr::value_type_t<E>;
  static_assert(floating_scalar<T>, "softmax/log_softmax need a floating input; convert it with .to<float>() first");
  if constexpr (half_float<T>) {  // in float, rounded once (PyTorch's opmath for 16-bit inputs)
    return softmax_op<Log>(detail::materialize(input).to_float(), dim, what).template to<T>();
  } else {
  const auto node = expr::as_node(input);
  const Shape shape = expr::shape_of(node);
  const int d = wrap_dim(dim, shape.size(), what);
  Tensor<T> out = empty<T>(shape);
  auto finish = [&](const Tensor<T>& y) {
    return wants_grad(input) ? record(y, input, std::make_shared<SoftmaxBackward<T, Log>>(y, d)) : y;
  };
  if (out.numel() > 0) {
    const RowGeometry g = row_geometry(shape, d);
    if constexpr (expr::is_tensor_v<E>) {
      if (g.inner == 1 && g.rows < kLaneRowClasses<T> && input.is_contiguous()) {
        softmax_short_rows<Log>(input.data(), g.outer, g.rows, out.data());
        return finish(out);
      }
    }
    softmax_forward<Log, T>(node, shape, d, out.data());
  }
  return finish(out);
  }
}

template <bool Log, class T>
Tensor<T> softmax_backward_raw(const Tensor<T>& g_, const Tensor<T>& y, int dim) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const Tensor<T> g = g_.contiguous();
  Tensor<T> gi = empty<T>(y.shape());
  if (y.numel() == 0) return gi;
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  const auto geometry = row_geometry(y.shape(), y.dim() ? dim : 0);
  const int64_t O = geometry.outer, R = geometry.rows, I = geometry.inner;
  const T* gp = g.data();
  const T* yp = y.data();
  T* op = gi.data();
  if (I == 1) {
    for_row_blocks<T>(O, R, [&](int64_t row, bool lanes) {
      const T* gr = gp + row * R;
      const T* yr = yp + row * R;
      T* orow = op + row * R;
      if (lanes) {  // W short rows, one per lane
        const auto idx = lane_rows<T>(R);
        B acc(T(0));
        for (int64_t j = 0; j < R; ++j) {
          if constexpr (Log) acc += gather_lanes<T>(gr + j, idx);
          else acc = xsimd::fma(gather_lanes<T>(gr + j, idx), gather_lanes<T>(yr + j, idx), acc);
        }
        for (int64_t j = 0; j < R; ++j) {
          const B gv = gather_lanes<T>(gr + j, idx), yv = gather_lanes<T>(yr + j, idx);
          if constexpr (Log) scatter_lanes<T>(orow + j, idx, gv - xsimd::exp(yv) * acc);
          else scatter_lanes<T>(orow + j, idx, yv * (gv - acc));
        }
        return;
      }
      const int64_t full = R / W * W;
      B acc(T(0));
      for (int64_t j = 0; j < full; j += W) {
        if constexpr (Log) acc += B::load_unaligned(gr + j);
        else acc = xsimd::fma(B::load_unaligned(gr + j), B::load_unaligned(yr + j), acc);
      }
      T s = xsimd::hadd(acc);
      for (int64_t j = full; j < R; ++j) s += Log ? gr[j] : gr[j] * yr[j];
      const B bs(s);
      for (int64_t j = 0; j < full; j += W) {
        const B gv = B::load_unaligned(gr + j), yv = B::load_unaligned(yr + j);
        if constexpr (Log) (gv - xsimd::exp(yv) * bs).store_unaligned(orow + j);
        else (yv * (gv - bs)).store_unaligned(orow + j);
      }
      for (int64_t j = full; j < R; ++j) orow[j] = Log ? gr[j] - std::exp(yr[j]) * s : yr[j] * (gr[j] - s);
    });
    return gi;
  }
  const int64_t nb = (I + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, O * nb, std::max<int64_t>(1, 32768 / std::max<int64_t>(R * std::min(I, kColumnBlock), 1)),
               [&](int64_t b, int64_t e) {
                 alignas(64) T acc[kColumnBlock];
                 for (int64_t w = b; w < e; ++w) {
                   const int64_t o = w / nb, j0 = (w % nb) * kColumnBlock, n = std::min(I, j0 + kColumnBlock) - j0;
                   const int64_t base = o * R * I + j0;
                   std::fill(acc, acc + n, T(0));
                   for (int64_t r = 0; r < R; ++r) {
                     const T* gr = gp + base + r * I;
                     const T* yr = yp + base + r * I;
                     int64_t j = 0;
                     for (; j + W <= n; j += W) {
                       const B a = B::load_aligned(acc + j);
                       if constexpr (Log) (a + B::load_unaligned(gr + j)).store_aligned(acc + j);
                       else xsimd::fma(B::load_unaligned(gr + j), B::load_unaligned(yr + j), a).store_aligned(acc + j);
                     }
                     for (; j < n; ++j) acc[j] += Log ? gr[j] : gr[j] * yr[j];
                   }
                   for (int64_t r = 0; r < R; ++r) {
                     const T* gr = gp + base + r * I;
                     const T* yr = yp + base + r * I;
                     T* orow = op + base + r * I;
                     int64_t j = 0;
                     for (; j + W <= n; j += W) {
                       const B gv = B::load_unaligned(gr + j), yv = B::load_unaligned(yr + j), s = B::load_aligned(acc + j);
                       if constexpr (Log) (gv - xsimd::exp(yv) * s).store_unaligned(orow + j);
                       else (yv * (gv - s)).store_unaligned(orow + j);
                     }
                     for (; j < n; ++j) orow[j] = Log ? gr[j] - std::exp(yr[j]) * acc[j] : yr[j] * (gr[j] - acc[j]);
                   }
                 }
               });
  return gi;
}

}  // namespace dl::detail
