// dl/ops/conv.hpp — 2-d convolution kernels (NCHW) on the built-in GEMM: the forward product packs
// im2col panels straight from the input (no column matrix in memory), the input gradient is a GEMM
// followed by col2im, the weight gradient a GEMM over packed transposed patches. All three are
// differentiable ops of each other, so convolutions support any order of derivatives.
#pragma once

#include <algorithm>
#include <vector>

#include "../tensor.hpp"
#include "gemm.hpp"
#include "kernel_backward.hpp"

namespace dl {

/// A pair of ints (height, width) that also accepts one int for both, like PyTorch's `int or tuple`
/// arguments: `stride = 2` or `stride = {2, 1}`.
struct Size2 {
  int64_t h = 0, w = 0;
  constexpr Size2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit on purpose
  constexpr Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  friend constexpr bool operator==(const Size2&, const Size2&) = default;
};

namespace detail {

// ------------------------------------------------------------------------------ declarations

/// Hyper-parameters of a 2-d convolution.
struct ConvParams {
  Size2 stride{1}, padding{0}, dilation{1};
  int64_t groups = 1;
};

/// Sizes of a convolution y = conv2d(x, w): x [N, C, H, W], w [O, C / G, KH, KW], y [N, O, OH, OW].
struct ConvGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW, G;
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t Kg() const { return C / G * KH * KW; }  ///< GEMM depth of the forward product
  int64_t HW() const { return H * W; }
  int64_t OHW() const { return OH * OW; }
};

/// y = conv2d(x, w) (+ bias per output channel). x, w contiguous; y is returned contiguous.
template <class T>
Tensor<T> conv2d_forward_raw(const Tensor<T>& x, const Tensor<T>& w, const T* bias, const ConvParams& p);
/// The gradient of conv2d with respect to its input (of shape `input_shape`), given the output
/// gradient gy; also the forward of conv_transpose2d.
template <class T>
Tensor<T> conv2d_input_raw(const Tensor<T>& gy, const Tensor<T>& w, const Shape& input_shape, const ConvParams& p);
/// The gradient of conv2d with respect to its weight (of shape `weight_shape`).
template <class T>
Tensor<T> conv2d_weight_raw(const Tensor<T>& x, const Tensor<T>& gy, const Shape& weight_shape, const ConvParams& p);

/// Differentiable forms of the three products (backward rules use each other).
template <class T>
Tensor<T> conv2d_op(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias, const ConvParams& p);
template <class T>
Tensor<T> conv2d_input_op(const Tensor<T>& gy, const Tensor<T>& w, const Shape& input_shape, const ConvParams& p);
template <class T>
Tensor<T> conv2d_weight_op(const Tensor<T>& x, const Tensor<T>& gy, const Shape& weight_shape, const ConvParams& p);

/// Checks conv2d's arguments (PyTorch's messages) and returns the geometry.
template <class T>
ConvGeometry conv2d_geometry(const Shape& x, const Shape& w, const Tensor<T>& bias, const ConvParams& p,
                             const char* what = "conv2d");

// ------------------------------------------------------------------------------ implementation

inline void check_conv_params(const ConvParams& p) {
  DL_CHECK(p.stride.h > 0 && p.stride.w > 0, "non-positive stride is not supported (stride=[", p.stride.h, ", ", p.stride.w, "])");
  DL_CHECK(p.padding.h >= 0 && p.padding.w >= 0, "negative padding is not supported (padding=[", p.padding.h, ", ", p.padding.w, "])");
  DL_CHECK(p.dilation.h > 0 && p.dilation.w > 0, "non-positive dilation is not supported (dilation=[", p.dilation.h, ", ",
           p.dilation.w, "])");
  DL_CHECK(p.groups > 0, "non-positive groups is not supported (groups=", p.groups, ")");
}

template <class T>
ConvGeometry conv2d_geometry(const Shape& x, const Shape& w, const Tensor<T>& bias, const ConvParams& p, const char* what) {
  check_conv_params(p);
  DL_CHECK(x.size() == 4, "Expected 3D (unbatched) or 4D (batched) input to ", what, ", but got input of size: ", x);
  DL_CHECK(w.size() == 4, what, ": expected a 4-D weight [out_channels, in_channels / groups, kH, kW], but got weight of size ", w);
  ConvGeometry g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], 0, 0, p.groups};
  DL_CHECK(g.O % g.G == 0, "Given groups=", g.G, ", expected weight to be divisible by ", g.G,
           " at dimension 0, but got weight of size ", w, " instead");
  DL_CHECK(g.C == w[1] * g.G, "Given groups=", g.G, ", weight of size ", w, ", expected input", x, " to have ", w[1] * g.G,
           " channels, but got ", g.C, " channels instead");
  DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == g.O), "Given weight of size ", w,
           ", expected bias to be 1-dimensional with ", g.O, " elements, but got bias of size ",
           bias.defined() ? bias.shape() : Shape{}, " instead");
  const int64_t eh = p.dilation.h * (g.KH - 1) + 1, ew = p.dilation.w * (g.KW - 1) + 1;
  const int64_t ph = g.H + 2 * p.padding.h, pw = g.W + 2 * p.padding.w;
  DL_CHECK(ph >= eh && pw >= ew, "Calculated padded input size per channel: (", ph, " x ", pw, "). Kernel size: (", eh, " x ",
           ew, "). Kernel size can't be greater than actual input size");
  g.OH = (ph - eh) / p.stride.h + 1;
  g.OW = (pw - ew) / p.stride.w + 1;
  return g;
}

inline bool is_pointwise(const ConvGeometry& g, const ConvParams& p) {
  return g.KH == 1 && g.KW == 1 && p.stride == Size2(1) && p.padding == Size2(0);
}

/// Calls f(t, end) for each run of output pixels [t, end) of the flat pixel range [p0, p1) that lie
/// in one output row, with (oh, ow) of the run's first pixel.
template <class F>
DL_INLINE void for_each_row_run(int64_t p0, int64_t p1, int64_t OW, F&& f) {
  int64_t oh = p0 / OW, ow = p0 % OW;
  for (int64_t p = p0; p < p1;) {
    const int64_t run = std::min(p1 - p, OW - ow);
    f(p, run, oh, ow);
    p += run;
    ow = 0;
    ++oh;
  }
}

/// Copies `run` input pixels of one im2col row, out[t * step] = row[iw0 + t * sw] (zero outside
/// [0, W)), for t < run.
template <class T>
DL_INLINE void gather_row(const T* row, int64_t W, int64_t iw0, int64_t sw, int64_t run, T* out, int64_t step) {
  // t range where 0 <= iw0 + t * sw < W
  const int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
  const int64_t hi = iw0 >= W ? 0 : std::min(run, (W - iw0 + sw - 1) / sw);
  int64_t t = 0;
  for (; t < std::min(lo, run); ++t) out[t * step] = T(0);
  if (sw == 1 && step == 1) {
    std::memcpy(out + t, row + iw0 + t, size_t(std::max<int64_t>(hi - t, 0)) * sizeof(T));
    t = std::max(t, hi);
  } else {
    for (; t < hi; ++t) out[t * step] = row[iw0 + t * sw];
  }
  for (; t < run; ++t) out[t * step] = T(0);
}

/// Packs B = im2col(x) for the forward product: B[k, j] with k = (c, ki, kj), j = (oh, ow).
template <class T>
struct Im2colPacker {
  const T* x;  // [Cg, H, W] of one image and group
  ConvGeometry g;
  ConvParams p;

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, T* dst) const {
    constexpr int NR = gemm_nr<T>();
    int64_t c = k0 / (g.KH * g.KW), ki = (k0 / g.KW) % g.KH, kj = k0 % g.KW;
    for (int64_t k = 0; k < kc; ++k, dst += NR) {
      const T* plane = x + c * g.H * g.W;
      for_each_row_run(j0, j0 + nr, g.OW, [&](int64_t pix, int64_t run, int64_t oh, int64_t ow) {
        T* out = dst + (pix - j0);
        const int64_t ih = oh * p.stride.h - p.padding.h + ki * p.dilation.h;
        if (ih < 0 || ih >= g.H) {
          std::fill(out, out + run, T(0));
        } else {
          gather_row(plane + ih * g.W, g.W, ow * p.stride.w - p.padding.w + kj * p.dilation.w, p.stride.w, run, out, 1);
        }
      });
      std::fill(dst + nr, dst + NR, T(0));
      if (++kj == g.KW) {
        kj = 0;
        if (++ki == g.KH) ki = 0, ++c;
      }
    }
  }
};

/// Packs B = im2col(x)^T for the weight gradient: B[k, j] with k = (oh, ow), j = (c, ki, kj).
template <class T>
struct Im2colTPacker {
  const T* x;  // [Cg, H, W]
  ConvGeometry g;
  ConvParams p;

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, T* dst) const {
    constexpr int NR = gemm_nr<T>();
    if (nr < NR)
      for (int64_t k = 0; k < kc; ++k) std::fill(dst + k * NR + nr, dst + (k + 1) * NR, T(0));
    for (int jj = 0; jj < nr; ++jj) {
      const int64_t j = j0 + jj;
      const int64_t c = j / (g.KH * g.KW), ki = (j / g.KW) % g.KH, kj = j % g.KW;
      const T* plane = x + c * g.H * g.W;
      for_each_row_run(k0, k0 + kc, g.OW, [&](int64_t pix, int64_t run, int64_t oh, int64_t ow) {
        T* out = dst + (pix - k0) * NR + jj;
        const int64_t ih = oh * p.stride.h - p.padding.h + ki * p.dilation.h;
        if (ih < 0 || ih >= g.H) {
          for (int64_t t = 0; t < run; ++t) out[t * NR] = T(0);
        } else {
          gather_row(plane + ih * g.W, g.W, ow * p.stride.w - p.padding.w + kj * p.dilation.w, p.stride.w, run, out, NR);
        }
      });
    }
  }
};

/// Runs f(item, threads) for items [0, n): one item per thread when there are several (each GEMM
/// single-threaded), else one at a time on all threads.
template <class F>
void for_each_item(int64_t n, F&& f) {
  if (n > 1 && get_num_threads() > 1 && !in_parallel_region()) {
    parallel_for(0, n, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) f(i, 1);
    });
  } else {
    for (int64_t i = 0; i < n; ++i) f(i, 0);
  }
}

template <class T>
Tensor<T> conv2d_forward_raw(const Tensor<T>& x, const Tensor<T>& w, const T* bias, const ConvParams& p) {
  const ConvGeometry g = conv2d_geometry(x.shape(), w.shape(), Tensor<T>(), p);
  Tensor<T> y = empty<T>({g.N, g.O, g.OH, g.OW});
  const int64_t Og = g.Og(), Kg = g.Kg(), OHW = g.OHW();
  const bool pointwise = is_pointwise(g, p);
  for_each_item(g.N * g.G, [&](int64_t item, int threads) {
    const int64_t n = item / g.G, grp = item % g.G;
    const T* xg = x.data() + (n * g.C + grp * g.Cg()) * g.HW();
    T* yg = y.data() + (n * g.O + grp * Og) * OHW;
    const MatrixRef<T> A{w.data() + grp * Og * Kg, Kg, 1};
    Epilogue<T> ep;
    if (bias) ep.bias = {bias + grp * Og, 1, 0};
    if (pointwise) {
      gemm(Og, OHW, Kg, T(1), A, MatrixRef<T>{xg, g.HW(), 1}, T(0), yg, OHW, ep, threads);
    } else {
      gemm_packed<T>(
          Og, OHW, Kg, T(1), [&](int64_t i0, int mr, int64_t k0, int64_t kc, T* dst) { pack_a_panel(A, i0, mr, k0, kc, dst); },
          Im2colPacker<T>{xg, g, p}, T(0), yg, OHW, ep, threads);
    }
  });
  return y;
}

/// dst[i] += src[i] for i < n.
template <class T>
DL_INLINE void add_into(T* __restrict dst, const T* __restrict src, int64_t n) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  int64_t i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(dst + i) + V::load_unaligned(src + i)).store_unaligned(dst + i);
  for (; i < n; ++i) dst[i] += src[i];
}

/// Adds the columns of col [(c, ki, kj), (oh, ow)] back to the image positions they were read from
/// (the adjoint of im2col), for channels [c0, c1) of one image and group. The planes are overwritten.
template <class T>
void col2im(const T* col, const ConvGeometry& g, const ConvParams& p, T* img, int64_t c0, int64_t c1) {
  const int64_t OHW = g.OHW();
  for (int64_t c = c0; c < c1; ++c) {
    T* plane = img + c * g.HW();
    std::fill(plane, plane + g.HW(), T(0));
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        const T* src = col + ((c * g.KH + ki) * g.KW + kj) * OHW;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * p.stride.h - p.padding.h + ki * p.dilation.h;
          if (ih < 0 || ih >= g.H) continue;
          T* row = plane + ih * g.W;
          const T* s = src + oh * g.OW;
          const int64_t iw0 = -p.padding.w + kj * p.dilation.w, sw = p.stride.w;
          const int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
          const int64_t hi = iw0 >= g.W ? 0 : std::min(g.OW, (g.W - iw0 + sw - 1) / sw);
          if (sw == 1) {
            if (hi > lo) add_into(row + iw0 + lo, s + lo, hi - lo);
          } else {
            for (int64_t t = lo; t < hi; ++t) row[iw0 + t * sw] += s[t];
          }
        }
      }
  }
}

template <class T>
Tensor<T> conv2d_input_raw(const Tensor<T>& gy, const Tensor<T>& w, const Shape& input_shape, const ConvParams& p) {
  const ConvGeometry g = conv2d_geometry(input_shape, w.shape(), Tensor<T>(), p, "conv2d_backward");
  DL_CHECK(gy.shape() == Shape({g.N, g.O, g.OH, g.OW}), "conv2d backward: grad_output of shape ", gy.shape(),
           " does not match the output shape [", g.N, ", ", g.O, ", ", g.OH, ", ", g.OW, "]");
  Tensor<T> gx = empty<T>(input_shape);
  const int64_t Og = g.Og(), Cg = g.Cg(), Kg = g.Kg(), OHW = g.OHW();
  if (is_pointwise(g, p)) {  // gx = W^T @ gy directly
    for_each_item(g.N * g.G, [&](int64_t item, int threads) {
      const int64_t n = item / g.G, grp = item % g.G;
      gemm(Cg, OHW, Og, T(1), MatrixRef<T>{w.data() + grp * Og * Cg, 1, Cg},
           MatrixRef<T>{gy.data() + (n * g.O + grp * Og) * OHW, OHW, 1}, T(0),
           gx.data() + (n * g.C + grp * Cg) * g.HW(), g.HW(), Epilogue<T>{}, threads);
    });
    return gx;
  }
  // col = W_g^T @ gy_g, then col2im. One column buffer per thread.
  const int64_t items = g.N * g.G;
  auto run = [&](int64_t i0, int64_t i1, int threads) {
    ScratchBuffer colbuf(size_t(Kg * OHW) * sizeof(T));
    T* col = colbuf.as<T>();
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / g.G, grp = item % g.G;
      gemm(Kg, OHW, Og, T(1), MatrixRef<T>{w.data() + grp * Og * Kg, 1, Kg},
           MatrixRef<T>{gy.data() + (n * g.O + grp * Og) * OHW, OHW, 1}, T(0), col, OHW, Epilogue<T>{}, threads);
      T* img = gx.data() + (n * g.C + grp * Cg) * g.HW();
      if (threads == 1) {
        col2im(col, g, p, img, 0, Cg);
      } else {
        parallel_for(0, Cg, 1, [&](int64_t c0, int64_t c1) { col2im(col, g, p, img, c0, c1); });
      }
    }
  };
  if (items > 1 && get_num_threads() > 1 && !in_parallel_region())
    parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) { run(i0, i1, 1); });
  else
    run(0, items, 0);
  return gx;
}

template <class T>
Tensor<T> conv2d_weight_raw(const Tensor<T>& x, const Tensor<T>& gy, const Shape& weight_shape, const ConvParams& p) {
  const ConvGeometry g = conv2d_geometry(x.shape(), weight_shape, Tensor<T>(), p, "conv2d_backward");
  DL_CHECK(gy.shape() == Shape({g.N, g.O, g.OH, g.OW}), "conv2d backward: grad_output of shape ", gy.shape(),
           " does not match the output shape [", g.N, ", ", g.O, ", ", g.OH, ", ", g.OW, "]");
  Tensor<T> gw = empty<T>(weight_shape);
  const int64_t Og = g.Og(), Kg = g.Kg(), OHW = g.OHW(), wsize = g.O * Kg;
  if (g.N == 0 || OHW == 0) return gw.zero_();
  // Images are split among threads, each accumulating into its own partial sum of gw.
  const int parts = int(std::min<int64_t>(in_parallel_region() ? 1 : get_num_threads(), g.N));
  ScratchBuffer partial_buf(size_t(std::max(parts - 1, 0) * wsize) * sizeof(T));
  T* const partials = partial_buf.as<T>();
  const bool pointwise = is_pointwise(g, p);
  auto run = [&](int part, int threads) {
    const auto [n0, n1] = split_range(g.N, parts, part);
    T* acc = part == 0 ? gw.data() : partials + (part - 1) * wsize;
    if (n0 == n1) std::fill(acc, acc + wsize, T(0));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const T* xg = x.data() + (n * g.C + grp * g.Cg()) * g.HW();
        const MatrixRef<T> A{gy.data() + (n * g.O + grp * Og) * OHW, OHW, 1};
        T* C = acc + grp * Og * Kg;
        const T beta = n == n0 ? T(0) : T(1);
        if (pointwise) {
          gemm(Og, Kg, OHW, T(1), A, MatrixRef<T>{xg, 1, g.HW()}, beta, C, Kg, Epilogue<T>{}, threads);
        } else {
          gemm_packed<T>(
              Og, Kg, OHW, T(1), [&](int64_t i0, int mr, int64_t k0, int64_t kc, T* dst) { pack_a_panel(A, i0, mr, k0, kc, dst); },
              Im2colTPacker<T>{xg, g, p}, beta, C, Kg, Epilogue<T>{}, threads);
        }
      }
  };
  if (parts > 1) {
    parallel_for(0, parts, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) run(int(t), 1);
    });
    T* out = gw.data();
    for (int t = 1; t < parts; ++t) add_into(out, partials + (t - 1) * wsize, wsize);
  } else {
    run(0, 0);
  }
  return gw;
}

template <class T>
Tensor<T> conv2d_op(const Tensor<T>& x_, const Tensor<T>& w_, const Tensor<T>& bias_, const ConvParams& p) {
  const Tensor<T> x = x_.contiguous(), w = w_.contiguous();
  const Tensor<T> bias = bias_.defined() ? bias_.contiguous() : bias_;
  conv2d_geometry(x.shape(), w.shape(), bias, p);
  Tensor<T> y = conv2d_forward_raw(x, w, bias.defined() ? bias.data() : nullptr, p);
  return record_kernel(y, "ConvolutionBackward", {x, w}, [p](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> gc = g.contiguous();
    if (needs[0]) r[0] = conv2d_input_op(gc, s[1], s[0].shape(), p).impl();
    if (needs[1]) r[1] = conv2d_weight_op(s[0], gc, s[1].shape(), p).impl();
    if (needs[2]) r[2] = dl::sum(gc, Dims{0, 2, 3}).impl();
    return r;
  }, x_, w_, bias_);
}

template <class T>
Tensor<T> conv2d_input_op(const Tensor<T>& gy_, const Tensor<T>& w_, const Shape& input_shape, const ConvParams& p) {
  const Tensor<T> gy = gy_.contiguous(), w = w_.contiguous();
  Tensor<T> gx = conv2d_input_raw(gy, w, input_shape, p);
  return record_kernel(gx, "ConvolutionBackwardInput", {gy, w}, [p](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    const Tensor<T> gc = g.contiguous();
    if (needs[0]) r[0] = conv2d_op(gc, s[1], Tensor<T>(), p).impl();           // d/d gy
    if (needs[1]) r[1] = conv2d_weight_op(gc, s[0], s[1].shape(), p).impl();    // d/d w
    return r;
  }, gy_, w_);
}

template <class T>
Tensor<T> conv2d_weight_op(const Tensor<T>& x_, const Tensor<T>& gy_, const Shape& weight_shape, const ConvParams& p) {
  const Tensor<T> x = x_.contiguous(), gy = gy_.contiguous();
  Tensor<T> gw = conv2d_weight_raw(x, gy, weight_shape, p);
  return record_kernel(gw, "ConvolutionBackwardWeight", {x, gy}, [p](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    const Tensor<T> gc = g.contiguous();
    if (needs[0]) r[0] = conv2d_input_op(s[1], gc, s[0].shape(), p).impl();  // d/d x
    if (needs[1]) r[1] = conv2d_op(s[0], gc, Tensor<T>(), p).impl();          // d/d gy
    return r;
  }, x_, gy_);
}

}  // namespace detail
}  // namespace dl
