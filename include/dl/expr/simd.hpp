// dl/expr/simd.hpp — the xsimd side of the CPU evaluator: which element types get SIMD loops and
// how rules' helpers (select) act on batches. Only evaluators include this header.
#pragma once

#include <xsimd/xsimd.hpp>

#include "ops.hpp"

namespace dl::expr {

template <class T>
using batch = xsimd::batch<T>;

/// Element types the CPU evaluator runs with full-width SIMD.
template <class T>
inline constexpr bool simd_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

template <class T, class A>
struct scalar_of<xsimd::batch_bool<T, A>> {
  using type = bool;
};

/// Masks select between batches (scalars are broadcast) or between masks.
template <class T, class A>
struct ValueTraits<xsimd::batch_bool<T, A>> {
  using Mask = xsimd::batch_bool<T, A>;
  template <class X, class Y>
  static DL_INLINE auto select(const Mask& c, const X& a, const Y& b) {
    if constexpr (std::is_same_v<X, Mask> && std::is_same_v<Y, Mask>)
      return (c & a) | (~c & b);
    else
      return xsimd::select(c, xsimd::batch<T, A>(a), xsimd::batch<T, A>(b));
  }
  static DL_INLINE Mask zero(const Mask&) { return Mask(false); }
  template <class Op, class... Xs>
  static DL_INLINE auto call(const Op& op, const Xs&... xs) { return op(xs...); }
  template <class G>
  static DL_INLINE Mask cast_like(const Mask&, const G& g) { return g; }
};

}  // namespace dl::expr
