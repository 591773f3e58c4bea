// dl/xsimd.hpp — includes xsimd, working around GCC's unoptimised AVX-512BW intrinsics: without
// optimisation (-O0, Meson's debug build type) GCC defines _mm512_mask_blend_epi8/16 as macros that
// C-cast their arguments, and xsimd 8 passes them batch objects, which cannot be C-cast to vector
// types ("invalid cast from type 'const xsimd::batch<int, avx512bw>' to type '__v64qi'"). dl
// includes xsimd through this header only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__) && defined(__AVX512BW__)
#include <immintrin.h>
#undef _mm512_mask_blend_epi8
#undef _mm512_mask_blend_epi16
// The functions GCC declares when optimising, with the same bodies.
inline __m512i _mm512_mask_blend_epi8(__mmask64 u, __m512i a, __m512i w) {
  return (__m512i)__builtin_ia32_blendmb_512_mask((__v64qi)a, (__v64qi)w, u);
}
inline __m512i _mm512_mask_blend_epi16(__mmask32 u, __m512i a, __m512i w) {
  return (__m512i)__builtin_ia32_blendmw_512_mask((__v32hi)a, (__v32hi)w, u);
}
#endif

#include <xsimd/xsimd.hpp>
