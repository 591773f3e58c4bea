// dl/expr/simd.hpp — the xsimd side of the CPU evaluator: which element types get SIMD loops and
// how rules' helpers (select) act on batches. Only evaluators include this header.
#pragma once

#include "../xsimd.hpp"

#include "ops.hpp"

namespace dl::expr {

template <class T>
using batch = xsimd::batch<T>;

/// Element types the CPU evaluator runs with full-width SIMD. In a translation unit compiled by
/// nvcc the CPU evaluator runs scalar loops instead: nvcc rejects xsimd batches (vector types)
/// inside the bodies of the __host__ __device__ op functors that CUDA kernels share with the CPU.
#if defined(__CUDACC__)
template <class T>
inline constexpr bool simd_element = false;
#else
template <class T>
inline constexpr bool simd_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
#endif

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

/// Outputs at least this large are written with non-temporal (streaming) stores: they cannot stay
/// in cache anyway, and streaming skips reading each line before writing it (a third less memory
/// traffic for a typical fused op).
inline constexpr size_t kStreamBytes = size_t(8) << 20;

/// Streaming store of a full batch; `p` must be aligned to the batch size. Falls back to an
/// aligned store where the ISA has no streaming form.
template <class T, class A>
DL_INLINE void stream_store(T* p, const xsimd::batch<T, A>& v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(xsimd::batch<T, A>) == 64) {
    if constexpr (std::is_same_v<T, float>) _mm512_stream_ps(p, v);
    else if constexpr (std::is_same_v<T, double>) _mm512_stream_pd(p, v);
    else _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
    return;
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(xsimd::batch<T, A>) == 32) {
    if constexpr (std::is_same_v<T, float>) _mm256_stream_ps(p, v);
    else if constexpr (std::is_same_v<T, double>) _mm256_stream_pd(p, v);
    else _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
    return;
  }
#endif
  v.store_aligned(p);
}

/// Orders streaming stores before later writes (done once per thread chunk).
DL_INLINE void stream_fence() {
#if defined(__SSE__)
  _mm_sfence();
#endif
}

/// Elements to process one by one before p + j is aligned for streaming stores of batch<T>.
template <class T>
DL_INLINE int64_t align_peel(const T* p) {
  constexpr size_t bytes = sizeof(batch<T>);
  const size_t mis = reinterpret_cast<uintptr_t>(p) % bytes;
  return mis == 0 || mis % sizeof(T) ? 0 : int64_t((bytes - mis) / sizeof(T));
}

}  // namespace dl::expr
