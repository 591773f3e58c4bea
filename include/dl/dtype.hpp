// dl/dtype.hpp — the element types a Tensor may hold, their names, and PyTorch's type promotion.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <string_view>
#include <type_traits>

#include "half.hpp"

namespace dl {

/// Half and BFloat16 come last so that the older values (written in dl's own files) keep their numbers.
enum class ScalarType : uint8_t { Bool, UInt8, Int32, Int64, Float, Double, Half, BFloat16 };
/// How many ScalarType values there are (the size of tables indexed by dtype).
inline constexpr int kNumScalarTypes = int(ScalarType::BFloat16) + 1;

/// The element types of dl::Tensor<T>: float, double, int32_t, int64_t, uint8_t, bool, dl::Half,
/// dl::BFloat16.
/// (The comment on a concept's line is what the compiler quotes when the constraint fails.)
template <class T>
inline constexpr bool is_element_type_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                          std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                                          std::is_same_v<T, uint8_t> || std::is_same_v<T, bool> || half_float<T>;
template <class T>
concept scalar_type = is_element_type_v<T>;  // requires a tensor element type: float, double, int32_t, int64_t, uint8_t, bool, dl::Half or dl::BFloat16

/// Floating element types (torch.is_floating_point): float, double, dl::Half, dl::BFloat16.
template <class T>
concept floating_scalar = std::is_same_v<T, float> || std::is_same_v<T, double> || half_float<T>;  // requires a floating element type (float, double, dl::Half, dl::BFloat16); convert integer tensors with .to<float>()

/// float and double: the floating types that the SIMD loops, BLAS and LAPACK take directly.
template <class T>
concept full_float = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <scalar_type T>
inline constexpr ScalarType dtype_of = std::is_same_v<T, bool>       ? ScalarType::Bool
                                       : std::is_same_v<T, uint8_t>  ? ScalarType::UInt8
                                       : std::is_same_v<T, int32_t>  ? ScalarType::Int32
                                       : std::is_same_v<T, int64_t>  ? ScalarType::Int64
                                       : std::is_same_v<T, float>    ? ScalarType::Float
                                       : std::is_same_v<T, double>   ? ScalarType::Double
                                       : std::is_same_v<T, Half>     ? ScalarType::Half
                                                                     : ScalarType::BFloat16;

/// PyTorch's names ("float32", "int64", ...).
constexpr std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "uint8";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
  }
  return "?";
}

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8: return 1;
    case ScalarType::Int32:
    case ScalarType::Float: return 4;
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    default: return 8;
  }
}

namespace detail {
// Ranks: bool < uint8 < int32 < int64 < {float16, bfloat16} < float < double.
template <class T>
constexpr int promotion_rank = std::is_same_v<T, bool>      ? 0
                               : std::is_same_v<T, uint8_t> ? 1
                               : std::is_same_v<T, int32_t> ? 2
                               : std::is_same_v<T, int64_t> ? 3
                               : half_float<T>              ? 4
                               : std::is_same_v<T, float>   ? 5
                                                            : 6;
template <class A, class B>
struct promote {
  using type = std::conditional_t<(promotion_rank<A> >= promotion_rank<B>), A, B>;
};
template <class A, class B>
  requires(half_float<A> && half_float<B> && !std::is_same_v<A, B>)
struct promote<A, B> {  // float16 with bfloat16 gives float32, as in PyTorch
  using type = float;
};
}  // namespace detail

/// PyTorch's promotion for two tensor operands: bool < uint8 < int32 < int64 < float16/bfloat16 <
/// float < double, so int64 with float gives float, uint8 with int32 gives int32, int64 with float16
/// gives float16, and float16 with bfloat16 gives float32.
template <scalar_type A, scalar_type B>
using promote_t = typename detail::promote<A, B>::type;

template <scalar_type T, scalar_type... Ts>
struct promote_all {
  using type = T;
};
template <scalar_type A, scalar_type B, scalar_type... Ts>
struct promote_all<A, B, Ts...> : promote_all<promote_t<A, B>, Ts...> {};
template <scalar_type... Ts>
using promote_all_t = typename promote_all<Ts...>::type;

/// The floating type an integral input becomes in math functions (exp of int64 is float).
template <scalar_type T>
using to_floating_t = std::conditional_t<floating_scalar<T>, T, float>;

/// Result type of sum/prod: integral and bool inputs sum into int64, as in PyTorch.
template <scalar_type T>
using sum_t = std::conditional_t<floating_scalar<T>, T, int64_t>;

/// The type arithmetic on T runs in: float for dl::Half and dl::BFloat16 (as PyTorch's
/// at::opmath_type), T itself otherwise.
template <class T>
using opmath_t = std::conditional_t<half_float<T>, float, T>;

}  // namespace dl
