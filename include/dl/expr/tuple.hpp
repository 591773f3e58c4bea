// dl/expr/tuple.hpp — a minimal aggregate tuple. Unlike std::tuple it is trivially copyable when
// its members are, which kernel views (copied into threads and, later, CUDA kernels) require.
#pragma once

#include <cstddef>
#include <utility>

#include "../config.hpp"

namespace dl::expr {

template <size_t I, class T>
struct TupleSlot {
  T value;
};

template <class Seq, class... Ts>
struct TupleImpl;

template <size_t... Is, class... Ts>
struct TupleImpl<std::index_sequence<Is...>, Ts...> : TupleSlot<Is, Ts>... {};

template <class... Ts>
using Tuple = TupleImpl<std::index_sequence_for<Ts...>, Ts...>;

template <size_t I, class T>
DL_HD DL_INLINE constexpr T& get(TupleSlot<I, T>& t) {
  return t.value;
}
template <size_t I, class T>
DL_HD DL_INLINE constexpr const T& get(const TupleSlot<I, T>& t) {
  return t.value;
}

/// Host only: tuples of host nodes (tensor handles) are built with it.
template <class... Ts>
auto make_tuple(Ts&&... xs) {  // auto: GCC 12 cannot mangle the alias in the signature
  return Tuple<std::decay_t<Ts>...>{{std::forward<Ts>(xs)}...};
}

DL_NO_EXEC_CHECK
template <class F, size_t... Is>
DL_HD DL_INLINE constexpr void static_for_impl(F& f, std::index_sequence<Is...>) {
  (f(std::integral_constant<size_t, Is>{}), ...);
}

/// Calls f(std::integral_constant<size_t, I>{}) for I in [0, N), in order.
DL_NO_EXEC_CHECK
template <size_t N, class F>
DL_HD DL_INLINE constexpr void static_for(F&& f) {
  static_for_impl(f, std::make_index_sequence<N>{});
}

}  // namespace dl::expr
