// dl/ops/scan.hpp — running sums and products along a dim (cumsum, cumprod) and finite
// differences (diff), all differentiable to any order.
#pragma once

#include <optional>
#include <vector>

#include "../tensor.hpp"
#include "dim_rows.hpp"
#include "indexing.hpp"
#include "kernel_backward.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...] along dim (negative counts from the
/// end). Integer and bool inputs give int64, as in PyTorch; float accumulates in double, as
/// PyTorch's CPU kernel does.
template <scalar_type T>
Tensor<sum_t<T>> cumsum(const Tensor<T>& x, int64_t dim);
/// Running product along dim. Its gradient is exact also when x holds zeros (PyTorch's rule:
/// the first zero of a row gets the product of the others, later elements nothing).
template <scalar_type T>
Tensor<sum_t<T>> cumprod(const Tensor<T>& x, int64_t dim);
/// The n-th forward difference along dim: out[i] = x[i + 1] - x[i], applied n times, after
/// concatenating prepend and append (same dims as x, same sizes except along dim) to x along dim.
/// Size along dim: size + prepended + appended - n (0 when n is larger). bool inputs use xor.
template <scalar_type T>
Tensor<T> diff(const Tensor<T>& x, int64_t n = 1, int64_t dim = -1, const std::optional<Tensor<std::type_identity_t<T>>>& prepend = std::nullopt,
               const std::optional<Tensor<std::type_identity_t<T>>>& append = std::nullopt);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// The running sum (product when Prod) of x along d, from the end when `reverse`; not recorded.
/// x is viewed as [outer, n, inner]; columns of up to 64 inner elements run in parallel, each
/// keeping its accumulators on the stack, so the inner loop is contiguous and nothing is allocated
/// per row.
template <class R, bool Prod, class T>
Tensor<R> scan_kernel(const Tensor<T>& x_, int d, bool reverse) {
  const Tensor<T> x = x_.contiguous();
  Tensor<R> out = empty<R>(x.shape());
  int64_t outer = 1, n = x.dim() ? x.shape()[d] : 1, inner = 1;
  for (int a = 0; a < x.dim(); ++a) {
    if (a < d) outer *= x.shape()[a];
    if (a > d) inner *= x.shape()[a];
  }
  if (out.numel() == 0) return out;
  using Acc = std::conditional_t<floating_scalar<R>, double, int64_t>;
  constexpr int64_t B = 64;
  const int64_t blocks = (inner + B - 1) / B;
  const T* src = x.data();
  R* dst = out.data();
  parallel_for(0, outer * blocks, std::max<int64_t>(1, 32768 / (n * B)), [&](int64_t b, int64_t e) {
    Acc acc[B];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = t % blocks * B, m = std::min(B, inner - j0);
      for (int64_t j = 0; j < m; ++j) acc[j] = Acc(Prod ? 1 : 0);
      const T* s = src + o * n * inner + j0;
      R* r = dst + o * n * inner + j0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = reverse ? n - 1 - step : step;
        const T* srow = s + i * inner;
        R* rrow = r + i * inner;
        for (int64_t j = 0; j < m; ++j) {
          if constexpr (Prod) acc[j] *= Acc(srow[j]);
          else acc[j] += Acc(srow[j]);
          rrow[j] = R(acc[j]);
        }
      }
    }
  });
  return out;
}

/// cumsum from the start (or the end when `reverse`), recorded: the gradient of one direction is
/// the running sum of the gradient in the other.
template <class T>
Tensor<T> cumsum_dir(const Tensor<T>& x, int d, bool reverse) {
  Tensor<T> out = scan_kernel<T, false>(x, d, reverse);
  return record_kernel(std::move(out), "CumsumBackward0", {}, [d, reverse](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{cumsum_dir(g, d, !reverse).impl()};
  }, x);
}

/// Masks of each row's first zero along d (`at`) and of the positions before it (`before`); a
/// row without zeros is all `before`. Returns whether any row holds a zero.
template <class T>
bool first_zero_masks(const Tensor<T>& x, int d, Tensor<bool>& before, Tensor<bool>& at) {
  before = empty<bool>(x.shape());
  at = zeros<bool>(x.shape());
  const DimRows in(x.shape(), x.strides(), d), out(x.shape(), before.strides(), d);
  bool any = false;
  for (int64_t r = 0; r < in.count; ++r) {
    const T* p = x.data() + in.offset(r);
    const int64_t o = out.offset(r);
    int64_t z = in.n;
    for (int64_t i = 0; i < in.n && z == in.n; ++i)
      if (p[i * in.stride] == T(0)) z = i;
    for (int64_t i = 0; i < in.n; ++i) before.data()[o + i * out.stride] = i < z;
    if (z < in.n) at.data()[o + z * out.stride] = true, any = true;
  }
  return any;
}

template <class T>
Tensor<T> cumprod_rec(const Tensor<T>& x, int d);

/// grad[k] = sum_{j >= k} g[j] prod_{i <= j, i != k} x[i] along d, written with differentiable ops
/// over a [n, x's shape] stack of copies of x, copy k with x[k] = 1: O(n^2) per row. Used for
/// create_graph through zeros, where the O(n) rule's zero after the first zero has non-zero
/// derivatives.
template <class T>
Tensor<T> cumprod_backward_quadratic(const Tensor<T>& x, const Tensor<T>& g, int d) {
  const int64_t n = x.shape()[d];
  Shape mshape = Dims::filled(x.dim() + 1, 1);
  mshape[0] = n;
  mshape[d + 1] = n;
  Tensor<bool> diag = empty<bool>(mshape), upper = empty<bool>(mshape);  // i == k, j >= k
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) diag.data()[k * n + i] = i == k, upper.data()[k * n + i] = i >= k;
  Shape stacked = x.shape();
  stacked.insert(0, n);
  const Tensor<T> copies = cumprod_rec(Tensor<T>(where(diag, T(1), x.unsqueeze(0).expand(stacked))), d + 1);
  const Tensor<T> terms = Tensor<T>(where(upper, copies * g.unsqueeze(0), T(0)));
  return sum(terms, Dims{d + 1}, true).transpose(0, d + 1).squeeze(0);
}

/// Gradient of cumprod for input x (with its history under create_graph), output gradient g and
/// output `out`. Without zeros: reverse_cumsum(g * out) / x. With zeros, per row with first zero
/// at z: that formula before z; at z, reverse_cumsum(g * cumprod(x with x[z] = 1)); 0 after z
/// (the quadratic form under create_graph, whose derivatives are exact there too).
template <class T>
Tensor<T> cumprod_backward(const Tensor<T>& x, const Tensor<T>& out, const Tensor<T>& g, int d) {
  Tensor<bool> before, at;
  if (!first_zero_masks(x.detach(), d, before, at)) return Tensor<T>(cumsum_dir(Tensor<T>(g * out), d, true) / x);
  if (is_grad_enabled()) return cumprod_backward_quadratic(x, g, d);
  const Tensor<T> a = cumsum_dir(Tensor<T>(g * out), d, true) / Tensor<T>(where(before, x, T(1)));
  const Tensor<T> out_z = cumprod_rec(Tensor<T>(where(at, T(1), x)), d);
  const Tensor<T> b = cumsum_dir(Tensor<T>(g * out_z), d, true);
  return Tensor<T>(where(before, a, where(at, b, T(0))));
}

template <class T>
Tensor<T> cumprod_rec(const Tensor<T>& x, int d) {
  if (x.dim() == 0) return cumprod_rec(x.reshape({1}), 0).reshape({});
  Tensor<T> out = scan_kernel<T, true>(x, d, false);
  if (!autograd::any_requires_grad(x)) return out;
  // The output is saved detached (saving it with its own history would be a reference cycle);
  // under create_graph the rule recomputes it from x so that its dependence on x is recorded.
  return record_kernel(out, "CumprodBackward0", {x, out.detach()},
                       [d](const Tensor<T>& g, const std::vector<Tensor<T>>& saved, const std::vector<bool>&) {
                         const Tensor<T>& xs = saved[0];
                         const Tensor<T> o = is_grad_enabled() ? cumprod_rec(xs, d) : saved[1];
                         return std::vector<TensorImplPtr>{cumprod_backward(xs, o, g, d).impl()};
                       },
                       x);
}

}  // namespace detail

template <scalar_type T>
Tensor<sum_t<T>> cumsum(const Tensor<T>& x, int64_t dim) {
  const int d = wrap_dim(dim, x.dim(), "cumsum");
  if constexpr (floating_scalar<T>) return detail::cumsum_dir(x, d, false);
  else return detail::scan_kernel<sum_t<T>, false>(x, d, false);
}

template <scalar_type T>
Tensor<sum_t<T>> cumprod(const Tensor<T>& x, int64_t dim) {
  const int d = wrap_dim(dim, x.dim(), "cumprod");
  if constexpr (floating_scalar<T>) return detail::cumprod_rec(x, d);
  else return detail::scan_kernel<sum_t<T>, true>(x, d, false);
}

template <scalar_type T>
Tensor<T> diff(const Tensor<T>& x, int64_t n, int64_t dim, const std::optional<Tensor<std::type_identity_t<T>>>& prepend,
               const std::optional<Tensor<std::type_identity_t<T>>>& append) {
  DL_CHECK(x.dim() >= 1, "diff expects input to be at least one-dimensional");
  DL_CHECK(n >= 0, "order must be non-negative but got ", n);
  const int d = wrap_dim(dim, x.dim(), "diff");
  std::vector<Tensor<T>> parts;
  auto add = [&](const std::optional<Tensor<T>>& t) {
    if (!t || !t->defined()) return;
    DL_CHECK(t->dim() == x.dim(), "diff expects prepend or append to be the same dimension as input");
    for (int a = 0; a < x.dim(); ++a)
      DL_CHECK(a == d || t->shape()[a] == x.shape()[a],
               "diff expects the shape of tensor to prepend or append to match that of input except along the differencing "
               "dimension; input.size(", a, ") = ", x.shape()[a], ", but got tensor.size(", a, ") = ", t->shape()[a]);
    parts.push_back(*t);
  };
  add(prepend);
  parts.push_back(x);
  add(append);
  Tensor<T> out = parts.size() == 1 ? x : cat(parts, d);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = out.shape()[d];
    if (len == 0) break;
    if constexpr (std::is_same_v<T, bool>) out = Tensor<bool>(out.narrow(d, 1, len - 1) != out.narrow(d, 0, len - 1));
    else out = Tensor<T>(out.narrow(d, 1, len - 1) - out.narrow(d, 0, len - 1));
  }
  return out;
}

// ---- Tensor members

template <scalar_type T>
Tensor<sum_t<T>> Tensor<T>::cumsum(int64_t dim) const { return dl::cumsum(*this, dim); }
template <scalar_type T>
Tensor<sum_t<T>> Tensor<T>::cumprod(int64_t dim) const { return dl::cumprod(*this, dim); }
template <scalar_type T>
Tensor<T> Tensor<T>::diff(int64_t n, int64_t dim) const { return dl::diff(*this, n, dim); }

}  // namespace dl
