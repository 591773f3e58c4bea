// dl/nn/functional/normalization.hpp — batch_norm, layer_norm, group_norm, instance_norm and
// normalize of dl::nn::functional, with PyTorch's arguments, defaults and shape checks. The
// normalisations compute their statistics in one pass over the input (double accumulation, the
// second sweep over each row served from cache) and normalise + scale in one fused pass; their
// backward reads (grad, input) once for the sums and once for the fused input gradient (layer_norm
// once in all). Under create_graph the backward rules switch to compositions of differentiable dl
// ops, so every function is differentiable to any order.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../ops/kernel_backward.hpp"
#include "../../ops/normalization.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// Batch normalisation of input [N, C, *] over every dim but C. In training, the batch's mean and
/// biased variance normalise the input, and running_mean / running_var (when defined) are updated
/// in place: running = (1 - momentum) * running + momentum * batch statistic (the variance
/// unbiased). In evaluation the running statistics normalise. weight and bias ([C]) are optional.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> batch_norm(const E& input, Tensor<T> running_mean, Tensor<T> running_var, Tensor<T> weight = {},
                     Tensor<T> bias = {}, bool training = false, double momentum = 0.1, double eps = 1e-5);

/// Layer normalisation over the last dims, whose sizes are normalized_shape (e.g. [*, 512] with
/// normalized_shape {512}); weight and bias have shape normalized_shape.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> layer_norm(const E& input, Shape normalized_shape, Tensor<T> weight = {}, Tensor<T> bias = {},
                     double eps = 1e-5);

/// Group normalisation of input [N, C, *]: the C channels in num_groups groups, each group of
/// each sample normalised over its channels and positions; weight and bias are per channel ([C]).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> group_norm(const E& input, int64_t num_groups, Tensor<T> weight = {}, Tensor<T> bias = {},
                     double eps = 1e-5);

/// Instance normalisation of input [N, C, *]: each channel of each sample normalised over its
/// positions (use_input_stats), running statistics updated with the mean over the batch of the
/// per-instance statistics; with use_input_stats = false the running statistics normalise.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> instance_norm(const E& input, Tensor<T> running_mean = {}, Tensor<T> running_var = {}, Tensor<T> weight = {},
                        Tensor<T> bias = {}, bool use_input_stats = true, double momentum = 0.1, double eps = 1e-5);

/// input / max(||input||_p, eps) along dim (PyTorch's F.normalize).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> normalize(const E& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// ------------------------------------------------------------------------------ implementation

namespace detail {

using dl::detail::materialize;

/// How a normalisation sees its input: `view` splits the input so that its statistics (reduced
/// over `reduce`, keepdim) and the affine parameters (viewed as `affine`, their gradients reduced
/// over `affine_reduce`) broadcast against it.
///   batch_norm [N, C, S]: affine [1, C, 1], reduce {0, 2}, affine_reduce {0, 2}
///   layer_norm [M, K]: affine [K], reduce {1}, affine_reduce {0}
///   group_norm [N, G, C/G, S]: affine [1, G, C/G, 1], reduce {2, 3}, affine_reduce {0, 3}
struct NormGeometry {
  Shape view, affine;
  Dims reduce, affine_reduce;
};

template <class T>
Tensor<T> from_doubles(const std::vector<double>& v, Shape shape) {
  Tensor<T> t = empty<T>(shape);
  for (size_t i = 0; i < v.size(); ++i) t.data()[i] = T(v[i]);
  return t;
}

/// What rounding v to T loses: v - double(T(v)). Forward passes subtract T(mean) from the input
/// (exact for inputs near the mean) and fold this low part into the shift, so a float input far
/// from 0 is normalised with the precision of the double statistics.
template <class T>
double low_part(double v) {
  return v - double(T(v));
}

/// The values of a 1-d parameter as doubles (ones / zeros when undefined).
template <class T>
std::vector<double> to_doubles(const Tensor<T>& t, int64_t n, double fallback) {
  std::vector<double> v(size_t(n), fallback);
  if (!t.defined()) return v;
  NoGradGuard no_grad;
  const Tensor<T> c = t.contiguous();
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double(c.data()[i]);
  return v;
}

/// Differentiable statistics: mean and 1 / sqrt(biased variance + eps) of x over dims, keepdim.
template <class T>
std::pair<Tensor<T>, Tensor<T>> moments_composite(const Tensor<T>& x, const Dims& dims, double eps) {
  Tensor<T> mean = dl::mean(x, dims, true);
  Tensor<T> var = dl::mean(expr::square(x - mean), dims, true);
  Tensor<T> rstd = expr::rsqrt(var + T(eps));
  return {mean, rstd};
}

/// The input gradient of y = xhat * w + b with xhat = (x - mean) * rstd normalised over `dims`:
/// gx = rstd * (g w - mean(g w) - xhat * mean(g w xhat)). Written with dl ops, so it is
/// differentiable when grad mode is on (create_graph).
template <class T>
Tensor<T> norm_input_grad(const Tensor<T>& x, const Tensor<T>& g, const Tensor<T>& w, const Tensor<T>& mean,
                          const Tensor<T>& rstd, const Dims& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= x.size(d);
  const T inv = T(1.0 / double(count));
  const Tensor<T> s1 = dl::sum(g * w, dims, true);
  const Tensor<T> s2 = dl::sum(g * w * ((x - mean) * rstd), dims, true);
  return Tensor<T>(rstd * (g * w - s1 * inv - (x - mean) * rstd * (s2 * inv)));
}

/// The backward rule shared by the normalisations, over saved {x (contiguous), weight}; the
/// inputs are (x, weight, bias), the parameters of shape param_shape. Without create_graph,
/// `fast(g, x, weight, needs)` runs the op's one-pass kernels with the forward statistics. Under
/// create_graph the statistics are recomputed from x with differentiable ops and the gradients
/// are compositions of dl ops, so derivatives of any order follow.
template <class T, class Fast>
auto norm_rule(NormGeometry geo, Shape in_shape, Shape param_shape, double eps, Fast fast) {
  return [geo, in_shape, param_shape, eps, fast](const Tensor<T>& g_, const std::vector<Tensor<T>>& saved,
                                                 const std::vector<bool>& needs) {
    const Tensor<T>& w = saved[1];
    if (!is_grad_enabled()) return fast(g_, saved[0], w, needs);
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> x = saved[0].view(geo.view);
    const Tensor<T> g = g_.reshape(geo.view);
    const auto [m, s] = moments_composite(x, geo.reduce, eps);
    const Tensor<T> wb = w.defined() ? w.reshape(geo.affine) : ones<T>({1});
    if (needs[0]) r[0] = norm_input_grad(x, g, wb, m, s, geo.reduce).view(in_shape).impl();
    if (needs[1]) r[1] = dl::sum(g * ((x - m) * s), geo.affine_reduce).reshape(param_shape).impl();
    if (needs[2]) r[2] = dl::sum(g, geo.affine_reduce).reshape(param_shape).impl();
    return r;
  };
}

DL_API void check_param(const char* what, int64_t expected, const Shape& got);

/// Forward statistics kept for a fast backward: per channel (batch_norm) or per row (layer_norm,
/// group_norm) mean and 1 / sqrt(var + eps), in double.
struct ChannelStats {
  std::vector<double> mean, invstd;
};

/// The contiguous values of a parameter (no copy when already contiguous), or undefined.
template <class T>
Tensor<T> contiguous_param(const Tensor<T>& t) {
  if (!t.defined()) return t;
  NoGradGuard no_grad;
  return t.contiguous();
}

/// The fast backward of layer_norm over rows [M, K]: one pass over (g, x) from memory.
template <class T>
auto layer_norm_fast_backward(std::shared_ptr<const ChannelStats> st, int64_t M, int64_t K, Shape param_shape) {
  return [st, M, K, param_shape](const Tensor<T>& g_, const Tensor<T>& x, const Tensor<T>& w, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> g = g_.contiguous();
    const Tensor<T> wc = contiguous_param(w);
    Tensor<T> gx = needs[0] ? empty<T>(x.shape()) : Tensor<T>();
    std::vector<double> gw(needs[1] ? size_t(K) : 0), gb(needs[2] ? size_t(K) : 0);
    dl::detail::layer_norm_backward(g.data(), x.data(), wc.defined() ? wc.data() : nullptr, M, K, st->mean.data(), st->invstd.data(),
                                    needs[0] ? gx.data() : nullptr, needs[1] ? gw.data() : nullptr, needs[2] ? gb.data() : nullptr);
    if (needs[0]) r[0] = gx.view(g_.shape()).impl();
    if (needs[1]) r[1] = from_doubles<T>(gw, param_shape).impl();
    if (needs[2]) r[2] = from_doubles<T>(gb, param_shape).impl();
    return r;
  };
}

/// The fast backward of group_norm over [N, G, C/G, S]: one pass for the per-(sample, channel)
/// sums, one fused pass for gx = g * A[n, c] + (x - mean[n, g]) * B[n, g] + K[n, g].
template <class T>
auto group_norm_fast_backward(std::shared_ptr<const ChannelStats> st, int64_t N, int64_t C, int64_t S, int64_t G) {
  return [st, N, C, S, G](const Tensor<T>& g_, const Tensor<T>& x, const Tensor<T>& w, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> g = g_.contiguous();
    const int64_t Cg = C / G;
    std::vector<double> a(size_t(N * C)), b(size_t(N * C));
    dl::detail::row_grad_sums(g.data(), x.data(), N * C, S, st->mean.data(), Cg, a.data(), b.data());
    const Shape cs{C};
    if (needs[1] || needs[2]) {
      std::vector<double> gw(static_cast<size_t>(C), 0.0), gb(static_cast<size_t>(C), 0.0);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          gw[size_t(c)] += st->invstd[size_t(n * G + c / Cg)] * b[size_t(n * C + c)];
          gb[size_t(c)] += a[size_t(n * C + c)];
        }
      if (needs[1]) r[1] = from_doubles<T>(gw, cs).impl();
      if (needs[2]) r[2] = from_doubles<T>(gb, cs).impl();
    }
    if (needs[0]) {
      const std::vector<double> wv = to_doubles(w, C, 1.0);
      const double inv_k = 1.0 / double(Cg * S);
      std::vector<double> A(size_t(N * C)), B(size_t(N * G)), K(size_t(N * G));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < G; ++j) {
          const size_t row = size_t(n * G + j);
          const double rs = st->invstd[row];
          double s1 = 0, s2 = 0;
          for (int64_t c = j * Cg; c < (j + 1) * Cg; ++c) {
            s1 += wv[size_t(c)] * a[size_t(n * C + c)];
            s2 += wv[size_t(c)] * b[size_t(n * C + c)];
            A[size_t(n * C + c)] = rs * wv[size_t(c)];
          }
          B[row] = -rs * rs * rs * s2 * inv_k;
          K[row] = -rs * s1 * inv_k - B[row] * low_part<T>(st->mean[row]);
        }
      const Shape v{N, G, Cg, S}, ss{N, G, 1, 1};
      r[0] = expr::evaluate_raw(g.view(v) * from_doubles<T>(A, {N, G, Cg, 1}) + (x.view(v) - from_doubles<T>(st->mean, ss)) *
                                from_doubles<T>(B, ss) + from_doubles<T>(K, ss))
                 .view(g_.shape())
                 .impl();
    }
    return r;
  };
}

/// The fast backward of training batch_norm: one pass for the two per-channel sums, one fused
/// pass for the input gradient gx = g * A[c] + (x - mean[c]) * B[c] + K[c].
template <class T>
auto batch_norm_fast_backward(std::shared_ptr<const ChannelStats> st, int64_t N, int64_t C, int64_t S) {
  return [st, N, C, S](const Tensor<T>& g_, const Tensor<T>& x, const Tensor<T>& w, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> g = g_.contiguous();
    std::vector<double> sum_g(static_cast<size_t>(C)), dot(static_cast<size_t>(C));
    dl::detail::channel_grad_sums(g.data(), x.data(), N, C, S, st->mean.data(), sum_g.data(), dot.data());
    const Shape cs{C};
    if (needs[1]) {
      std::vector<double> gw(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) gw[size_t(c)] = dot[size_t(c)] * st->invstd[size_t(c)];
      r[1] = from_doubles<T>(gw, cs).impl();
    }
    if (needs[2]) r[2] = from_doubles<T>(sum_g, cs).impl();
    if (needs[0]) {
      const std::vector<double> wv = to_doubles(w, C, 1.0);
      const double inv_m = 1.0 / double(N * S);
      std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C)), k(static_cast<size_t>(C));
      for (size_t c = 0; c < size_t(C); ++c) {
        const double is = st->invstd[c];
        a[c] = wv[c] * is;
        b[c] = -a[c] * is * is * dot[c] * inv_m;
        k[c] = -a[c] * sum_g[c] * inv_m - b[c] * low_part<T>(st->mean[c]);
      }
      const Shape bs{1, C, 1};
      const Tensor<T> A = from_doubles<T>(a, bs), B = from_doubles<T>(b, bs), K = from_doubles<T>(k, bs);
      const Tensor<T> M = from_doubles<T>(st->mean, bs);
      const Shape v{N, C, S};
      r[0] = expr::evaluate_raw(g.view(v) * A + (x.view(v) - M) * B + K).view(g.shape()).impl();
    }
    return r;
  };
}

/// Running statistics update: running = (1 - momentum) * running + momentum * value.
template <class T>
void update_running(Tensor<T>& running, const std::vector<double>& value, double momentum) {
  if (!running.defined()) return;
  NoGradGuard no_grad;
  const Tensor<T> v = from_doubles<T>(value, running.shape());
  running.copy_(running * T(1 - momentum) + v * T(momentum));
}

/// batch_norm / instance_norm with given (running) statistics: one fused expression, differentiable
/// in input, weight and bias.
template <class E, class T>
Tensor<T> normalize_with(const E& input, const Shape& shape, const Tensor<T>& mean, const Tensor<T>& var,
                         const Tensor<T>& weight, const Tensor<T>& bias, double eps) {
  const int64_t C = shape[1];
  Shape bs = Dims::filled(shape.size(), 1);
  bs[1] = C;
  const Tensor<T> rm = mean.detach().reshape(bs), rv = var.detach().reshape(bs);
  const Tensor<T> scale = weight.defined() ? Tensor<T>(weight.reshape(bs) * expr::rsqrt(rv + T(eps)))
                                           : Tensor<T>(expr::rsqrt(rv + T(eps)));
  const Tensor<T> shift = bias.defined() ? bias.reshape(bs) : zeros<T>({1});
  return Tensor<T>((input - rm) * scale + shift);
}

template <class T>
void check_channel_params(int64_t C, const Tensor<T>& running_mean, const Tensor<T>& running_var, const Tensor<T>& weight,
                          const Tensor<T>& bias) {
  if (running_mean.defined()) check_param("running_mean", C, running_mean.shape());
  if (running_var.defined()) check_param("running_var", C, running_var.shape());
  if (weight.defined()) check_param("weight", C, weight.shape());
  if (bias.defined()) check_param("bias", C, bias.shape());
}

/// The rows of x [R, K] normalised and scaled per (row, affine position): the forward of
/// group_norm and instance_norm. Returns y and the per-row moments (mean, biased variance).
template <class T>
Tensor<T> group_norm_impl(const Tensor<T>& x, int64_t G, const Tensor<T>& weight, const Tensor<T>& bias, double eps,
                          const char* name, std::vector<double>* row_mean = nullptr, std::vector<double>* row_var = nullptr) {
  const Shape shape = x.shape();
  const int64_t N = shape[0], C = shape[1], S = N * C != 0 ? x.numel() / (N * C) : 0, Cg = C / G;
  std::vector<double> mean(size_t(N * G)), var(size_t(N * G));
  if (Cg * S > 0) dl::detail::row_moments(x.data(), N * G, Cg * S, mean.data(), var.data());
  // y = (x - mean[n, g]) * scale[n, c] + bias[c]
  const std::vector<double> wv = to_doubles(weight, C, 1.0), bv = to_doubles(bias, C, 0.0);
  std::vector<double> rstd(size_t(N * G)), scale(size_t(N * C)), shift(size_t(N * C));
  for (size_t i = 0; i < rstd.size(); ++i) rstd[i] = 1.0 / std::sqrt(var[i] + eps);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = size_t(n * C + c), row = size_t(n * G + c / Cg);
      scale[i] = wv[size_t(c)] * rstd[row];
      shift[i] = bv[size_t(c)] - low_part<T>(mean[row]) * scale[i];
    }
  const Shape v{N, G, Cg, S}, ss{N, G, 1, 1}, ps{N, G, Cg, 1};
  const Tensor<T> mt = from_doubles<T>(mean, ss);
  Tensor<T> y = expr::evaluate_raw((x.view(v) - mt) * from_doubles<T>(scale, ps) + from_doubles<T>(shift, ps)).view(shape);
  NormGeometry geo{v, {1, G, Cg, 1}, {2, 3}, {0, 3}};
  auto st = std::make_shared<ChannelStats>(ChannelStats{mean, rstd});
  if (row_mean) *row_mean = std::move(mean);
  if (row_var) *row_var = std::move(var);
  return dl::detail::record_kernel(y, name, {x, weight},
                                   norm_rule<T>(geo, shape, Shape{C}, eps, group_norm_fast_backward<T>(st, N, C, S, G)),
                                   x, weight, bias);
}

}  // namespace detail

template <expression E, class T>
Tensor<T> batch_norm(const E& input, Tensor<T> running_mean, Tensor<T> running_var, Tensor<T> weight, Tensor<T> bias,
                     bool training, double momentum, double eps) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::batch_norm", input, weight, bias, running_mean, running_var);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "batch_norm: input and parameters must have the same element type");
  static_assert(floating_scalar<T>, "batch_norm needs a floating input");
  static_assert(!half_float<T>, "batch_norm: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Shape shape = expr::shape_of(expr::as_node(input));
  DL_CHECK(shape.size() >= 2, "batch_norm: expected an input of shape [N, C, *] with at least 2 dimensions, got input of size ",
           shape);
  const int64_t N = shape[0], C = shape[1], count = numel(shape) / std::max<int64_t>(C, 1);
  detail::check_channel_params(C, running_mean, running_var, weight, bias);
  if (!training) {
    DL_CHECK(running_mean.defined() && running_var.defined(), "running_mean must be defined in evaluation mode");
    return detail::normalize_with(input, shape, running_mean, running_var, weight, bias, eps);
  }
  DL_CHECK(count != 1, "Expected more than 1 value per channel when training, got input size ", shape);
  const Tensor<T> x = detail::materialize(input).contiguous();
  if (x.numel() == 0) return x.clone();
  const int64_t S = count / N;
  auto st = std::make_shared<detail::ChannelStats>();
  std::vector<double> var(static_cast<size_t>(C));
  st->mean.resize(static_cast<size_t>(C));
  st->invstd.resize(static_cast<size_t>(C));
  dl::detail::channel_moments(x.data(), N, C, S, st->mean.data(), var.data());
  const std::vector<double> wv = detail::to_doubles(weight, C, 1.0), bv = detail::to_doubles(bias, C, 0.0);
  std::vector<double> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  for (size_t c = 0; c < size_t(C); ++c) {
    st->invstd[c] = 1.0 / std::sqrt(var[c] + eps);
    scale[c] = wv[c] * st->invstd[c];
    shift[c] = bv[c] - detail::low_part<T>(st->mean[c]) * scale[c];
  }
  // (x - mean) * scale + shift: subtracting first keeps the precision of inputs far from 0.
  const Shape v{N, C, S}, cs{1, C, 1};
  const Tensor<T> mt = detail::from_doubles<T>(st->mean, cs);
  Tensor<T> y = expr::evaluate_raw((x.view(v) - mt) * detail::from_doubles<T>(scale, cs) + detail::from_doubles<T>(shift, cs)).view(shape);
  detail::update_running(running_mean, st->mean, momentum);
  if (running_var.defined()) {
    const double unbias = double(count) / double(count - 1);
    for (double& s : var) s *= unbias;
    detail::update_running(running_var, var, momentum);
  }
  const detail::NormGeometry geo{v, cs, {0, 2}, {0, 2}};
  auto rule = detail::norm_rule<T>(geo, shape, Shape{C}, eps, detail::batch_norm_fast_backward<T>(st, N, C, S));
  return dl::detail::record_kernel(y, "NativeBatchNormBackward", {x, weight}, rule, x, weight, bias);
}

template <expression E, class T>
Tensor<T> layer_norm(const E& input, Shape normalized_shape, Tensor<T> weight, Tensor<T> bias, double eps) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::layer_norm", input, weight, bias);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "layer_norm: input and parameters must have the same element type");
  static_assert(floating_scalar<T>, "layer_norm needs a floating input");
  static_assert(!half_float<T>, "layer_norm: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Shape shape = expr::shape_of(expr::as_node(input));
  const int nd = normalized_shape.size(), xd = shape.size();
  DL_CHECK(nd >= 1, "layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
           "but got normalized_shape = ", normalized_shape);
  bool match = xd >= nd;
  for (int i = 0; match && i < nd; ++i) match = shape[xd - nd + i] == normalized_shape[i];
  DL_CHECK(match, "Given normalized_shape=", normalized_shape, ", expected input with shape [*",
           [&] { std::string s; for (int64_t v : normalized_shape) s += ", " + std::to_string(v); return s; }(),
           "], but got input of size", shape);
  DL_CHECK(!weight.defined() || weight.shape() == normalized_shape, "Expected weight to be of same shape as normalized_shape, but got ",
           "weight of shape ", weight.defined() ? weight.shape() : Shape{}, " and normalized_shape = ", normalized_shape);
  DL_CHECK(!bias.defined() || bias.shape() == normalized_shape, "Expected bias to be of same shape as normalized_shape, but got ",
           "bias of shape ", bias.defined() ? bias.shape() : Shape{}, " and normalized_shape = ", normalized_shape);
  const Tensor<T> x = detail::materialize(input).contiguous();
  const int64_t K = numel(normalized_shape), M = K ? x.numel() / K : 0;
  std::vector<double> mean(static_cast<size_t>(M)), var(static_cast<size_t>(M));
  if (K > 0) dl::detail::row_moments(x.data(), M, K, mean.data(), var.data());
  for (double& s : var) s = 1.0 / std::sqrt(s + eps);
  const Shape v{M, K}, ss{M, 1};
  const Tensor<T> mt = detail::from_doubles<T>(mean, ss), rt = detail::from_doubles<T>(var, ss);
  auto st = std::make_shared<detail::ChannelStats>(detail::ChannelStats{mean, var});
  Tensor<T> y;
  {
    for (double& m : mean) m = detail::low_part<T>(m);
    const Tensor<T> lo = detail::from_doubles<T>(mean, ss);
    const Tensor<T> wk = weight.defined() ? weight.reshape({K}) : ones<T>({1});
    const Tensor<T> bk = bias.defined() ? bias.reshape({K}) : zeros<T>({1});
    y = expr::evaluate_raw(((x.view(v) - mt) - lo) * rt * wk + bk).view(shape);
  }
  const detail::NormGeometry geo{v, {K}, {1}, {0}};
  auto rule = detail::norm_rule<T>(geo, shape, normalized_shape, eps, detail::layer_norm_fast_backward<T>(st, M, K, normalized_shape));
  return dl::detail::record_kernel(y, "NativeLayerNormBackward", {x, weight}, rule, x, weight, bias);
}

template <expression E, class T>
Tensor<T> group_norm(const E& input, int64_t num_groups, Tensor<T> weight, Tensor<T> bias, double eps) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "group_norm: input and parameters must have the same element type");
  static_assert(floating_scalar<T>, "group_norm needs a floating input");
  static_assert(!half_float<T>, "group_norm: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Shape shape = expr::shape_of(expr::as_node(input));
  DL_CHECK(shape.size() >= 2, "group_norm: expected an input of shape [N, C, *] with at least 2 dimensions, got input of size ",
           shape);
  const int64_t C = shape[1];
  DL_CHECK(num_groups > 0, "group_norm: num_groups must be positive, got ", num_groups);
  DL_CHECK(C % num_groups == 0, "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
           shape, " and num_groups=", num_groups);
  DL_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
           "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape ",
           weight.defined() ? weight.shape() : Shape{}, " and input of shape ", shape);
  DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
           "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape ",
           bias.defined() ? bias.shape() : Shape{}, " and input of shape ", shape);
  return detail::group_norm_impl(detail::materialize(input).contiguous(), num_groups, weight, bias, eps, "NativeGroupNormBackward");
}

template <expression E, class T>
Tensor<T> instance_norm(const E& input, Tensor<T> running_mean, Tensor<T> running_var, Tensor<T> weight, Tensor<T> bias,
                        bool use_input_stats, double momentum, double eps) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "instance_norm: input and parameters must have the same element type");
  static_assert(floating_scalar<T>, "instance_norm needs a floating input");
  static_assert(!half_float<T>, "instance_norm: float16/bfloat16 inputs are not supported yet; convert with .to_float() (and back with .half())");
  const Shape shape = expr::shape_of(expr::as_node(input));
  DL_CHECK(shape.size() >= 2, "instance_norm: expected an input of shape [N, C, *] with at least 2 dimensions, got input of size ",
           shape);
  const int64_t N = shape[0], C = shape[1];
  detail::check_channel_params(C, running_mean, running_var, weight, bias);
  if (!use_input_stats) {
    DL_CHECK(running_mean.defined() && running_var.defined(),
             "Expected running_mean and running_var to be defined when use_input_stats is false");
    return detail::normalize_with(input, shape, running_mean, running_var, weight, bias, eps);
  }
  const int64_t S = N * C != 0 ? numel(shape) / (N * C) : 0;
  DL_CHECK(S != 1, "Expected more than 1 spatial element when training, got input size ", shape);
  std::vector<double> mean, var;
  Tensor<T> y = detail::group_norm_impl(detail::materialize(input).contiguous(), C, weight, bias, eps, "NativeInstanceNormBackward",
                                        &mean, &var);
  if (N > 0 && S > 0 && (running_mean.defined() || running_var.defined())) {
    std::vector<double> bm(size_t(C), 0.0), bv(size_t(C), 0.0);
    const double unbias = double(S) / double(S - 1);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        bm[size_t(c)] += mean[size_t(n * C + c)] / double(N);
        bv[size_t(c)] += var[size_t(n * C + c)] * unbias / double(N);
      }
    detail::update_running(running_mean, bm, momentum);
    detail::update_running(running_var, bv, momentum);
  }
  return y;
}

template <expression E, class T>
Tensor<T> normalize(const E& input, double p, int64_t dim, double eps) {
  static_assert(floating_scalar<T>, "normalize needs a floating input");
  const Tensor<T> x = detail::materialize(input);
  const Dims d{int64_t(wrap_dim(dim, x.dim(), "normalize"))};
  // max(||x||_p, eps), written as (max(sum |x|^p, eps^p))^(1/p): the same value, and a zero vector
  // gets a zero gradient through the clamp instead of 0 * inf from the root's derivative.
  Tensor<T> denom;
  if (p == 0) {  // the number of non-zeros, a constant for the gradient
    NoGradGuard no_grad;
    denom = expr::clamp_min(dl::sum(expr::cast<T>(x != T(0)), d, true), T(eps));
  } else if (p == 2) {
    denom = expr::sqrt(expr::clamp_min(dl::sum(expr::square(x), d, true), T(eps * eps)));
  } else if (p == 1) {
    denom = expr::clamp_min(dl::sum(expr::abs(x), d, true), T(eps));
  } else if (std::isinf(p)) {
    denom = expr::clamp_min(p > 0 ? dl::amax(expr::abs(x), d, true) : dl::amin(expr::abs(x), d, true), T(eps));
  } else {
    denom = expr::pow(expr::clamp_min(dl::sum(expr::pow(expr::abs(x), p), d, true), T(std::pow(eps, p))), 1.0 / p);
  }
  return Tensor<T>(x / denom);
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::batch_norm(const dl::Tensor<float>&, dl::Tensor<float>, dl::Tensor<float>, dl::Tensor<float>, dl::Tensor<float>, bool, double, double))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::layer_norm(const dl::Tensor<float>&, dl::Shape, dl::Tensor<float>, dl::Tensor<float>, double))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::group_norm(const dl::Tensor<float>&, int64_t, dl::Tensor<float>, dl::Tensor<float>, double))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::instance_norm(const dl::Tensor<float>&, dl::Tensor<float>, dl::Tensor<float>, dl::Tensor<float>, dl::Tensor<float>, bool, double, double))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::normalize(const dl::Tensor<float>&, double, int64_t, double))

#if DL_HEADER_ONLY
#include "normalization-inl.hpp"
#endif
