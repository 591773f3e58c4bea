// dl/ops/reduce.hpp — reductions: sum, mean, prod, max/min (all, per dim with indices, amax/amin),
// argmax/argmin, var, std, norm, logsumexp, all, any. Each is an evaluation boundary that reads
// its elementwise input fused (no temporary for `(a - b).pow(2).sum()`), and records its backward
// rule when the input requires grad.
#pragma once

#include <cmath>
#include <numeric>

#include "../autograd/graph.hpp"
#include "../expr/boundaries.hpp"
#include "../expr/reduce_kernels.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "index_geometry.hpp"

namespace dl {

/// (values, indices) of max/min along a dim; use with structured bindings.
template <class T>
struct MaxResult {
  Tensor<T> values;
  Tensor<int64_t> indices;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Bit mask of the dims to reduce (all dims when `dims` is empty).
inline uint32_t reduce_mask(const Dims& dims, int ndim, const char* what) {
  if (dims.empty()) return ndim == 0 ? 0u : (1u << ndim) - 1;
  uint32_t mask = 0;
  for (int64_t d : dims) {
    const int w = wrap_dim(d, ndim, what);
    DL_CHECK(!((mask >> w) & 1), what, ": dim ", w, " appears multiple times in the list of dims");
    if (ndim > 0) mask |= 1u << w;
  }
  return mask;
}

inline Shape reduced_shape(const Shape& s, uint32_t mask, bool keepdim) {
  Shape out;
  for (int d = 0; d < s.size(); ++d) {
    if (!((mask >> d) & 1)) out.push_back(s[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

inline int64_t reduced_count(const Shape& s, uint32_t mask) {
  int64_t n = 1;
  for (int d = 0; d < s.size(); ++d)
    if ((mask >> d) & 1) n *= s[d];
  return n;
}

/// Runs reducer R over node n (of shape `shape`) and returns the result tensor.
template <class R>
struct float_reducer {
  using type = R;
};
template <template <class> class R, class A>
struct float_reducer<R<A>> {
  using type = R<float>;
};

template <class R, class A, class N>
Tensor<A> reduce_node(const N& n, const Shape& shape, uint32_t mask, bool keepdim) {
  if constexpr (half_float<A>) {
    // dl::Half / dl::BFloat16: accumulated in float, rounded once (PyTorch's opmath).
    auto wide = reduce_node<typename float_reducer<R>::type, float>(expr::apply(expr::Cast<float>{}, n), shape, mask, keepdim);
    NoGradGuard no_grad;
    return wide.template to<A>();
  } else {
  constexpr const char* name = std::is_same_v<R, expr::SumReducer<A>>    ? "aten::sum"
                               : std::is_same_v<R, expr::ProdReducer<A>> ? "aten::prod"
                               : std::is_same_v<R, expr::MaxReducer<A>>  ? "aten::amax"
                               : std::is_same_v<R, expr::MinReducer<A>>  ? "aten::amin"
                               : std::is_same_v<R, expr::AllReducer>     ? "aten::all"
                               : std::is_same_v<R, expr::AnyReducer>     ? "aten::any"
                                                                         : "dl::reduce";
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(name, shape);
  Shape keep = shape;
  for (int d = 0; d < keep.size(); ++d)
    if ((mask >> d) & 1) keep[d] = 1;
  const Device device = expr::device_of(n);
  expr::check_same_device(n, device);
  auto impl = make_impl(dtype_of<A>, keep, device);
  expr::reduce_into<R, A>(expr::lower(n, shape), shape, mask, static_cast<A*>(impl->data()), device);
  if (!keepdim) {
    impl->shape = reduced_shape(shape, mask, false);
    impl->strides = contiguous_strides(impl->shape);
  }
  return Tensor<A>(impl);
  }
}

/// g (the gradient of a reduction over `mask`) reshaped with size-1 reduced dims, so that it
/// broadcasts against the input.
template <class T>
Tensor<T> unsqueeze_reduced(const Tensor<T>& g, const Shape& in, uint32_t mask, bool keepdim) {
  if (keepdim) return g;
  Tensor<T> r = g;
  for (int d = 0; d < in.size(); ++d)
    if ((mask >> d) & 1) r = r.unsqueeze(d);
  return r;
}

/// Backward of sum and mean: the (scaled) gradient broadcast back to the input shape.
template <class T>
class SumBackward : public autograd::Node {
 public:
  SumBackward(std::string name, Shape in, uint32_t mask, bool keepdim, double scale)
      : name_(std::move(name)), in_(in), mask_(mask), keepdim_(keepdim), scale_(scale) {}
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    Tensor<T> g(grads[0]);
    if (scale_ != 1.0) g = g * T(scale_);
    return {unsqueeze_reduced(g, in_, mask_, keepdim_).expand(in_).impl()};
  }

 private:
  std::string name_;
  Shape in_;
  uint32_t mask_;
  bool keepdim_;
  double scale_;
};

/// Records node as the history of out, with the input's edge; returns out.
template <class T, class E>
Tensor<T> record(Tensor<T> out, const E& input, std::shared_ptr<autograd::Node> node) {
  node->mutable_next_edges().push_back(autograd::input_edge(input));
  autograd::set_history(out, node);
  return out;
}

/// The input as a tensor (materialising an expression) when a rule needs its values.
template <class E>
auto materialize(const E& e) {
  if constexpr (expr::is_tensor_v<E>) return e;
  else return Tensor<expr::value_type_t<E>>(e);
}

template <class E>
bool wants_grad(const E& e) {
  if constexpr (!floating_scalar<expr::value_type_t<E>>) {
    return false;
  } else {
    if (!is_grad_enabled()) return false;
    bool any = false;
    if constexpr (expr::is_tensor_v<E>) any = autograd::detail::requires_grad(*e.impl());
    else expr::for_each_leaf(e, [&](const auto& t) { any = any || autograd::detail::requires_grad(*t.impl()); });
    return any;
  }
}

template <class E>
Tensor<sum_t<expr::value_type_t<E>>> sum_impl(const E& e, uint32_t mask, bool keepdim, const Shape& shape) {
  using T = expr::value_type_t<E>;
  using A = sum_t<T>;
  Tensor<A> out = reduce_node<expr::SumReducer<A>, A>(expr::as_node(e), shape, mask, keepdim);
  if constexpr (floating_scalar<T>) {
    if (wants_grad(e)) return record(out, e, std::make_shared<SumBackward<T>>("SumBackward", shape, mask, keepdim, 1.0));
  }
  return out;
}

template <class E>
Tensor<expr::value_type_t<E>> mean_impl(const E& e, uint32_t mask, bool keepdim, const Shape& shape) {
  using T = expr::value_type_t<E>;
  static_assert(floating_scalar<T>, "mean() needs a floating tensor; convert it with .to<float>() first");
  const int64_t count = reduced_count(shape, mask);
  Tensor<T> out;
  if constexpr (half_float<T>) {  // the sum and the division in float, one rounding
    NoGradGuard no_grad;
    Tensor<float> wide = reduce_node<expr::SumReducer<float>, float>(expr::apply(expr::Cast<float>{}, expr::as_node(e)), shape, mask, keepdim);
    wide.mul_(count ? 1.0f / float(count) : std::numeric_limits<float>::quiet_NaN());
    out = wide.template to<T>();
  } else {
    out = reduce_node<expr::SumReducer<T>, T>(expr::as_node(e), shape, mask, keepdim);
    NoGradGuard no_grad;
    out.mul_(count ? T(1) / T(count) : std::numeric_limits<T>::quiet_NaN());
  }
  if (wants_grad(e)) return record(out, e, std::make_shared<SumBackward<T>>("MeanBackward", shape, mask, keepdim, 1.0 / double(count)));
  return out;
}

/// amax/amin backward: the gradient shared evenly among the elements equal to the extreme. The
/// result only selects elements (no gradient flows through it), so it is saved detached: saving
/// the node's own output would make a reference cycle (output -> grad_fn -> saved output).
template <class T>
class ExtremeBackward : public autograd::Node {
 public:
  ExtremeBackward(std::string name, const Tensor<T>& input, const Tensor<T>& result, uint32_t mask, bool keepdim)
      : name_(std::move(name)), input_(input.impl(), name_), result_(result.detach().impl(), name_), mask_(mask), keepdim_(keepdim) {}
  std::string name() const override { return name_; }
  void release_variables() override {
    input_.release();
    result_.release();
  }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    const Tensor<T> x(input_.unpack()), r(result_.unpack()), g(grads[0]);
    const Shape& in = x.shape();
    const Tensor<T> rk = unsqueeze_reduced(r, in, mask_, keepdim_);
    const Tensor<T> gk = unsqueeze_reduced(g, in, mask_, keepdim_);
    Tensor<T> count;
    {
      NoGradGuard no_grad;
      count = reduce_node<expr::SumReducer<T>, T>(expr::as_node(expr::cast<T>(x == rk)), in, mask_, true);
    }
    Tensor<T> grad = expr::where(x == rk, gk / count, T(0));
    return {grad.impl()};
  }

 private:
  std::string name_;
  autograd::SavedTensor input_, result_;
  uint32_t mask_;
  bool keepdim_;
};

template <bool IsMax, class E>
Tensor<expr::value_type_t<E>> extreme_impl(const E& e, Dims dims, bool keepdim, const char* what) {
  using T = expr::value_type_t<E>;
  const Shape shape = expr::shape_of(expr::as_node(e));
  const uint32_t mask = reduce_mask(dims, shape.size(), what);
  DL_CHECK(numel(shape) > 0, what, "(): cannot perform reduction on a tensor with no elements (shape ", shape,
           ") because the operation does not have an identity");
  using R = std::conditional_t<IsMax, expr::MaxReducer<T>, expr::MinReducer<T>>;
  if constexpr (floating_scalar<T>) {
    if (wants_grad(e)) {
      const Tensor<T> x = materialize(e);
      Tensor<T> out = reduce_node<R, T>(expr::as_node(x), shape, mask, keepdim);
      return record(out, x, std::make_shared<ExtremeBackward<T>>(IsMax ? "AmaxBackward" : "AminBackward", x, out, mask, keepdim));
    }
  }
  return reduce_node<R, T>(expr::as_node(e), shape, mask, keepdim);
}

/// Values and indices of the max (or min) along one dim of a tensor. NaN counts as the largest
/// value; among ties the first index wins.
template <bool IsMax, class T>
MaxResult<T> arg_reduce(const Tensor<T>& input, int64_t dim, bool keepdim, const char* what) {
  const Shape& shape = input.shape();
  const int nd = shape.size();
  const int d = wrap_dim(dim, nd, what);
  const int64_t R = nd ? shape[d] : 1;
  DL_CHECK(R > 0, what, "(): Expected reduction dim ", d, " to have non-zero size (input shape ", shape, ")");
  const Tensor<T> x = input.contiguous();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= shape[i];
  for (int i = d + 1; i < nd; ++i) inner *= shape[i];
  const uint32_t mask = nd ? 1u << d : 0u;
  const Shape keep = reduced_shape(shape, mask, true);
  auto vals = make_impl(dtype_of<T>, keep, x.device());
  auto idxs = make_impl(ScalarType::Int64, keep, x.device());
  auto finish = [&] {
    if (!keepdim) {
      const Shape out = reduced_shape(shape, mask, false);
      vals->shape = idxs->shape = out;
      vals->strides = idxs->strides = contiguous_strides(out);
    }
    return MaxResult<T>{Tensor<T>(vals), Tensor<int64_t>(idxs)};
  };
  if (x.device().is_cuda()) {
    index_hooks_for(x.device()).arg_reduce(dtype_of<T>, x.device().index, IsMax, x.data_ptr(), outer, R, inner, vals->data(),
                                           static_cast<int64_t*>(idxs->data()));
    return finish();
  }
  T* v = static_cast<T*>(vals->data());
  int64_t* ix = static_cast<int64_t*>(idxs->data());
  const T* src = x.data();
  auto better = [](T cand, T best) {
    if constexpr (floating_scalar<T>) {
      if (std::isnan(best)) return false;
      if (std::isnan(cand)) return true;
    }
    if constexpr (IsMax) return cand > best;
    else return cand < best;
  };
  ::dl::detail::parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(R * inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      T* vb = v + o * inner;
      int64_t* ib = ix + o * inner;
      const T* s = src + o * R * inner;
      for (int64_t i = 0; i < inner; ++i) {
        vb[i] = s[i];
        ib[i] = 0;
      }
      for (int64_t r = 1; r < R; ++r)
        for (int64_t i = 0; i < inner; ++i)
          if (better(s[r * inner + i], vb[i])) {
            vb[i] = s[r * inner + i];
            ib[i] = r;
          }
    }
  });
  return finish();
}

/// max(dim)/min(dim) backward: the gradient goes to the selected index.
template <class T>
class IndexReduceBackward : public autograd::Node {
 public:
  IndexReduceBackward(std::string name, Shape in, const Tensor<int64_t>& indices, int dim, bool keepdim)
      : name_(std::move(name)), in_(in), indices_(indices.impl(), name_), dim_(dim), keepdim_(keepdim) {}
  std::string name() const override { return name_; }
  void release_variables() override { indices_.release(); }
  /// One fused pass, where(position along dim == index, g, 0): differentiable (create_graph).
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    const Tensor<int64_t> saved(indices_.unpack());
    if (in_.size() == 0) return {grads[0]};
    const uint32_t mask = 1u << dim_;
    const Tensor<int64_t> idx = unsqueeze_reduced(saved, in_, mask, keepdim_);
    const Tensor<T> g = unsqueeze_reduced(Tensor<T>(grads[0]), in_, mask, keepdim_);
    // On a GPU: the gradient scattered to the selected indices (differentiable as well).
    if (g.device().is_cuda()) {
      Tensor<T> zero(make_impl(dtype_of<T>, in_, g.device()));
      zero.zero_();
      return {zero.scatter(dim_, idx, g).impl()};
    }
    Shape along = Dims::filled(in_.size(), 1);
    along[dim_] = in_[dim_];
    auto iota = make_impl(ScalarType::Int64, along);
    std::iota(static_cast<int64_t*>(iota->data()), static_cast<int64_t*>(iota->data()) + in_[dim_], int64_t(0));
    Tensor<T> grad = expr::where(Tensor<int64_t>(iota) == idx, g, T(0));
    return {grad.impl()};
  }

 private:
  std::string name_;
  Shape in_;
  autograd::SavedTensor indices_;
  int dim_;
  bool keepdim_;
};

template <bool IsMax, class E>
MaxResult<expr::value_type_t<E>> max_dim_impl(const E& e, int64_t dim, bool keepdim, const char* what) {
  using T = expr::value_type_t<E>;
  const auto x = materialize(e);
  MaxResult<T> r = arg_reduce<IsMax>(x, dim, keepdim, what);
  if constexpr (floating_scalar<T>)
  if (wants_grad(x)) {
    const int d = wrap_dim(dim, x.dim(), what);
    record(r.values, x, std::make_shared<IndexReduceBackward<T>>(IsMax ? "MaxBackward" : "MinBackward", x.shape(), r.indices, d, keepdim));
  }
  return r;
}

/// prod backward: the product of the other elements of each slice (exact with zeros).
template <class T>
class ProdBackward : public autograd::Node {
 public:
  ProdBackward(const Tensor<T>& input, int dim, bool all, bool keepdim)
      : input_(input.impl(), "ProdBackward"), dim_(dim), all_(all), keepdim_(keepdim) {}
  std::string name() const override { return "ProdBackward"; }
  void release_variables() override { input_.release(); }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    if (is_grad_enabled()) return {differentiable(Tensor<T>(input_.unpack()), Tensor<T>(grads[0])).impl()};
    const Tensor<T> input(input_.unpack());
    // On a GPU: the products of the other elements (zeros included) are formed on the host from
    // copies, and the result copied back (a rare backward; not a device kernel yet).
    if (input.is_cuda()) return {Tensor<T>(exclusive_products(input.cpu(), Tensor<T>(grads[0]).cpu())).to(input.device()).impl()};
    return {exclusive_products(input, Tensor<T>(grads[0]))};
  }

 private:
  /// g times the product of the other elements of each reduced row (exact with zeros), on the CPU.
  TensorImplPtr exclusive_products(const Tensor<T>& input, const Tensor<T>& grad) const {
    const Tensor<T> x = input.contiguous();
    const Shape in = x.shape();
    int64_t outer = 1, R = x.numel(), inner = 1;
    if (!all_ && in.size()) {
      R = in[dim_];
      for (int i = 0; i < dim_; ++i) outer *= in[i];
      for (int i = dim_ + 1; i < in.size(); ++i) inner *= in[i];
    }
    const uint32_t mask = all_ ? (in.size() ? (1u << in.size()) - 1 : 0u) : (in.size() ? 1u << dim_ : 0u);
    const Tensor<T> g = unsqueeze_reduced(grad, in, mask, all_ ? false : keepdim_).expand(reduced_shape(in, mask, true)).contiguous();
    auto out = make_impl(dtype_of<T>, in);
    T* o = static_cast<T*>(out->data());
    const T* s = x.data();
    std::vector<T> prefix(size_t(R) + 1);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        prefix[0] = T(1);
        for (int64_t r = 0; r < R; ++r) prefix[r + 1] = prefix[r] * s[(a * R + r) * inner + i];
        T suffix = T(1);
        const T gi = g.data()[a * inner + i];
        for (int64_t r = R - 1; r >= 0; --r) {
          o[(a * R + r) * inner + i] = gi * prefix[r] * suffix;
          suffix *= s[(a * R + r) * inner + i];
        }
      }
    return out;
  }

  /// create_graph: g * prod / x, recorded (PyTorch's rule when no element is zero).
  Tensor<T> differentiable(const Tensor<T>& x, const Tensor<T>& g) const {
    bool has_zero;
    {
      NoGradGuard no_grad;
      has_zero = Tensor<bool>(x == T(0)).any().item();  // on any device
    }
    DL_CHECK(!has_zero,
             "prod: double backward (create_graph) through an input that contains zeros is not supported (input shape ", x.shape(), ")");
    const Shape& in = x.shape();
    if (all_) return Tensor<T>(g * prod(x) / x);
    const uint32_t mask = in.size() ? 1u << dim_ : 0u;
    return Tensor<T>(unsqueeze_reduced(g, in, mask, keepdim_) * prod(x, dim_, true) / x);
  }

  autograd::SavedTensor input_;
  int dim_;
  bool all_, keepdim_;
};

}  // namespace detail

namespace detail {
/// g summed over the dims along which `shape` was broadcast to g's shape, viewed as `shape`: the
/// gradient of a broadcast operand. Differentiable.
template <class T>
Tensor<T> sum_to(const Tensor<T>& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if constexpr (!floating_scalar<T>) {
    throw Error(cat("sum_to: gradients of ", dtype_name(dtype_of<T>), " tensors are not supported"));
  } else {
    const uint32_t mask = autograd::broadcast_mask(shape, g.shape());
    if (!mask) return g.reshape(shape);
    Dims dims;
    for (int d = 0; d < g.dim(); ++d)
      if ((mask >> d) & 1) dims.push_back(d);
    return dl::sum(g, dims, true).reshape(shape);
  }
}
}  // namespace detail

template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::sum_impl(e, detail::reduce_mask({}, shape.size(), "sum"), false, shape);
}
template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, Dims dims, bool keepdim) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::sum_impl(e, detail::reduce_mask(dims, shape.size(), "sum"), keepdim, shape);
}
template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, int64_t dim, bool keepdim) {
  return sum(e, Dims{dim}, keepdim);
}

template <expression E>
Tensor<expr::value_type_t<E>> mean(const E& e) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::mean_impl(e, detail::reduce_mask({}, shape.size(), "mean"), false, shape);
}
template <expression E>
Tensor<expr::value_type_t<E>> mean(const E& e, Dims dims, bool keepdim) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::mean_impl(e, detail::reduce_mask(dims, shape.size(), "mean"), keepdim, shape);
}
template <expression E>
Tensor<expr::value_type_t<E>> mean(const E& e, int64_t dim, bool keepdim) {
  return mean(e, Dims{dim}, keepdim);
}

template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> prod(const E& e) {
  using T = expr::value_type_t<E>;
  using A = sum_t<T>;
  const Shape shape = expr::shape_of(expr::as_node(e));
  const uint32_t mask = detail::reduce_mask({}, shape.size(), "prod");
  if constexpr (!floating_scalar<T>) {
    return detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(e), shape, mask, false);
  } else {
    if (!detail::wants_grad(e)) return detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(e), shape, mask, false);
    const Tensor<T> x = detail::materialize(e);
    Tensor<A> out = detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(x), shape, mask, false);
    return detail::record(out, x, std::make_shared<detail::ProdBackward<T>>(x, 0, true, false));
  }
}
template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> prod(const E& e, int64_t dim, bool keepdim) {
  using T = expr::value_type_t<E>;
  using A = sum_t<T>;
  const Shape shape = expr::shape_of(expr::as_node(e));
  const uint32_t mask = detail::reduce_mask({dim}, shape.size(), "prod");
  if constexpr (!floating_scalar<T>) {
    return detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(e), shape, mask, keepdim);
  } else {
    if (!detail::wants_grad(e)) return detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(e), shape, mask, keepdim);
    const Tensor<T> x = detail::materialize(e);
    Tensor<A> out = detail::reduce_node<expr::ProdReducer<A>, A>(expr::as_node(x), shape, mask, keepdim);
    return detail::record(out, x, std::make_shared<detail::ProdBackward<T>>(x, wrap_dim(dim, shape.size(), "prod"), false, keepdim));
  }
}

template <expression E>
Tensor<expr::value_type_t<E>> amax(const E& e, Dims dims, bool keepdim) {
  return detail::extreme_impl<true>(e, dims, keepdim, "amax");
}
template <expression E>
Tensor<expr::value_type_t<E>> amin(const E& e, Dims dims, bool keepdim) {
  return detail::extreme_impl<false>(e, dims, keepdim, "amin");
}
template <expression E>
Tensor<expr::value_type_t<E>> max(const E& e) {
  return detail::extreme_impl<true>(e, {}, false, "max");
}
template <expression E>
Tensor<expr::value_type_t<E>> min(const E& e) {
  return detail::extreme_impl<false>(e, {}, false, "min");
}
template <expression E>
MaxResult<expr::value_type_t<E>> max(const E& e, int64_t dim, bool keepdim) {
  return detail::max_dim_impl<true>(e, dim, keepdim, "max");
}
template <expression E>
MaxResult<expr::value_type_t<E>> min(const E& e, int64_t dim, bool keepdim) {
  return detail::max_dim_impl<false>(e, dim, keepdim, "min");
}

template <expression E>
Tensor<int64_t> argmax(const E& e) {
  const auto x = detail::materialize(e);
  DL_CHECK(x.numel() > 0, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  NoGradGuard no_grad;
  return detail::arg_reduce<true>(x.reshape({-1}), 0, false, "argmax").indices;
}
template <expression E>
Tensor<int64_t> argmax(const E& e, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return detail::arg_reduce<true>(detail::materialize(e), dim, keepdim, "argmax").indices;
}
template <expression E>
Tensor<int64_t> argmin(const E& e) {
  const auto x = detail::materialize(e);
  DL_CHECK(x.numel() > 0, "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  NoGradGuard no_grad;
  return detail::arg_reduce<false>(x.reshape({-1}), 0, false, "argmin").indices;
}
template <expression E>
Tensor<int64_t> argmin(const E& e, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return detail::arg_reduce<false>(detail::materialize(e), dim, keepdim, "argmin").indices;
}

// var/std/norm/logsumexp are compositions of differentiable reductions and elementwise
// expressions, so their gradients (and gradients of gradients) follow from the parts.

template <expression E>
Tensor<expr::value_type_t<E>> var(const E& e, Dims dims, bool unbiased, bool keepdim) {
  using T = expr::value_type_t<E>;
  static_assert(floating_scalar<T>, "var() needs a floating tensor; convert it with .to<float>() first");
  const Tensor<T> x = detail::materialize(e);
  const uint32_t mask = detail::reduce_mask(dims, x.dim(), "var");
  const int64_t n = detail::reduced_count(x.shape(), mask);
  const Tensor<T> m = mean(x, dims, true);
  const T denom = T(std::max<int64_t>(n - (unbiased ? 1 : 0), 0));
  Tensor<T> s = sum(expr::square(x - m), dims, keepdim);
  return s / denom;
}
template <expression E, std::same_as<bool> B>
Tensor<expr::value_type_t<E>> var(const E& e, B unbiased) {
  return var(e, Dims{}, unbiased, false);
}
template <expression E>
Tensor<expr::value_type_t<E>> std(const E& e, Dims dims, bool unbiased, bool keepdim) {
  return expr::sqrt(var(e, dims, unbiased, keepdim));
}
template <expression E, std::same_as<bool> B>
Tensor<expr::value_type_t<E>> std(const E& e, B unbiased) {
  return std(e, Dims{}, unbiased, false);
}

template <expression E>
Tensor<expr::value_type_t<E>> norm(const E& e, double p, Dims dims, bool keepdim) {
  using T = expr::value_type_t<E>;
  static_assert(floating_scalar<T>, "norm() needs a floating tensor; convert it with .to<float>() first");
  if (p == 2) return expr::sqrt(sum(expr::square(e), dims, keepdim));
  if (p == 1) return sum(expr::abs(e), dims, keepdim);
  if (std::isinf(p)) return p > 0 ? amax(expr::abs(e), dims, keepdim) : amin(expr::abs(e), dims, keepdim);
  if (p == 0) {
    NoGradGuard no_grad;
    return sum(expr::cast<T>(e != T(0)), dims, keepdim);
  }
  return expr::pow(sum(expr::pow(expr::abs(e), p), dims, keepdim), 1.0 / p);
}
template <expression E>
Tensor<expr::value_type_t<E>> norm(const E& e, double p) {
  return norm(e, p, Dims{}, false);
}

template <expression E>
Tensor<expr::value_type_t<E>> logsumexp(const E& e, Dims dims, bool keepdim) {
  using T = expr::value_type_t<E>;
  static_assert(floating_scalar<T>, "logsumexp() needs a floating tensor; convert it with .to<float>() first");
  const Tensor<T> x = detail::materialize(e);
  Tensor<T> m;
  {
    NoGradGuard no_grad;  // the shift cancels out of the gradient
    m = amax(x, dims, true);
    m = expr::where(expr::abs(m) == std::numeric_limits<T>::infinity(), T(0), m);
  }
  Tensor<T> s = sum(expr::exp(x - m), dims, true);
  Tensor<T> out = expr::log(s) + m;
  if (keepdim) return out;
  return out.view(detail::reduced_shape(x.shape(), detail::reduce_mask(dims, x.dim(), "logsumexp"), false));
}

template <expression E>
Tensor<bool> all(const E& e) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::reduce_node<expr::AllReducer, bool>(expr::as_node(e), shape, detail::reduce_mask({}, shape.size(), "all"), false);
}
template <expression E>
Tensor<bool> all(const E& e, int64_t dim, bool keepdim) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::reduce_node<expr::AllReducer, bool>(expr::as_node(e), shape, detail::reduce_mask({dim}, shape.size(), "all"), keepdim);
}
template <expression E>
Tensor<bool> any(const E& e) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::reduce_node<expr::AnyReducer, bool>(expr::as_node(e), shape, detail::reduce_mask({}, shape.size(), "any"), false);
}
template <expression E>
Tensor<bool> any(const E& e, int64_t dim, bool keepdim) {
  const Shape shape = expr::shape_of(expr::as_node(e));
  return detail::reduce_node<expr::AnyReducer, bool>(expr::as_node(e), shape, detail::reduce_mask({dim}, shape.size(), "any"), keepdim);
}

template <expression A, expression B>
bool allclose(const A& a, const B& b, double rtol, double atol, bool equal_nan) {
  using T = to_floating_t<promote_t<expr::value_type_t<A>, expr::value_type_t<B>>>;
  const auto x = expr::cast<T>(a);
  const auto y = expr::cast<T>(b);
  const auto close = expr::abs(x - y) <= T(atol) + T(rtol) * expr::abs(y);
  if (equal_nan) return all(close | (expr::isnan(x) & expr::isnan(y))).item();
  return all(close).item();
}

template <expression A, expression B>
bool equal(const A& a, const B& b) {
  if (!(expr::shape_of(expr::as_node(a)) == expr::shape_of(expr::as_node(b)))) return false;
  return all(a == b).item();
}

}  // namespace dl

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::MaxResult<float> dl::detail::arg_reduce<true, float>(const dl::Tensor<float>&, int64_t, bool, const char*))
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<float> dl::detail::sum_to<float>(const dl::Tensor<float>&, const dl::Shape&))
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<double> dl::detail::sum_to<double>(const dl::Tensor<double>&, const dl::Shape&))
