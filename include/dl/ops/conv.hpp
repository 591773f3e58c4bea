// dl/ops/conv.hpp — 2-d convolution kernels (NCHW) on the built-in GEMM. Stride 1 (the common case)
// runs on zero-padded "wide rows": GEMM panels are plain row copies, the input gradient is a
// convolution with flipped weights, the weight gradient a vectorised correlation. Other strides pack
// im2col panels straight from the input and use GEMM + col2im for the input gradient. The forward
// and both gradients are differentiable ops of each other: any order of derivatives works.
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
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

/// An optional Size2 that also takes a braced pair, as libtorch's optional strides:
/// F::max_pool2d(x, {2, 2}, {2, 2}). (A std::optional<Size2> parameter rejects `{2, 2}`: a braced
/// list initialises the optional with two constructor arguments, and optional has no such
/// constructor.)
struct OptionalSize2 : std::optional<Size2> {
  using std::optional<Size2>::optional;
  constexpr OptionalSize2(std::optional<Size2> v) : std::optional<Size2>(v) {}  // NOLINT: implicit
  constexpr OptionalSize2(int64_t h, int64_t w) : std::optional<Size2>(Size2(h, w)) {}
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

// ---- stride-1 convolutions on wide rows
//
// With the input zero-padded to planes of Hp x Wp, tap (c, ki, kj) of output pixel (oh, ow) reads
// xp[c][(oh + ki dh) Wp + ow + kj dw]. Indexing outputs by j = oh Wp + ow with ow running over the
// whole padded width (the Wp - OW extra columns are computed and dropped) turns every tap into
// one contiguous row of xp, shifted by off(c, ki, kj): the forward GEMM's B panels are plain
// copies, the input gradient is the same product with flipped weights, and the weight gradient a
// vectorised correlation of rows. Stride > 1 takes the im2col / col2im paths above.

/// Sizes of the padded planes; `slack` zeros after the last plane absorb the dropped columns'
/// reads past its end.
struct WideGeometry {
  int64_t Hp, Wp, plane, J, slack;
  int64_t size(int64_t channels) const { return channels * plane + slack; }
};

inline WideGeometry wide_geometry(const ConvGeometry& g, const ConvParams& p) {
  const int64_t Hp = g.H + 2 * p.padding.h, Wp = g.W + 2 * p.padding.w;
  return {Hp, Wp, Hp * Wp, g.OH * Wp, (g.KW - 1) * p.dilation.w + 64};
}

inline bool use_wide(const ConvGeometry& g, const ConvParams& p) { return p.stride == Size2(1) && !is_pointwise(g, p); }

/// dst[0:n] = src[0:n] for short rows, inline: a memmove call per 10-element row costs more than
/// the copy (and GCC turns a plain tail loop into one), so the tail is a masked vector copy.
template <class T>
DL_INLINE void copy_row(const T* __restrict src, int64_t n, T* __restrict dst) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  int64_t i = 0;
  for (; i + W <= n; i += W) V::load_unaligned(src + i).store_unaligned(dst + i);
  if (i == n) return;
#if defined(__AVX512F__)
  const __mmask16 m = __mmask16((1u << (n - i)) - 1);
  if constexpr (std::is_same_v<T, float>)
    _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
  else
    _mm512_mask_storeu_pd(dst + i, __mmask8(m), _mm512_maskz_loadu_pd(__mmask8(m), src + i));
#else
  for (; i < n; ++i) {
    dst[i] = src[i];
    asm volatile("" : "+r"(i));  // keeps the loop from becoming a memmove call
  }
#endif
}

/// Copies C planes of H x W into xp's zero-padded planes.
template <class T>
void pad_planes(const T* x, int64_t C, int64_t H, int64_t W, const ConvParams& p, const WideGeometry& wg, T* xp) {
  std::fill(xp, xp + wg.size(C), T(0));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ih = 0; ih < H; ++ih) copy_row(x + (c * H + ih) * W, W, xp + c * wg.plane + (ih + p.padding.h) * wg.Wp + p.padding.w);
}

/// B of the wide-row product: row k of B is xp + off[k], read in place by the micro-kernel (no
/// packing; columns past N only feed outputs that are never stored).
template <class T>
struct WideRows {
  static constexpr bool direct_rows = true;
  const T* base;
  const int64_t* off;
};

/// Row offsets off[(c, ki, kj)] of the taps in a padded image.
inline std::vector<int64_t> tap_offsets(int64_t channels, const ConvGeometry& g, const ConvParams& p, const WideGeometry& wg) {
  std::vector<int64_t> off;
  off.reserve(size_t(channels * g.KH * g.KW));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) off.push_back(c * wg.plane + ki * p.dilation.h * wg.Wp + kj * p.dilation.w);
  return off;
}

/// Stride-1 forward: per image, pad, one GEMM per group into wide rows, drop the extra columns.
template <class T>
Tensor<T> conv2d_forward_wide(const Tensor<T>& x, const Tensor<T>& w, const T* bias, const ConvGeometry& g,
                              const ConvParams& p) {
  Tensor<T> y = empty<T>({g.N, g.O, g.OH, g.OW});
  const WideGeometry wg = wide_geometry(g, p);
  const int64_t Og = g.Og(), Kg = g.Kg(), Cg = g.Cg();
  const std::vector<int64_t> off = tap_offsets(Cg, g, p, wg);
  std::vector<PrepackedA<T>> weights;  // packed once, copied per image
  for (int64_t grp = 0; grp < g.G; ++grp) weights.emplace_back(MatrixRef<T>{w.data() + grp * Og * Kg, Kg, 1}, Og, Kg);
  auto run = [&](int64_t n0, int64_t n1, int threads) {
    ScratchBuffer xpbuf(size_t(wg.size(g.C)) * sizeof(T)), cbuf(size_t(Og * wg.J) * sizeof(T));
    T* xp = xpbuf.as<T>();
    T* cw = cbuf.as<T>();
    for (int64_t n = n0; n < n1; ++n) {
      pad_planes(x.data() + n * g.C * g.HW(), g.C, g.H, g.W, p, wg, xp);
      for (int64_t grp = 0; grp < g.G; ++grp) {
        Epilogue<T> ep;
        if (bias) ep.bias = {bias + grp * Og, 1, 0};
        gemm_packed<T>(Og, wg.J, Kg, T(1), weights[size_t(grp)], WideRows<T>{xp + grp * Cg * wg.plane, off.data()}, T(0),
                       cw, wg.J, ep, threads);
        T* out = y.data() + (n * g.O + grp * Og) * g.OHW();
        for (int64_t o = 0; o < Og; ++o)
          for (int64_t oh = 0; oh < g.OH; ++oh) copy_row(cw + o * wg.J + oh * wg.Wp, g.OW, out + (o * g.OH + oh) * g.OW);
      }
    }
  };
  if (g.N > 1 && get_num_threads() > 1 && !in_parallel_region())
    parallel_for(0, g.N, 1, [&](int64_t n0, int64_t n1) { run(n0, n1, 1); });
  else
    run(0, g.N, 0);
  return y;
}

/// acc[ob][kb] += sum_i sum_j g[i][ob][j] * x[i][kb * dw + j] over j < jv (a multiple of the
/// vector width) and images i < nimg (g and x advance by gimg and ximg per image).
template <class T, int OB, int KB>
void correlate_rows(const T* __restrict g, int64_t gstride, const T* __restrict x, int64_t dw, int64_t jv, int64_t nimg,
                    int64_t gimg, int64_t ximg, xsimd::batch<T>* acc, int64_t astride) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  V a[OB][KB];
#pragma GCC unroll 4
  for (int ob = 0; ob < OB; ++ob)
#pragma GCC unroll 4
    for (int kb = 0; kb < KB; ++kb) a[ob][kb] = acc[ob * astride + kb];
  for (int64_t i = 0; i < nimg; ++i, g += gimg, x += ximg) {
    for (int64_t j = 0; j < jv; j += W) {
      V gv[OB];
#pragma GCC unroll 4
      for (int ob = 0; ob < OB; ++ob) {
        gv[ob] = V::load_aligned(g + ob * gstride + j);
        keep_in_register(gv[ob]);
      }
#pragma GCC unroll 4
      for (int kb = 0; kb < KB; ++kb) {
        V xv = V::load_unaligned(x + kb * dw + j);
        keep_in_register(xv);
#pragma GCC unroll 4
        for (int ob = 0; ob < OB; ++ob) a[ob][kb] = xsimd::fma(gv[ob], xv, a[ob][kb]);
      }
    }
  }
#pragma GCC unroll 4
  for (int ob = 0; ob < OB; ++ob)
#pragma GCC unroll 4
    for (int kb = 0; kb < KB; ++kb) acc[ob * astride + kb] = a[ob][kb];
}

template <class T>
using CorrelateFn = void (*)(const T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, xsimd::batch<T>*,
                             int64_t);

/// Register blocks of the correlation: up to kCorrOB output channels x kCorrKB taps of a kernel
/// row (4 x 6 accumulators + 5 operands fit AVX-512's 32 registers).
inline constexpr int kCorrOB = GemmConfig<float>::kRegisters >= 32 ? 4 : 2;
inline constexpr int kCorrKB = GemmConfig<float>::kRegisters >= 32 ? 6 : 4;

template <class T>
CorrelateFn<T> correlate_kernel(int ob, int kb) {
  static constexpr auto table = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<CorrelateFn<T>, sizeof...(I)>{&correlate_rows<T, I / kCorrKB + 1, I % kCorrKB + 1>...};
  }(std::make_integer_sequence<int, kCorrOB * kCorrKB>{});
  return table[size_t((ob - 1) * kCorrKB + (kb - 1))];
}

/// Stride-1 weight gradient: gw[o, c, ki, kj] = sum_n sum_j gyw[n, o, j] xp[n, c][off(ki, kj) + j],
/// gyw being gy laid out on wide rows with zeros in the extra columns. Vector partial sums are
/// kept per weight and reduced once at the end. (The zero columns meet real pixels: an infinite
/// input can make more entries NaN than PyTorch's, 0 * inf; finite inputs give the same sums.)
template <class T>
Tensor<T> conv2d_weight_wide(const Tensor<T>& x, const Tensor<T>& gy, const Shape& weight_shape, const ConvGeometry& g,
                             const ConvParams& p) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  const WideGeometry wg = wide_geometry(g, p);
  const int64_t Og = g.Og(), Cg = g.Cg(), KK = g.KH * g.KW, wsize = g.O * Cg * KK;
  const int64_t jv = (wg.J + W - 1) / W * W;
  constexpr int64_t JB = 1024;  // columns per pass: an OB x JB block of gyw stays in L1
  const int nt = in_parallel_region() ? 1 : get_num_threads();
  // Split images among threads (each with its own partial sums) when there are enough of them,
  // else output channels (blocks of kCorrOB) among threads.
  const int64_t oblocks = g.G * ((Og + kCorrOB - 1) / kCorrOB);
  const bool split_images = g.N >= nt;
  const int parts = int(std::max<int64_t>(1, std::min<int64_t>(nt, split_images ? g.N : oblocks)));
  ScratchBuffer accbuf(size_t((split_images ? parts : 1) * wsize) * sizeof(V) + 64);
  V* const acc_all = reinterpret_cast<V*>((reinterpret_cast<uintptr_t>(accbuf.as<char>()) + 63) / 64 * 64);

  auto run = [&](int part) {
    const auto [n0, n1] = split_images ? split_range(g.N, parts, part) : std::pair<int64_t, int64_t>{0, g.N};
    const auto [b0, b1] = split_images ? std::pair<int64_t, int64_t>{0, oblocks} : split_range(oblocks, parts, part);
    V* acc = acc_all + (split_images ? part * wsize : 0);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t grp = b / ((Og + kCorrOB - 1) / kCorrOB), ob0 = grp * Og + (b % ((Og + kCorrOB - 1) / kCorrOB)) * kCorrOB;
      const int64_t obn = std::min<int64_t>(kCorrOB, grp * Og + Og - ob0);
      std::fill(acc + ob0 * Cg * KK, acc + (ob0 + obn) * Cg * KK, V(T(0)));
    }
    // Images are taken in chunks whose padded inputs and wide gradients fit in L2; each register
    // block of partial sums then runs over the whole chunk.
    const int64_t ximg = g.C * wg.plane, gimg = g.O * jv;
    const int64_t nb_max = std::clamp<int64_t>((int64_t(512) << 10) / int64_t((ximg + gimg) * sizeof(T)), 1, std::max<int64_t>(n1 - n0, 1));
    ScratchBuffer xpbuf(size_t(nb_max * ximg + wg.slack) * sizeof(T)), gbuf(size_t(nb_max * gimg) * sizeof(T) + 64);
    T* xp = xpbuf.as<T>();
    T* gw_rows = gbuf.as<T>();
    for (int64_t nc = n0; nc < n1; nc += nb_max) {
      const int64_t nb = std::min(nb_max, n1 - nc);
      std::fill(gw_rows, gw_rows + nb * gimg, T(0));
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t n = nc + i;
        pad_planes(x.data() + n * g.C * g.HW(), g.C, g.H, g.W, p, wg, xp + i * ximg);
        for (int64_t o = 0; o < g.O; ++o)
          for (int64_t oh = 0; oh < g.OH; ++oh) {
            copy_row(gy.data() + ((n * g.O + o) * g.OH + oh) * g.OW, g.OW, gw_rows + i * gimg + o * jv + oh * wg.Wp);
          }
      }
      // Long rows (one image per chunk) are walked in column blocks so a block of gradient rows
      // stays in L1 across the taps.
      const int64_t jb = nb == 1 ? JB : jv;
      // Taps of a kernel row in even chunks of at most kCorrKB (7 -> 4 + 3, not 6 + 1).
      const int64_t kb_step = (g.KW + (g.KW + kCorrKB - 1) / kCorrKB - 1) / ((g.KW + kCorrKB - 1) / kCorrKB);
      for (int64_t j0 = 0; j0 < jv; j0 += jb) {
        const int64_t jn = std::min(jb, jv - j0);
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t per_group = (Og + kCorrOB - 1) / kCorrOB;
          const int64_t grp = b / per_group, ob0 = grp * Og + (b % per_group) * kCorrOB;
          const int obn = int(std::min<int64_t>(kCorrOB, grp * Og + Og - ob0));
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < g.KH; ++ki)
              for (int64_t kj = 0; kj < g.KW; kj += kb_step) {
                const int kb = int(std::min<int64_t>(kb_step, g.KW - kj));
                const T* xrow = xp + (grp * Cg + c) * wg.plane + ki * p.dilation.h * wg.Wp + kj * p.dilation.w + j0;
                correlate_kernel<T>(obn, kb)(gw_rows + ob0 * jv + j0, jv, xrow, p.dilation.w, jn, nb, gimg, ximg,
                                             acc + (ob0 * Cg + c) * KK + ki * g.KW + kj, Cg * KK);
              }
        }
      }
    }
  };
  if (parts > 1)
    parallel_for(0, parts, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) run(int(t));
    });
  else
    run(0);

  Tensor<T> gw = empty<T>(weight_shape);
  T* out = gw.data();
  const int nacc = split_images ? parts : 1;
  parallel_for(0, wsize, 256, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      V s = acc_all[i];
      for (int t = 1; t < nacc; ++t) s += acc_all[t * wsize + i];
      out[i] = xsimd::hadd(s);
    }
  });
  return gw;
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

// ---- channels last: small images with many channels
//
// With few pixels per image (ResNet's 8x8 and 4x4 stages), a product per image has little to
// vectorise along its rows. Copied to channels-last order (NHWC), every pixel's taps are runs of C
// contiguous channels, and the whole batch is one product whose depth is every pixel of every
// image.

/// x [N, C, H, W] -> xp [N, H + 2 ph, W + 2 pw, C]: channels last, zero-padded.
template <class T>
void to_channels_last_padded(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, T* xp) {
  const int64_t Hp = H + 2 * ph, Wp = W + 2 * pw, HW = H * W;
  parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      T* img = xp + n * Hp * Wp * C;
      const T* src = x + n * C * HW;
      std::fill(img, img + ph * Wp * C, T(0));
      std::fill(img + (ph + H) * Wp * C, img + Hp * Wp * C, T(0));
      for (int64_t h = 0; h < H; ++h) {
        T* row = img + (h + ph) * Wp * C;
        std::fill(row, row + pw * C, T(0));
        std::fill(row + (pw + W) * C, row + Wp * C, T(0));
      }
      constexpr int64_t kTile = 16;  // [C, HW] -> [HW, C] in tiles that stay in L1
      for (int64_t c0 = 0; c0 < C; c0 += kTile)
        for (int64_t q0 = 0; q0 < HW; q0 += kTile) {
          const int64_t c1 = std::min(C, c0 + kTile), q1 = std::min(HW, q0 + kTile);
          for (int64_t q = q0; q < q1; ++q) {
            T* dst = img + ((q / W + ph) * Wp + q % W + pw) * C;
            for (int64_t c = c0; c < c1; ++c) dst[c] = src[c * HW + q];
          }
        }
    }
  });
}

/// Offsets of the taps (ki, kj) in a padded channels-last image: (ki dh Wp + kj dw) C.
inline std::vector<int64_t> channels_last_taps(const ConvGeometry& g, const ConvParams& p) {
  const int64_t Wp = g.W + 2 * p.padding.w;
  std::vector<int64_t> tap(static_cast<size_t>(g.KH * g.KW));
  for (int64_t ki = 0; ki < g.KH; ++ki)
    for (int64_t kj = 0; kj < g.KW; ++kj) tap[size_t(ki * g.KW + kj)] = (ki * p.dilation.h * Wp + kj * p.dilation.w) * g.C;
  return tap;
}

/// wt[o, (t, c)] = w[o, c, t]: weights [O, C, KH, KW] with the taps outermost in each row, the
/// order of a channels-last image's runs.
template <class T>
void taps_major(const T* w, int64_t O, int64_t C, int64_t KT, T* wt) {
  parallel_for(0, O, 4, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t t = 0; t < KT; ++t) wt[(o * KT + t) * C + c] = w[(o * C + c) * KT + t];
  });
}

/// Whether a convolution's weight gradient takes the channels-last product: one group, at least
/// 32 input channels, at most 16 x 16 output pixels, a kernel larger than 1 x 1. Measured here
/// (2 threads, batch 128, 3x3 kernels, GFLOP/s of the per-image form -> this one): 512 channels
/// at 4x4 37 -> 197, 256 at 8x8 78 -> 196, 128 at 16x16 135 -> 180, 48 -> 64 at 7x7 116 -> 133; it
/// loses at 64 channels of 32x32 (172 -> 150), 24 channels of 14x14 (148 -> 74) and for 1x1
/// kernels of stride 2 (70 -> 56), which read a quarter of the input it copies.
inline bool weight_grad_channels_last(const ConvGeometry& g) {
  return g.G == 1 && g.C >= 32 && g.OHW() <= 256 && g.KH * g.KW > 1;
}

/// The weight gradient as one product over the batch: gw[o, (ki, kj, c)] = sum over images n and
/// output pixels q of gy[n, o, q] xp[n, q's input position + tap (ki, kj), c], xp channels last;
/// then reordered to [O, C, KH, KW]. Any stride, padding and dilation; one group.
template <class T>
Tensor<T> conv2d_weight_channels_last(const Tensor<T>& x, const Tensor<T>& gy, const Shape& weight_shape, const ConvGeometry& g,
                                      const ConvParams& p) {
  constexpr int NR = gemm_nr<T>();
  const int64_t Hp = g.H + 2 * p.padding.h, Wp = g.W + 2 * p.padding.w, C = g.C, O = g.O, KT = g.KH * g.KW, OHW = g.OHW();
  const int64_t depth = g.N * OHW, cols = KT * C;
  ScratchBuffer xbuf(size_t(g.N * Hp * Wp * C) * sizeof(T)), gbuf(size_t(O * cols) * sizeof(T));
  T* const xp = xbuf.as<T>();
  T* const gwt = gbuf.as<T>();
  to_channels_last_padded(x.data(), g.N, C, g.H, g.W, p.padding.h, p.padding.w, xp);
  const std::vector<int64_t> tap = channels_last_taps(g, p);
  const T* const gyd = gy.data();
  // A(o, (n, q)) = gy[n, o, q]: runs of an image's pixels, transposed into the panel.
  auto pack_a = [&](int64_t i0, int mr, int64_t k0, int64_t kc, T* __restrict dst) {
    for (int i = 0; i < mr; ++i)
      for (int64_t k = k0; k < k0 + kc;) {
        const int64_t n = k / OHW, q = k % OHW, run = std::min(OHW - q, k0 + kc - k);
        const T* src = gyd + (n * O + i0 + i) * OHW + q;
        T* d = dst + (k - k0) * mr + i;
        for (int64_t t = 0; t < run; ++t) d[t * mr] = src[t];
        k += run;
      }
  };
  // B((n, oh, ow), (t, c)) = xp[n, oh sh + ki dh, ow sw + kj dw, c]: runs of contiguous channels.
  auto pack_b = [&](int64_t j0, int nr, int64_t k0, int64_t kc, T* __restrict dst) {
    for (int64_t k = k0; k < k0 + kc; ++k, dst += NR) {
      const int64_t n = k / OHW, q = k % OHW, oh = q / g.OW, ow = q % g.OW;
      const T* base = xp + ((n * Hp + oh * p.stride.h) * Wp + ow * p.stride.w) * C;
      for (int64_t j = j0; j < j0 + nr;) {
        const int64_t t = j / C, c = j % C, run = std::min(C - c, j0 + nr - j);
        std::memcpy(dst + (j - j0), base + tap[size_t(t)] + c, size_t(run) * sizeof(T));
        j += run;
      }
      if (nr < NR) std::fill(dst + nr, dst + NR, T(0));
    }
  };
  gemm_packed<T>(O, cols, depth, T(1), pack_a, pack_b, T(0), gwt, cols, Epilogue<T>{}, 0);
  Tensor<T> gw = empty<T>(weight_shape);
  T* const out = gw.data();
  parallel_for(0, O, 4, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t t = 0; t < KT; ++t)
        for (int64_t c = 0; c < C; ++c) out[(o * C + c) * KT + t] = gwt[o * cols + t * C + c];
  });
  return gw;
}

/// Whether a convolution's forward pass (and so a stride-1 input gradient, a forward pass with
/// flipped weights) takes the channels-last product: one group, at least 64 input channels, and at
/// most 8 x 8 output pixels or a stride (1x1 kernels: at most 4 x 4 output pixels). Measured here (2 threads, batch
/// 128, 3x3 kernels, ms of the per-image form -> this one): 512 channels at 4x4 100 -> 61, 256 at
/// 8x8 66 -> 58, stride 2 from 8x8 to 4x4 (256 -> 512 channels) 80 -> 32, from 16x16 36 -> 32; it
/// loses at 128 channels of 16x16 (51 -> 69), 48 channels of 7x7 (2.5 -> 3.0) and for 1x1 kernels
/// (5.2 -> 8.3 at 128 channels of 16x16, stride 2).
inline bool forward_channels_last(const ConvGeometry& g, const ConvParams& p) {
  if (g.G != 1 || g.C < 64) return false;
  if (g.KH * g.KW == 1) return g.OHW() <= 16;  // 1x1, stride 2 from 8x8 (256 -> 512 channels): 8.0 -> 4.9 ms
  return g.OHW() <= 64 || p.stride != Size2(1);
}

/// The forward pass as one product over the batch: y[o, (n, q)] = sum over taps t and channels c of
/// w[o, c, t] xp[n, q's input position + tap t, c] (+ bias[o]), xp channels last; the products'
/// columns are pixels of every image, copied to [N, O, OH, OW] at the end.
template <class T>
Tensor<T> conv2d_forward_channels_last(const Tensor<T>& x, const Tensor<T>& w, const T* bias, const ConvGeometry& g,
                                       const ConvParams& p) {
  constexpr int NR = gemm_nr<T>();
  const int64_t Hp = g.H + 2 * p.padding.h, Wp = g.W + 2 * p.padding.w, C = g.C, O = g.O, KT = g.KH * g.KW, OHW = g.OHW();
  const int64_t pix = g.N * OHW, depth = KT * C;
  ScratchBuffer xbuf(size_t(g.N * Hp * Wp * C) * sizeof(T)), wbuf(size_t(O * depth) * sizeof(T)), ybuf(size_t(O * pix) * sizeof(T));
  T* const xp = xbuf.as<T>();
  T* const wt = wbuf.as<T>();
  T* const yt = ybuf.as<T>();
  to_channels_last_padded(x.data(), g.N, C, g.H, g.W, p.padding.h, p.padding.w, xp);
  taps_major(w.data(), O, C, KT, wt);
  const std::vector<int64_t> tap = channels_last_taps(g, p);
  const MatrixRef<T> A{wt, depth, 1};
  // B((t, c), (n, oh, ow)) = xp[n, oh sh + ki dh, ow sw + kj dw, c]: each pixel's runs of channels,
  // transposed into the panel.
  auto pack_b = [&](int64_t j0, int nr, int64_t k0, int64_t kc, T* __restrict dst) {
    for (int jj = 0; jj < nr; ++jj) {
      const int64_t j = j0 + jj, n = j / OHW, q = j % OHW, oh = q / g.OW, ow = q % g.OW;
      const T* base = xp + ((n * Hp + oh * p.stride.h) * Wp + ow * p.stride.w) * C;
      for (int64_t k = k0; k < k0 + kc;) {
        const int64_t t = k / C, c = k % C, run = std::min(C - c, k0 + kc - k);
        const T* src = base + tap[size_t(t)] + c;
        T* d = dst + (k - k0) * NR + jj;
        for (int64_t r = 0; r < run; ++r) d[r * NR] = src[r];
        k += run;
      }
    }
    if (nr < NR)
      for (int64_t k = 0; k < kc; ++k) std::fill(dst + k * NR + nr, dst + (k + 1) * NR, T(0));
  };
  Epilogue<T> ep;
  if (bias) ep.bias = {bias, 1, 0};
  gemm_packed<T>(
      O, pix, depth, T(1), [&A](int64_t i0, int mr, int64_t k0, int64_t kc, T* dst) { pack_a_panel(A, i0, mr, k0, kc, dst); }, pack_b,
      T(0), yt, pix, ep, 0);
  Tensor<T> y = empty<T>({g.N, O, g.OH, g.OW});
  T* const out = y.data();
  parallel_for(0, g.N, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t o = 0; o < O; ++o) std::memcpy(out + (n * O + o) * OHW, yt + o * pix + n * OHW, size_t(OHW) * sizeof(T));
  });
  return y;
}

/// Whether the input gradient of a strided convolution (not itself a convolution of gy) takes the
/// channels-last product: one group, at least 64 output channels, a kernel larger than 1 x 1, at
/// most 4 x 4 output pixels. Measured here (batch 64, 2 threads, GFLOP/s of the per-image products
/// -> this one): 256 -> 512 channels, 3x3 stride 2 from 8x8 68 -> 156; it loses with 8 x 8 outputs
/// (128 -> 256 channels from 16x16: 156 -> 142) and for 1x1 kernels (141 -> 59 from 16x16).
inline bool input_grad_channels_last(const ConvGeometry& g, const ConvParams& p) {
  return g.G == 1 && g.O >= 64 && p.stride != Size2(1) && g.OHW() <= 16 && g.KH * g.KW > 1;
}

/// The input gradient as one product over the batch: col[(n, q), (t, c)] = sum over o of
/// gy[n, o, q] w[o, c, t]; each row's taps are then added at their input positions in a padded
/// channels-last image, which is cropped and copied back to [N, C, H, W].
template <class T>
Tensor<T> conv2d_input_channels_last(const Tensor<T>& gy, const Tensor<T>& w, const ConvGeometry& g, const ConvParams& p) {
  const int64_t Hp = g.H + 2 * p.padding.h, Wp = g.W + 2 * p.padding.w, C = g.C, O = g.O, KT = g.KH * g.KW, OHW = g.OHW();
  const int64_t pix = g.N * OHW, cols = KT * C;
  ScratchBuffer wbuf(size_t(O * cols) * sizeof(T)), cbuf(size_t(pix * cols) * sizeof(T));
  T* const wt = wbuf.as<T>();
  T* const col = cbuf.as<T>();
  taps_major(w.data(), O, C, KT, wt);
  const T* const gyd = gy.data();
  // A((n, q), o) = gy[n, o, q]: for each o, runs of consecutive pixels of an image.
  auto pack_a = [&](int64_t i0, int mr, int64_t k0, int64_t kc, T* __restrict dst) {
    for (int64_t k = k0; k < k0 + kc; ++k, dst += mr)
      for (int i = 0; i < mr;) {
        const int64_t r = i0 + i, n = r / OHW, q = r % OHW, run = std::min<int64_t>(OHW - q, mr - i);
        std::memcpy(dst + i, gyd + (n * O + k) * OHW + q, size_t(run) * sizeof(T));
        i += int(run);
      }
  };
  const MatrixRef<T> B{wt, cols, 1};
  gemm_packed<T>(
      pix, cols, O, T(1), pack_a, [&B](int64_t j0, int nr, int64_t k0, int64_t kc, T* dst) { pack_b_panel(B, j0, nr, k0, kc, dst); },
      T(0), col, cols, Epilogue<T>{}, 0);
  const std::vector<int64_t> tap = channels_last_taps(g, p);
  Tensor<T> gx = empty<T>({g.N, C, g.H, g.W});
  T* const out = gx.data();
  const int64_t HW = g.H * g.W;
  parallel_for(0, g.N, 1, [&](int64_t n0, int64_t n1) {
    ScratchBuffer ibuf(size_t(Hp * Wp * C) * sizeof(T));
    T* const img = ibuf.as<T>();
    for (int64_t n = n0; n < n1; ++n) {
      std::fill(img, img + Hp * Wp * C, T(0));
      for (int64_t q = 0; q < OHW; ++q) {
        T* base = img + ((q / g.OW) * p.stride.h * Wp + (q % g.OW) * p.stride.w) * C;
        const T* row = col + (n * OHW + q) * cols;
        for (int64_t t = 0; t < KT; ++t) add_into(base + tap[size_t(t)], row + t * C, C);
      }
      constexpr int64_t kTile = 16;  // [HW, C] (inside the padding) -> [C, HW] in tiles
      T* dst = out + n * C * HW;
      for (int64_t q0 = 0; q0 < HW; q0 += kTile)
        for (int64_t c0 = 0; c0 < C; c0 += kTile)
          for (int64_t c = c0; c < std::min(C, c0 + kTile); ++c)
            for (int64_t q = q0; q < std::min(HW, q0 + kTile); ++q)
              dst[c * HW + q] = img[((q / g.W + p.padding.h) * Wp + q % g.W + p.padding.w) * C + c];
    }
  });
  return gx;
}

// ---- strided 1x1 convolutions (ResNet's downsampling shortcuts): a 1x1 kernel of stride s without
// padding reads every s-th pixel, so the forward pass and the weight gradient are pointwise products
// over those pixels (ResNet-18's shortcuts at batch 64, GFLOP/s before -> after: forward from 32x32
// 64 -> 72, from 16x16 118 -> 140; weight gradient from 16x16 114 -> 147, from 8x8 138 -> 155). The
// input gradient keeps its column path: scattering a pointwise gradient measured slower (118 -> 96).

/// Whether a convolution is 1x1 with a stride and no padding.
inline bool strided_pointwise(const ConvGeometry& g, const ConvParams& p) {
  return g.KH == 1 && g.KW == 1 && p.padding == Size2(0) && p.stride != Size2(1);
}

/// The pixels a strided 1x1 convolution reads: xs[n, c, i, j] = x[n, c, i sh, j sw], [N, C, OH, OW].
template <class T>
Tensor<T> subsample(const Tensor<T>& x, const ConvGeometry& g, const ConvParams& p) {
  Tensor<T> xs = empty<T>({g.N, g.C, g.OH, g.OW});
  const T* src = x.data();
  T* dst = xs.data();
  parallel_for(0, g.N * g.C, 16, [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane)
      for (int64_t i = 0; i < g.OH; ++i)
        for (int64_t j = 0; j < g.OW; ++j)
          dst[(plane * g.OH + i) * g.OW + j] = src[(plane * g.H + i * p.stride.h) * g.W + j * p.stride.w];
  });
  return xs;
}

/// The same geometry at stride 1 (for the subsampled input).
inline ConvParams unit_stride(const ConvParams& p) { return {Size2(1), p.padding, p.dilation, p.groups}; }

/// Weights of the input gradient as a stride-1 convolution: w'[g Cg + c, o, ki, kj] =
/// w[g Og + o, c, KH - 1 - ki, KW - 1 - kj].
template <class T>
Tensor<T> flip_weights(const Tensor<T>& w, const ConvGeometry& g) {
  const int64_t Og = g.Og(), Cg = g.Cg(), KK = g.KH * g.KW;
  Tensor<T> f = empty<T>({g.C, Og, g.KH, g.KW});
  for (int64_t grp = 0; grp < g.G; ++grp)
    for (int64_t o = 0; o < Og; ++o)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t k = 0; k < KK; ++k)
          f.data()[((grp * Cg + c) * Og + o) * KK + (KK - 1 - k)] = w.data()[((grp * Og + o) * Cg + c) * KK + k];
  return f;
}

template <class T>
Tensor<T> conv2d_forward_raw(const Tensor<T>& x, const Tensor<T>& w, const T* bias, const ConvParams& p) {
  const ConvGeometry g = conv2d_geometry(x.shape(), w.shape(), Tensor<T>(), p);
  if (g.N > 0 && g.OHW() > 0 && forward_channels_last(g, p)) return conv2d_forward_channels_last(x, w, bias, g, p);
  if (g.N > 0 && strided_pointwise(g, p)) return conv2d_forward_raw(subsample(x, g, p), w, bias, unit_stride(p));
  if (use_wide(g, p)) return conv2d_forward_wide(x, w, bias, g, p);
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

/// Stride-1 input gradient by scattering the taps: per image and group, P = W_g^T gyw (one row
/// per tap (c, ki, kj), gyw being gy on wide rows of the padded input's width with zero extra
/// columns), then each row of P is added along the padded input at the tap's offset, and the
/// padding is cropped. It multiplies no zero padding, unlike the flipped-weight convolution.
template <class T>
Tensor<T> conv2d_input_scatter(const Tensor<T>& gy, const Tensor<T>& w, const ConvGeometry& g, const ConvParams& p) {
  constexpr int64_t NR = gemm_nr<T>();
  const WideGeometry wg = wide_geometry(g, p);
  const int64_t Og = g.Og(), Cg = g.Cg(), Kg = g.Kg(), J = wg.J;
  Tensor<T> gx = empty<T>({g.N, g.C, g.H, g.W});
  std::vector<PrepackedA<T>> weights_t;  // W_g^T: [Kg, Og] per group
  for (int64_t grp = 0; grp < g.G; ++grp) weights_t.emplace_back(MatrixRef<T>{w.data() + grp * Og * Kg, 1, Kg}, Kg, Og);
  std::vector<int64_t> row_off(static_cast<size_t>(Og));
  for (int64_t o = 0; o < Og; ++o) row_off[size_t(o)] = o * J;
  const std::vector<int64_t> tap = tap_offsets(Cg, g, p, wg);
  auto run = [&](int64_t n0, int64_t n1, int threads) {
    ScratchBuffer gbuf(size_t(g.O * J + NR) * sizeof(T)), pbuf(size_t(Kg * J) * sizeof(T)), xbuf(size_t(wg.size(Cg)) * sizeof(T));
    T* gyw = gbuf.as<T>();
    T* P = pbuf.as<T>();
    T* xp = xbuf.as<T>();
    std::fill(gyw, gyw + g.O * J + NR, T(0));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t o = 0; o < g.O; ++o)
        for (int64_t oh = 0; oh < g.OH; ++oh)
          copy_row(gy.data() + ((n * g.O + o) * g.OH + oh) * g.OW, g.OW, gyw + o * J + oh * wg.Wp);
      for (int64_t grp = 0; grp < g.G; ++grp) {
        gemm_packed<T>(Kg, J, Og, T(1), weights_t[size_t(grp)], WideRows<T>{gyw + grp * Og * J, row_off.data()}, T(0), P, J,
                       Epilogue<T>{}, threads);
        // Rows of P reach past their plane only with zeros (extra columns): clipping them at the
        // plane's end keeps channels independent, so they may run in parallel.
        auto scatter = [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            T* plane = xp + c * wg.plane;
            std::fill(plane, plane + wg.plane, T(0));
            for (int64_t r = c * g.KH * g.KW; r < (c + 1) * g.KH * g.KW; ++r) {
              const int64_t o = tap[size_t(r)] - c * wg.plane;
              add_into(plane + o, P + r * J, std::min(J, wg.plane - o));
            }
            T* out = gx.data() + (n * g.C + grp * Cg + c) * g.HW();
            for (int64_t ih = 0; ih < g.H; ++ih) copy_row(plane + (ih + p.padding.h) * wg.Wp + p.padding.w, g.W, out + ih * g.W);
          }
        };
        if (threads == 1) scatter(0, Cg);
        else parallel_for(0, Cg, 1, scatter);
      }
    }
  };
  if (g.N > 1 && get_num_threads() > 1 && !in_parallel_region())
    parallel_for(0, g.N, 1, [&](int64_t n0, int64_t n1) { run(n0, n1, 1); });
  else
    run(0, g.N, 0);
  return gx;
}

template <class T>
Tensor<T> conv2d_input_raw(const Tensor<T>& gy, const Tensor<T>& w, const Shape& input_shape, const ConvParams& p) {
  const ConvGeometry g = conv2d_geometry(input_shape, w.shape(), Tensor<T>(), p, "conv2d_backward");
  DL_CHECK(gy.shape() == Shape({g.N, g.O, g.OH, g.OW}), "conv2d backward: grad_output of shape ", gy.shape(),
           " does not match the output shape [", g.N, ", ", g.O, ", ", g.OH, ", ", g.OW, "]");
  if (g.N > 0 && g.OHW() > 0 && input_grad_channels_last(g, p)) return conv2d_input_channels_last(gy, w, g, p);
  if (use_wide(g, p)) {
    // Stride 1. Either the full correlation of gy with the flipped weights (a stride-1 convolution
    // over gy padded by d (k - 1) - p), or the taps' products scattered back along wide rows;
    // the second multiplies no padding, which wins for small padding (valid convolutions).
    const int64_t fh = p.dilation.h * (g.KH - 1) - p.padding.h, fw = p.dilation.w * (g.KW - 1) - p.padding.w;
    const WideGeometry wg = wide_geometry(g, p);
    // Output columns each form computes: J = OH x Wp for the scatter, H x (OW + 2 fw) for the flip
    // (the scatter also pays a pass over its products, hence the margin).
    const double flip_cost = fh < 0 || fw < 0 ? 1e300 : double(g.H) * double(g.OW + 2 * fw);
    if (double(wg.J) < 0.5 * flip_cost && g.Kg() * wg.J * int64_t(sizeof(T)) <= (int64_t(2) << 20))
      return conv2d_input_scatter(gy, w, g, p);
  }
  if (use_wide(g, p) && p.padding.h <= p.dilation.h * (g.KH - 1) && p.padding.w <= p.dilation.w * (g.KW - 1)) {
    const ConvParams q{Size2(1), Size2(p.dilation.h * (g.KH - 1) - p.padding.h, p.dilation.w * (g.KW - 1) - p.padding.w),
                       p.dilation, p.groups};
    return conv2d_forward_raw(gy, flip_weights(w, g), static_cast<const T*>(nullptr), q);
  }
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
  if (g.N == 0 || g.OHW() == 0) return zeros<T>(weight_shape);
  if (weight_grad_channels_last(g)) return conv2d_weight_channels_last(x, gy, weight_shape, g, p);
  if (strided_pointwise(g, p)) return conv2d_weight_raw(subsample(x, g, p), gy, weight_shape, unit_stride(p));
  if (use_wide(g, p)) return conv2d_weight_wide(x, gy, weight_shape, g, p);
  Tensor<T> gw = empty<T>(weight_shape);
  const int64_t Og = g.Og(), Kg = g.Kg(), OHW = g.OHW(), wsize = g.O * Kg;
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

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_op<float>(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::detail::ConvParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_input_op<float>(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Shape&, const dl::detail::ConvParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::conv2d_weight_op<float>(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Shape&, const dl::detail::ConvParams&))
