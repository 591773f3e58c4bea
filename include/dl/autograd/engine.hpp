// dl/autograd/engine.hpp — the backward engine (reverse topological execution of recorded nodes,
// gradient accumulation, hooks, retain_graph / create_graph) and dl::autograd::grad. It works on
// TensorImplPtr through the per-dtype GradOps table; Tensor's autograd members are in
// dl/tensor/autograd.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "../config.hpp"
#include "../expr/boundaries.hpp"
#include "../profiler_hook.hpp"
#include "graph.hpp"

namespace dl {

namespace autograd {
namespace detail {

/// Whether the backward pass running on this thread may leave sparse gradients in leaves: a pass
/// that accumulates (backward()), not autograd::grad (which returns dense gradients) nor one that
/// records a graph of the gradients (create_graph).
inline bool& sparse_grads_allowed() {
  thread_local bool allowed = false;
  return allowed;
}

/// Runs m's post-accumulate hooks after a gradient was accumulated into it; `lock` (held on
/// m.mutex) is released first: a hook may read the gradient or remove hooks.
inline void run_post_accumulate_hooks(AutogradMeta& m, std::unique_lock<std::mutex>& lock) {
  if (m.post_accumulate_hooks.empty()) return;
  auto hooks = m.post_accumulate_hooks;
  lock.unlock();
  for (const auto& [key, hook] : hooks) hook();
}

/// a + b (a new tensor; recorded when grad mode is on, i.e. under create_graph).
inline TensorImplPtr add_grads(const TensorImplPtr& a, const TensorImplPtr& b) {
  return grad_ops(a->dtype).add(a, b);
}

/// A gradient the caller may keep as its own: g itself when nothing else can see it, else a copy.
inline TensorImplPtr owned_grad(TensorImplPtr g) {
  const bool exclusive = g.use_count() == 1 && g->storage.use_count() == 1 && is_contiguous(g->shape, g->strides);
  if (exclusive || is_grad_enabled()) return g;
  return grad_ops(g->dtype).clone(g);
}

/// Evaluates an expression one op at a time, each op a recorded single-op node. The create_graph
/// path uses it: a fused node for an adjoint expression would have an adjoint expression of its
/// own, and so on without end; single-op nodes form a finite set of types.
template <class N>
auto stepwise(const N& n) {
  if constexpr (!expr::is_apply_v<N>) {
    return n;
  } else {
    return [&]<size_t... Is>(std::index_sequence<Is...>) {
      using V = expr::value_type_t<N>;
      auto kids = expr::make_tuple(stepwise(expr::get<Is>(n.args))...);
      using A = expr::Apply<std::remove_cvref_t<decltype(n.op)>, std::remove_cvref_t<decltype(expr::get<Is>(kids))>...>;
      return expr::Leaf<V>{Tensor<V>(A(n.op, expr::get<Is>(kids)...))};
    }(std::make_index_sequence<N::arity>{});
  }
}

/// Whether a floating gradient holds a NaN (*nan) or an infinity (*inf); any strides.
template <class T>
void scan_nonfinite(const TensorImpl& t, bool* nan, bool* inf) {
  const int nd = t.shape.size();
  const T* base = static_cast<const T*>(t.data());
  auto walk = [&](auto& self, int d, const T* p) -> void {
    if (d == nd) {
      *nan |= std::isnan(*p);
      *inf |= std::isinf(*p);
      return;
    }
    for (int64_t i = 0; i < t.shape[d]; ++i) self(self, d + 1, p + i * t.strides[d]);
  };
  if (numel(t.shape) > 0) walk(walk, 0, base);
}

}  // namespace detail

}  // namespace autograd
namespace detail {
template <class T>
std::shared_ptr<autograd::Node> view_of_base_node(const TensorImplPtr& view);  // views.hpp
}  // namespace detail
namespace autograd {

template <class T>
void register_grad_ops() {
  static const bool registered = [] {
    if constexpr (floating_scalar<T>) {
      GradOps& ops = detail::grad_ops_slot(dtype_of<T>);
      ops.add = [](const TensorImplPtr& a, const TensorImplPtr& b) -> TensorImplPtr {
        if (is_grad_enabled()) return Tensor<T>(Tensor<T>(a) + Tensor<T>(b)).impl();
        return expr::evaluate_raw(expr::apply(expr::Add{}, Tensor<T>(a), Tensor<T>(b))).impl();
      };
      ops.add_inplace = [](const TensorImplPtr& dst, const TensorImplPtr& src) {
        const Tensor<T> d(dst);
        expr::assign(d, expr::apply(expr::Add{}, d, Tensor<T>(src)));
        d.bump_version();
      };
      ops.clone = [](const TensorImplPtr& t) -> TensorImplPtr {
        return expr::evaluate_raw(expr::apply(expr::Copy{}, Tensor<T>(t))).impl();
      };
      ops.view_of_base = &dl::detail::view_of_base_node<T>;
      ops.to_cpu = [](const TensorImplPtr& t) -> TensorImplPtr { return Tensor<T>(t).to(kCPU).impl(); };
    }
    return true;
  }();
  (void)registered;
}

/// Runs fn after a gradient has been accumulated into the leaf t's grad() (each backward pass that
/// reaches t); `key` identifies the hook for remove_post_accumulate_grad_hooks.
inline void add_post_accumulate_grad_hook(const TensorImplPtr& t, const void* key, std::function<void()> fn) {
  auto& m = detail::meta(t);
  DL_CHECK(m.requires_grad && !m.grad_fn, "register_post_accumulate_grad_hook: only leaf tensors that require grad accumulate gradients");
  std::lock_guard lock(m.mutex);
  m.post_accumulate_hooks.emplace_back(key, std::move(fn));
}
/// Removes t's post-accumulate hooks registered with `key`.
inline void remove_post_accumulate_grad_hooks(const TensorImplPtr& t, const void* key) {
  if (!t || !t->autograd) return;
  auto& m = *t->autograd;
  std::lock_guard lock(m.mutex);
  std::erase_if(m.post_accumulate_hooks, [&](const auto& h) { return h.first == key; });
}

/// Runs fn when the backward pass now running ends, after every gradient was accumulated and
/// before backward() returns (PyTorch's Variable._execution_engine.queue_callback; DDP waits for
/// its all-reduces there). An exception it throws comes out of backward().
DL_API void queue_callback(std::function<void()> fn);

/// Runs backward from `roots` (edges) seeded with `grads`. With `captures`, gradients arriving at
/// those edges are returned instead of accumulated into leaves (autograd::grad).
DL_API std::vector<TensorImplPtr> run_backward(const std::vector<Edge>& roots, std::vector<TensorImplPtr> grads,
                                               bool keep_graph, bool create_graph, const std::vector<Edge>* captures = nullptr);
/// The gradients that a fused node's create_graph pass gives its leaves: `y` is the node's
/// expression evaluated again one op at a time over stand-ins of its leaves (`stand_ins[k]`, null
/// for a leaf that takes no gradient), seeded with `g`. Each stand-in is then linked to `edges[k]`.
DL_API std::vector<TensorImplPtr> stand_in_grads(const TensorImplPtr& y, const TensorImplPtr& g,
                                                 const std::vector<std::shared_ptr<AliasBackward>>& stand_ins,
                                                 const std::vector<Edge>& edges);
/// run_backward's graph walk, without the end-of-pass callbacks.
DL_API std::vector<TensorImplPtr> run_graph(const std::vector<Edge>& roots, std::vector<TensorImplPtr> grads,
                                            bool keep_graph, bool create_graph, const std::vector<Edge>* captures);

/// Gradients of `outputs` with respect to `inputs` (PyTorch's torch.autograd.grad), returned
/// instead of accumulated into .grad(). grad_outputs defaults to ones for one-element outputs.
template <scalar_type T>
std::vector<Tensor<T>> grad(const std::vector<Tensor<T>>& outputs, const std::vector<Tensor<T>>& inputs,
                            const std::vector<Tensor<T>>& grad_outputs = {}, std::optional<bool> retain_graph = {},
                            bool create_graph = false, bool allow_unused = false);
/// grad({out}, {x}, {g}, ...) with braced lists, as libtorch code writes it (a braced list does not
/// deduce the vector overload's element type).
template <scalar_type T>
std::vector<Tensor<T>> grad(std::initializer_list<Tensor<T>> outputs, std::initializer_list<Tensor<T>> inputs,
                            std::initializer_list<Tensor<T>> grad_outputs = {}, std::optional<bool> retain_graph = {},
                            bool create_graph = false, bool allow_unused = false) {
  return grad(std::vector<Tensor<T>>(outputs), std::vector<Tensor<T>>(inputs), std::vector<Tensor<T>>(grad_outputs),
              retain_graph, create_graph, allow_unused);
}

}  // namespace autograd

namespace autograd {

template <scalar_type T>
std::vector<Tensor<T>> grad(const std::vector<Tensor<T>>& outputs, const std::vector<Tensor<T>>& inputs,
                            const std::vector<Tensor<T>>& grad_outputs, std::optional<bool> retain_graph,
                            bool create_graph, bool allow_unused) {
  DL_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "grad requires one grad_output per output: got ",
           grad_outputs.size(), " for ", outputs.size(), " outputs");
  std::vector<Edge> roots;
  std::vector<TensorImplPtr> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor<T>& o = outputs[i];
    DL_CHECK(o.requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(gradient_edge(o.impl()));
    if (grad_outputs.empty()) {
      DL_CHECK(o.numel() == 1, "grad can be implicitly created only for scalar outputs (output ", i, " has shape ", o.shape(), ")");
      seeds.push_back(ones<T>(o.shape()).impl());
    } else {
      DL_CHECK(grad_outputs[i].shape() == o.shape(), "Mismatch in shape: grad_output[", i, "] has a shape of ",
               grad_outputs[i].shape(), " and output[", i, "] has a shape of ", o.shape());
      seeds.push_back(grad_outputs[i].impl());
    }
  }
  std::vector<Edge> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DL_CHECK(inputs[i].requires_grad(), "One of the differentiated Tensors (input ", i, ") does not require grad");
    captures.push_back(gradient_edge(inputs[i].impl()));
  }
  auto got = run_backward(roots, std::move(seeds), retain_graph.value_or(create_graph), create_graph, &captures);
  std::vector<Tensor<T>> result;
  for (size_t i = 0; i < got.size(); ++i) {
    DL_CHECK(got[i] || allow_unused, "One of the differentiated Tensors (input ", i,
             ") appears to not have been used in the graph. Set allow_unused=true if this is the desired behavior.");
    result.push_back(got[i] ? Tensor<T>(got[i]) : Tensor<T>());
  }
  return result;
}

/// The create_graph pass (a differentiable gradient). A single-op node builds its adjoints as
/// expressions of its operands and evaluates them one op at a time. A fused node instead evaluates
/// its expression again one op at a time, over stand-ins of its leaves, and runs backward through
/// those single-op nodes: the same rules, without instantiating an adjoint expression per leaf of
/// every fused expression (which made the create_graph path most of the code a fused expression
/// compiled to: tests/distributions.cpp 176 -> 138 s).
template <class N>
void ExprBackward<N>::backward_graph(const Tensor<T>& g, std::vector<TensorImplPtr>& out) {
  if constexpr (N::depth == 1) {
    const std::array<Shape, kLeaves> shapes = leaf_shapes();
    detail::backprop_expr<0>(*expr_, expr::Leaf<T>{g}, [&](auto K, const auto& adj) {
      if (!next_edges()[K].valid()) return;
      using A = std::remove_cvref_t<decltype(adj)>;
      using L = expr::value_type_t<A>;
      static_assert(!expr::is_scalar_node_v<A>, "an adjoint is never a bare number");
      Tensor<L> full = detail::stepwise(adj).tensor;
      out[K] = dl::detail::sum_to(full, shapes[K]).impl();
    });
  } else {
    N e = *expr_;
    std::vector<std::shared_ptr<AliasBackward>> stand_ins(kLeaves);
    size_t k = 0;
    expr::for_each_leaf_ref(e, [&]<class L>(Tensor<L>& t) {
      Tensor<L> alias = t.detach();
      if constexpr (floating_scalar<L>) {
        if (next_edges()[k].valid()) {
          stand_ins[k] = std::make_shared<AliasBackward>(t.shape(), dtype_of<L>);
          auto& m = detail::meta(alias.impl());
          m.grad_fn = stand_ins[k];
          m.output_nr = 0;
        }
      }
      t = alias;
      ++k;
    });
    const Tensor<T> y = detail::stepwise(e).tensor;
    out = stand_in_grads(y.impl(), g.impl(), stand_ins, next_edges());
  }
}

}  // namespace autograd
}  // namespace dl

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(reduce, void dl::autograd::register_grad_ops<float>())
DL_EXTERN_TEMPLATE(reduce, void dl::autograd::register_grad_ops<double>())

#if DL_HEADER_ONLY
#include "engine-inl.hpp"
#endif
