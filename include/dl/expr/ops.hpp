// dl/expr/ops.hpp — the elementwise op functors. Each one is a trivially copyable, constexpr-ready
// functor that works on scalars, xsimd batches and CUDA threads alike, and carries
//   - its result type and the types its inputs are converted to (PyTorch's promotion rules),
//   - its local derivative: d<I>(inputs..., out, g) is the gradient flowing to input I when g flows
//     into the op's output. Rules are generic over the value type, so the same rule runs on
//     registers inside fused backward loops and on lazy expressions when a graph of the backward
//     is wanted (create_graph / second derivatives).
#pragma once

#include <cmath>
#include <limits>
#include <numbers>
#include <string_view>
#include <type_traits>

#include "../config.hpp"
#include "../dtype.hpp"

namespace dl::expr {

// ---------------------------------------------------------------------------------------------
// Value helpers. A rule may see a plain scalar, an xsimd batch (dl/expr/simd.hpp specialises
// ValueOps for those) or a lazy expression (dl/expr/node.hpp). Rules call these helpers instead
// of naming a library, so one definition serves every kind of value.
// ---------------------------------------------------------------------------------------------

/// The element type of a value: T for a scalar, a batch or an expression of T.
template <class V, class = void>
struct scalar_of {
  using type = V;
};
template <class V>
struct scalar_of<V, std::void_t<typename V::value_type>> {
  using type = typename V::value_type;
};
template <class V>
using scalar_of_t = typename scalar_of<std::remove_cvref_t<V>>::type;

/// Customisation point, specialised per kind of value: the default serves plain scalars and
/// xsimd batches; dl/expr/simd.hpp adds batch_bool conditions, dl/expr/node.hpp lazy expressions.
template <class V, class Enable = void>
struct ValueTraits {
  /// `c ? a : b`, elementwise; V is the condition's type.
  template <class A, class B>
  DL_HD static constexpr auto select(const V& c, const A& a, const B& b) {
    using R = std::common_type_t<A, B>;
    return c ? R(a) : R(b);
  }
  /// A zero of v's kind (not v * 0, which is NaN for an infinite v).
  DL_HD static constexpr V zero(const V&) { return V(typename scalar_of<V>::type(0)); }
  /// op applied to values of this kind (lazy expressions build a node instead).
  template <class Op, class... Xs>
  DL_HD static constexpr auto call(const Op& op, const Xs&... xs) { return op(xs...); }
  /// g converted to the element type of v.
  template <class G>
  DL_HD static constexpr V cast_like(const V&, const G& g) { return static_cast<V>(g); }
};

/// Elementwise `c ? a : b` for any kind of value.
DL_NO_EXEC_CHECK
template <class C, class A, class B>
DL_HD DL_INLINE constexpr auto select(const C& c, const A& a, const B& b) {
  return ValueTraits<C>::select(c, a, b);
}
DL_NO_EXEC_CHECK
template <class V>
DL_HD DL_INLINE constexpr auto zero_like(const V& v) {
  return ValueTraits<V>::zero(v);
}
DL_NO_EXEC_CHECK
template <class Op, class X, class... Xs>
DL_HD DL_INLINE constexpr auto call(const Op& op, const X& x, const Xs&... xs) {
  return ValueTraits<X>::call(op, x, xs...);
}
DL_NO_EXEC_CHECK
template <class X, class G>
DL_HD DL_INLINE constexpr auto cast_like(const X& x, const G& g) {
  return ValueTraits<X>::cast_like(x, g);
}

// ---------------------------------------------------------------------------------------------
// Type rules shared by families of ops.
// ---------------------------------------------------------------------------------------------

/// Where an op's type rules (result, input, differentiable) are: the op itself (most ops derive from
/// one of the structs below), or the struct it names as `rules` (an op that must stay an aggregate,
/// LeakyRelu<T>{slope}, cannot have a base class).
template <class Op>
struct op_rules {
  using type = Op;
};
template <class Op>
  requires requires { typename Op::rules; }
struct op_rules<Op> {
  using type = typename Op::rules;
};
template <class Op>
using op_rules_t = typename op_rules<Op>::type;

/// Same type in and out (neg, abs, relu, clamp...).
struct SameTypeUnary {
  template <class A>
  using result = A;
  template <size_t I, class A>
  using input = A;
  template <size_t I>
  static constexpr bool differentiable = true;
};
/// Math functions: integral inputs become float (exp of an int64 tensor is float).
struct FloatUnary {
  template <class A>
  using result = to_floating_t<A>;
  template <size_t I, class A>
  using input = to_floating_t<A>;
  template <size_t I>
  static constexpr bool differentiable = true;
};
/// Piecewise-constant functions (floor, sign...): type kept, gradient zero.
struct StepUnary : SameTypeUnary {
  template <size_t I>
  static constexpr bool differentiable = false;
};
/// Arithmetic on two operands, both converted to their promoted type.
struct ArithBinary {
  template <class A, class B>
  using result = promote_t<A, B>;
  template <size_t I, class A, class B>
  using input = promote_t<A, B>;
  template <size_t I>
  static constexpr bool differentiable = true;
};
/// Like ArithBinary, but integral operands give a float result (true division).
struct FloatBinary {
  template <class A, class B>
  using result = to_floating_t<promote_t<A, B>>;
  template <size_t I, class A, class B>
  using input = to_floating_t<promote_t<A, B>>;
  template <size_t I>
  static constexpr bool differentiable = true;
};
/// Comparisons: promoted operands, bool result, no gradient.
struct CompareBinary {
  template <class A, class B>
  using result = bool;
  template <size_t I, class A, class B>
  using input = promote_t<A, B>;
  template <size_t I>
  static constexpr bool differentiable = false;
};
/// Logical ops: operands read as bool.
struct LogicalBinary {
  template <class A, class B>
  using result = bool;
  template <size_t I, class A, class B>
  using input = bool;
  template <size_t I>
  static constexpr bool differentiable = false;
};

// ---------------------------------------------------------------------------------------------
// Unary ops
// ---------------------------------------------------------------------------------------------

struct Neg : SameTypeUnary {
  static constexpr std::string_view name = "Neg";
  template <class X>
  DL_HD constexpr X operator()(const X& x) const { return -x; }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD constexpr auto d(const X&, const O&, const G& g) const { return -g; }
};

/// Identity; materialising it is a copy (clone).
struct Copy : SameTypeUnary {
  static constexpr std::string_view name = "Clone";
  template <class X>
  DL_HD constexpr X operator()(const X& x) const { return x; }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD constexpr auto d(const X&, const O&, const G& g) const { return g; }
};

struct Abs : SameTypeUnary {
  static constexpr std::string_view name = "Abs";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::abs;
    if constexpr (std::is_same_v<X, bool> || std::is_same_v<X, uint8_t>) return x;
    else return abs(x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select(x > S(0), g, select(x < S(0), -g, zero_like(g)));
  }
};

struct Sign : StepUnary {
  static constexpr std::string_view name = "Sign";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    if constexpr (std::is_same_v<S, bool>) return x;
    else return select(x > S(0), X(S(1)), select(x < S(0), X(S(-1)), X(S(0))));
  }
};

#define DL_STEP_UNARY(Name, fn)                                                         \
  struct Name : StepUnary {                                                             \
    static constexpr std::string_view name = #Name;                                     \
    template <class X>                                                                  \
    DL_HD X operator()(const X& x) const {                                              \
      if constexpr (std::is_integral_v<scalar_of_t<X>>) return x;                       \
      else {                                                                            \
        using std::fn;                                                                  \
        return fn(x);                                                                   \
      }                                                                                 \
    }                                                                                   \
  };
DL_STEP_UNARY(Floor, floor)
DL_STEP_UNARY(Ceil, ceil)
DL_STEP_UNARY(Trunc, trunc)
DL_STEP_UNARY(Round, nearbyint)  // half to even, as torch.round
#undef DL_STEP_UNARY

// Math functions whose derivative is an expression of (x, out, g). `fn` is found by ADL for
// batches (xsimd) and expressions (dl::expr), by the using-declaration for scalars.
#define DL_FLOAT_UNARY(Name, fn, ...)                                                   \
  struct Name : FloatUnary {                                                            \
    static constexpr std::string_view name = #Name;                                     \
    template <class X>                                                                  \
    DL_HD X operator()(const X& x) const {                                              \
      using std::fn;                                                                    \
      return fn(x);                                                                     \
    }                                                                                   \
    DL_RULE_NO_EXEC_CHECK                                                               \
    template <size_t I, class X, class O, class G>                                      \
    DL_HD auto d([[maybe_unused]] const X& x, [[maybe_unused]] const O& out,            \
                 const G& g) const {                                                    \
      using S [[maybe_unused]] = scalar_of_t<X>;                                        \
      using std::sin, std::cos, std::exp, std::sinh, std::cosh, std::sqrt;              \
      return __VA_ARGS__;                                                               \
    }                                                                                   \
  };
DL_FLOAT_UNARY(Exp, exp, g * out)
DL_FLOAT_UNARY(Expm1, expm1, g * (out + S(1)))
DL_FLOAT_UNARY(Log, log, g / x)
DL_FLOAT_UNARY(Log1p, log1p, g / (x + S(1)))
DL_FLOAT_UNARY(Log2, log2, g / (x * S(std::numbers::ln2)))
DL_FLOAT_UNARY(Log10, log10, g / (x * S(std::numbers::ln10)))
DL_FLOAT_UNARY(Sqrt, sqrt, g / (out * S(2)))
DL_FLOAT_UNARY(Sin, sin, g * cos(x))
DL_FLOAT_UNARY(Cos, cos, -(g * sin(x)))
DL_FLOAT_UNARY(Tan, tan, g * (out * out + S(1)))
DL_FLOAT_UNARY(Asin, asin, g / sqrt(S(1) - x * x))
DL_FLOAT_UNARY(Acos, acos, -(g / sqrt(S(1) - x * x)))
DL_FLOAT_UNARY(Atan, atan, g / (x * x + S(1)))
DL_FLOAT_UNARY(Sinh, sinh, g * cosh(x))
DL_FLOAT_UNARY(Cosh, cosh, g * sinh(x))
DL_FLOAT_UNARY(Tanh, tanh, g * (S(1) - out * out))
DL_FLOAT_UNARY(Erf, erf, g * (S(2 / std::sqrt(std::numbers::pi)) * exp(-(x * x))))
#undef DL_FLOAT_UNARY

struct Rsqrt : FloatUnary {
  static constexpr std::string_view name = "Rsqrt";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::sqrt;
    return scalar_of_t<X>(1) / sqrt(x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X&, const O& out, const G& g) const {
    return g * (out * out * out * scalar_of_t<O>(-0.5));
  }
};

struct Sigmoid : FloatUnary {
  static constexpr std::string_view name = "Sigmoid";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::exp;
    using S = scalar_of_t<X>;
    return S(1) / (exp(-x) + S(1));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X&, const O& out, const G& g) const {
    return g * (out * (scalar_of_t<O>(1) - out));
  }
};

struct Reciprocal : FloatUnary {
  static constexpr std::string_view name = "Reciprocal";
  template <class X>
  DL_HD X operator()(const X& x) const { return scalar_of_t<X>(1) / x; }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X&, const O& out, const G& g) const { return -(g * (out * out)); }
};

struct Relu : SameTypeUnary {
  static constexpr std::string_view name = "Relu";
  template <class X>
  DL_HD X operator()(const X& x) const {  // NaN stays NaN, as in PyTorch
    using S = scalar_of_t<X>;
    if constexpr (std::is_unsigned_v<S>) return x;
    else return select(x < S(0), X(S(0)), x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X&, const O& out, const G& g) const {
    using S = scalar_of_t<O>;
    return select(out > S(0), g, zero_like(g));
  }
};

struct Square : SameTypeUnary {
  static constexpr std::string_view name = "Square";
  template <class X>
  DL_HD X operator()(const X& x) const { return x * x; }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const { return g * (x * scalar_of_t<X>(2)); }
};

/// x ** p for a scalar exponent. An integral exponent keeps an integral tensor integral; a
/// floating exponent makes it float (torch.pow(int_tensor, 2.5) is float).
template <class E>
struct PowScalar {
  E p;
  static constexpr std::string_view name = "Pow";
  template <class A>
  using result = std::conditional_t<std::is_integral_v<E>, A, to_floating_t<A>>;
  template <size_t I, class A>
  using input = result<A>;
  template <size_t I>
  static constexpr bool differentiable = true;

  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    if constexpr (std::is_integral_v<S>) {
      // Exponentiation by squaring; negative powers of integers are 0 except for |x| == 1.
      if (p < 0) return select(x == S(1), X(S(1)), select(x == S(-1), (int64_t(-p) & 1) ? X(S(-1)) : X(S(1)), X(S(0))));
      X r(S(1)), b = x;
      for (int64_t e = int64_t(p); e > 0; e >>= 1) {
        if (e & 1) r = r * b;
        b = b * b;
      }
      return r;
    } else {
      using std::pow, std::sqrt;
      // The common exponents take exact, fast paths (as PyTorch's pow_tensor_scalar does).
      if (p == E(2)) return x * x;
      if (p == E(1)) return x;
      if (p == E(3)) return x * x * x;
      if (p == E(0)) return X(S(1));  // also for NaN, as std::pow and PyTorch
      if constexpr (floating_scalar<E>) {  // E(0.5) is 0 for an integral E
        if (p == E(0.5)) return sqrt(x);
      }
      if (p == E(-1)) return S(1) / x;
      if (p == E(-2)) return S(1) / (x * x);
      return pow(x, X(S(p)));
    }
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    // p == 0 gives x^0 * 0: zero, as PyTorch's special case, with one result type for both cases.
    const E q = p == E(0) ? E(0) : E(p - E(1));
    return g * (call(PowScalar<E>{q}, x) * S(p));
  }
};

/// clamp(x, lo, hi); NaN propagates. A missing bound is the type's infinity (or extreme).
template <class T>
struct Clamp {  // no base class: it stays an aggregate, Clamp<T>{lo, hi}
  T lo, hi;
  using rules = SameTypeUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Clamp";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    const X lower = select(x < S(lo), X(S(lo)), x);
    return select(lower > S(hi), X(S(hi)), lower);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select((x >= S(lo)) & (x <= S(hi)), g, zero_like(g));
  }
};

/// Type conversion; the gradient converts back.
template <class To>
struct Cast {
  static constexpr std::string_view name = "Cast";
  template <class A>
  using result = To;
  template <size_t I, class A>
  using input = A;
  template <size_t I>
  static constexpr bool differentiable = true;
  template <class X>
  DL_HD X operator()(const X& x) const { return x; }  // the node converts; see Apply
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const { return cast_like(x, g); }
};

struct LogicalNot {
  static constexpr std::string_view name = "LogicalNot";
  template <class A>
  using result = bool;
  template <size_t I, class A>
  using input = bool;
  template <size_t I>
  static constexpr bool differentiable = false;
  template <class X>
  DL_HD X operator()(const X& x) const { return !x; }
};

/// True where x is NaN, for a scalar or per lane of a SIMD batch. Not `x != x`: xsimd 8's SIMD !=
/// is an ordered compare (_CMP_NEQ_OQ), false when a side is NaN, where IEEE's != is true.
template <class X>
DL_HD DL_INLINE auto nan_lanes(const X& x) {
  return !(x == x);
}

struct IsNan {
  static constexpr std::string_view name = "IsNan";
  template <class A>
  using result = bool;
  template <size_t I, class A>
  using input = A;
  template <size_t I>
  static constexpr bool differentiable = false;
  template <class X>
  DL_HD auto operator()(const X& x) const { return nan_lanes(x); }
};

/// Floating-point classification (isinf, isposinf, isneginf, isfinite): bool result, no gradient.
/// Integral inputs are always finite.
#define DL_CLASSIFY(Name, floating, integral)                                           \
  struct Name {                                                                         \
    static constexpr std::string_view name = #Name;                                     \
    template <class A>                                                                  \
    using result = bool;                                                                \
    template <size_t I, class A>                                                        \
    using input = A;                                                                    \
    template <size_t I>                                                                 \
    static constexpr bool differentiable = false;                                       \
    template <class X>                                                                  \
    DL_HD auto operator()(const X& x) const {                                           \
      using S = scalar_of_t<X>;                                                         \
      constexpr S inf = std::numeric_limits<S>::infinity();                             \
      (void)inf;                                                                        \
      if constexpr (floating_scalar<S>) return floating;                                   \
      else return integral;                                                             \
    }                                                                                   \
  };
DL_CLASSIFY(IsInf, (x == inf) | (x == -inf), !(x == x))
DL_CLASSIFY(IsPosInf, x == inf, !(x == x))
DL_CLASSIFY(IsNegInf, x == -inf, !(x == x))
DL_CLASSIFY(IsFinite, (x - x) == S(0), x == x)  // x - x is NaN exactly for NaN and +-inf
#undef DL_CLASSIFY

/// nan_to_num: NaN, +inf and -inf replaced by the given values; the gradient passes where the input
/// was finite and is zero elsewhere (PyTorch's rule).
template <class T>
struct NanToNum {  // an aggregate, as Clamp: NanToNum<T>{nan, posinf, neginf}
  T nan, posinf, neginf;
  using rules = SameTypeUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "NanToNum";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    constexpr S inf = std::numeric_limits<S>::infinity();
    return select(!(x == x), X(S(nan)), select(x == inf, X(S(posinf)), select(x == -inf, X(S(neginf)), x)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select((x - x) == S(0), g, zero_like(g));
  }
};

// ---------------------------------------------------------------------------------------------
// Binary ops
// ---------------------------------------------------------------------------------------------

struct Add : ArithBinary {
  static constexpr std::string_view name = "Add";
  template <class X>
  DL_HD constexpr X operator()(const X& a, const X& b) const {
    if constexpr (std::is_same_v<X, bool>) return a || b;
    else return a + b;
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD constexpr auto d(const A&, const B&, const O&, const G& g) const { return g; }
};

struct Sub : ArithBinary {
  static constexpr std::string_view name = "Sub";
  template <class X>
  DL_HD constexpr X operator()(const X& a, const X& b) const {
    static_assert(!std::is_same_v<scalar_of_t<X>, bool>,
                  "Subtraction of two bool tensors is not supported; use logical_xor or ~");
    return a - b;
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD constexpr auto d(const A&, const B&, const O&, const G& g) const {
    if constexpr (I == 0) return g;
    else return -g;
  }
};

struct Mul : ArithBinary {
  static constexpr std::string_view name = "Mul";
  template <class X>
  DL_HD constexpr X operator()(const X& a, const X& b) const {
    if constexpr (std::is_same_v<X, bool>) return a && b;
    else return a * b;
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD constexpr auto d(const A& a, const B& b, const O&, const G& g) const {
    if constexpr (I == 0) return g * b;
    else return g * a;
  }
};

struct Div : FloatBinary {
  static constexpr std::string_view name = "Div";
  template <class X>
  DL_HD constexpr X operator()(const X& a, const X& b) const { return a / b; }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD constexpr auto d(const A& a, const B& b, const O&, const G& g) const {
    if constexpr (I == 0) return g / b;
    else return -(g * a) / (b * b);
  }
};

/// Python-style modulus: the result has the sign of the divisor (torch.remainder).
struct Remainder : ArithBinary {
  static constexpr std::string_view name = "Remainder";
  template <class X>
  DL_HD X operator()(const X& a, const X& b) const {
    using S = scalar_of_t<X>;
    if constexpr (std::is_integral_v<S> && !std::is_same_v<X, S>) {
      static_assert(sizeof(X) == 0, "remainder of integer batches is evaluated element by element");
    } else if constexpr (std::is_integral_v<S>) {
      const S r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? S(r + b) : r;
    } else {
      using std::floor;
      return a - floor(a / b) * b;
    }
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& a, const B& b, const O&, const G& g) const {
    using std::floor;
    if constexpr (I == 0) return g;
    else return -(g * floor(a / b));
  }
};

struct Pow : FloatBinary {
  static constexpr std::string_view name = "Pow";
  template <class X>
  DL_HD X operator()(const X& a, const X& b) const {
    using std::pow;
    return pow(a, b);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& a, const B& b, const O& out, const G& g) const {
    using S = scalar_of_t<A>;
    using std::pow, std::log;
    if constexpr (I == 0)  // b * a^(b-1), zero where b == 0
      return select(b == S(0), zero_like(g), g * (b * pow(a, b - S(1))));
    else  // out * log(a), zero where a == 0 and b >= 0 (PyTorch's convention)
      return select((a == S(0)) & (b >= S(0)), zero_like(g), g * (out * log(a)));
  }
};

/// Elementwise max; NaN propagates. On ties each input gets half the gradient, as in PyTorch.
struct Maximum : ArithBinary {
  static constexpr std::string_view name = "Maximum";
  template <class X>
  DL_HD X operator()(const X& a, const X& b) const {
    if constexpr (std::is_integral_v<scalar_of_t<X>>) return select(a < b, b, a);
    else return select(nan_lanes(a) | nan_lanes(b), a + b, select(a < b, b, a));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& a, const B& b, const O&, const G& g) const {
    using S = scalar_of_t<A>;
    const auto tie = select(a == b, g * S(0.5), g);
    if constexpr (I == 0) return select(a < b, zero_like(g), tie);
    else return select(a > b, zero_like(g), tie);
  }
};

struct Minimum : ArithBinary {
  static constexpr std::string_view name = "Minimum";
  template <class X>
  DL_HD X operator()(const X& a, const X& b) const {
    if constexpr (std::is_integral_v<scalar_of_t<X>>) return select(b < a, b, a);
    else return select(nan_lanes(a) | nan_lanes(b), a + b, select(b < a, b, a));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& a, const B& b, const O&, const G& g) const {
    using S = scalar_of_t<A>;
    const auto tie = select(a == b, g * S(0.5), g);
    if constexpr (I == 0) return select(a > b, zero_like(g), tie);
    else return select(a < b, zero_like(g), tie);
  }
};

/// clamp_min / clamp_max with a tensor bound: max(x, lo) / min(x, hi), NaN propagating from either
/// operand. Gradients as PyTorch's: x where x >= lo (x <= hi), the bound where x < lo (x > hi).
struct ClampMinTensor : ArithBinary {
  static constexpr std::string_view name = "ClampMin";
  template <class X>
  DL_HD X operator()(const X& x, const X& lo) const { return Maximum{}(x, lo); }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& x, const B& lo, const O&, const G& g) const {
    if constexpr (I == 0) return select(x >= lo, g, zero_like(g));
    else return select(x < lo, g, zero_like(g));
  }
};
struct ClampMaxTensor : ArithBinary {
  static constexpr std::string_view name = "ClampMax";
  template <class X>
  DL_HD X operator()(const X& x, const X& hi) const { return Minimum{}(x, hi); }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& x, const B& hi, const O&, const G& g) const {
    if constexpr (I == 0) return select(x <= hi, g, zero_like(g));
    else return select(x > hi, g, zero_like(g));
  }
};

#define DL_COMPARE(Name, op)                                                            \
  struct Name : CompareBinary {                                                         \
    static constexpr std::string_view name = #Name;                                     \
    template <class X>                                                                  \
    DL_HD constexpr auto operator()(const X& a, const X& b) const { return a op b; }    \
  };
DL_COMPARE(Eq, ==)
// Ne is !(a == b), not a != b: true when a side is NaN, as PyTorch's != (see nan_lanes).
struct Ne : CompareBinary {
  static constexpr std::string_view name = "Ne";
  template <class X>
  DL_HD constexpr auto operator()(const X& a, const X& b) const { return !(a == b); }
};
DL_COMPARE(Lt, <)
DL_COMPARE(Le, <=)
DL_COMPARE(Gt, >)
DL_COMPARE(Ge, >=)
#undef DL_COMPARE

#define DL_LOGICAL(Name, op)                                                            \
  struct Name : LogicalBinary {                                                         \
    static constexpr std::string_view name = #Name;                                     \
    template <class X>                                                                  \
    DL_HD constexpr auto operator()(const X& a, const X& b) const { return a op b; }    \
  };
DL_LOGICAL(LogicalAnd, &)
DL_LOGICAL(LogicalOr, |)
DL_LOGICAL(LogicalXor, ^)
#undef DL_LOGICAL

// ---------------------------------------------------------------------------------------------
// Ternary ops
// ---------------------------------------------------------------------------------------------

/// where(cond, a, b): a where cond is true, else b.
struct Where {
  static constexpr std::string_view name = "Where";
  template <class C, class A, class B>
  using result = promote_t<A, B>;
  template <size_t I, class C, class A, class B>
  using input = std::conditional_t<I == 0, bool, promote_t<A, B>>;
  template <size_t I>
  static constexpr bool differentiable = I != 0;
  template <class C, class X>
  DL_HD X operator()(const C& c, const X& a, const X& b) const { return select(c, a, b); }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class C, class A, class B, class O, class G>
  DL_HD auto d(const C& c, const A&, const B&, const O&, const G& g) const {
    if constexpr (I == 1) return select(c, g, zero_like(g));
    else return select(c, zero_like(g), g);
  }
};

/// clamp(x, lo, hi) with tensor bounds: min(max(x, lo), hi) (hi wins where lo > hi), NaN
/// propagating. Gradients as PyTorch's clamp_backward_min_max: x where lo <= x <= hi, lo where
/// x < lo < hi, hi where x > hi or hi < lo.
struct ClampTensor {
  static constexpr std::string_view name = "Clamp";
  template <class A, class L, class H>
  using result = promote_t<promote_t<A, L>, H>;
  template <size_t I, class A, class L, class H>
  using input = result<A, L, H>;
  template <size_t I>
  static constexpr bool differentiable = true;
  template <class X>
  DL_HD X operator()(const X& x, const X& lo, const X& hi) const { return Minimum{}(Maximum{}(x, lo), hi); }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class L, class H, class O, class G>
  DL_HD auto d(const A& x, const L& lo, const H& hi, const O&, const G& g) const {
    if constexpr (I == 0) return select((x >= lo) & (x <= hi), g, zero_like(g));
    else if constexpr (I == 1) return select((x < lo) & (lo < hi), g, zero_like(g));
    else return select((x > hi) | (hi < lo), g, zero_like(g));
  }
};

/// lerp(start, end, weight) = start + weight * (end - start), with PyTorch's formula switch for
/// weight >= 0.5 that makes lerp(a, b, 1) exactly b.
struct Lerp {
  static constexpr std::string_view name = "Lerp";
  template <class A, class B, class W>
  using result = to_floating_t<promote_t<promote_t<A, B>, W>>;
  template <size_t I, class A, class B, class W>
  using input = result<A, B, W>;
  template <size_t I>
  static constexpr bool differentiable = true;
  template <class X>
  DL_HD X operator()(const X& s, const X& e, const X& w) const {
    using S = scalar_of_t<X>;
    const X diff = e - s;
    return select(w < S(0.5), s + w * diff, e - diff * (S(1) - w));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class W, class O, class G>
  DL_HD auto d(const A& s, const B& e, const W& w, const O&, const G& g) const {
    using S = scalar_of_t<W>;
    if constexpr (I == 0) return g * (S(1) - w);
    else if constexpr (I == 1) return g * w;
    else return g * (e - s);
  }
};

}  // namespace dl::expr
