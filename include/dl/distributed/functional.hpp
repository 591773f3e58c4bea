// dl/distributed/functional.hpp — collectives that autograd differentiates through (PyTorch's
// torch.distributed.nn.functional): the result is a new tensor, and backward runs the matching
// collective on the gradients, so a loss computed from the reduced value sends gradient back to
// every rank's input.
//
//   namespace dist = dl::distributed;
//   auto total = dist::functional::all_reduce(local_sum);   // SUM over the ranks, differentiable
//   auto mean  = dist::functional::all_reduce(x, {.op = dist::ReduceOp::AVG});
//
// Every rank must run the backward passes that reach these nodes, in the same order (the
// gradients' all-reduce is a collective like any other). nn::SyncBatchNorm is built on them.
#pragma once

#include "../autograd/function.hpp"
#include "collectives.hpp"

namespace dl::distributed::functional {

namespace detail {

/// y = op over the ranks of x. d(sum_k y_k . g_k)/dx_r is the SUM of every rank's g (AVG: their
/// mean), so backward is the same collective on the gradients.
template <scalar_type T>
struct AllReduce : autograd::Function<AllReduce<T>> {
  static Tensor<T> forward(autograd::Context& ctx, const Tensor<T>& x, ReduceOp op, Group group) {
    ctx.saved_data["op"] = op;
    ctx.saved_data["group"] = group;
    Tensor<T> y = x.clone();
    dl::distributed::all_reduce(y, {.op = op, .group = group});
    return y;
  }
  static Tensor<T> backward(autograd::Context& ctx, const Tensor<T>& g) {
    Tensor<T> r = g.contiguous().clone();
    dl::distributed::all_reduce(r, {.op = std::any_cast<ReduceOp>(ctx.saved_data["op"]),
                                    .group = std::any_cast<Group>(ctx.saved_data["group"])});
    return r;
  }
};

}  // namespace detail

/// The reducing op and group of a differentiable collective (always synchronous).
struct AllReduceOptions {
  ReduceOp op = ReduceOp::SUM;  ///< SUM or AVG when x requires grad
  Group group{};                ///< empty: the default group
};

/// A new tensor holding op over the ranks of x; differentiable for SUM and AVG (backward
/// all-reduces the gradients with the same op). MIN, MAX and PRODUCT work on tensors that do
/// not require grad.
template <scalar_type T>
Tensor<T> all_reduce(const Tensor<T>& x, const AllReduceOptions& o = {}) {
  DL_CHECK(x.defined(), "dl::distributed::functional::all_reduce: the tensor is undefined");
  const bool grad = is_grad_enabled() && x.requires_grad();
  DL_CHECK(!grad || o.op == ReduceOp::SUM || o.op == ReduceOp::AVG, "dl::distributed::functional::all_reduce: ReduceOp::",
           reduce_op_name(o.op), " has no gradient; differentiable all-reduces take SUM or AVG (or detach() the input)");
  if (!grad) {
    Tensor<T> y = x.clone();
    dl::distributed::all_reduce(y, {.op = o.op, .group = o.group});
    return y;
  }
  return detail::AllReduce<T>::apply(x, o.op, o.group);
}

}  // namespace dl::distributed::functional
