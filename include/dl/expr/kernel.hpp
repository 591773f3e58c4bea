// dl/expr/kernel.hpp — kernel views: what a host expression is lowered to before evaluation.
// A kernel view is a trivially copyable tree of raw pointers, strides and numbers. Evaluators copy
// it per thread, point it at a row (`seek`) and read elements or SIMD batches along the row (`at`).
// `tape`/`backprop` run reverse-mode differentiation element by element in registers: the forward
// values of every node are computed once, then the op rules push the gradient down to the leaves.
#pragma once

#include <array>
#include <type_traits>

#include "../shape.hpp"
#include "node.hpp"
#include "simd.hpp"

namespace dl::expr {

/// How the leaves of a row are laid out, decided once per evaluation (see plan_loop):
/// Contig: every operand has inner stride 1; Mixed: inner strides are 0 (broadcast) or 1;
/// Strided: anything else (scalar loop).
enum class Access : uint8_t { Contig, Mixed, Strided };

template <class... Ts>
struct type_list {};
template <class... Ls>
struct concat_lists;
template <>
struct concat_lists<> {
  using type = type_list<>;
};
template <class... As>
struct concat_lists<type_list<As...>> {
  using type = type_list<As...>;
};
template <class... As, class... Bs, class... Rest>
struct concat_lists<type_list<As...>, type_list<Bs...>, Rest...>
    : concat_lists<type_list<As..., Bs...>, Rest...> {};

/// A value of element type T in a loop: a batch in SIMD mode; 16-bit floats are float lanes (and
/// float accumulators in scalar mode, so that both modes accumulate gradients alike).
template <class T, bool Simd>
using lane_t = std::conditional_t<Simd, batch<lane_elem_t<T>>, lane_elem_t<T>>;

/// The SIMD lane type of a leaf or number of element type T, or void when it has none.
template <class T>
using simd_lane_t = std::conditional_t<simd_element<T>, T, std::conditional_t<simd_half<T>, float, void>>;

/// A node's forward value together with its operands' tapes.
template <class V, class Kids>
struct TapeNode {
  V value;
  Kids kids;
};
template <class T>
DL_HD DL_INLINE const auto& tape_value(const T& t) {
  if constexpr (requires { t.kids; }) return t.value;
  else return t;
}

// ---------------------------------------------------------------------------------------------

template <scalar_type T>
struct LeafView {
  using value_type = T;
  using leaf_types = type_list<T>;
  static constexpr size_t leaves = 1;
  /// Lane type of SIMD evaluation, or void when this node cannot run in SIMD.
  using simd_type = simd_lane_t<T>;

  const T* base;
  const T* row;
  int64_t inner;
  int64_t st[kMaxDims];

  DL_HD DL_INLINE void seek(const int64_t* idx, int nouter) {
    const T* p = base;
    for (int d = 0; d < nouter; ++d) p += idx[d] * st[d];
    row = p;
    inner = st[nouter];
  }
  template <Access K, bool Simd>
  DL_HD DL_INLINE auto at(int64_t j) const {
    if constexpr (Simd && half_float<T>) {
#if !defined(__CUDACC__)
      if constexpr (K == Access::Contig) return widen_lanes(row + j);
      else return inner ? widen_lanes(row + j) : batch<float>(float(*row));
#endif
    } else if constexpr (Simd) {
      if constexpr (K == Access::Contig) return batch<T>::load_unaligned(row + j);
      else return inner ? batch<T>::load_unaligned(row + j) : batch<T>(*row);
    } else {
      if constexpr (K == Access::Contig) return row[j];
      else return row[j * inner];
    }
  }
  template <class F>
  void for_each_stride(F&& f) {
    f(st);
  }
  template <Access K, bool Simd>
  DL_HD DL_INLINE auto tape(int64_t j) const {
    return at<K, Simd>(j);
  }
  template <size_t Offset, bool Simd, class Tape, class G, class Acc>
  DL_HD DL_INLINE void backprop(const Tape&, const G& g, Acc& acc) const {
    get<Offset>(acc) += static_cast<lane_t<T, Simd>>(g);
  }
};

template <scalar_type T>
struct ScalarView {
  using value_type = T;
  using leaf_types = type_list<>;
  static constexpr size_t leaves = 0;
  using simd_type = simd_lane_t<T>;

  T value;

  DL_HD DL_INLINE void seek(const int64_t*, int) {}
  template <Access K, bool Simd>
  DL_HD DL_INLINE auto at(int64_t) const {
    if constexpr (Simd) return batch<lane_elem_t<T>>(lane_elem_t<T>(value));
    else return value;
  }
  template <class F>
  void for_each_stride(F&&) {}
  template <Access K, bool Simd>
  DL_HD DL_INLINE auto tape(int64_t j) const {
    return at<K, Simd>(j);
  }
  template <size_t Offset, bool Simd, class Tape, class G, class Acc>
  DL_HD DL_INLINE void backprop(const Tape&, const G&, Acc&) const {}
};

template <class Op, class T>
inline constexpr bool op_has_simd = true;

/// Whether operand type `In` of a child of value type `Child` reads lanes of E unchanged: 16-bit
/// inputs only from a child of that same type (its lanes already hold rounded values).
template <class In, class Child, class E>
inline constexpr bool lane_input_ok = (std::is_same_v<lane_elem_t<In>, E> && (!half_float<In> || std::is_same_v<In, Child>)) ||
                                      (std::is_same_v<In, bool> && std::is_same_v<Child, bool>);
template <class T>
inline constexpr bool op_has_simd<Remainder, T> = !std::is_integral_v<T>;

template <class Op, class... Cs>
struct ApplyView {
  using value_type = typename op_rules_t<Op>::template result<typename Cs::value_type...>;
  template <size_t I>
  using input_t = typename op_rules_t<Op>::template input<I, typename Cs::value_type...>;
  template <size_t I>
  using child_t = std::tuple_element_t<I, std::tuple<Cs...>>;
  using leaf_types = typename concat_lists<typename Cs::leaf_types...>::type;
  static constexpr size_t leaves = (Cs::leaves + ... + size_t(0));
  static constexpr size_t arity = sizeof...(Cs);

  static constexpr std::array<size_t, arity + 1> leaf_offsets = [] {
    std::array<size_t, arity + 1> o{};
    size_t i = 0, acc = 0;
    ((o[i++] = acc, acc += Cs::leaves), ...);
    o[arity] = acc;
    return o;
  }();

 private:
  template <class E, size_t... Is>
  static constexpr bool simd_ok(std::index_sequence<Is...>) {
    if constexpr (std::is_void_v<E>) return false;
    else
      return (std::is_same_v<typename Cs::simd_type, E> && ...) &&
             (lane_input_ok<input_t<Is>, typename Cs::value_type, E> && ...) &&
             (std::is_same_v<lane_elem_t<value_type>, E> || std::is_same_v<value_type, bool>) && op_has_simd<Op, E>;
  }
  using first_simd = typename std::tuple_element_t<0, std::tuple<Cs...>>::simd_type;

 public:
  using simd_type = std::conditional_t<simd_ok<first_simd>(std::index_sequence_for<Cs...>{}), first_simd, void>;

  Op op;
  Tuple<Cs...> args;

  DL_HD DL_INLINE void seek(const int64_t* idx, int nouter) {
    static_for<arity>([&](auto I) { get<I>(args).seek(idx, nouter); });
  }
  template <Access K, bool Simd>
  DL_HD DL_INLINE auto at(int64_t j) const {
    return at_impl<K, Simd>(j, std::index_sequence_for<Cs...>{});
  }
  template <class F>
  void for_each_stride(F&& f) {
    static_for<arity>([&](auto I) { get<I>(args).for_each_stride(f); });
  }

  /// The op applied to operand values, with PyTorch's conversions in scalar mode.
  template <bool Simd, class... Vs>
  DL_HD DL_INLINE auto combine(const Vs&... vs) const {
    return combine_impl<Simd>(std::index_sequence_for<Cs...>{}, vs...);
  }

  template <Access K, bool Simd>
  DL_HD DL_INLINE auto tape(int64_t j) const {
    return tape_impl<K, Simd>(j, std::index_sequence_for<Cs...>{});
  }

  /// Whether gradient flows from this node into operand I at all (decided at compile time).
  template <size_t I>
  static constexpr bool grad_flows = op_rules_t<Op>::template differentiable<I> && child_t<I>::leaves > 0 &&
                                     floating_scalar<input_t<I>> && floating_scalar<value_type> &&
                                     floating_scalar<typename child_t<I>::value_type>;

  template <size_t Offset, bool Simd, class Tape, class G, class Acc>
  DL_HD DL_INLINE void backprop(const Tape& t, const G& g, Acc& acc) const {
    static_for<arity>([&](auto I) { backprop_operand<Offset, I, Simd>(t, g, acc); });
  }
  /// Operand I's part of backprop. A function of its own: nvcc does not discard an `if constexpr`
  /// branch inside a generic lambda.
  template <size_t Offset, size_t I, bool Simd, class Tape, class G, class Acc>
  DL_HD DL_INLINE void backprop_operand(const Tape& t, const G& g, Acc& acc) const {
    if constexpr (grad_flows<I>) {
      const auto gi = local_grad<I, Simd>(t, g, std::index_sequence_for<Cs...>{});
      get<I>(args).template backprop<Offset + leaf_offsets[I], Simd>(get<I>(t.kids), gi, acc);
    }
  }

 private:
  /// Operand I as the op reads it: converted to its input type, and a 16-bit value widened to
  /// float, so that an op computes in float and rounds once, at its result (PyTorch's opmath; in
  /// SIMD mode the lanes are float already).
  template <size_t I, bool Simd, class V>
  DL_HD DL_INLINE static auto convert(const V& v) {
    if constexpr (Simd) return v;
    else return static_cast<lane_elem_t<input_t<I>>>(static_cast<input_t<I>>(v));
  }
  /// A 16-bit value (an output or gradient in scalar mode) widened to float; others unchanged.
  template <class V>
  DL_HD DL_INLINE static auto widen(const V& v) {
    if constexpr (half_float<V>) return float(v);
    else return v;
  }
  template <bool Simd, size_t... Is, class... Vs>
  DL_HD DL_INLINE auto combine_impl(std::index_sequence<Is...>, const Vs&... vs) const {
    if constexpr (Simd && half_float<value_type>) {
#if !defined(__CUDACC__)
      return round_lanes<value_type>(to_lane(op(vs...)));  // rounded where the scalar mode rounds
#endif
    } else if constexpr (Simd) {
      return to_lane(op(vs...));
    } else {
      return static_cast<value_type>(op(convert<Is, false>(vs)...));
    }
  }
  /// In SIMD mode a value is a batch and a bool a mask; casts between them convert here.
  template <class R>
  DL_HD DL_INLINE static auto to_lane(const R& r) {
    using E = simd_type;
    if constexpr (std::is_same_v<value_type, bool> && std::is_same_v<R, batch<E>>) return r != batch<E>(E(0));
    else if constexpr (!std::is_same_v<value_type, bool> && std::is_same_v<R, typename batch<E>::batch_bool_type>)
      return xsimd::select(r, batch<E>(E(1)), batch<E>(E(0)));
    else return r;
  }
  template <Access K, bool Simd, size_t... Is>
  DL_HD DL_INLINE auto at_impl(int64_t j, std::index_sequence<Is...> seq) const {
    return combine_impl<Simd>(seq, get<Is>(args).template at<K, Simd>(j)...);
  }
  template <Access K, bool Simd, size_t... Is>
  DL_HD DL_INLINE auto tape_impl(int64_t j, std::index_sequence<Is...> seq) const {
    using Kids = Tuple<decltype(get<Is>(args).template tape<K, Simd>(j))...>;
    Kids kids{{get<Is>(args).template tape<K, Simd>(j)}...};
    auto value = combine_impl<Simd>(seq, tape_value(get<Is>(kids))...);
    return TapeNode<decltype(value), Kids>{value, kids};
  }
  template <size_t I, bool Simd, class Tape, class G, size_t... Is>
  DL_HD DL_INLINE auto local_grad(const Tape& t, const G& g, std::index_sequence<Is...>) const {
    return op.template d<I>(convert<Is, Simd>(tape_value(get<Is>(t.kids)))..., widen(t.value), widen(g));
  }
};

/// Accumulators for the gradients of every leaf of a view, in leaf order.
template <bool Simd, class List>
struct acc_tuple;
template <bool Simd, class... Ts>
struct acc_tuple<Simd, type_list<Ts...>> {
  using type = Tuple<lane_t<Ts, Simd>...>;
};
template <class View, bool Simd>
using acc_t = typename acc_tuple<Simd, typename View::leaf_types>::type;

// ---------------------------------------------------------------------------------------------
// Lowering host nodes to kernel views
// ---------------------------------------------------------------------------------------------

/// The broadcast shape of an expression; throws dl::Error naming both shapes on a mismatch.
template <node N>
Shape shape_of(const N& n) {
  using D = std::remove_cvref_t<N>;
  if constexpr (is_leaf_v<D>) {
    return n.tensor.shape();
  } else if constexpr (is_scalar_node_v<D>) {
    return Shape{};
  } else {
    return [&]<size_t... Is>(std::index_sequence<Is...>) {
      Shape s;
      bool first = true;
      auto merge = [&](const Shape& x) {
        s = first ? x : broadcast_shapes(s, x);
        first = false;
      };
      (merge(shape_of(get<Is>(n.args))), ...);
      return s;
    }(std::make_index_sequence<D::arity>{});
  }
}

/// Calls f(tensor) for every tensor leaf of a host expression, in leaf order.
template <node N, class F>
void for_each_leaf(const N& n, F&& f) {
  using D = std::remove_cvref_t<N>;
  if constexpr (is_leaf_v<D>) f(n.tensor);
  else if constexpr (is_apply_v<D>) static_for<D::arity>([&](auto I) { for_each_leaf(get<I>(n.args), f); });
}

/// Calls f(tensor&) for every tensor leaf of an expression, in leaf order; f may replace it.
template <class N, class F>
void for_each_leaf_ref(N& n, F&& f) {
  if constexpr (is_leaf_v<N>) f(n.tensor);
  else if constexpr (is_apply_v<N>) static_for<N::arity>([&](auto I) { for_each_leaf_ref(get<I>(n.args), f); });
}

/// The kernel view of a host expression, with every leaf's strides aligned to `out`
/// (broadcast dimensions read with stride 0). @pre shape_of(n) broadcasts to out.
template <scalar_type T>
LeafView<T> lower(const Leaf<T>& l, const Shape& out) {
  LeafView<T> v{};
  v.base = l.tensor.data_ptr();
  v.row = v.base;
  const Strides st = broadcast_strides(l.tensor.shape(), l.tensor.strides(), out);
  for (int d = 0; d < st.size(); ++d) v.st[d] = st[d];
  return v;
}
template <scalar_type T>
ScalarView<T> lower(const Scalar<T>& s, const Shape&) {
  return {s.value};
}
template <class Op, class... Args>
auto lower(const Apply<Op, Args...>& a, const Shape& out) {
  return [&]<size_t... Is>(std::index_sequence<Is...>) {
    using View = ApplyView<Op, decltype(lower(get<Is>(a.args), out))...>;
    return View{a.op, {{lower(get<Is>(a.args), out)}...}};
  }(std::index_sequence_for<Args...>{});
}
template <node N>
using view_t = decltype(lower(std::declval<const N&>(), std::declval<const Shape&>()));

}  // namespace dl::expr
