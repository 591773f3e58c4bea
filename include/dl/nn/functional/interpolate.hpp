// dl/nn/functional/interpolate.hpp — F::interpolate (PyTorch's F.interpolate / nn.Upsample's
// function): the spatial dims of [N, C, d1 (, d2 (, d3))] resized by nearest, nearest-exact,
// linear / bilinear / trilinear, bicubic or area sampling, with PyTorch's sizes, source indices,
// weights (computed in the input's precision, as its CPU kernels) and messages.
//
//   auto y = F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear"});   // [N, C, 2H, 2W]
//   auto z = F::interpolate(x, {.size = {32, 48}, .mode = "bicubic", .align_corners = true});
//
// Every mode is separable: each spatial dim in turn is a sum of a few taps, output[i] =
// sum_k w_k[i] * input[idx_k[i]], gathered with index_select and weighted, so the result is
// differentiable to any order and runs wherever index_select does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../../ops/indexing.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

/// F.interpolate's keyword arguments. Exactly one of `size` and `scale_factor`, each either one
/// number for every spatial dim or one per dim. `mode`: "nearest" (default), "nearest-exact",
/// "linear" (3-D input), "bilinear" / "bicubic" (4-D), "trilinear" (5-D), "area".
/// `align_corners` only with the interpolating modes (false when unset, as PyTorch).
/// `recompute_scale_factor`: with a scale_factor, sample with the scale the output size implies
/// rather than the one given. `antialias` is not supported (an error).
struct InterpolateOptions {
  std::vector<int64_t> size = {};
  std::vector<double> scale_factor = {};
  std::string mode = "nearest";
  std::optional<bool> align_corners = std::nullopt;
  std::optional<bool> recompute_scale_factor = std::nullopt;
  bool antialias = false;
};

namespace detail {

enum class InterpMode { nearest, nearest_exact, linear, cubic, area };

/// What interpolate does to each spatial dim: its output size and the scale the kernels sample
/// with (the given scale_factor, or none: in / out).
struct InterpPlan {
  InterpMode mode;
  bool align_corners;
  std::vector<int64_t> out;
  std::vector<std::optional<double>> scale;
};

/// PyTorch's checks and sizes (torch.nn.functional.interpolate, then upsample's compute_output_size).
DL_API InterpPlan interp_plan(const Shape& in, const InterpolateOptions& o);

/// One spatial dim's resampling: output i = sum_k w[k][i] * input[idx[k][i]].
template <class Acc>
struct Taps {
  std::vector<std::vector<int64_t>> idx;
  std::vector<std::vector<Acc>> w;
  bool identity = false;  // output == input: nothing to do
};

/// The taps of one dim, in Acc (float for float and 16-bit inputs, double for double): ATen's
/// area_pixel_compute_scale / area_pixel_compute_source_index, nearest_idx, the cubic
/// convolution coefficients (A = -0.75, indices clamped to the edge) and adaptive average pooling's
/// windows.
template <class Acc>
Taps<Acc> interp_taps(InterpMode mode, int64_t in, int64_t out, std::optional<double> given, bool align_corners) {
  Taps<Acc> t;
  const auto taps = [&](int k) {
    t.idx.assign(k, std::vector<int64_t>(out));
    t.w.assign(k, std::vector<Acc>(out, Acc(0)));
  };
  // compute_scales_value: 1 / scale_factor when given, else in / out.
  const auto scale_value = [&]<class S>(S) { return given ? S(1.0 / *given) : S(in) / S(out); };
  // area_pixel_compute_scale
  const Acc scale = align_corners ? (out > 1 ? Acc(in - 1) / Acc(out - 1) : Acc(0)) : scale_value(Acc());
  const auto source = [&](int64_t i, bool cubic) {
    if (align_corners) return scale * Acc(i);
    const Acc s = scale * (Acc(i) + Acc(0.5)) - Acc(0.5);
    return (!cubic && s < Acc(0)) ? Acc(0) : s;
  };
  switch (mode) {
    case InterpMode::nearest:
    case InterpMode::nearest_exact: {
      if (in == out && mode == InterpMode::nearest) {
        t.identity = true;
        return t;
      }
      taps(1);
      const float s = scale_value(float());
      for (int64_t i = 0; i < out; ++i) {
        int64_t j;
        if (mode == InterpMode::nearest)
          j = out == 2 * in ? i >> 1 : std::min(int64_t(std::floor(float(i) * s)), in - 1);
        else
          j = std::min(int64_t(std::floor(float((double(i) + 0.5) * s))), in - 1);
        t.idx[0][i] = j;
        t.w[0][i] = Acc(1);
      }
      t.identity = [&] {
        for (int64_t i = 0; i < out; ++i)
          if (t.idx[0][i] != i) return false;
        return in == out;
      }();
      return t;
    }
    case InterpMode::linear: {
      taps(2);
      for (int64_t i = 0; i < out; ++i) {
        const Acc src = source(i, false);
        const int64_t i0 = std::min(int64_t(std::floor(src)), in - 1);
        const Acc l1 = std::min(std::max(src - Acc(i0), Acc(0)), Acc(1));
        t.idx[0][i] = i0;
        t.idx[1][i] = i0 + (i0 < in - 1 ? 1 : 0);
        t.w[0][i] = Acc(1) - l1;
        t.w[1][i] = l1;
      }
      return t;
    }
    case InterpMode::cubic: {
      taps(4);
      constexpr Acc A = Acc(-0.75);
      const auto conv1 = [](Acc x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
      const auto conv2 = [](Acc x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
      for (int64_t i = 0; i < out; ++i) {
        const Acc src = source(i, true);
        const int64_t i0 = std::min(int64_t(std::floor(src)), in - 1);
        const Acc x = std::min(std::max(src - Acc(i0), Acc(0)), Acc(1));
        const Acc c[4] = {conv2(x + 1), conv1(x), conv1(1 - x), conv2(2 - x)};
        for (int k = 0; k < 4; ++k) {
          t.idx[k][i] = std::clamp<int64_t>(i0 - 1 + k, 0, in - 1);
          t.w[k][i] = c[k];
        }
      }
      return t;
    }
    case InterpMode::area: {
      // adaptive_avg_pool: window [floor(i * in / out), ceil((i + 1) * in / out)).
      const auto start = [&](int64_t i) { return int64_t(std::floor(float(i * in) / float(out))); };
      const auto end = [&](int64_t i) { return int64_t(std::ceil(float((i + 1) * in) / float(out))); };
      int64_t k = 1;
      for (int64_t i = 0; i < out; ++i) k = std::max(k, end(i) - start(i));
      taps(int(k));
      for (int64_t i = 0; i < out; ++i) {
        const int64_t s = start(i), n = end(i) - s;
        for (int64_t j = 0; j < k; ++j) {
          t.idx[j][i] = s + std::min(j, n - 1);
          t.w[j][i] = j < n ? Acc(1) / Acc(n) : Acc(0);
        }
      }
      t.identity = in == out;
      return t;
    }
  }
  return t;
}

}  // namespace detail

/// Resizes the spatial dims (all but the first two) of a 3-D, 4-D or 5-D input as PyTorch's
/// F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor).
/// Floating inputs take every mode (16-bit ones are computed in float); integer inputs the nearest
/// modes. Differentiable to any order. Errors (PyTorch's messages): both or neither of size and
/// scale_factor, a size or scale list of the wrong length, align_corners with a non-interpolating
/// mode, a mode for other dims ("Got 4D input, but linear mode needs 3D input"), an unknown mode,
/// zero sizes, antialias.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> interpolate(const E& input, const InterpolateOptions& options) {
  const Tensor<T> x = dl::detail::materialize(input);
  const detail::InterpPlan plan = detail::interp_plan(x.shape(), options);
  if constexpr (half_float<T>) {
    return interpolate(x.to_float(), options).template to<T>();
  } else {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if (!std::is_floating_point_v<T> && plan.mode != detail::InterpMode::nearest && plan.mode != detail::InterpMode::nearest_exact)
      throw Error(dl::detail::cat("interpolate: ", options.mode, " mode needs a floating-point input (convert with .to_float()); ",
                                  "integer inputs take nearest and nearest-exact"));
    Tensor<T> y = x;
    for (int d = 0; d + 2 < x.dim(); ++d) {
      const int axis = d + 2;
      const detail::Taps<Acc> taps =
          detail::interp_taps<Acc>(plan.mode, x.shape()[axis], plan.out[d], plan.scale[d], plan.align_corners);
      if (taps.identity) continue;
      const int64_t out = plan.out[d];
      Shape wshape = Shape::filled(x.dim(), 1);
      wshape[axis] = out;
      Tensor<T> acc;
      for (size_t k = 0; k < taps.idx.size(); ++k) {
        Tensor<int64_t> idx = empty<int64_t>({out});
        std::copy(taps.idx[k].begin(), taps.idx[k].end(), idx.data());
        const Tensor<T> gathered = index_select(y, axis, x.is_cpu() ? idx : idx.to(x.device()));
        if (plan.mode == detail::InterpMode::nearest || plan.mode == detail::InterpMode::nearest_exact) {
          acc = gathered;
          continue;
        }
        if constexpr (std::is_floating_point_v<T>) {
          Tensor<T> w = empty<T>(wshape);
          std::transform(taps.w[k].begin(), taps.w[k].end(), w.data(), [](Acc v) { return T(v); });
          if (!x.is_cpu()) w = w.to(x.device());
          acc = k == 0 ? Tensor<T>(gathered * w) : Tensor<T>(acc + gathered * w);
        }
      }
      y = acc;
    }
    return y;
  }
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiation libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::interpolate(const dl::Tensor<float>&,
                                                                          const dl::nn::functional::InterpolateOptions&))

#if DL_HEADER_ONLY
#include "interpolate-inl.hpp"
#endif
