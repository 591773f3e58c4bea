// dl/dtype.hpp — the element types a Tensor may hold, their names, and PyTorch's type promotion.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <string_view>
#include <type_traits>

namespace dl {

enum class ScalarType : uint8_t { Bool, UInt8, Int32, Int64, Float, Double };

/// The element types of dl::Tensor<T>: float, double, int32_t, int64_t, uint8_t, bool.
template <class T>
concept scalar_type = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                      std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>;

template <class T>
concept floating_scalar = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <scalar_type T>
inline constexpr ScalarType dtype_of = std::is_same_v<T, bool>      ? ScalarType::Bool
                                       : std::is_same_v<T, uint8_t> ? ScalarType::UInt8
                                       : std::is_same_v<T, int32_t> ? ScalarType::Int32
                                       : std::is_same_v<T, int64_t> ? ScalarType::Int64
                                       : std::is_same_v<T, float>   ? ScalarType::Float
                                                                    : ScalarType::Double;

/// PyTorch's names ("float32", "int64", ...).
constexpr std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "uint8";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
  }
  return "?";
}

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::UInt8: return 1;
    case ScalarType::Int32:
    case ScalarType::Float: return 4;
    default: return 8;
  }
}

namespace detail {
template <class T>
constexpr int promotion_rank = int(dtype_of<T>);
template <int R>
using type_of_rank = std::tuple_element_t<R, std::tuple<bool, uint8_t, int32_t, int64_t, float, double>>;
}  // namespace detail

/// PyTorch's promotion for two tensor operands: bool < uint8 < int32 < int64 < float < double,
/// so int64 with float gives float, uint8 with int32 gives int32.
template <scalar_type A, scalar_type B>
using promote_t =
    detail::type_of_rank<std::max(detail::promotion_rank<A>, detail::promotion_rank<B>)>;

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

/// Accumulation type of sum/prod: integral and bool inputs sum into int64, as in PyTorch.
template <scalar_type T>
using sum_t = std::conditional_t<floating_scalar<T>, T, int64_t>;

}  // namespace dl
