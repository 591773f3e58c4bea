// dl/expr/special.hpp — elementwise special functions as lazy, differentiable ops: lgamma, digamma,
// polygamma(n, x), erfinv and xlogy(x, y) (torch.lgamma, torch.digamma, torch.polygamma,
// torch.erfinv, torch.xlogy).
// The scalar kernels follow PyTorch's conventions at poles and for negative arguments; they have
// no SIMD form, so expressions containing them are evaluated element by element.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

#include "../error.hpp"
#include "kernel.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// log|Gamma(x)|, elementwise; d/dx = digamma(x). lgamma of a non-positive integer is +inf.
template <expr::expression E>
auto lgamma(E&& x);
/// The digamma function psi(x) = d/dx lgamma(x); d/dx = polygamma(1, x). psi(0) is -inf (as
/// PyTorch), psi of a negative integer NaN.
template <expr::expression E>
auto digamma(E&& x);
/// The n-th derivative of digamma (n >= 0; polygamma(0, x) is digamma); d/dx = polygamma(n + 1, x).
/// Throws dl::Error for n < 0.
template <expr::expression E>
auto polygamma(int64_t n, E&& x);
/// Inverse of erf on (-1, 1) (+-inf at +-1, NaN outside); d/dx = sqrt(pi) / 2 * exp(erfinv(x)^2).
template <expr::expression E>
auto erfinv(E&& x);
/// x * log(y), and 0 where x == 0 (unless y is NaN); gradients to both operands.
template <expr::operand A, expr::operand B>
  requires(expr::expression<A> || expr::expression<B>)
auto xlogy(A&& x, B&& y);

namespace special {
/// Scalar kernels in double precision (used by the ops above and by distributions).
DL_HD inline double digamma(double x);
/// Hurwitz zeta(s, q) = sum_k (k + q)^-s, for s > 1.
DL_HD inline double zeta(double s, double q);
DL_HD inline double polygamma(int64_t n, double x);
DL_HD inline double erfinv(double y);
}  // namespace special

// ------------------------------------------------------------------------------ implementation

namespace special {

DL_HD inline double digamma(double x) {
  constexpr double kPi = std::numbers::pi;
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    // Reflection: psi(1 - x) - psi(x) = pi / tan(pi x).
    return digamma(1 - x) - kPi / std::tan(kPi * (x - std::floor(x)));
  }
  double r = 0;
  while (x < 10) {  // psi(x) = psi(x + 1) - 1 / x
    r -= 1 / x;
    x += 1;
  }
  if (x == 10) return r + 2.25175258906672110764;  // psi(10)
  // Asymptotic series: log x - 1/(2x) - sum B_2k / (2k x^2k).
  const double z = 1 / (x * x);
  const double poly =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return r + std::log(x) - 0.5 / x - poly;
}

DL_HD inline double zeta(double s, double q) {
  constexpr double kEps = 1.11022302462515654042e-16;
  // (2k)! / B_2k: the Euler-Maclaurin correction terms.
  constexpr double kA[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
  if (s == 1) return std::numeric_limits<double>::infinity();
  if (s < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (s != std::floor(s)) return std::numeric_limits<double>::quiet_NaN();
  }
  double sum = std::pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::abs(b / sum) < kEps) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1) - 0.5 * b;
  double fac = 1, k = 0;
  for (double coef : kA) {
    fac *= s + k;
    b /= w;
    const double t = fac * b / coef;
    sum += t;
    if (std::abs(t / sum) < kEps) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

DL_HD inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  // psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x)
  const double sign = (n % 2) ? 1.0 : -1.0;
  return sign * std::exp(std::lgamma(double(n) + 1)) * zeta(double(n + 1), x);
}

DL_HD inline double erfinv(double y) {
  if (!(std::abs(y) <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (std::abs(y) == 1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  // Winitzki's closed-form guess (relative error ~2e-3), then Newton steps on erf(x) = y.
  constexpr double a = 0.147, kPi = std::numbers::pi;
  const double l = std::log1p(-y * y), t = 2 / (kPi * a) + l / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 4; ++i) {
    const double d = 2 / std::sqrt(kPi) * std::exp(-x * x);
    if (d == 0) break;
    x -= (std::erf(x) - y) / d;
  }
  return x;
}

}  // namespace special

namespace expr {

/// polygamma(n, x); digamma is n == 0. Scalars only (no SIMD form). No base class: it stays an
/// aggregate, Polygamma{n}, as Clamp in dl/expr/ops.hpp, and names FloatUnary's type rules.
struct Polygamma {
  int64_t n;
  using rules = FloatUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Polygamma";
  template <class X>
  DL_HD X operator()(const X& x) const {
    return X(special::polygamma(n, double(x)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    return g * call(Polygamma{n + 1}, x);
  }
};

struct Lgamma : FloatUnary {
  static constexpr std::string_view name = "Lgamma";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::lgamma;
    return lgamma(x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    return g * call(Polygamma{0}, x);
  }
};

struct Erfinv : FloatUnary {
  static constexpr std::string_view name = "Erfinv";
  template <class X>
  DL_HD X operator()(const X& x) const {
    return X(special::erfinv(double(x)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X&, const O& out, const G& g) const {
    using S = scalar_of_t<O>;
    using std::exp;
    return g * (exp(out * out) * S(0.88622692545275801365));  // sqrt(pi) / 2
  }
};

/// x * log(y) with 0 for x == 0 (PyTorch's xlogy); d/dx = log(y) (0 where x == 0), d/dy = x / y.
struct Xlogy : FloatBinary {
  static constexpr std::string_view name = "Xlogy";
  template <class X>
  DL_HD X operator()(const X& x, const X& y) const {
    using std::log;
    if (y != y) return y;
    return x == X(0) ? X(0) : X(x * log(y));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class A, class B, class O, class G>
  DL_HD auto d(const A& x, const B& y, const O&, const G& g) const {
    using S = scalar_of_t<A>;
    using std::log;
    if constexpr (I == 0) return select(x == S(0), zero_like(g), g * log(y));
    else return g * x / y;
  }
};

// Scalar-only kernels: the CPU evaluator runs them element by element.
template <class T>
inline constexpr bool op_has_simd<Polygamma, T> = false;
template <class T>
inline constexpr bool op_has_simd<Lgamma, T> = false;
template <class T>
inline constexpr bool op_has_simd<Xlogy, T> = false;
template <class T>
inline constexpr bool op_has_simd<Erfinv, T> = false;

}  // namespace expr

template <expr::expression E>
auto lgamma(E&& x) {
  return expr::apply(expr::Lgamma{}, std::forward<E>(x));
}
template <expr::expression E>
auto digamma(E&& x) {
  return expr::apply(expr::Polygamma{0}, std::forward<E>(x));
}
template <expr::expression E>
auto polygamma(int64_t n, E&& x) {
  DL_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  return expr::apply(expr::Polygamma{n}, std::forward<E>(x));
}
template <expr::expression E>
auto erfinv(E&& x) {
  return expr::apply(expr::Erfinv{}, std::forward<E>(x));
}
template <expr::operand A, expr::operand B>
  requires(expr::expression<A> || expr::expression<B>)
auto xlogy(A&& x, B&& y) {
  return expr::binary(expr::Xlogy{}, std::forward<A>(x), std::forward<B>(y));
}

}  // namespace dl
