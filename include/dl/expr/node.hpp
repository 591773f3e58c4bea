// dl/expr/node.hpp — host expression nodes and the functions that build them.
//
// An expression is a value whose type is the computation:
//   dl::sigmoid(a * b + c) * d   has type
//   Apply<Mul, Apply<Sigmoid, Apply<Add, Apply<Mul, Leaf<float>, Leaf<float>>, Leaf<float>>>, Leaf<float>>
// Nothing is computed until it is assigned to a Tensor (one fused pass) or fed to an evaluation
// boundary (a reduction, matmul...). Leaves hold tensor handles, so an expression never dangles.
// Evaluating the same `auto` expression twice computes it twice.
#pragma once

#include <algorithm>
#include <concepts>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "../dtype.hpp"
#include "../shape.hpp"
#include "ops.hpp"
#include "tuple.hpp"

namespace dl {

template <scalar_type T>
class Tensor;

namespace expr {

template <class Derived>
struct ExprBase;  // member functions shared by Tensor and expressions (dl/expr/methods.hpp)

/// A tensor operand of an expression.
template <scalar_type T>
struct Leaf {
  using value_type = T;
  Tensor<T> tensor;
};

/// A number operand, broadcast to every element.
template <scalar_type T>
struct Scalar {
  using value_type = T;
  T value;
};

template <class N>
inline constexpr int node_depth = 0;
template <class Op, class... Args>
struct Apply;
template <class Op, class... Args>
inline constexpr int node_depth<Apply<Op, Args...>> = Apply<Op, Args...>::depth;

/// An op applied elementwise to its operands (which broadcast against each other).
template <class Op, class... Args>
struct Apply : ExprBase<Apply<Op, Args...>> {
  using value_type = typename op_rules_t<Op>::template result<typename Args::value_type...>;
  static constexpr size_t arity = sizeof...(Args);
  /// Height of the tree: 1 for an op whose operands are all tensors or numbers.
  static constexpr int depth = 1 + std::max({0, node_depth<Args>...});
  static constexpr std::string_view op_name() { return Op::name; }
  Op op;
  Tuple<Args...> args;

  Apply(Op o, Args... a) : op(o), args{{std::move(a)}...} {}
};

// ---------------------------------------------------------------------------------------------
// Traits and concepts
// ---------------------------------------------------------------------------------------------

template <class T>
inline constexpr bool is_tensor_v = false;
template <class T>
inline constexpr bool is_tensor_v<Tensor<T>> = true;
template <class T>
inline constexpr bool is_leaf_v = false;
template <class T>
inline constexpr bool is_leaf_v<Leaf<T>> = true;
template <class T>
inline constexpr bool is_scalar_node_v = false;
template <class T>
inline constexpr bool is_scalar_node_v<Scalar<T>> = true;
template <class T>
inline constexpr bool is_apply_v = false;
template <class Op, class... Args>
inline constexpr bool is_apply_v<Apply<Op, Args...>> = true;

/// Expression nodes (what an Apply holds).
template <class E>
concept node = is_leaf_v<std::remove_cvref_t<E>> || is_scalar_node_v<std::remove_cvref_t<E>> ||
               is_apply_v<std::remove_cvref_t<E>>;

/// A tensor or a lazy elementwise expression: what elementwise functions accept. When a call does
/// not match, the compiler quotes the line of the constraint that failed: the comment on it is the
/// requirement in one sentence (the same for every concept users meet; tests/static/concept_errors.cpp).
template <class E>
concept expression = is_tensor_v<std::remove_cvref_t<E>> || node<E>;  // requires a dl::Tensor or an expression of tensors (a * b + 1); from a std::vector: dl::tensor(v)

/// A number that can take part in an expression beside a tensor.
template <class S>
concept number = std::is_arithmetic_v<std::remove_cvref_t<S>> || half_float<std::remove_cvref_t<S>>;  // requires a C++ number (int, float, double, dl::Half, ...)

/// An argument of an elementwise operator or function: a tensor, an expression or a number.
template <class E>
concept operand = expression<E> || number<E>;  // requires a dl::Tensor, an expression of tensors (a * b + 1) or a number; from a std::vector: dl::tensor(v)

template <class E>
using value_type_t = typename std::remove_cvref_t<E>::value_type;

/// The tensor type an expression materialises into.
template <expression E>
using tensor_t = Tensor<value_type_t<E>>;

/// The type a number takes when combined with an operand of element type A (PyTorch: a number
/// never widens a tensor within its category; a float number makes an integral tensor float).
template <class A, class S>
using scalar_operand_t =
    std::conditional_t<floating_scalar<A>, A,
                       std::conditional_t<std::is_floating_point_v<S> || half_float<S>, float,
                                          std::conditional_t<std::is_same_v<A, bool> && !std::is_same_v<S, bool>,
                                                             int64_t, A>>>;

// ---------------------------------------------------------------------------------------------
// Building nodes
// ---------------------------------------------------------------------------------------------

/// The node for an expression operand: a Leaf for a tensor, the node itself otherwise.
template <expression E>
auto as_node(E&& e) {
  using D = std::remove_cvref_t<E>;
  if constexpr (is_tensor_v<D>) return Leaf<typename D::value_type>{std::forward<E>(e)};
  else return D(std::forward<E>(e));
}
template <class E>
using node_t = decltype(as_node(std::declval<E>()));

template <class Op, expression... Es>
auto apply(Op op, Es&&... es) {
  return Apply<Op, node_t<Es>...>(op, as_node(std::forward<Es>(es))...);
}

/// An operand list with numbers turned into Scalar nodes typed after the expression operands.
template <class Op, operand A, operand B>
  requires(expression<A> || expression<B>)
auto binary(Op op, A&& a, B&& b) {
  if constexpr (number<A>) {
    using S = scalar_operand_t<value_type_t<B>, std::remove_cvref_t<A>>;
    return Apply<Op, Scalar<S>, node_t<B>>(op, Scalar<S>{S(a)}, as_node(std::forward<B>(b)));
  } else if constexpr (number<B>) {
    using S = scalar_operand_t<value_type_t<A>, std::remove_cvref_t<B>>;
    return Apply<Op, node_t<A>, Scalar<S>>(op, as_node(std::forward<A>(a)), Scalar<S>{S(b)});
  } else {
    return apply(op, std::forward<A>(a), std::forward<B>(b));
  }
}

template <class X>
struct value_type_of {
  using type = value_type_t<X>;
};
/// Element type of an operand, with numbers counting as bool (the bottom of the promotion order).
template <class X>
using operand_type_t =
    typename std::conditional_t<expression<X>, value_type_of<X>, std::type_identity<bool>>::type;

/// where/lerp-style n-ary ops: numbers take the promoted type of the expression operands.
template <class Op, operand... Xs>
auto nary(Op op, Xs&&... xs) {
  using Common = promote_all_t<operand_type_t<Xs>...>;
  auto to_node = [](auto&& x) {
    if constexpr (number<decltype(x)>) {
      using S = scalar_operand_t<Common, std::remove_cvref_t<decltype(x)>>;
      return Scalar<S>{S(x)};
    } else {
      return as_node(std::forward<decltype(x)>(x));
    }
  };
  return Apply<Op, decltype(to_node(std::forward<Xs>(xs)))...>(op, to_node(std::forward<Xs>(xs))...);
}

// Lazy expressions as values of derivative rules (create_graph): select builds a where, call
// builds a node, zero is a Scalar 0, cast_like a Cast node.
template <class V>
struct ValueTraits<V, std::enable_if_t<node<V>>> {
  template <class A, class B>
  static auto select(const V& c, const A& a, const B& b) {
    return nary(Where{}, c, a, b);
  }
  static auto zero(const V&) { return Scalar<value_type_t<V>>{0}; }
  template <class Op, class... Xs>
  static auto call(const Op& op, const Xs&... xs) {
    return apply(op, xs...);
  }
  template <class G>
  static auto cast_like(const V&, const G& g) {
    if constexpr (std::is_same_v<value_type_t<G>, value_type_t<V>>) return as_node(g);
    else return apply(Cast<value_type_t<V>>{}, g);
  }
};

// ---------------------------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------------------------

#define DL_BINARY_OPERATOR(sym, Op)                                                 \
  template <operand A, operand B>                                                   \
    requires(expression<A> || expression<B>)                                        \
  auto operator sym(A&& a, B&& b) {                                                 \
    return binary(Op{}, std::forward<A>(a), std::forward<B>(b));                    \
  }
DL_BINARY_OPERATOR(+, Add)
DL_BINARY_OPERATOR(-, Sub)
DL_BINARY_OPERATOR(*, Mul)
DL_BINARY_OPERATOR(/, Div)
DL_BINARY_OPERATOR(==, Eq)
DL_BINARY_OPERATOR(!=, Ne)
DL_BINARY_OPERATOR(<, Lt)
DL_BINARY_OPERATOR(<=, Le)
DL_BINARY_OPERATOR(>, Gt)
DL_BINARY_OPERATOR(>=, Ge)
DL_BINARY_OPERATOR(&, LogicalAnd)
DL_BINARY_OPERATOR(|, LogicalOr)
DL_BINARY_OPERATOR(^, LogicalXor)
#undef DL_BINARY_OPERATOR

template <expression E>
auto operator-(E&& e) {
  return apply(Neg{}, std::forward<E>(e));
}
template <expression E>
auto operator!(E&& e) {
  return apply(LogicalNot{}, std::forward<E>(e));
}
template <expression E>
auto operator~(E&& e) {
  static_assert(std::is_same_v<value_type_t<E>, bool>, "operator~ is defined for bool tensors (logical not)");
  return apply(LogicalNot{}, std::forward<E>(e));
}

// ---------------------------------------------------------------------------------------------
// Named elementwise functions (PyTorch names). All lazy.
// ---------------------------------------------------------------------------------------------

#define DL_UNARY_FUNCTION(fn, Op)                                                   \
  template <expression E>                                                           \
  auto fn(E&& e) {                                                                  \
    return apply(Op{}, std::forward<E>(e));                                         \
  }
DL_UNARY_FUNCTION(neg, Neg)
DL_UNARY_FUNCTION(abs, Abs)
DL_UNARY_FUNCTION(sign, Sign)
DL_UNARY_FUNCTION(floor, Floor)
DL_UNARY_FUNCTION(ceil, Ceil)
DL_UNARY_FUNCTION(trunc, Trunc)
DL_UNARY_FUNCTION(round, Round)
DL_UNARY_FUNCTION(exp, Exp)
DL_UNARY_FUNCTION(expm1, Expm1)
DL_UNARY_FUNCTION(log, Log)
DL_UNARY_FUNCTION(log1p, Log1p)
DL_UNARY_FUNCTION(log2, Log2)
DL_UNARY_FUNCTION(log10, Log10)
DL_UNARY_FUNCTION(sqrt, Sqrt)
DL_UNARY_FUNCTION(rsqrt, Rsqrt)
DL_UNARY_FUNCTION(sin, Sin)
DL_UNARY_FUNCTION(cos, Cos)
DL_UNARY_FUNCTION(tan, Tan)
DL_UNARY_FUNCTION(asin, Asin)
DL_UNARY_FUNCTION(acos, Acos)
DL_UNARY_FUNCTION(atan, Atan)
DL_UNARY_FUNCTION(sinh, Sinh)
DL_UNARY_FUNCTION(cosh, Cosh)
DL_UNARY_FUNCTION(tanh, Tanh)
DL_UNARY_FUNCTION(erf, Erf)
DL_UNARY_FUNCTION(sigmoid, Sigmoid)
DL_UNARY_FUNCTION(reciprocal, Reciprocal)
DL_UNARY_FUNCTION(relu, Relu)
DL_UNARY_FUNCTION(square, Square)
DL_UNARY_FUNCTION(logical_not, LogicalNot)
DL_UNARY_FUNCTION(isnan, IsNan)
DL_UNARY_FUNCTION(isinf, IsInf)
DL_UNARY_FUNCTION(isposinf, IsPosInf)
DL_UNARY_FUNCTION(isneginf, IsNegInf)
DL_UNARY_FUNCTION(isfinite, IsFinite)
#undef DL_UNARY_FUNCTION

#define DL_BINARY_FUNCTION(fn, Op)                                                  \
  template <operand A, operand B>                                                   \
    requires(expression<A> || expression<B>)                                        \
  auto fn(A&& a, B&& b) {                                                           \
    return binary(Op{}, std::forward<A>(a), std::forward<B>(b));                    \
  }
DL_BINARY_FUNCTION(add, Add)
DL_BINARY_FUNCTION(sub, Sub)
DL_BINARY_FUNCTION(mul, Mul)
DL_BINARY_FUNCTION(div, Div)
DL_BINARY_FUNCTION(maximum, Maximum)
DL_BINARY_FUNCTION(minimum, Minimum)
DL_BINARY_FUNCTION(remainder, Remainder)
DL_BINARY_FUNCTION(eq, Eq)
DL_BINARY_FUNCTION(ne, Ne)
DL_BINARY_FUNCTION(lt, Lt)
DL_BINARY_FUNCTION(le, Le)
DL_BINARY_FUNCTION(gt, Gt)
DL_BINARY_FUNCTION(ge, Ge)
DL_BINARY_FUNCTION(logical_and, LogicalAnd)
DL_BINARY_FUNCTION(logical_or, LogicalOr)
DL_BINARY_FUNCTION(logical_xor, LogicalXor)
#undef DL_BINARY_FUNCTION

/// x ** p. An integral p keeps an integral tensor integral; a floating p makes it float.
template <expression E, number P>
auto pow(E&& x, P p) {
  using Exp = std::conditional_t<std::is_integral_v<P>, int64_t, double>;
  return apply(PowScalar<Exp>{Exp(p)}, std::forward<E>(x));
}
/// Elementwise a ** b (broadcasting); the result is floating.
template <expression A, expression B>
auto pow(A&& a, B&& b) {
  return apply(Pow{}, std::forward<A>(a), std::forward<B>(b));
}
/// base ** x for a number base.
template <number S, expression E>
auto pow(S base, E&& x) {
  return binary(Pow{}, base, std::forward<E>(x));
}

/// clamp(x, lo, hi) with NaN propagation; bounds are converted to x's element type.
template <expression E, number L, number H>
auto clamp(E&& x, L lo, H hi) {
  using T = value_type_t<E>;
  return apply(Clamp<T>{T(lo), T(hi)}, std::forward<E>(x));
}
template <expression E, number L>
auto clamp_min(E&& x, L lo) {
  using T = value_type_t<E>;
  const T hi = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  return apply(Clamp<T>{T(lo), hi}, std::forward<E>(x));
}
template <expression E, number H>
auto clamp_max(E&& x, H hi) {
  using T = value_type_t<E>;
  const T lo = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  return apply(Clamp<T>{lo, T(hi)}, std::forward<E>(x));
}

/// clamp with tensor (or expression) bounds, broadcasting; a number may stand for one bound. Both
/// x and the tensor bounds get gradients (see ClampTensor for the rule).
template <expression E, operand L, operand H>
  requires(expression<L> || expression<H>)
auto clamp(E&& x, L&& lo, H&& hi) {
  return nary(ClampTensor{}, std::forward<E>(x), std::forward<L>(lo), std::forward<H>(hi));
}
template <expression E, expression L>
auto clamp_min(E&& x, L&& lo) {
  return apply(ClampMinTensor{}, std::forward<E>(x), std::forward<L>(lo));
}
template <expression E, expression H>
auto clamp_max(E&& x, H&& hi) {
  return apply(ClampMaxTensor{}, std::forward<E>(x), std::forward<H>(hi));
}
/// One bound only, as torch.clamp(x, min=lo) / torch.clamp(x, max=hi): dl::clamp(x, lo, std::nullopt).
template <expression E, operand L>
auto clamp(E&& x, L&& lo, std::nullopt_t) {
  return clamp_min(std::forward<E>(x), std::forward<L>(lo));
}
template <expression E, operand H>
auto clamp(E&& x, std::nullopt_t, H&& hi) {
  return clamp_max(std::forward<E>(x), std::forward<H>(hi));
}

/// nan_to_num(x, nan, posinf, neginf): NaN -> nan (0 by default), +inf -> posinf and -inf ->
/// neginf (by default the largest and lowest finite values of the element type). Integral inputs
/// come back unchanged (as a copy).
template <expression E>
auto nan_to_num(E&& x, double nan = 0.0, std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt) {
  using T = value_type_t<E>;
  if constexpr (floating_scalar<T>) {
    return apply(NanToNum<T>{T(nan), posinf ? T(*posinf) : std::numeric_limits<T>::max(),
                             neginf ? T(*neginf) : std::numeric_limits<T>::lowest()},
                 std::forward<E>(x));
  } else {
    return apply(Copy{}, std::forward<E>(x));
  }
}

/// where(cond, a, b): elementwise choice; a and b may be numbers.
template <expression C, operand A, operand B>
auto where(C&& cond, A&& a, B&& b) {
  static_assert(std::is_same_v<value_type_t<C>, bool>, "where: the condition must be a bool expression (e.g. x > 0)");
  return nary(Where{}, std::forward<C>(cond), std::forward<A>(a), std::forward<B>(b));
}

/// masked_fill(x, mask, value): value where mask is true, x elsewhere (lazy; mask broadcasts).
template <expression E, expression M, number V>
auto masked_fill(E&& x, M&& mask, V value) {
  using T = value_type_t<E>;
  return where(std::forward<M>(mask), T(value), std::forward<E>(x));
}

/// lerp(start, end, weight) = start + weight * (end - start).
template <operand S, operand E, operand W>
auto lerp(S&& start, E&& end, W&& weight) {
  return nary(Lerp{}, std::forward<S>(start), std::forward<E>(end), std::forward<W>(weight));
}

/// Lazy conversion to element type U (dl::cast<double>(x)); Tensor::to<U>() materialises.
template <scalar_type U, expression E>
auto cast(E&& e) {
  return apply(Cast<U>{}, std::forward<E>(e));
}

}  // namespace expr

// The public names live in dl:: (dl::exp, dl::where...). Using-declarations keep ADL working for
// Tensor arguments (namespace dl) and for nodes (namespace dl::expr).
using expr::abs, expr::acos, expr::add, expr::asin, expr::atan, expr::ceil, expr::clamp,
    expr::clamp_max, expr::clamp_min, expr::cos, expr::cosh, expr::div, expr::eq, expr::erf,
    expr::exp, expr::expm1, expr::floor, expr::ge, expr::gt, expr::isnan, expr::isinf, expr::isposinf,
    expr::isneginf, expr::isfinite, expr::nan_to_num, expr::le, expr::lerp,
    expr::log, expr::log10, expr::log1p, expr::log2, expr::logical_and, expr::logical_not,
    expr::logical_or, expr::logical_xor, expr::lt, expr::masked_fill, expr::maximum, expr::minimum,
    expr::mul, expr::ne, expr::neg, expr::pow, expr::reciprocal, expr::relu, expr::remainder,
    expr::round, expr::rsqrt, expr::sigmoid, expr::sign, expr::sin, expr::sinh, expr::sqrt,
    expr::square, expr::sub, expr::tan, expr::tanh, expr::trunc, expr::where, expr::cast;
using expr::operator+, expr::operator-, expr::operator*, expr::operator/, expr::operator==,
    expr::operator!=, expr::operator<, expr::operator<=, expr::operator>, expr::operator>=,
    expr::operator&, expr::operator|, expr::operator^, expr::operator!, expr::operator~;
using expr::expression;

}  // namespace dl
