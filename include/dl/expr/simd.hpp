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

// ---- 16-bit floats in SIMD loops: loaded widened to float lanes, computed in float, rounded back
// (to nearest even) wherever the scalar evaluation rounds: at every node whose type is 16-bit and
// at the store. Float16 needs the F16C conversions (AVX-512F for 512-bit batches, F16C for
// 256-bit ones); bfloat16 is integer arithmetic on the float bits.

/// The lane element a T computes in: float for dl::Half and dl::BFloat16, T otherwise.
template <class T>
using lane_elem_t = std::conditional_t<half_float<T>, float, T>;

#if defined(__CUDACC__)
template <class T>
inline constexpr bool simd_half = false;
#else
namespace detail16 {
#if defined(__AVX512F__)
inline constexpr int f16c_width = 16;
#elif defined(__F16C__)
inline constexpr int f16c_width = 8;
#else
inline constexpr int f16c_width = 0;
#endif
inline constexpr bool f16c_lanes = f16c_width != 0 && int(batch<float>::size) == f16c_width;
#if defined(__F16C__) || defined(__AVX512F__)
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;  // the F16C conversions' rounding
#endif
}  // namespace detail16

/// Whether 16-bit element type T runs in SIMD float lanes on this target.
template <class T>
inline constexpr bool simd_half = simd_element<float> && (std::is_same_v<T, BFloat16> ||
                                                          (std::is_same_v<T, Half> && detail16::f16c_lanes));

/// W = batch<float>::size 16-bit values from p, widened (exactly) to float lanes. (The lane
/// type is spelled dependently, so that the branch for the other batch width is discarded.)
template <class T, class B = batch<lane_elem_t<T>>>
DL_INLINE B widen_lanes(const T* p) {
  constexpr int W = int(B::size);
  if constexpr (std::is_same_v<T, Half>) {
#if defined(__AVX512F__)
    if constexpr (W == 16) return B(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#endif
#if defined(__F16C__)
    if constexpr (W == 8) return B(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#endif
  } else {
#if defined(__AVX512F__)
    if constexpr (W == 16)
      return B(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16)));
#endif
#if defined(__AVX2__)
    if constexpr (W == 8)
      return B(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16)));
#endif
  }
  alignas(64) uint32_t u[W];
  for (int i = 0; i < W; ++i) u[i] = uint32_t(p[i].bits()) << 16;  // bfloat16: the float's upper half
  return xsimd::bitwise_cast<B>(xsimd::batch<uint32_t>::load_aligned(u));
}

/// The bfloat16 bit patterns (in 32-bit lanes) of float lanes v: round to nearest even, NaN quiet.
template <class B>
DL_INLINE xsimd::batch<uint32_t> bfloat16_lanes(const B& v) {
  using U = xsimd::batch<uint32_t>;
  const U x = xsimd::bitwise_cast<U>(v);
  const U r = (x + U(0x7fffu) + ((x >> 16) & U(1u))) >> 16;
  return xsimd::select((x & U(0x7fffffffu)) > U(0x7f800000u), (x >> 16) | U(0x40u), r);
}

/// Stores float lanes v at p as 16-bit values, rounded to nearest even.
template <class T, class B = batch<lane_elem_t<T>>>
DL_INLINE void narrow_lanes(T* p, const std::type_identity_t<B>& v) {
  constexpr int W = int(B::size);
  if constexpr (std::is_same_v<T, Half>) {
#if defined(__AVX512F__)
    if constexpr (W == 16) return _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, detail16::kRound));
#endif
#if defined(__F16C__)
    if constexpr (W == 8) return _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, detail16::kRound));
#endif
  } else {
#if defined(__AVX512F__)
    if constexpr (W == 16)
      return _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bfloat16_lanes(v)));
#endif
    alignas(64) uint32_t u[W];
    bfloat16_lanes(v).store_aligned(u);
    for (int i = 0; i < W; ++i) p[i] = T::from_bits(uint16_t(u[i]));
  }
}

/// v rounded to T's precision and widened again: a node of type T in float lanes.
template <class T, class B = batch<lane_elem_t<T>>>
DL_INLINE B round_lanes(const std::type_identity_t<B>& v) {
  constexpr int W = int(B::size);
  if constexpr (std::is_same_v<T, Half>) {
#if defined(__AVX512F__)
    if constexpr (W == 16) return B(_mm512_cvtph_ps(_mm512_cvtps_ph(v, detail16::kRound)));
#endif
#if defined(__F16C__)
    if constexpr (W == 8) return B(_mm256_cvtph_ps(_mm256_cvtps_ph(v, detail16::kRound)));
#endif
    return v;  // (unreachable: simd_half<Half> is false without F16C lanes)
  } else {
    return xsimd::bitwise_cast<B>(bfloat16_lanes(v) << 16);
  }
}
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
