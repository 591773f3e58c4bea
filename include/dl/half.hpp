// dl/half.hpp — the 16-bit floating element types dl::Half (IEEE binary16, torch.float16) and
// dl::BFloat16 (torch.bfloat16).
//
// Both are storage types, as c10::Half and c10::BFloat16: a value converts to float implicitly, so
// arithmetic, comparisons and math functions run in float, and a result is rounded back once, when
// it is stored into a Half/BFloat16 tensor (round to nearest even, as PyTorch; NaN stays NaN,
// overflow gives infinity). A value converts from float implicitly too (`dl::Half h = 0.5f;`); in a
// conditional with a float, write the branch type (`c ? float(h) : 1.0f`).
// Everything here is `__host__ __device__`: the generated CUDA kernels read and write these types;
// on the device the conversions are the hardware's cvt instructions.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "config.hpp"

#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#endif

namespace dl {

namespace detail {

DL_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}
DL_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

/// float -> binary16 bits in integer arithmetic, round to nearest even (NaN -> quiet NaN,
/// |f| >= 65520 -> infinity): the conversion where the hardware has none.
DL_HD inline uint16_t float_to_half_bits_soft(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to 65536 or more
  if (ax < 0x38800000u) {                                     // below 2^-14: subnormal or zero
    if (ax < 0x33000000u) return uint16_t(sign);              // at most 2^-25: rounds to zero
    const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24: the value in units of 2^-24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = (ax >> 13) - (112u << 10);  // rebias the exponent from 127 to 15
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry moves into the exponent
  return uint16_t(sign | r);
}

/// binary16 bits -> float in integer arithmetic (exact).
DL_HD inline float half_bits_to_float_soft(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = float(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return bits_float(float_bits(v) | sign);
  }
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/// float -> binary16 bits, round to nearest even: the GPU's cvt instruction in device code, F16C
/// on x86 hosts that have it, else float_to_half_bits_soft (the same results; NaN payloads aside).
DL_HD inline uint16_t float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
  uint16_t r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#elif defined(__F16C__)
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  return float_to_half_bits_soft(f);
#endif
}

/// binary16 bits -> float (exact).
DL_HD inline float half_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
#elif defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return half_bits_to_float_soft(h);
#endif
}

/// float -> bfloat16 bits, round to nearest even (NaN -> quiet NaN).
DL_HD inline uint16_t float_to_bfloat16_bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#else
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

DL_HD inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

struct FromBits {};

}  // namespace detail

/// IEEE 754 binary16 (torch.float16, torch.half): 1 sign, 5 exponent, 10 mantissa bits.
struct Half {
  uint16_t x = 0;  ///< the bit pattern

  Half() = default;
  DL_HD constexpr Half(uint16_t bits, detail::FromBits) : x(bits) {}
  DL_HD Half(float f) : x(detail::float_to_half_bits(f)) {}
  DL_HD operator float() const { return detail::half_bits_to_float(x); }

  DL_HD static constexpr Half from_bits(uint16_t bits) { return Half(bits, detail::FromBits{}); }
  DL_HD constexpr uint16_t bits() const { return x; }

  DL_HD Half& operator+=(float v) { return *this = Half(float(*this) + v); }
  DL_HD Half& operator-=(float v) { return *this = Half(float(*this) - v); }
  DL_HD Half& operator*=(float v) { return *this = Half(float(*this) * v); }
  DL_HD Half& operator/=(float v) { return *this = Half(float(*this) / v); }
};

/// bfloat16 (torch.bfloat16): float's 8-bit exponent with a 7-bit mantissa.
struct BFloat16 {
  uint16_t x = 0;  ///< the bit pattern

  BFloat16() = default;
  DL_HD constexpr BFloat16(uint16_t bits, detail::FromBits) : x(bits) {}
  DL_HD BFloat16(float f) : x(detail::float_to_bfloat16_bits(f)) {}
  DL_HD operator float() const { return detail::bfloat16_bits_to_float(x); }

  DL_HD static constexpr BFloat16 from_bits(uint16_t bits) { return BFloat16(bits, detail::FromBits{}); }
  DL_HD constexpr uint16_t bits() const { return x; }

  DL_HD BFloat16& operator+=(float v) { return *this = BFloat16(float(*this) + v); }
  DL_HD BFloat16& operator-=(float v) { return *this = BFloat16(float(*this) - v); }
  DL_HD BFloat16& operator*=(float v) { return *this = BFloat16(float(*this) * v); }
  DL_HD BFloat16& operator/=(float v) { return *this = BFloat16(float(*this) / v); }
};

/// dl::Half or dl::BFloat16.
template <class T>
concept half_float = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace dl

namespace std {

// Mixed with a built-in number, a 16-bit float takes part as the float it converts to (so generic
// code that picks std::common_type_t of two operand types gets float, as the arithmetic does).
template <class T>
  requires std::is_arithmetic_v<T>
struct common_type<dl::Half, T> : common_type<float, T> {};
template <class T>
  requires std::is_arithmetic_v<T>
struct common_type<T, dl::Half> : common_type<T, float> {};
template <class T>
  requires std::is_arithmetic_v<T>
struct common_type<dl::BFloat16, T> : common_type<float, T> {};
template <class T>
  requires std::is_arithmetic_v<T>
struct common_type<T, dl::BFloat16> : common_type<T, float> {};
template <>
struct common_type<dl::Half, dl::BFloat16> {
  using type = float;
};
template <>
struct common_type<dl::BFloat16, dl::Half> {
  using type = float;
};

/// torch.finfo(torch.float16): eps 2^-10, max 65504, tiny 2^-14.
template <>
class numeric_limits<dl::Half> {
 public:
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false,
                        has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true, is_iec559 = true,
                        is_bounded = true, is_modulo = false, traps = false, tinyness_before = false;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr int digits = 11, digits10 = 3, max_digits10 = 5, radix = 2, min_exponent = -13,
                       min_exponent10 = -4, max_exponent = 16, max_exponent10 = 4;
  static constexpr dl::Half min() { return dl::Half::from_bits(0x0400); }
  static constexpr dl::Half lowest() { return dl::Half::from_bits(0xfbff); }
  static constexpr dl::Half max() { return dl::Half::from_bits(0x7bff); }
  static constexpr dl::Half epsilon() { return dl::Half::from_bits(0x1400); }
  static constexpr dl::Half round_error() { return dl::Half::from_bits(0x3800); }
  static constexpr dl::Half infinity() { return dl::Half::from_bits(0x7c00); }
  static constexpr dl::Half quiet_NaN() { return dl::Half::from_bits(0x7e00); }
  static constexpr dl::Half signaling_NaN() { return dl::Half::from_bits(0x7d00); }
  static constexpr dl::Half denorm_min() { return dl::Half::from_bits(0x0001); }
};

/// torch.finfo(torch.bfloat16): eps 2^-7, max 3.3895e38, tiny 2^-126.
template <>
class numeric_limits<dl::BFloat16> {
 public:
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false,
                        has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true, is_iec559 = false,
                        is_bounded = true, is_modulo = false, traps = false, tinyness_before = false;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr int digits = 8, digits10 = 2, max_digits10 = 4, radix = 2, min_exponent = -125,
                       min_exponent10 = -37, max_exponent = 128, max_exponent10 = 38;
  static constexpr dl::BFloat16 min() { return dl::BFloat16::from_bits(0x0080); }
  static constexpr dl::BFloat16 lowest() { return dl::BFloat16::from_bits(0xff7f); }
  static constexpr dl::BFloat16 max() { return dl::BFloat16::from_bits(0x7f7f); }
  static constexpr dl::BFloat16 epsilon() { return dl::BFloat16::from_bits(0x3c00); }
  static constexpr dl::BFloat16 round_error() { return dl::BFloat16::from_bits(0x3f00); }
  static constexpr dl::BFloat16 infinity() { return dl::BFloat16::from_bits(0x7f80); }
  static constexpr dl::BFloat16 quiet_NaN() { return dl::BFloat16::from_bits(0x7fc0); }
  static constexpr dl::BFloat16 signaling_NaN() { return dl::BFloat16::from_bits(0x7f80 | 0x01); }
  static constexpr dl::BFloat16 denorm_min() { return dl::BFloat16::from_bits(0x0001); }
};

}  // namespace std
