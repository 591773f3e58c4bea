// dl/ops/pool.hpp — 2-d pooling kernels (NCHW): max pooling with indices and its backward from the
// indices, average pooling (count_include_pad, divisor_override), adaptive average and adaptive
// max pooling. Each backward is itself a differentiable op (higher derivatives work).
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../tensor.hpp"
#include "conv.hpp"
#include "kernel_backward.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// Window parameters of max/avg pooling.
struct PoolParams {
  Size2 kernel{1}, stride{1}, padding{0}, dilation{1};
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg only
  int64_t divisor_override = 0;   // avg only; 0: none
};

/// Output size of one pooled dim (PyTorch's pooling_output_shape).
int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);
/// Checks a 4-d pooling input and parameters, returns the output shape.
Shape pool2d_shape(const Shape& x, const PoolParams& p, const char* what);

/// (values, flat indices into each H x W plane) of max pooling; x contiguous [N, C, H, W].
template <class T>
MaxResult<T> max_pool2d_raw(const Tensor<T>& x, const PoolParams& p);
/// out[plane][index[plane][o]] += g[plane][o]: the input gradient of max pooling.
template <class T>
Tensor<T> max_pool2d_scatter_raw(const Tensor<T>& g, const Tensor<int64_t>& index, const Shape& input_shape);
/// out[plane][o] = g[plane][index[plane][o]]: the adjoint of the scatter.
template <class T>
Tensor<T> max_pool2d_gather_raw(const Tensor<T>& g, const Tensor<int64_t>& index);

/// Average pooling (adaptive when `adaptive`, the output size then given by out_shape) and its adjoint.
template <class T>
Tensor<T> avg_pool2d_raw(const Tensor<T>& x, const PoolParams& p, const Shape& out_shape, bool adaptive);
template <class T>
Tensor<T> avg_pool2d_backward_raw(const Tensor<T>& g, const PoolParams& p, const Shape& input_shape, bool adaptive);
/// Adaptive max pooling to out_shape [N, C, OH, OW].
template <class T>
MaxResult<T> adaptive_max_pool2d_raw(const Tensor<T>& x, const Shape& out_shape);

/// Differentiable forms.
template <class T>
MaxResult<T> max_pool2d_op(const Tensor<T>& x, const PoolParams& p);
template <class T>
MaxResult<T> adaptive_max_pool2d_op(const Tensor<T>& x, int64_t oh, int64_t ow);
template <class T>
Tensor<T> max_pool2d_scatter_op(const Tensor<T>& g, const Tensor<int64_t>& index, const Shape& input_shape);
template <class T>
Tensor<T> max_pool2d_gather_op(const Tensor<T>& g, const Tensor<int64_t>& index);
template <class T>
Tensor<T> avg_pool2d_op(const Tensor<T>& x, const PoolParams& p, const Shape& out_shape, bool adaptive);
template <class T>
Tensor<T> avg_pool2d_backward_op(const Tensor<T>& g, const PoolParams& p, const Shape& input_shape, bool adaptive);

// ------------------------------------------------------------------------------ implementation

inline int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // floor division (num may be negative)
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  // the last window must start inside the input or the left padding
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

inline Shape pool2d_shape(const Shape& x, const PoolParams& p, const char* what) {
  DL_CHECK(p.kernel.h > 0 && p.kernel.w > 0, what, ": kernel size should be greater than zero, but got kH: ", p.kernel.h,
           " kW: ", p.kernel.w);
  DL_CHECK(p.stride.h > 0 && p.stride.w > 0, what, ": stride should be greater than zero, but got dH: ", p.stride.h,
           " dW: ", p.stride.w);
  DL_CHECK(p.dilation.h > 0 && p.dilation.w > 0, what, ": dilation should be greater than zero, but got dilationH: ",
           p.dilation.h, " dilationW: ", p.dilation.w);
  DL_CHECK(p.padding.h >= 0 && p.padding.w >= 0, what, ": padding must be non-negative, but got padH: ", p.padding.h,
           " padW: ", p.padding.w);
  DL_CHECK(p.padding.h <= p.kernel.h / 2 && p.padding.w <= p.kernel.w / 2, what,
           ": pad should be at most half of kernel size, but got pad=", p.padding.h == 0 ? p.padding.w : p.padding.h,
           " and kernel_size=", p.padding.h == 0 ? p.kernel.w : p.kernel.h);
  DL_CHECK(x.size() == 4 && x[1] > 0 && x[2] > 0 && x[3] > 0, what,
           ": non-empty 3D or 4D (batch mode) tensor expected for input, but got input of size ", x);
  const int64_t oh = pool_output_size(x[2], p.kernel.h, p.padding.h, p.stride.h, p.dilation.h, p.ceil_mode);
  const int64_t ow = pool_output_size(x[3], p.kernel.w, p.padding.w, p.stride.w, p.dilation.w, p.ceil_mode);
  DL_CHECK(oh >= 1 && ow >= 1, what, ": Given input size: (", x[1], "x", x[2], "x", x[3], "). Calculated output size: (", x[1],
           "x", oh, "x", ow, "). Output size is too small");
  return {x[0], x[1], oh, ow};
}

/// Runs f(plane0, plane1) over the N * C planes in parallel.
template <class F>
void for_planes(int64_t planes, int64_t plane_work, F&& f) {
  parallel_for(0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_work, 1)), f);
}

/// One output row of 2x2, stride-2 max pooling: rows r0 = in[0:W], r1 = in[W:2W]; indices are
/// base + the offset of the chosen element. With AVX-512 (float), 16 outputs at a time: the
/// row pair is deinterleaved into the four window corners with two-source permutes (rows of
/// LeNet-sized images are shorter than a vector, so a compiler-vectorised loop never runs);
/// otherwise written branch-free so that it vectorises on long rows.
template <class T>
void max_pool_2x2_row(const T* __restrict r0, int64_t W, int64_t OW, int64_t base, T* __restrict out,
                      int64_t* __restrict ind) {
  const T* __restrict r1 = r0 + W;
  int64_t ow = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (base + 2 * W < (int64_t(1) << 30)) {
      const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
      const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
      const __m512i lane2 = _mm512_slli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1);
      const __m512i one = _mm512_set1_epi32(1), kw = _mm512_set1_epi32(int32_t(W)), kw1 = _mm512_set1_epi32(int32_t(W + 1));
      for (; ow < OW; ow += 16) {
        const int n = int(std::min<int64_t>(16, OW - ow)), cnt = 2 * n;
        const __mmask16 lo = cnt >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cnt) - 1);
        const __mmask16 hi = cnt >= 32 ? __mmask16(0xFFFF) : cnt > 16 ? __mmask16((1u << (cnt - 16)) - 1) : __mmask16(0);
        const __mmask16 om = n == 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
        const __m512 v0 = _mm512_permutex2var_ps(a0, even, a1), v1 = _mm512_permutex2var_ps(a0, odd, a1);
        const __m512 v2 = _mm512_permutex2var_ps(b0, even, b1), v3 = _mm512_permutex2var_ps(b0, odd, b1);
        // PyTorch's order (0,0), (0,1), (1,0), (1,1), each taken when larger or NaN.
        __m512 m = v0;
        __m512i k = _mm512_setzero_si512();
        __mmask16 t = _mm512_cmp_ps_mask(v1, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, t, v1), k = _mm512_mask_mov_epi32(k, t, one);
        t = _mm512_cmp_ps_mask(v2, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v2, v2, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, t, v2), k = _mm512_mask_mov_epi32(k, t, kw);
        t = _mm512_cmp_ps_mask(v3, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v3, v3, _CMP_UNORD_Q);
        m = _mm512_mask_mov_ps(m, t, v3), k = _mm512_mask_mov_epi32(k, t, kw1);
        _mm512_mask_storeu_ps(out + ow, om, m);
        const __m512i idx = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32(int32_t(base + 2 * ow)), lane2), k);
        _mm512_mask_storeu_epi64(ind + ow, __mmask8(om & 0xFF), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(idx)));
        _mm512_mask_storeu_epi64(ind + ow + 8, __mmask8(om >> 8), _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(idx, 1)));
      }
      return;
    }
  }
#endif
  for (; ow < OW; ++ow) {
    const T v0 = r0[2 * ow], v1 = r0[2 * ow + 1], v2 = r1[2 * ow], v3 = r1[2 * ow + 1];
    // PyTorch's order (0,0), (0,1), (1,0), (1,1), each taken when larger or NaN
    T m = v0;
    int64_t k = 0;
    const bool t1 = v1 > m || v1 != v1;
    m = t1 ? v1 : m;
    k = t1 ? 1 : k;
    const bool t2 = v2 > m || v2 != v2;
    m = t2 ? v2 : m;
    k = t2 ? W : k;
    const bool t3 = v3 > m || v3 != v3;
    m = t3 ? v3 : m;
    k = t3 ? W + 1 : k;
    out[ow] = m;
    ind[ow] = base + 2 * ow + k;
  }
}

template <class T>
MaxResult<T> max_pool2d_raw(const Tensor<T>& x, const PoolParams& p) {
  const Shape os = pool2d_shape(x.shape(), p, "max_pool2d");
  const int64_t H = x.size(2), W = x.size(3), OH = os[2], OW = os[3];
  Tensor<T> y = empty<T>(os);
  Tensor<int64_t> idx = empty<int64_t>(os);
  const int64_t kh = p.kernel.h, kw = p.kernel.w, sh = p.stride.h, sw = p.stride.w;
  const int64_t ph = p.padding.h, pw = p.padding.w, dh = p.dilation.h, dw = p.dilation.w;
  const bool simple2x2 = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1;
  for_planes(os[0] * os[1], H * W, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const T* in = x.data() + q * H * W;
      T* out = y.data() + q * OH * OW;
      int64_t* ind = idx.data() + q * OH * OW;
      if (simple2x2 && 2 * OH <= H && 2 * OW <= W) {  // LeNet's pooling: branch-free, vectorisable
        for (int64_t oh = 0; oh < OH; ++oh) max_pool_2x2_row(in + 2 * oh * W, W, OW, 2 * oh * W, out + oh * OW, ind + oh * OW);
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t h0 = oh * sh - ph;
        const int64_t h1 = std::min(h0 + (kh - 1) * dh + 1, H);
        while (h0 < 0) h0 += dh;
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t w0 = ow * sw - pw;
          const int64_t w1 = std::min(w0 + (kw - 1) * dw + 1, W);
          while (w0 < 0) w0 += dw;
          T m = -std::numeric_limits<T>::infinity();
          int64_t mi = h0 * W + w0;
          for (int64_t ih = h0; ih < h1; ih += dh)
            for (int64_t iw = w0; iw < w1; iw += dw) {
              const T v = in[ih * W + iw];
              const bool take = v > m || v != v;  // PyTorch's rule: a NaN wins (the last one)
              m = take ? v : m;
              mi = take ? ih * W + iw : mi;
            }
          out[oh * OW + ow] = m;
          ind[oh * OW + ow] = mi;
        }
      }
    }
  });
  return {y, idx};
}

template <class T>
Tensor<T> max_pool2d_scatter_raw(const Tensor<T>& g, const Tensor<int64_t>& index, const Shape& input_shape) {
  Tensor<T> gx = zeros<T>(input_shape);
  const int64_t HW = input_shape[2] * input_shape[3], O = g.size(2) * g.size(3);
  for_planes(g.size(0) * g.size(1), O, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      T* out = gx.data() + q * HW;
      const T* gp = g.data() + q * O;
      const int64_t* ip = index.data() + q * O;
      for (int64_t o = 0; o < O; ++o) out[ip[o]] += gp[o];
    }
  });
  return gx;
}

template <class T>
Tensor<T> max_pool2d_gather_raw(const Tensor<T>& g, const Tensor<int64_t>& index) {
  Tensor<T> out = empty<T>(index.shape());
  const int64_t HW = g.size(2) * g.size(3), O = index.size(2) * index.size(3);
  for_planes(index.size(0) * index.size(1), O, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const T* gp = g.data() + q * HW;
      const int64_t* ip = index.data() + q * O;
      T* op = out.data() + q * O;
      for (int64_t o = 0; o < O; ++o) op[o] = gp[ip[o]];
    }
  });
  return out;
}

/// The window of output index o along a dim: [start, end) and the divisor for plain avg pooling.
struct AvgWindow {
  int64_t start, end;
  int64_t padded;  // window length counting padding (count_include_pad)
};
inline AvgWindow avg_window(int64_t o, int64_t in, int64_t k, int64_t s, int64_t pad) {
  int64_t start = o * s - pad;
  int64_t end = std::min(start + k, in + pad);
  const int64_t padded = end - start;
  return {std::max<int64_t>(start, 0), std::min(end, in), padded};
}
inline AvgWindow adaptive_window(int64_t o, int64_t in, int64_t out) {
  const int64_t start = (o * in) / out;
  const int64_t end = ((o + 1) * in + out - 1) / out;
  return {start, end, end - start};
}

template <class T>
Tensor<T> avg_pool2d_raw(const Tensor<T>& x, const PoolParams& p, const Shape& os, bool adaptive) {
  const int64_t H = x.size(2), W = x.size(3), OH = os[2], OW = os[3];
  Tensor<T> y = empty<T>(os);
  for_planes(os[0] * os[1], H * W, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const T* in = x.data() + q * H * W;
      T* out = y.data() + q * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = adaptive ? adaptive_window(oh, H, OH) : avg_window(oh, H, p.kernel.h, p.stride.h, p.padding.h);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = adaptive ? adaptive_window(ow, W, OW) : avg_window(ow, W, p.kernel.w, p.stride.w, p.padding.w);
          T s = 0;
          for (int64_t ih = wh.start; ih < wh.end; ++ih)
            for (int64_t iw = ww.start; iw < ww.end; ++iw) s += in[ih * W + iw];
          const int64_t div = p.divisor_override ? p.divisor_override
                              : (adaptive || !p.count_include_pad) ? (wh.end - wh.start) * (ww.end - ww.start)
                                                                    : wh.padded * ww.padded;
          out[oh * OW + ow] = s / T(div);
        }
      }
    }
  });
  return y;
}

template <class T>
Tensor<T> avg_pool2d_backward_raw(const Tensor<T>& g, const PoolParams& p, const Shape& input_shape, bool adaptive) {
  const int64_t H = input_shape[2], W = input_shape[3], OH = g.size(2), OW = g.size(3);
  Tensor<T> gx = zeros<T>(input_shape);
  for_planes(g.size(0) * g.size(1), H * W, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      T* out = gx.data() + q * H * W;
      const T* gp = g.data() + q * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = adaptive ? adaptive_window(oh, H, OH) : avg_window(oh, H, p.kernel.h, p.stride.h, p.padding.h);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = adaptive ? adaptive_window(ow, W, OW) : avg_window(ow, W, p.kernel.w, p.stride.w, p.padding.w);
          const int64_t div = p.divisor_override ? p.divisor_override
                              : (adaptive || !p.count_include_pad) ? (wh.end - wh.start) * (ww.end - ww.start)
                                                                    : wh.padded * ww.padded;
          const T v = gp[oh * OW + ow] / T(div);
          for (int64_t ih = wh.start; ih < wh.end; ++ih)
            for (int64_t iw = ww.start; iw < ww.end; ++iw) out[ih * W + iw] += v;
        }
      }
    }
  });
  return gx;
}

template <class T>
MaxResult<T> adaptive_max_pool2d_raw(const Tensor<T>& x, const Shape& os) {
  const int64_t H = x.size(2), W = x.size(3), OH = os[2], OW = os[3];
  Tensor<T> y = empty<T>(os);
  Tensor<int64_t> idx = empty<int64_t>(os);
  for_planes(os[0] * os[1], H * W, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const T* in = x.data() + q * H * W;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = adaptive_window(oh, H, OH);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = adaptive_window(ow, W, OW);
          T m = -std::numeric_limits<T>::infinity();
          int64_t mi = wh.start * W + ww.start;
          for (int64_t ih = wh.start; ih < wh.end; ++ih)
            for (int64_t iw = ww.start; iw < ww.end; ++iw) {
              const T v = in[ih * W + iw];
              const bool take = v > m || v != v;
              m = take ? v : m;
              mi = take ? ih * W + iw : mi;
            }
          y.data()[q * OH * OW + oh * OW + ow] = m;
          idx.data()[q * OH * OW + oh * OW + ow] = mi;
        }
      }
    }
  });
  return {y, idx};
}

template <class T>
Tensor<T> max_pool2d_scatter_op(const Tensor<T>& g_, const Tensor<int64_t>& index, const Shape& input_shape) {
  const Tensor<T> g = g_.contiguous();
  Tensor<T> out = max_pool2d_scatter_raw(g, index, input_shape);
  return record_kernel(out, "MaxPool2DWithIndicesBackwardBackward", {}, [index](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{max_pool2d_gather_op(gg, index).impl()};
  }, g_);
}

template <class T>
Tensor<T> max_pool2d_gather_op(const Tensor<T>& g_, const Tensor<int64_t>& index) {
  const Tensor<T> g = g_.contiguous();
  Tensor<T> out = max_pool2d_gather_raw(g, index);
  return record_kernel(out, "MaxPool2DGatherBackward", {}, [index, shape = g.shape()](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{max_pool2d_scatter_op(gg, index, shape).impl()};
  }, g_);
}

template <class T>
MaxResult<T> max_pool2d_op(const Tensor<T>& x_, const PoolParams& p) {
  const Tensor<T> x = x_.contiguous();
  MaxResult<T> r = max_pool2d_raw(x, p);
  r.values = record_kernel(r.values, "MaxPool2DWithIndicesBackward", {}, [index = r.indices, shape = x.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{max_pool2d_scatter_op(g, index, shape).impl()};
  }, x_);
  return r;
}

template <class T>
MaxResult<T> adaptive_max_pool2d_op(const Tensor<T>& x_, int64_t oh, int64_t ow) {
  const Tensor<T> x = x_.contiguous();
  MaxResult<T> r = adaptive_max_pool2d_raw(x, {x.size(0), x.size(1), oh, ow});
  r.values = record_kernel(r.values, "AdaptiveMaxPool2DBackward", {}, [index = r.indices, shape = x.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{max_pool2d_scatter_op(g, index, shape).impl()};
  }, x_);
  return r;
}

template <class T>
Tensor<T> avg_pool2d_op(const Tensor<T>& x_, const PoolParams& p, const Shape& out_shape, bool adaptive) {
  const Tensor<T> x = x_.contiguous();
  Tensor<T> y = avg_pool2d_raw(x, p, out_shape, adaptive);
  return record_kernel(y, adaptive ? "AdaptiveAvgPool2DBackward" : "AvgPool2DBackward", {}, [p, adaptive, shape = x.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{avg_pool2d_backward_op(g, p, shape, adaptive).impl()};
  }, x_);
}

template <class T>
Tensor<T> avg_pool2d_backward_op(const Tensor<T>& g_, const PoolParams& p, const Shape& input_shape, bool adaptive) {
  const Tensor<T> g = g_.contiguous();
  Tensor<T> gx = avg_pool2d_backward_raw(g, p, input_shape, adaptive);
  return record_kernel(gx, adaptive ? "AdaptiveAvgPool2DBackwardBackward" : "AvgPool2DBackwardBackward", {}, [p, adaptive, shape = g.shape()](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{avg_pool2d_op(gg, p, shape, adaptive).impl()};
  }, g_);
}

}  // namespace dl::detail

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::MaxResult<float> dl::detail::max_pool2d_op<float>(const dl::Tensor<float>&, const dl::detail::PoolParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::max_pool2d_scatter_op<float>(const dl::Tensor<float>&, const dl::Tensor<int64_t>&, const dl::Shape&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::max_pool2d_gather_op<float>(const dl::Tensor<float>&, const dl::Tensor<int64_t>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::avg_pool2d_op<float>(const dl::Tensor<float>&, const dl::detail::PoolParams&, const dl::Shape&, bool))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::avg_pool2d_backward_op<float>(const dl::Tensor<float>&, const dl::detail::PoolParams&, const dl::Shape&,
                                                                      bool))
