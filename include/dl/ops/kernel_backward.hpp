// dl/ops/kernel_backward.hpp — recording the backward rules of materialising kernels (matmul,
// convolution, pooling): a graph node holding version-checked saved tensors and a rule.
#pragma once

#include <string>
#include <vector>

#include "../tensor.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// Records `rule` as out's backward when grad mode is on and any input requires grad. The rule is
/// called as rule(grad, saved, needs) and returns one gradient per input (null where none);
/// `saved` are the tensors given here, checked against in-place changes since the forward pass;
/// needs[i] says whether input i wants a gradient. Rules written with differentiable dl ops give
/// second derivatives (create_graph) for free.
template <class T, class F, class... Ins>
Tensor<T> record_kernel(Tensor<T> out, const char* name, std::vector<Tensor<T>> saved, F rule, const Ins&... inputs);
/// The same with `guarded`: tensors of any type the rule captured itself (index tensors), checked
/// against in-place changes but not passed to the rule.
template <class T, class F, class... Ins>
Tensor<T> record_kernel(Tensor<T> out, const char* name, std::vector<Tensor<T>> saved, std::vector<TensorImplPtr> guarded, F rule,
                        const Ins&... inputs);

// sum_to(g, shape), the gradient of a broadcast operand, is in dl/expr/reduce.hpp.

// ------------------------------------------------------------------------------ implementation

template <class T, class F>
class KernelBackward : public autograd::Node {
 public:
  KernelBackward(std::string name, const std::vector<Tensor<T>>& saved, const std::vector<TensorImplPtr>& guarded, F rule)
      : name_(std::move(name)), rule_(std::move(rule)) {
    saved_.reserve(saved.size());
    for (const auto& t : saved) saved_.emplace_back(t.defined() ? t.impl() : nullptr, name_);
    for (const auto& t : guarded) guards_.emplace_back(t, name_);
  }
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    const size_t n = next_edges().size();
    if (grads.empty() || !grads[0]) return std::vector<TensorImplPtr>(n);
    for (const auto& g : guards_) (void)g.unpack();
    std::vector<Tensor<T>> saved;
    saved.reserve(saved_.size());
    for (const auto& s : saved_) saved.emplace_back(s.unpack());
    std::vector<bool> needs(n);
    for (size_t i = 0; i < n; ++i) needs[i] = next_edges()[i].valid();
    std::vector<TensorImplPtr> out = rule_(Tensor<T>(grads[0]), saved, needs);
    out.resize(n);
    for (size_t i = 0; i < n; ++i)
      if (!needs[i]) out[i] = nullptr;
    return out;
  }
  void release_variables() override {
    for (auto& s : saved_) s.release();
    for (auto& s : guards_) s.release();
  }

 private:
  std::string name_;
  F rule_;
  std::vector<autograd::SavedTensor> saved_, guards_;
};

template <class T, class F, class... Ins>
Tensor<T> record_kernel(Tensor<T> out, const char* name, std::vector<Tensor<T>> saved, std::vector<TensorImplPtr> guarded, F rule,
                        const Ins&... inputs) {
  if (autograd::any_requires_grad(inputs...)) {
    auto node = std::make_shared<KernelBackward<T, F>>(name, saved, guarded, std::move(rule));
    (node->mutable_next_edges().push_back(inputs.defined() ? autograd::gradient_edge(inputs.impl()) : autograd::Edge{}),
     ...);
    autograd::set_history(out, node);
  }
  return out;
}

template <class T, class F, class... Ins>
Tensor<T> record_kernel(Tensor<T> out, const char* name, std::vector<Tensor<T>> saved, F rule, const Ins&... inputs) {
  return record_kernel(std::move(out), name, std::move(saved), {}, std::move(rule), inputs...);
}

}  // namespace dl::detail
