// dl/tensor/autograd.hpp — Tensor's autograd members (requires_grad_, grad, backward, retain_grad,
// register_hook, grad_fn...) and GradSlot, the assignable gradient slot; the engine they call is
// dl/autograd/engine.hpp.
#pragma once

#include <functional>
#include <memory>

#include "../autograd/engine.hpp"
#include "tensor.hpp"

namespace dl {

/// Assignable view of a tensor's gradient slot (see Tensor::mutable_grad).
template <scalar_type T>
class GradSlot {
 public:
  explicit GradSlot(TensorImplPtr owner) : owner_(std::move(owner)) {}
  GradSlot& operator=(const Tensor<T>& g) {
    if (g.defined())
      DL_CHECK(g.shape() == owner_->shape, "assigned grad has data of a different size: grad shape ", g.shape(),
               " but the tensor has shape ", owner_->shape);
    auto& m = autograd::detail::meta(owner_);
    m.grad = g.impl();
    m.sparse_grad.reset();
    return *this;
  }
  Tensor<T> get() const { return owner_->autograd ? Tensor<T>(owner_->autograd->grad) : Tensor<T>(); }
  operator Tensor<T>() const { return get(); }
  bool defined() const { return get().defined(); }

 private:
  TensorImplPtr owner_;
};

// ------------------------------------------------------------------------------ Tensor members

template <scalar_type T>
Tensor<T>& Tensor<T>::requires_grad_(bool requires_grad) {
  if (!requires_grad && !is_leaf())
    throw Error("you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  if constexpr (!floating_scalar<T>) {
    DL_CHECK(!requires_grad, "only Tensors of floating point dtype can require gradients (got ", dtype_name(dtype_of<T>), ")");
  }
  autograd::register_grad_ops<T>();
  autograd::detail::meta(impl_).requires_grad = requires_grad;
  return *this;
}
template <scalar_type T>
bool Tensor<T>::requires_grad() const {
  return impl_ && autograd::detail::requires_grad(*impl_);
}
template <scalar_type T>
Tensor<T> Tensor<T>::grad() const {
  if (!impl_->autograd) return Tensor<T>();
  DL_CHECK(!impl_->autograd->sparse_grad, "grad(): this tensor's gradient is sparse (an nn::Embedding with sparse = true); "
           "read it with sparse_grad() (.to_dense() for a dense copy), and step it with optim::SparseAdam, SGD or Adagrad");
  return Tensor<T>(impl_->autograd->grad);
}
template <scalar_type T>
GradSlot<T> Tensor<T>::mutable_grad() const {
  return GradSlot<T>(impl_);
}
template <scalar_type T>
bool Tensor<T>::is_leaf() const {
  if (impl_->view_base) autograd::detail::refresh_view(impl_);
  return !impl_->autograd || !impl_->autograd->grad_fn;
}
template <scalar_type T>
std::shared_ptr<autograd::Node> Tensor<T>::grad_fn() const {
  if (impl_->view_base) autograd::detail::refresh_view(impl_);
  return impl_->autograd ? impl_->autograd->grad_fn : nullptr;
}
template <scalar_type T>
uint32_t Tensor<T>::output_nr() const {
  if (impl_->view_base) autograd::detail::refresh_view(impl_);
  return impl_->autograd ? impl_->autograd->output_nr : 0;
}
template <scalar_type T>
void Tensor<T>::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  DL_CHECK(requires_grad(), "element 0 of tensors does not require grad and does not have a grad_fn");
  DL_CHECK(gradient.defined() && gradient.shape() == shape(), "Mismatch in shape: grad_output[0] has a shape of ",
           gradient.defined() ? gradient.shape() : Shape{}, " and output[0] has a shape of ", shape());
  autograd::run_backward({autograd::gradient_edge(impl_)}, {gradient.impl()}, retain_graph || create_graph, create_graph);
}
template <scalar_type T>
void Tensor<T>::backward(bool retain_graph, bool create_graph) const {
  DL_CHECK(numel() == 1, "grad can be implicitly created only for scalar outputs (this tensor has shape ", shape(),
           "); pass a gradient: t.backward(gradient)");
  backward(ones<T>(shape()), retain_graph, create_graph);
}
template <scalar_type T>
void Tensor<T>::retain_grad() const {
  DL_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;
  auto& m = autograd::detail::meta(impl_);
  if (m.retains_grad) return;
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_;
  m.grad_fn->add_pre_hook(m.output_nr, [weak](const TensorImplPtr& g) -> TensorImplPtr {
    if (auto t = weak.lock()) {
      auto& meta = autograd::detail::meta(t);
      meta.grad = meta.grad ? autograd::detail::add_grads(meta.grad, g) : autograd::grad_ops(g->dtype).clone(g);
    }
    return nullptr;
  }, /*last=*/true);
}
template <scalar_type T>
void Tensor<T>::register_hook(std::function<Tensor(const Tensor&)> fn) const {
  DL_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  autograd::GradHook hook = [fn = std::move(fn)](const TensorImplPtr& g) -> TensorImplPtr {
    Tensor r = fn(Tensor(g));
    return r.defined() ? r.impl() : nullptr;
  };
  if (impl_->view_base) autograd::detail::refresh_view(impl_);
  auto& m = autograd::detail::meta(impl_);
  if (m.grad_fn) m.grad_fn->add_pre_hook(m.output_nr, std::move(hook));
  else m.hooks.push_back(std::move(hook));
}

template <scalar_type T>
void Tensor<T>::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const {
  DL_CHECK(requires_grad() && is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  std::weak_ptr<TensorImpl> self = impl_;  // the hook lives in this tensor's own autograd slot
  autograd::add_post_accumulate_grad_hook(impl_, nullptr, [self, fn = std::move(fn)] {
    if (auto p = self.lock()) fn(Tensor(p));
  });
}

}  // namespace dl
