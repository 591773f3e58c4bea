// dl/ops/dropout.hpp — the random keep-masks of the dropout family: each element (or channel) kept
// with a given probability, from dl's counter-based Philox generator, so a mask depends only on
// the seed and the generator's position, never on the thread count. Elements go in groups of 64:
// element 64 g + 16 w + l reads word w of Philox block 16 g + l; with AVX-512 the 16 blocks of a
// group are computed and compared 8 at a time in vector lanes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../tensor.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// A tensor of `shape` whose elements are `value` with probability `keep` and 0 otherwise: each
/// element compares a 32-bit Philox word u with keep * 2^32 (kept when u is below).
/// @pre 0 <= keep <= 1
/// On a CUDA device the GPU draws the same mask (the CPU's, element for element).
template <class T>
Tensor<T> keep_mask(const Shape& shape, double keep, T value, Generator* gen = nullptr, Device device = kCPU);

// ------------------------------------------------------------------------------ implementation

/// One group of the mask: o[16 w + l] = value if word w of Philox block (first + l) is below
/// `threshold`, else 0, for the first `count` (<= 64) elements.
template <class T>
DL_INLINE void keep_mask_group(uint64_t key, uint64_t first, uint32_t threshold, T value, T* o, int64_t count) {
#if defined(__AVX512F__)
  if (count == 64) {
    const __m512i lo32 = _mm512_set1_epi64(0xffffffffll), m0 = _mm512_set1_epi64(Philox::kM0), m1 = _mm512_set1_epi64(Philox::kM1);
    const __m512i thr = _mm512_set1_epi64(threshold), iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    for (int half = 0; half < 16; half += 8) {
      // 32-bit words in 64-bit lanes: _mm512_mul_epu32 gives their full 64-bit products.
      const __m512i counter = _mm512_add_epi64(_mm512_set1_epi64(int64_t(first + uint64_t(half))), iota);
      __m512i c[4] = {_mm512_and_si512(counter, lo32), _mm512_srli_epi64(counter, 32), _mm512_setzero_si512(),
                      _mm512_setzero_si512()};
      uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
      for (int round = 0; round < 10; ++round) {  // Philox::generate
        const __m512i p0 = _mm512_mul_epu32(c[0], m0), p1 = _mm512_mul_epu32(c[2], m1);
        const __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p1, 32), c[1]), _mm512_set1_epi64(k0));
        const __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64(p0, 32), c[3]), _mm512_set1_epi64(k1));
        c[1] = _mm512_and_si512(p1, lo32);
        c[3] = _mm512_and_si512(p0, lo32);
        c[0] = n0;
        c[2] = n2;
        k0 += Philox::kW0;
        k1 += Philox::kW1;
      }
      for (int w = 0; w < 4; ++w) {
        const __mmask8 keep = _mm512_cmplt_epu64_mask(c[w], thr);
        T* dst = o + 16 * w + half;
        if constexpr (std::is_same_v<T, float>) _mm256_storeu_ps(dst, _mm256_maskz_mov_ps(keep, _mm256_set1_ps(value)));
        else if constexpr (std::is_same_v<T, double>) _mm512_storeu_pd(dst, _mm512_maskz_mov_pd(keep, _mm512_set1_pd(value)));
        else
          for (int l = 0; l < 8; ++l) dst[l] = (keep >> l) & 1 ? value : T(0);
      }
    }
    return;
  }
#endif
  for (int64_t l = 0; l < 16; ++l) {
    const auto words = Philox::generate(key, first + uint64_t(l));
    for (int64_t w = 0; w < 4; ++w)
      if (16 * w + l < count) o[16 * w + l] = words[size_t(w)] < threshold ? value : T(0);
  }
}

template <class T>
Tensor<T> keep_mask(const Shape& shape, double keep, T value, Generator* gen, Device device) {
  // u < keep * 2^32 for a uniform 32-bit u has probability keep (to 2^-32).
  const uint32_t threshold = uint32_t(std::min(std::llround(keep * 4294967296.0), 4294967295ll));
  if (device.is_cuda()) {
    if (numel(shape) == 0 || keep >= 1) return full<T>(shape, value, device);
    if (auto m = philox_on_device<T>(RandomKind::KeepMask, shape, device, gen, double(value), 0.0, 0, threshold); m.defined())
      return m;
    return keep_mask(shape, keep, value, gen).to(device);
  }
  Tensor<T> m = empty<T>(shape);
  const int64_t n = m.numel();
  if (n == 0) return m;
  if (keep >= 1) return m.fill_(value);
  const int64_t groups = (n + 63) / 64;
  const auto [seed, first] = (gen ? *gen : default_generator()).reserve(uint64_t(groups * 16));
  T* out = m.data();
  parallel_for(0, groups, 256, [&, seed = seed, first = first](int64_t g0, int64_t g1) {
    const T v = value;  // a local: stores through `out` could alias the closure's copy
    for (int64_t g = g0; g < g1; ++g)
      keep_mask_group(seed, first + uint64_t(16 * g), threshold, v, out + 64 * g, std::min<int64_t>(64, n - 64 * g));
  });
  return m;
}

}  // namespace dl::detail
