// dl/autograd/gradcheck.hpp — gradcheck and gradgradcheck: compare the gradients autograd computes
// for a user's function with central finite differences (PyTorch's torch.autograd.gradcheck).
//
//   bool ok = dl::autograd::gradcheck([](auto& in) { return (in[0] * in[1]).sum(); }, {x, w});
//
// A generic function (taking `auto& in`) is checked in double precision whatever the inputs' type.
#pragma once

#include <cmath>
#include <sstream>
#include <vector>

#include "../ops/indexing.hpp"

namespace dl::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   ///< finite-difference step
  double atol = 1e-5;  ///< absolute tolerance
  double rtol = 1e-3;  ///< relative tolerance
  bool raise_exception = true;  ///< throw dl::Error describing the mismatch instead of returning false
};

/// Checks d fn(inputs) / d inputs for every input that requires grad (all floating inputs when
/// none does). fn takes `std::vector<Tensor<T>>&` and returns a tensor or expression of any shape.
template <class Fn, scalar_type T>
bool gradcheck(Fn&& fn, const std::vector<Tensor<T>>& inputs, GradcheckOptions opt = {});
template <class Fn, scalar_type T>
bool gradcheck(Fn&& fn, std::initializer_list<Tensor<T>> inputs, GradcheckOptions opt = {}) {
  return gradcheck(std::forward<Fn>(fn), std::vector<Tensor<T>>(inputs), opt);
}

/// Checks second derivatives: the gradient of fn, as a function of the inputs and of the output
/// gradient, is itself checked with gradcheck (needs create_graph support in every op used).
template <class Fn, scalar_type T>
bool gradgradcheck(Fn&& fn, const std::vector<Tensor<T>>& inputs, GradcheckOptions opt = {});
template <class Fn, scalar_type T>
bool gradgradcheck(Fn&& fn, std::initializer_list<Tensor<T>> inputs, GradcheckOptions opt = {}) {
  return gradgradcheck(std::forward<Fn>(fn), std::vector<Tensor<T>>(inputs), opt);
}

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class U, class Fn>
Tensor<U> call_fn(Fn& fn, std::vector<Tensor<U>>& xs) {
  auto r = fn(xs);
  return Tensor<U>(r);
}

template <class U, class Fn>
bool gradcheck_impl(Fn& fn, std::vector<Tensor<U>> xs, const GradcheckOptions& opt) {
  bool none = true;
  for (const auto& x : xs) none = none && !x.requires_grad();
  std::vector<size_t> checked;
  for (size_t i = 0; i < xs.size(); ++i) {
    const bool want = none || xs[i].requires_grad();
    xs[i] = xs[i].detach().clone();
    if (want) {
      xs[i].requires_grad_(true);
      checked.push_back(i);
    }
  }
  const Tensor<U> out = call_fn<U>(fn, xs);
  DL_CHECK(out.requires_grad(), "gradcheck: the function's output does not depend on any input that requires grad");
  const int64_t n_out = out.numel();

  std::ostringstream report;
  bool ok = true;
  for (size_t c = 0; c < checked.size(); ++c) {
    Tensor<U>& x = xs[checked[c]];
    const int64_t n_in = x.numel();
    // Analytical Jacobian, one output element (row) at a time.
    std::vector<double> analytic(size_t(n_out * n_in), 0.0), numeric(size_t(n_out * n_in), 0.0);
    for (int64_t k = 0; k < n_out; ++k) {
      Tensor<U> onehot = zeros<U>(out.shape());
      onehot.data()[k] = U(1);
      auto g = grad<U>({out}, {x}, {onehot}, true, false, true);
      if (!g[0].defined()) continue;
      const Tensor<U> gc = g[0].contiguous();
      for (int64_t j = 0; j < n_in; ++j) analytic[size_t(k * n_in + j)] = double(gc.data()[j]);
    }
    // Numerical Jacobian by central differences, one input element (column) at a time. Grad mode
    // stays on (gradgradcheck's function differentiates inside); results are cloned because fn
    // may return a view of its input.
    {
      for (int64_t j = 0; j < n_in; ++j) {
        U& v = x.data()[j];
        const U orig = v;
        v = U(double(orig) + opt.eps);
        const Tensor<U> plus = call_fn<U>(fn, xs).detach().clone();
        v = U(double(orig) - opt.eps);
        const Tensor<U> minus = call_fn<U>(fn, xs).detach().clone();
        v = orig;
        for (int64_t k = 0; k < n_out; ++k)
          numeric[size_t(k * n_in + j)] = (double(plus.data()[k]) - double(minus.data()[k])) / (2 * opt.eps);
      }
    }
    for (size_t e = 0; e < analytic.size(); ++e) {
      const double a = analytic[e], n = numeric[e];
      if (!(std::abs(a - n) <= opt.atol + opt.rtol * std::abs(n))) {
        if (ok) report << "Jacobian mismatch for output 0 with respect to input " << checked[c] << ",\n";
        if (ok) report << "  first mismatch at (output element " << int64_t(e) / n_in << ", input element " << int64_t(e) % n_in
                       << "): numerical " << n << ", analytical " << a;
        ok = false;
      }
    }
  }
  if (!ok && opt.raise_exception) throw Error("gradcheck: " + report.str());
  return ok;
}

}  // namespace detail

template <class Fn, scalar_type T>
bool gradcheck(Fn&& fn, const std::vector<Tensor<T>>& inputs, GradcheckOptions opt) {
  if constexpr (std::is_invocable_v<Fn&, std::vector<Tensor<double>>&>) {
    std::vector<Tensor<double>> xs;
    for (const auto& x : inputs) {
      Tensor<double> d = x.template to<double>().detach();
      if (x.requires_grad()) d.requires_grad_(true);
      xs.push_back(d);
    }
    return detail::gradcheck_impl<double>(fn, xs, opt);
  } else {
    static_assert(floating_scalar<T>, "gradcheck needs floating inputs");
    if constexpr (std::is_same_v<T, float>) {
      // Single precision cannot resolve eps = 1e-6; use a step and tolerances float can.
      opt.eps = std::max(opt.eps, 1e-3);
      opt.atol = std::max(opt.atol, 1e-2);
      opt.rtol = std::max(opt.rtol, 1e-2);
    }
    return detail::gradcheck_impl<T>(fn, inputs, opt);
  }
}

template <class Fn, scalar_type T>
bool gradgradcheck(Fn&& fn, const std::vector<Tensor<T>>& inputs, GradcheckOptions opt) {
  using U = std::conditional_t<std::is_invocable_v<Fn&, std::vector<Tensor<double>>&>, double, T>;
  std::vector<Tensor<U>> xs;
  for (const auto& x : inputs) xs.push_back(x.template to<U>().detach().clone().requires_grad_(true));
  // The output gradient v is an input of the checked function too.
  Tensor<U> out = detail::call_fn<U>(fn, xs);
  Generator gen(1234);
  Tensor<U> v = randn<U>(out.shape(), &gen).requires_grad_(true);
  const size_t n = xs.size();
  auto first_derivative = [&fn, n](std::vector<Tensor<U>>& all) {
    std::vector<Tensor<U>> in(all.begin(), all.begin() + std::ptrdiff_t(n));
    Tensor<U> y = detail::call_fn<U>(fn, in);
    auto gs = grad<U>({y}, in, {all[n]}, true, true, true);
    std::vector<Tensor<U>> flat;
    for (size_t i = 0; i < gs.size(); ++i) flat.push_back(gs[i].defined() ? gs[i].reshape({-1}) : zeros<U>({in[i].numel()}));
    return cat(flat, 0);
  };
  xs.push_back(v);
  return detail::gradcheck_impl<U>(first_derivative, xs, opt);
}

}  // namespace dl::autograd
