// dl/nn/functional/loss.hpp — the loss functions of torch.nn.functional with PyTorch's options,
// reductions and errors: cross_entropy (class indices, fused into one pass per row, or class
// probabilities), nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits and kl_div.
//
//   auto loss = F::cross_entropy(logits, target, {.reduction = dl::nn::Reduction::mean, .label_smoothing = 0.1});
//   auto l2 = F::mse_loss(pred, y, {.reduction = dl::nn::Reduction::none});
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "../../config.hpp"
#include "../../expr/activations.hpp"
#include "../../ops/cross_entropy.hpp"
#include "softmax.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// How a loss combines its per-element values: PyTorch's reduction = 'none' | 'mean' | 'sum', and
/// 'batchmean' (kl_div only: the sum divided by the batch size).
enum class Reduction { none, mean, sum, batchmean };

/// cross_entropy's options. The members are in this order for designated initialisers.
template <class T = float>
struct CrossEntropyOptions {
  Tensor<T> weight = {};                       ///< per-class weights [C], or undefined for 1
  Reduction reduction = Reduction::mean;  ///< mean divides by the summed weights of the counted targets
  int64_t ignore_index = -100;            ///< class-index targets equal to it count for nothing
  double label_smoothing = 0;             ///< in [0, 1]: the target mixes with the uniform distribution
};

template <class T = float>
struct NLLLossOptions {
  Tensor<T> weight = {};
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
};

/// mse_loss and l1_loss.
struct LossOptions {
  Reduction reduction = Reduction::mean;
};

struct SmoothL1LossOptions {
  Reduction reduction = Reduction::mean;
  double beta = 1.0;  ///< quadratic below beta, linear above (0: l1_loss)
};

struct HuberLossOptions {
  Reduction reduction = Reduction::mean;
  double delta = 1.0;  ///< quadratic below delta, linear above; > 0
};

template <class T = float>
struct BCELossOptions {
  Tensor<T> weight = {};  ///< broadcast to the input's shape, or undefined
  Reduction reduction = Reduction::mean;
};

template <class T = float>
struct BCEWithLogitsLossOptions {
  Tensor<T> weight = {};  ///< broadcast to the input's shape, or undefined
  Reduction reduction = Reduction::mean;
  Tensor<T> pos_weight;  ///< weight of the positive term, broadcast over the last dim ([C])
};

struct KLDivLossOptions {
  Reduction reduction = Reduction::mean;  ///< mean: over every element; batchmean: sum / batch size
  bool log_target = false;                ///< the target holds log-probabilities
};

}  // namespace dl::nn

namespace dl::nn::functional {

using nn::BCELossOptions, nn::BCEWithLogitsLossOptions, nn::CrossEntropyOptions, nn::HuberLossOptions, nn::KLDivLossOptions,
    nn::LossOptions, nn::NLLLossOptions, nn::Reduction, nn::SmoothL1LossOptions;

/// Cross entropy of logits [N, C], [C] or [N, C, d1..dk] against class indices [N], [] or
/// [N, d1..dk]: -w[t] log softmax(x)[t] per position (mixed with the uniform target when
/// label_smoothing > 0), 0 where the target is ignore_index. One fused pass per row forward and one
/// backward; differentiable with respect to the input (to any order).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> cross_entropy(const E& input, const Tensor<int64_t>& target, const CrossEntropyOptions<T>& options = {});
/// Cross entropy against class probabilities of the input's shape: -sum_c w_c t_c log softmax(x)_c
/// per position; mean divides by the number of positions. Differentiable with respect to the
/// input, the target and the weight.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> cross_entropy(const E& input, const Tensor<expr::value_type_t<E>>& target, const CrossEntropyOptions<T>& options = {});

/// Negative log likelihood of log-probabilities [N, C], [C] or [N, C, d1..dk] against class
/// indices: -w[t] x[t] per position. Differentiable with respect to the input.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> nll_loss(const E& input, const Tensor<int64_t>& target, const NLLLossOptions<T>& options = {});

/// A target of another element type (int32 labels, float labels for double logits): refused with
/// the conversion to write, as PyTorch's "expected scalar type Long".
template <expression E, scalar_type U, class T = expr::value_type_t<E>>
  requires(!std::is_same_v<U, int64_t> && !std::is_same_v<U, T>)
Tensor<T> cross_entropy(const E&, const Tensor<U>&, const CrossEntropyOptions<T>& = {}) {
  static_assert(std::is_same_v<U, int64_t>,
                "cross_entropy: class-index targets are Tensor<int64_t> (PyTorch's Long) and class probabilities have the "
                "input's element type; convert the target with .to<int64_t>()");
  return {};
}
template <expression E, scalar_type U, class T = expr::value_type_t<E>>
  requires(!std::is_same_v<U, int64_t>)
Tensor<T> nll_loss(const E&, const Tensor<U>&, const NLLLossOptions<T>& = {}) {
  static_assert(std::is_same_v<U, int64_t>,
                "nll_loss: targets are class indices, Tensor<int64_t> (PyTorch's Long); convert the target with .to<int64_t>()");
  return {};
}

/// (input - target)^2; the operands broadcast. Differentiable with respect to both.
template <expression A, expression B>
Tensor<expr::value_type_t<A>> mse_loss(const A& input, const B& target, LossOptions options = {});
/// |input - target|.
template <expression A, expression B>
Tensor<expr::value_type_t<A>> l1_loss(const A& input, const B& target, LossOptions options = {});
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target).
template <expression A, expression B>
Tensor<expr::value_type_t<A>> smooth_l1_loss(const A& input, const B& target, SmoothL1LossOptions options = {});
/// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta).
template <expression A, expression B>
Tensor<expr::value_type_t<A>> huber_loss(const A& input, const B& target, HuberLossOptions options = {});

/// -w (t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1] (each log clamped at -100);
/// the target has the input's shape. Differentiable with respect to input and target.
template <expression A, expression B, class T = expr::value_type_t<A>>
Tensor<T> binary_cross_entropy(const A& input, const B& target, const BCELossOptions<T>& options = {});
/// -w (p t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))) in the stable form
/// (1 - t) z - (1 + (p - 1) t) log sigmoid(z), with p = pos_weight broadcast over the last dim.
template <expression A, expression B, class T = expr::value_type_t<A>>
Tensor<T> binary_cross_entropy_with_logits(const A& input, const B& target, const BCEWithLogitsLossOptions<T>& options = {});

/// Kullback-Leibler divergence of the target from the input (log-probabilities):
/// t (log t - x), with 0 where t = 0 (or exp(t) (t - x) with log_target). mean averages over
/// every element, batchmean divides the sum by the batch size (size(0)).
template <expression A, expression B>
Tensor<expr::value_type_t<A>> kl_div(const A& input, const B& target, KLDivLossOptions options = {});

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API void check_reduction(Reduction r, const char* what);

DL_API dl::detail::ClassReduction class_reduction(Reduction r);

DL_API void check_label_smoothing(double s);

/// The checks of PyTorch's nll_loss_nd on class-index targets and the weight.
template <class T>
void check_class_target(const Shape& x, const Shape& t, const Tensor<T>& weight) {
  DL_CHECK(x.size() >= 1, "Expected 1 or more dimensions (got ", x.size(), ")");
  if (x.size() != 1 && t.size() >= 1)
    DL_CHECK(x[0] == t[0], "Expected input batch_size (", x[0], ") to match target batch_size (", t[0], ").");
  if (x.size() <= 2) {
    DL_CHECK(t.size() <= 1, "0D or 1D target tensor expected, multi-target not supported");
    DL_CHECK(t.size() + 1 == x.size(), "size mismatch (got input: ", x, ", target: ", t, ")");
  } else {
    Shape expected{x[0]};
    for (int d = 2; d < x.size(); ++d) expected.push_back(x[d]);
    DL_CHECK(t == expected, "Expected target size ", expected, ", got ", t);
  }
  const int64_t C = x.size() == 1 ? x[0] : x[1];
  DL_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C), "weight tensor should be defined either for all ", C,
           " classes or no classes but got weight tensor of shape: ", weight.defined() ? weight.shape() : Shape{});
}

/// The per-element loss expression reduced as asked (none materialises it).
template <class T, class E>
Tensor<T> reduce_loss(const E& e, Reduction r) {
  switch (r) {
    case Reduction::none: return Tensor<T>(e);
    case Reduction::sum: return dl::sum(e);
    default: return dl::mean(e);
  }
}

template <class A, class B>
constexpr void check_loss_types() {
  static_assert(std::is_same_v<expr::value_type_t<A>, expr::value_type_t<B>>,
                "losses need input and target of the same element type; convert one with .to<T>() or dl::cast<T>()");
  static_assert(floating_scalar<expr::value_type_t<A>>, "losses need floating inputs; convert them with .to<float>() first");
}

/// PyTorch's binary cross entropy of a probability x and a target t, logs clamped at -100, with
/// its derivative (x - t) / max(x (1 - x), 1e-12f) (finite where x is exactly 0 or 1) and the
/// target's derivative log(1 - x) - log(x).
struct BinaryCrossEntropyOp : expr::FloatBinary {
  static constexpr std::string_view name = "BinaryCrossEntropy";
  template <class X>
  DL_HD X operator()(const X& x, const X& t) const {
    using std::log, std::log1p;
    using S = expr::scalar_of_t<X>;
    const X lx = log(x), l1x = log1p(-x);
    const X clx = expr::select(lx < S(-100), X(S(-100)), lx), cl1x = expr::select(l1x < S(-100), X(S(-100)), l1x);
    return (t - S(1)) * cl1x - t * clx;
  }
  template <size_t I, class X, class Y, class O, class G>
  DL_HD auto d(const X& x, const Y& t, const O&, const G& g) const {
    using std::log, std::log1p;
    using S = expr::scalar_of_t<X>;
    if constexpr (I == 0)
      return g * (x - t) / expr::call(expr::Clamp<S>{S(1e-12f), std::numeric_limits<S>::infinity()}, (S(1) - x) * x);
    else
      return g * (log1p(-x) - log(x));
  }
};

/// t log t with 0 at t = 0 (PyTorch's xlogy(t, t)); derivative log t + t / t as xlogy's.
struct XLogXOp : expr::FloatUnary {
  static constexpr std::string_view name = "XLogX";
  template <class X>
  DL_HD X operator()(const X& x) const {
    using std::log;
    using S = expr::scalar_of_t<X>;
    return expr::select(x == S(0), X(S(0)), x * log(x));
  }
  template <size_t I, class X, class O, class G>
  DL_HD auto d(const X& x, const O&, const G& g) const {
    using std::log;
    using S = expr::scalar_of_t<X>;
    return g * (expr::select(x != S(0), log(x), expr::zero_like(x)) + x / x);
  }
};

/// 1 as a 0-d tensor: stands in for an absent weight, so that each loss has one expression type.
template <class T>
Tensor<T> unit_weight() {
  return full<T>({}, T(1));
}

/// The weight if defined (it must broadcast to `shape` without growing it), else 1.
template <class T>
Tensor<T> broadcast_weight(const Tensor<T>& w, const Shape& shape, const char* what, const char* name) {
  if (!w.defined()) return unit_weight<T>();
  DL_CHECK(broadcast_shapes(w.shape(), shape) == shape, what, ": ", name, " of shape ", w.shape(),
           " does not broadcast to the input's shape ", shape);
  return w;
}

}  // namespace detail

template <expression E, class T>
Tensor<T> cross_entropy(const E& input, const Tensor<int64_t>& target, const CrossEntropyOptions<T>& options) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::cross_entropy_loss", input, target);
  static_assert(floating_scalar<T>, "cross_entropy needs floating logits; convert them with .to<float>() first");
  static_assert(!half_float<T>, "cross_entropy: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_reduction(options.reduction, "cross_entropy");
  DL_CHECK(x.shape() != target.shape(), "Expected floating point type for target with class probabilities, got Long");
  detail::check_label_smoothing(options.label_smoothing);
  detail::check_class_target(x.shape(), target.shape(), options.weight);
  return dl::detail::class_loss_op<true>(x, target, options.weight,
                                         {options.ignore_index, options.label_smoothing, detail::class_reduction(options.reduction)});
}

template <expression E, class T>
Tensor<T> cross_entropy(const E& input, const Tensor<expr::value_type_t<E>>& target, const CrossEntropyOptions<T>& options) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::cross_entropy_loss", input, target);
  static_assert(floating_scalar<T>, "cross_entropy needs floating logits; convert them with .to<float>() first");
  static_assert(!half_float<T>, "cross_entropy: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_reduction(options.reduction, "cross_entropy");
  DL_CHECK(x.shape() == target.shape(), "cross_entropy: a floating target holds class probabilities and must have the input's shape ",
           x.shape(), ", but got target of shape ", target.shape(), " (class indices are a Tensor<int64_t>)");
  DL_CHECK(x.dim() >= 1, "Expected 1 or more dimensions (got 0)");
  DL_CHECK(options.ignore_index < 0, "ignore_index is not supported for floating point target");
  detail::check_label_smoothing(options.label_smoothing);
  const int cd = x.dim() == 1 ? 0 : 1;
  const int64_t C = x.size(cd);
  const Tensor<T>& w = options.weight;
  DL_CHECK(!w.defined() || (w.dim() == 1 && w.numel() == C), "cross_entropy: weight tensor should be defined either for all ", C,
           " classes or no classes but got weight tensor of shape: ", w.defined() ? w.shape() : Shape{});
  Shape wshape = Dims::filled(x.dim(), 1);
  wshape[cd] = C;
  const Tensor<T> wb = w.defined() ? w.reshape(wshape) : detail::unit_weight<T>();
  // -sum_c w_c t'_c log p_c with t' = t (1 - s) + s / C; the sign and the mean's divisor are
  // folded into the target's coefficients, so the reduction reads one fused expression.
  const double s = options.label_smoothing;
  const bool mean = options.reduction == Reduction::mean;
  const double k = mean && x.numel() ? -double(C) / double(x.numel()) : -1;
  const Tensor<T> logp = log_softmax(x, cd);
  const auto e = logp * (target * T(k * (1 - s)) + T(C ? k * s / double(C) : 0)) * wb;
  if (options.reduction == Reduction::none) return dl::sum(e, cd);
  if (mean && x.numel() == 0) return dl::sum(e) * std::numeric_limits<T>::quiet_NaN();  // 0 / 0, as PyTorch
  return dl::sum(e);
}

template <expression E, class T>
Tensor<T> nll_loss(const E& input, const Tensor<int64_t>& target, const NLLLossOptions<T>& options) {
  static_assert(floating_scalar<T>, "nll_loss needs floating log-probabilities; convert them with .to<float>() first");
  static_assert(!half_float<T>, "nll_loss: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_reduction(options.reduction, "nll_loss");
  detail::check_class_target(x.shape(), target.shape(), options.weight);
  return dl::detail::class_loss_op<false>(x, target, options.weight, {options.ignore_index, 0.0, detail::class_reduction(options.reduction)});
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> mse_loss(const A& input, const B& target, LossOptions options) {
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "mse_loss");
  return detail::reduce_loss<expr::value_type_t<A>>(expr::square(input - target), options.reduction);
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> l1_loss(const A& input, const B& target, LossOptions options) {
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "l1_loss");
  return detail::reduce_loss<expr::value_type_t<A>>(expr::abs(input - target), options.reduction);
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> smooth_l1_loss(const A& input, const B& target, SmoothL1LossOptions options) {
  using T = expr::value_type_t<A>;
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "smooth_l1_loss");
  DL_CHECK(options.beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (options.beta == 0) return l1_loss(input, target, {options.reduction});
  const T beta = T(options.beta);
  const auto d = input - target;
  return detail::reduce_loss<T>(expr::where(expr::abs(d) < beta, d * d * T(0.5 / options.beta), expr::abs(d) - T(0.5) * beta),
                                options.reduction);
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> huber_loss(const A& input, const B& target, HuberLossOptions options) {
  using T = expr::value_type_t<A>;
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "huber_loss");
  DL_CHECK(options.delta > 0, "huber_loss does not support non-positive values for delta.");
  const T delta = T(options.delta);
  const auto d = input - target;
  return detail::reduce_loss<T>(expr::where(expr::abs(d) < delta, d * d * T(0.5), (expr::abs(d) - T(0.5) * delta) * delta),
                                options.reduction);
}

template <expression A, expression B, class T>
Tensor<T> binary_cross_entropy(const A& input, const B& target, const BCELossOptions<T>& options) {
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "binary_cross_entropy");
  const Tensor<T> x = dl::detail::materialize(input);
  const Shape ts = expr::shape_of(expr::as_node(target));
  DL_CHECK(ts == x.shape(), "Using a target size (", ts, ") that is different to the input size (", x.shape(),
           ") is deprecated. Please ensure they have the same size.");
  {
    NoGradGuard no_grad;
    DL_CHECK(!dl::any(!((x >= T(0)) & (x <= T(1)))).item(), "all elements of input should be between 0 and 1");
  }
  const Tensor<T> w = detail::broadcast_weight(options.weight, x.shape(), "binary_cross_entropy", "weight");
  return detail::reduce_loss<T>(expr::apply(detail::BinaryCrossEntropyOp{}, x, target) * w, options.reduction);
}

template <expression A, expression B, class T>
Tensor<T> binary_cross_entropy_with_logits(const A& input, const B& target, const BCEWithLogitsLossOptions<T>& options) {
  detail::check_loss_types<A, B>();
  detail::check_reduction(options.reduction, "binary_cross_entropy_with_logits");
  const Shape xs = expr::shape_of(expr::as_node(input)), ts = expr::shape_of(expr::as_node(target));
  DL_CHECK(ts == xs, "Target size (", ts, ") must be the same as input size (", xs, ")");
  const Tensor<T> w = detail::broadcast_weight(options.weight, xs, "binary_cross_entropy_with_logits", "weight");
  const Tensor<T> pw = detail::broadcast_weight(options.pos_weight, xs, "binary_cross_entropy_with_logits", "pos_weight");
  // (1 - t) z - (1 + (p - 1) t) log sigmoid(z): no exp of a large positive number anywhere (the
  // logsigmoid functor of F::logsigmoid, whose derivative sigmoid(-z) is stable too).
  const auto z = expr::as_node(input);
  const auto t = expr::as_node(target);
  const auto loss = ((T(1) - t) * z - ((pw - T(1)) * t + T(1)) * expr::apply(expr::LogSigmoid{}, z)) * w;
  return detail::reduce_loss<T>(loss, options.reduction);
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> kl_div(const A& input, const B& target, KLDivLossOptions options) {
  using T = expr::value_type_t<A>;
  detail::check_loss_types<A, B>();
  const Reduction r = options.reduction == Reduction::batchmean ? Reduction::sum : options.reduction;
  Tensor<T> out = options.log_target ? detail::reduce_loss<T>(expr::exp(target) * (target - input), r)
                                     : detail::reduce_loss<T>(expr::apply(detail::XLogXOp{}, target) - target * input, r);
  if (options.reduction == Reduction::batchmean) {
    const Shape xs = expr::shape_of(expr::as_node(input));
    if (xs.size() > 0) out = out / T(xs[0]);
  }
  return out;
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::cross_entropy(const dl::Tensor<float>&, const dl::Tensor<int64_t>&,
                                                             const dl::nn::CrossEntropyOptions<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::cross_entropy(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::nn::CrossEntropyOptions<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::nll_loss(const dl::Tensor<float>&, const dl::Tensor<int64_t>&, const dl::nn::NLLLossOptions<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::mse_loss(const dl::Tensor<float>&, const dl::Tensor<float>&, dl::nn::LossOptions))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::l1_loss(const dl::Tensor<float>&, const dl::Tensor<float>&, dl::nn::LossOptions))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::smooth_l1_loss(const dl::Tensor<float>&, const dl::Tensor<float>&, dl::nn::SmoothL1LossOptions))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::huber_loss(const dl::Tensor<float>&, const dl::Tensor<float>&, dl::nn::HuberLossOptions))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::binary_cross_entropy(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::nn::BCELossOptions<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::binary_cross_entropy_with_logits(const dl::Tensor<float>&, const dl::Tensor<float>&,
                                                                                const dl::nn::BCEWithLogitsLossOptions<float>&))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::kl_div(const dl::Tensor<float>&, const dl::Tensor<float>&, dl::nn::KLDivLossOptions))

#if DL_HEADER_ONLY
#include "loss-inl.hpp"
#endif
