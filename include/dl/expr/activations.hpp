// dl/expr/activations.hpp — the op functors of the activation functions (leaky_relu, elu/selu/celu,
// gelu, silu, mish, softplus, hardtanh/relu6, hardsigmoid, hardswish, logsigmoid, softsign,
// tanhshrink, threshold, prelu) in the style of dl/expr/ops.hpp: each works on scalars, xsimd
// batches and lazy expressions, with PyTorch's formulas and its gradient conventions at the kinks.
// The public functions are in dl/nn/functional/activation.hpp.
#pragma once

#include <numbers>

#include "node.hpp"

namespace dl::expr {

// ------------------------------------------------------------------------------ declarations

// The functors without parameters take their type rules from a base (FloatUnary, FloatBinary:
// dl/expr/ops.hpp). Those with parameters have no base class, so that they stay aggregates
// initialised with their parameters alone, LeakyRelu<float>{0.01f} (with a base, the first
// initialiser would be the base's, as for Clamp): they name SameTypeUnary's or FloatUnary's rules.

/// leaky_relu: x > 0 ? x : slope * x; the gradient at 0 is slope (PyTorch's convention).
template <class T>
struct LeakyRelu;
/// The ELU family, PyTorch's elu(x, alpha, scale, input_scale):
/// x > 0 ? scale * x : alpha * scale * (exp(input_scale * x) - 1). selu and celu are instances.
template <class T>
struct Elu;
/// gelu: x * Phi(x), or with `tanh_approx` 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
template <class T>
struct Gelu;
/// silu (swish): x * sigmoid(x).
struct Silu;
/// mish: x * tanh(softplus(x)).
struct Mish;
/// softplus: log(1 + exp(beta x)) / beta, and x where beta x > threshold.
template <class T>
struct Softplus;
/// hardtanh: clamp(x, lo, hi); the gradient is 0 at and beyond the bounds (relu6 = hardtanh(0, 6)).
template <class T>
struct Hardtanh;
/// hardsigmoid: clamp(x + 3, 0, 6) / 6.
struct Hardsigmoid;
/// hardswish: x * clamp(x + 3, 0, 6) / 6.
struct Hardswish;
/// logsigmoid: log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)); d/dx = sigmoid(-x) (1/2 at 0).
/// Both are computed from exp(-|x|) in (0, 1], so neither overflows for any x. The stable
/// binary_cross_entropy_with_logits (dl/nn/functional/loss.hpp) is written with it.
struct LogSigmoid;
/// softsign: x / (1 + |x|).
struct Softsign;
/// tanhshrink: x - tanh(x).
struct Tanhshrink;
/// threshold: x <= threshold ? value : x.
template <class T>
struct Threshold;
/// prelu(x, w): x > 0 ? x : w * x, w broadcast; gradients to both operands.
struct Prelu;

// ------------------------------------------------------------------------------ implementation

template <class T>
struct LeakyRelu {
  T slope;
  using rules = SameTypeUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "LeakyRelu";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    return select(x > S(0), x, x * S(slope));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select(x > S(0), g, g * S(slope));
  }
};

template <class T>
struct Elu {
  T alpha, scale, input_scale;
  using rules = FloatUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Elu";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::expm1;
    return select(x <= S(0), expm1(x * S(input_scale)) * S(alpha * scale), x * S(scale));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    using std::exp;
    // PyTorch's elu_backward on the input: the x <= 0 branch includes 0.
    return select(x <= S(0), g * (exp(x * S(input_scale)) * S(input_scale * alpha * scale)), g * S(scale));
  }
};

template <class T>
struct Gelu {
  bool tanh_approx;
  using rules = FloatUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Gelu";
  static constexpr double kSqrt1_2 = 0.70710678118654752440;   // 1 / sqrt(2)
  static constexpr double kPdf = 0.39894228040143267794;       // 1 / sqrt(2 pi)
  static constexpr double kBeta = 0.79788456080286535588;      // sqrt(2 / pi)
  static constexpr double kKappa = 0.044715;
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::erf, std::tanh;
    if (tanh_approx) {
      const X inner = S(kBeta) * (x + S(kKappa) * (x * x * x));
      return S(0.5) * x * (S(1) + tanh(inner));
    }
    return x * S(0.5) * (S(1) + erf(x * S(kSqrt1_2)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    if constexpr (node<G>) {
      // Lazy adjoints (create_graph) of the two forms have different types: both are built and
      // the run-time flag selects.
      return nary(Where{}, Scalar<bool>{tanh_approx}, d_tanh(x, g), d_exact(x, g));
    } else {
      return tanh_approx ? d_tanh(x, g) : d_exact(x, g);
    }
  }

 private:
  template <class X, class G>
  DL_HD static auto d_exact(const X& x, const G& g) {
    using S = scalar_of_t<X>;
    using std::erf, std::exp;
    const auto cdf = S(0.5) * (S(1) + erf(x * S(kSqrt1_2)));
    const auto pdf = exp(x * x * S(-0.5)) * S(kPdf);
    return g * (cdf + x * pdf);
  }
  template <class X, class G>
  DL_HD static auto d_tanh(const X& x, const G& g) {
    using S = scalar_of_t<X>;
    using std::tanh;
    const auto x_sq = x * x;
    const auto t = tanh(S(kBeta) * (x + S(kKappa) * (x_sq * x)));
    const auto left_derivative = S(0.5) * (S(1) + t);
    const auto inner_derivative = S(kBeta) * (S(1) + S(3 * kKappa) * x_sq);
    const auto right_derivative = S(0.5) * x * (S(1) - t * t) * inner_derivative;
    return g * (left_derivative + right_derivative);
  }
};

struct Silu : FloatUnary {
  static constexpr std::string_view name = "Silu";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::exp;
    return x / (S(1) + exp(-x));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    const auto s = call(Sigmoid{}, x);
    return g * (s * (S(1) + x * (S(1) - s)));
  }
};

struct Mish : FloatUnary {
  static constexpr std::string_view name = "Mish";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::exp, std::log1p, std::tanh;
    return x * tanh(log1p(exp(x)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    using std::exp, std::log1p, std::tanh;
    const auto s = call(Sigmoid{}, x);
    const auto t = tanh(log1p(exp(x)));
    return g * (t + x * s * (S(1) - t * t));
  }
};

template <class T>
struct Softplus {
  T beta, threshold;
  using rules = FloatUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Softplus";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::exp, std::log1p;
    const X bx = x * S(beta);
    return select(bx > S(threshold), x, log1p(exp(bx)) / S(beta));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    using std::exp;
    const auto z = exp(x * S(beta));
    return select(x * S(beta) > S(threshold), g, g * z / (z + S(1)));
  }
};

template <class T>
struct Hardtanh {
  T lo, hi;
  using rules = SameTypeUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Hardtanh";
  template <class X>
  DL_HD X operator()(const X& x) const {  // clamp: NaN stays NaN; lo > hi gives hi everywhere
    using S = scalar_of_t<X>;
    const X lower = select(x < S(lo), X(S(lo)), x);
    return select(lower > S(hi), X(S(hi)), lower);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select((x <= S(lo)) | (x >= S(hi)), zero_like(g), g);
  }
};

struct Hardsigmoid : FloatUnary {
  static constexpr std::string_view name = "Hardsigmoid";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    const X t = x + S(3);
    const X lower = select(t < S(0), X(S(0)), t);
    return select(lower > S(6), X(S(6)), lower) / S(6);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select((x > S(-3)) & (x < S(3)), g * S(1.0 / 6.0), zero_like(g));
  }
};

struct Hardswish : FloatUnary {
  static constexpr std::string_view name = "Hardswish";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    const X t = x + S(3);
    const X lower = select(t < S(0), X(S(0)), t);
    return x * select(lower > S(6), X(S(6)), lower) / S(6);
  }
  /// At x = -3 the gradient is -g / 2 and at x = 3 it is g, as in PyTorch's vectorised kernel.
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select(x < S(-3), zero_like(g), select(x < S(3), g * (x / S(3) + S(0.5)), g));
  }
};

struct LogSigmoid : FloatUnary {
  static constexpr std::string_view name = "LogSigmoid";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::abs, std::exp, std::log1p;
    return select(x < S(0), x, X(S(0))) - log1p(exp(-abs(x)));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    using std::abs, std::exp;
    // sigmoid(-x) = q for x >= 0 and 1 - q for x < 0, with q = z / (1 + z), z = exp(-|x|) (PyTorch's
    // log_sigmoid_backward): a composition through abs would give 0 at x = 0.
    const auto z = exp(-abs(x));
    const auto q = z / (z + S(1));
    return select(x < S(0), g * (S(1) - q), g * q);
  }
};

struct Softsign : FloatUnary {
  static constexpr std::string_view name = "Softsign";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    using std::abs;
    return x / (abs(x) + S(1));
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    using std::abs;
    const auto den = abs(x) + S(1);
    return g / (den * den);
  }
};

struct Tanhshrink : FloatUnary {
  static constexpr std::string_view name = "Tanhshrink";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::tanh;
    return x - tanh(x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using std::tanh;
    const auto t = tanh(x);
    return g * (t * t);
  }
};

template <class T>
struct Threshold {
  T threshold, value;
  using rules = SameTypeUnary;  // its type rules (an aggregate: no base class)
  static constexpr std::string_view name = "Threshold";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using S = scalar_of_t<X>;
    return select(x <= S(threshold), X(S(value)), x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    return select(x <= S(threshold), zero_like(g), g);
  }
};

struct Prelu : FloatBinary {
  static constexpr std::string_view name = "Prelu";
  template <class X>
  DL_HD X operator()(const X& x, const X& w) const {
    using S = scalar_of_t<X>;
    return select(x > S(0), x, w * x);
  }
  DL_RULE_NO_EXEC_CHECK
  template <size_t I, class X, class W, class O, class G>
  DL_HD auto d(const X& x, const W& w, const O&, const G& g) const {
    using S = scalar_of_t<X>;
    if constexpr (I == 0) return select(x > S(0), g, g * w);
    else return select(x > S(0), zero_like(g), g * x);
  }
};

}  // namespace dl::expr
