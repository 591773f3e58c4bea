// dl/tensor/inplace.hpp — in-place Tensor ops (fill_, copy_, add_, mul_, clamp_, masked_fill_, ...).
// Each evaluates an expression straight into the tensor's memory (any strides), bumps the version
// counter, and under autograd records the op as the tensor's new history.
#pragma once

#include <utility>

#include "../random.hpp"
#include "creation.hpp"
#include "views.hpp"

namespace dl {

namespace detail {

/// Memory range [lo, hi] touched by a tensor (in bytes), for overlap checks.
inline std::pair<const char*, const char*> byte_range(const TensorImpl& t) {
  const char* base = static_cast<const char*>(t.data());
  const int64_t es = int64_t(element_size(t.dtype));
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] == 0) return {base, base - 1};
    (t.strides[d] < 0 ? lo : hi) += (t.shape[d] - 1) * t.strides[d];
  }
  return {base + lo * es, base + hi * es + es - 1};
}

/// Rejects writes whose output has internal overlap or is partially overlapped by an input.
template <class T, class N>
void check_write_overlap(const Tensor<T>& out, const N& n, const char* what) {
  for (int d = 0; d < out.dim(); ++d)
    DL_CHECK(out.shape()[d] <= 1 || out.strides()[d] != 0, what,
             ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
             "location. Please clone() the tensor before performing the operation.");
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  const auto out_range = byte_range(*out.impl());
  const auto olo = out_range.first, ohi = out_range.second;
  expr::for_each_leaf(n, [&](const auto& t) {
    if (t.impl()->storage != out.impl()->storage) return;
    const bool same = t.data_ptr() == static_cast<const void*>(out.data_ptr()) && t.shape() == out.shape() && t.strides() == out.strides();
    if (same) return;
    const auto [lo, hi] = byte_range(*t.impl());
    DL_CHECK(hi < olo || lo > ohi, what,
             ": unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
             "memory location. Please clone() the tensor before performing the operation.");
  });
}

template <class T>
void check_inplace_allowed(const Tensor<T>& self, const char* what) {
  if (!is_grad_enabled()) return;
  if (const auto& base = self.impl()->view_base; base && base->autograd && base->autograd->requires_grad && !base->autograd->grad_fn)
    throw Error(cat(what, ": a view of a leaf Variable that requires grad is being used in an in-place operation."));
  if (self.is_leaf() && self.requires_grad())
    throw Error(cat(what, ": a leaf Variable that requires grad is being used in an in-place operation."));
}

/// A recorded in-place op recomputes its forward values from its leaves in backward, but the op
/// overwrites the memory of leaves that alias the target (the mask of `y.masked_fill_(y > 0, 0)`,
/// the operand of `y.mul_(y)`). Those leaves are replaced by copies with the same history.
template <class T, class E>
void snapshot_aliased_leaves(const Tensor<T>& self, E& e, const TensorImplPtr& twin) {
  if constexpr (expr::is_apply_v<E>) {
    expr::for_each_leaf_ref(e, [&]<class L>(Tensor<L>& t) {
      if (t.impl() == twin || t.impl()->storage != self.impl()->storage) return;
      const autograd::Edge edge = autograd::gradient_edge(t.impl());
      t = expr::evaluate_raw(expr::apply(expr::Copy{}, t));
      if (edge.valid()) {
        auto& m = autograd::detail::meta(t.impl());
        m.grad_fn = edge.fn;
        m.output_nr = edge.input_nr;
      }
    });
  }
}

/// The node of a recorded in-place op (null when no operand needs grad). Operands that alias the
/// target are snapshotted first; the twin is exempt from the version check when the rules never
/// read the old value (add_, copy_), so later writes to the target do not matter.
template <class T, class E>
std::shared_ptr<autograd::ExprBackward<E>> inplace_node(const Tensor<T>& self, E& e, const Tensor<T>& twin, bool needs_old) {
  if constexpr (floating_scalar<T> && expr::is_apply_v<E>) {
    if (!wants_grad(e)) return nullptr;
    snapshot_aliased_leaves(self, e, twin.impl());
    auto node = std::make_shared<autograd::ExprBackward<E>>(e, self.shape());
    if (!needs_old) node->skip_version_check(twin.impl());
    return node;
  } else {
    return nullptr;
  }
}

/// Writes e into a view made under grad mode whose base or new value needs gradients. The base's
/// history becomes CopySlices: its old history outside the view, `node` (the op, whose input is
/// the view's old value read through the base) inside it. The view re-derives its own history
/// from the base's when next used.
template <class T, class E>
Tensor<T>& write_view(Tensor<T>& self, const E& e, const std::shared_ptr<autograd::Node>& node, const char* what) {
  const TensorImplPtr& base = self.impl()->view_base;
  for (int d = 0; d < base->shape.size(); ++d)
    DL_CHECK(base->shape[d] <= 1 || base->strides[d] != 0, what,
             ": in-place operation on a view of an expanded tensor (shape ", base->shape, ", strides ", base->strides,
             ") cannot be differentiated; clone() the base first");
  auto slices = std::make_shared<CopySlices<T>>(*base, *self.impl());
  slices->mutable_next_edges().push_back(autograd::gradient_edge(base));
  slices->mutable_next_edges().push_back(node ? autograd::Edge{node, 0} : autograd::Edge{});
  if (node) node->mutable_outputs().push_back({self.shape(), uint8_t(dtype_of<T>)});
  expr::assign(self, e);
  self.bump_version();
  autograd::set_history(Tensor<T>(base), slices);
  autograd::detail::meta(self.impl()).grad_fn = nullptr;
  return self;
}

/// self = make(old self), evaluated in place. Under autograd the expression reads a twin: self
/// before the write, with self's history (for a view, its history as part of its base). The twin
/// is a copy when `needs_old` (the backward rules read the old value), else a second handle on
/// self's memory.
template <class T, class Make>
Tensor<T>& inplace_update(Tensor<T>& self, Make&& make, bool needs_old, const char* what) {
  check_inplace_allowed(self, what);
  const bool track = floating_scalar<T> && is_grad_enabled();
  const TensorImplPtr base = track ? self.impl()->view_base : nullptr;
  const bool base_grad = base && autograd::detail::requires_grad(*base);
  Tensor<T> twin = self;
  if (track) {
    twin = needs_old ? expr::evaluate_raw(expr::apply(expr::Copy{}, self))
                     : Tensor<T>(view_impl(self.impl(), self.shape(), self.strides(), self.storage_offset()));
    if constexpr (floating_scalar<T>) {
      if (base_grad) {
        autograd::set_history(twin, dl::detail::view_of_base_node<T>(self.impl()));
      } else if (self.requires_grad()) {
        auto& m = autograd::detail::meta(twin.impl());
        m.grad_fn = self.grad_fn();
        m.output_nr = self.output_nr();
      }
    }
  }
  auto e = expr::as_node(make(twin));
  const Shape shape = expr::shape_of(e);
  DL_CHECK(broadcast_shapes(self.shape(), shape) == self.shape(), what, ": output with shape ", self.shape(),
           " doesn't match the broadcast shape ", broadcast_shapes(self.shape(), shape));
  check_write_overlap(self, e, what);

  const auto node = inplace_node(self, e, twin, needs_old);
  if constexpr (floating_scalar<T>) {
    if (base && (node || base_grad)) return write_view(self, e, node, what);
  }
  DL_CHECK(!node || !self.impl()->is_view, what,
           ": this view was made with grad mode off, so an in-place operation on it cannot be recorded; "
           "make the view with grad mode on or use the out-of-place form");
  expr::assign(self, e);
  self.bump_version();
  if (node) {
    autograd::set_history(self, node);
  } else if (track && !self.is_leaf()) {
    // Overwritten without a recorded rule (e.g. fill_): no gradient reaches the old history.
    self.impl()->autograd->grad_fn = nullptr;
    self.impl()->autograd->requires_grad = false;
  }
  return self;
}

template <class T, class V>
constexpr void check_result_type() {
  static_assert(!(floating_scalar<V> && !floating_scalar<T>), "result type Float can't be cast to the desired output type (an integral tensor)");
}

template <class T, class E>
auto as_type(E&& e) {
  using V = expr::value_type_t<E>;
  check_result_type<T, V>();
  if constexpr (std::is_same_v<V, T>) return expr::apply(expr::Copy{}, std::forward<E>(e));
  else return expr::cast<T>(std::forward<E>(e));
}

template <class E>
bool operand_wants_grad(const E& e) {
  if constexpr (expr::number<E>) return false;
  else return wants_grad(e);
}

}  // namespace detail

template <scalar_type T>
Tensor<T>& Tensor<T>::fill_(T value) {
  return detail::inplace_update(*this, [&](const Tensor&) { return expr::Apply<expr::Copy, expr::Scalar<T>>(expr::Copy{}, expr::Scalar<T>{value}); },
                                false, "fill_");
}

template <scalar_type T>
template <expr::operand E>
Tensor<T>& Tensor<T>::copy_(const E& src) {
  if constexpr (expr::number<E>) {
    return fill_(T(src));
  } else if constexpr (requires { src.impl(); src.device(); }) {
    // A tensor on another device is copied across first (x.copy_(cpu_tensor) on a CUDA x).
    if (src.device() != device()) {
      const auto moved = src.to(device());
      return detail::inplace_update(*this, [&](const Tensor&) { return detail::as_type<T>(moved); }, false, "copy_");
    }
    return detail::inplace_update(*this, [&](const Tensor&) { return detail::as_type<T>(src); }, false, "copy_");
  } else {
    return detail::inplace_update(*this, [&](const Tensor&) { return detail::as_type<T>(src); }, false, "copy_");
  }
}

template <scalar_type T>
Tensor<T>& Tensor<T>::uniform_(double from, double to)
  requires floating_scalar<T>
{
  DL_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (auto r = detail::philox_on_device<T>(detail::RandomKind::Uniform, shape(), device(), nullptr, from, to); r.defined())
    return copy_(r);
  Tensor<T> r = empty<T>(shape());
  detail::fill_uniform(r.data(), r.numel(), from, to, nullptr);
  return copy_(r.to(device()));  // drawn on the host: the same values on every device
}

template <scalar_type T>
Tensor<T>& Tensor<T>::normal_(double mean, double std)
  requires floating_scalar<T>
{
  DL_CHECK(std >= 0, "normal expects std >= 0.0, but found std ", std);
  if (auto r = detail::philox_on_device<T>(detail::RandomKind::Normal, shape(), device(), nullptr, mean, std); r.defined())
    return copy_(r);
  Tensor<T> r = empty<T>(shape());
  detail::fill_normal(r.data(), r.numel(), mean, std, nullptr);
  return copy_(r.to(device()));
}

template <scalar_type T>
template <expr::operand E>
Tensor<T>& Tensor<T>::add_(const E& other) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return detail::as_type<T>(old + other); }, false, "add_");
}
template <scalar_type T>
template <expr::operand E, expr::number A>
Tensor<T>& Tensor<T>::add_(const E& other, A alpha) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return detail::as_type<T>(old + other * alpha); }, false, "add_");
}
template <scalar_type T>
template <expr::operand E>
Tensor<T>& Tensor<T>::sub_(const E& other) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return detail::as_type<T>(old - other); }, false, "sub_");
}
template <scalar_type T>
template <expr::operand E>
Tensor<T>& Tensor<T>::mul_(const E& other) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return detail::as_type<T>(old * other); },
                                detail::operand_wants_grad(other), "mul_");
}
template <scalar_type T>
template <expr::operand E>
Tensor<T>& Tensor<T>::div_(const E& other) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return detail::as_type<T>(old / other); },
                                detail::operand_wants_grad(other), "div_");
}
template <scalar_type T>
template <expr::number L, expr::number H>
Tensor<T>& Tensor<T>::clamp_(L lo, H hi) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return expr::clamp(old, lo, hi); }, true, "clamp_");
}
template <scalar_type T>
template <expr::expression M, expr::number V>
Tensor<T>& Tensor<T>::masked_fill_(const M& mask, V value) {
  return detail::inplace_update(*this, [&](const Tensor& old) { return expr::masked_fill(old, mask, value); }, false, "masked_fill_");
}

}  // namespace dl
