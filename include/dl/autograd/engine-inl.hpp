// dl/autograd/engine-inl.hpp — the bodies of dl/autograd/engine.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "engine.hpp"

namespace dl::autograd::detail {

/// Anomaly mode's run of a node: errors it raises name the forward call that created it, and
/// gradients it returns are checked for NaN and infinity.
[[gnu::noinline]] DL_API std::vector<TensorImplPtr> apply_with_anomaly_checks(Node& node, std::vector<TensorImplPtr> in) {
  const auto where = [&] {
    return dl::detail::cat("Error detected in ", node.name(), ". The forward call that created it: ",
                           describe_site(node.forward_site()), ".");
  };
  std::vector<TensorImplPtr> out;
  try {
    out = node.apply(std::move(in));
  } catch (const Error& e) {
    throw Error(dl::detail::cat(e.what(), "\n", where()));
  }
  if (!is_anomaly_check_nan_enabled()) return out;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i]) continue;
    bool nan = false, inf = false;
    TensorImplPtr g = out[i];
    if (g->storage->device().is_cuda()) {  // scanned from a host copy
      NoGradGuard no_grad;
      g = grad_ops(g->dtype).to_cpu(g);
    }
    if (g->dtype == ScalarType::Float) scan_nonfinite<float>(*g, &nan, &inf);
    else if (g->dtype == ScalarType::Double) scan_nonfinite<double>(*g, &nan, &inf);
    DL_CHECK(!nan && !inf, "Function '", node.name(), "' returned ", nan ? "nan" : "inf", " values in its ", i,
             "th output.\n", where());
  }
  return out;
}

DL_API void check_grad_shape(const Node& producer, size_t index, const TensorImplPtr& g, const Node& consumer, uint32_t input_nr) {
  if (input_nr >= consumer.outputs().size()) return;
  const Shape& expected = consumer.outputs()[input_nr].shape;
  DL_CHECK(g->shape == expected, "Function ", producer.name(), " returned an invalid gradient at index ", index,
           " - got ", g->shape, " but expected shape compatible with ", expected);
}
}  // namespace dl::autograd::detail

namespace dl::autograd {

DL_API std::vector<TensorImplPtr> AccumulateGrad::apply(std::vector<TensorImplPtr> grads) {
  TensorImplPtr g = std::move(grads[0]);
  if (!g) return {};
  auto& m = detail::meta(variable_);
  for (const auto& hook : m.hooks)
    if (TensorImplPtr r = hook(g)) g = std::move(r);
  std::unique_lock lock(m.mutex);
  if (m.sparse_grad) {  // a dense gradient meets a sparse one: the sum is dense (PyTorch's rule)
    m.grad = m.sparse_grad->to_dense(*m.sparse_grad);
    m.sparse_grad.reset();
  }
  if (!m.grad) {
    m.grad = detail::owned_grad(std::move(g));
  } else if (is_grad_enabled()) {
    m.grad = detail::add_grads(m.grad, g);
  } else {
    grad_ops(g->dtype).add_inplace(m.grad, g);
  }
  detail::run_post_accumulate_hooks(m, lock);
  return {};
}

namespace detail {
/// The callbacks queued during the backward pass running on this thread (depth: nested passes).
struct BackwardCallbacks {
  int depth = 0;
  std::vector<std::function<void()>> queued;
};
inline BackwardCallbacks& backward_callbacks() {
  thread_local BackwardCallbacks c;
  return c;
}
}  // namespace detail

DL_API void queue_callback(std::function<void()> fn) {
  auto& c = detail::backward_callbacks();
  DL_CHECK(c.depth > 0, "autograd::queue_callback: no backward pass is running on this thread (queue callbacks from hooks)");
  c.queued.push_back(std::move(fn));
}

DL_API std::vector<TensorImplPtr> run_backward(const std::vector<Edge>& roots, std::vector<TensorImplPtr> grads,
                                               bool keep_graph, bool create_graph, const std::vector<Edge>* captures) {
  // The outermost pass runs the callbacks queued during it (queue_callback) when it ends.
  auto& callbacks = detail::backward_callbacks();
  struct Depth {
    detail::BackwardCallbacks& c;
    explicit Depth(detail::BackwardCallbacks& cb) : c(cb) {
      if (c.depth++ == 0) c.queued.clear();
    }
    ~Depth() {
      if (--c.depth == 0) c.queued.clear();
    }
  } depth(callbacks);
  std::vector<TensorImplPtr> captured = run_graph(roots, std::move(grads), keep_graph, create_graph, captures);
  if (callbacks.depth == 1)
    for (size_t i = 0; i < callbacks.queued.size(); ++i) {  // a callback may queue another
      auto fn = std::move(callbacks.queued[i]);
      fn();
    }
  return captured;
}

DL_API std::vector<TensorImplPtr> stand_in_grads(const TensorImplPtr& y, const TensorImplPtr& g,
                                                 const std::vector<std::shared_ptr<AliasBackward>>& stand_ins,
                                                 const std::vector<Edge>& edges) {
  std::vector<Edge> captures(stand_ins.size());
  for (size_t k = 0; k < stand_ins.size(); ++k)
    if (stand_ins[k]) captures[k] = {stand_ins[k], 0};
  const Edge root = gradient_edge(y);
  std::vector<TensorImplPtr> got(stand_ins.size());
  // The stand-ins have no edges yet: the pass ends at them, whatever lies behind the leaves. The
  // graph is kept: the gradients' own graph may run through it (the adjoint of x in (x * x) * x
  // reads the intermediate x * x).
  if (root.valid()) got = run_graph({root}, {g}, /*keep_graph=*/true, /*create_graph=*/true, &captures);
  for (size_t k = 0; k < stand_ins.size(); ++k)
    if (stand_ins[k]) stand_ins[k]->link(edges[k]);
  return got;
}

DL_API std::vector<TensorImplPtr> run_graph(const std::vector<Edge>& roots, std::vector<TensorImplPtr> grads,
                                            bool keep_graph, bool create_graph, const std::vector<Edge>* captures) {
  // Dependencies: how many edges lead into each node.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  std::vector<Node*> order;  // discovery order, for the reachability pass
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  // With captures, only nodes that lead to a captured edge run.
  std::unordered_map<Node*, bool> needed;
  std::unordered_map<Node*, std::vector<size_t>> capture_at;
  if (captures) {
    for (size_t i = 0; i < captures->size(); ++i)
      if ((*captures)[i].valid()) capture_at[(*captures)[i].fn.get()].push_back(i);
    std::function<bool(Node*)> reach = [&](Node* n) -> bool {
      if (auto it = needed.find(n); it != needed.end()) return it->second;
      needed[n] = false;
      bool r = false;
      for (const Edge& e : n->next_edges())
        if (e.valid() && (capture_at.count(e.fn.get()) | reach(e.fn.get()))) r = true;
      return needed[n] = r;
    };
    for (Node* n : order) reach(n);
  }

  std::unordered_map<Node*, std::vector<TensorImplPtr>> buffers;
  auto deposit = [&](const Node* from, size_t index, const Edge& e, TensorImplPtr g) {
    auto& buf = buffers[e.fn.get()];
    if (buf.size() <= e.input_nr) buf.resize(e.input_nr + 1);
    if (from) detail::check_grad_shape(*from, index, g, *e.fn, e.input_nr);
    buf[e.input_nr] = buf[e.input_nr] ? detail::add_grads(buf[e.input_nr], g) : std::move(g);
  };
  auto cmp = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(cmp)> ready(cmp);
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    deposit(nullptr, i, roots[i], std::move(grads[i]));
  }
  {
    std::unordered_set<Node*> queued;
    for (const Edge& e : roots)
      if (e.valid() && deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn);
  }

  std::vector<TensorImplPtr> captured(captures ? captures->size() : 0);
  {
    const bool prev = is_grad_enabled();
    set_grad_enabled(create_graph);
    bool& sparse = detail::sparse_grads_allowed();
    const bool prev_sparse = sparse;
    sparse = !captures && !create_graph;
    struct Restore {
      bool prev, prev_sparse;
      bool& sparse;
      ~Restore() {
        set_grad_enabled(prev);
        sparse = prev_sparse;
      }
    } restore{prev, prev_sparse, sparse};

    while (!ready.empty()) {
      std::shared_ptr<Node> node = ready.top();
      ready.pop();
      std::vector<TensorImplPtr> in = std::move(buffers[node.get()]);
      buffers.erase(node.get());
      in.resize(std::max(in.size(), node->outputs().size()));
      for (const auto* hooks : {&node->pre_hooks(), &node->last_hooks()})
        for (const auto& [nr, hook] : *hooks)
          if (nr < in.size() && in[nr])
            if (TensorImplPtr r = hook(in[nr])) in[nr] = std::move(r);
      if (captures) {
        if (auto it = capture_at.find(node.get()); it != capture_at.end())
          for (size_t i : it->second) captured[i] = in[(*captures)[i].input_nr];
        if (!needed[node.get()]) continue;
      }
      const bool any = std::any_of(in.begin(), in.end(), [](const auto& g) { return bool(g); });
      std::vector<TensorImplPtr> out;
      if (any) {
        const profiler::detail::RecordScope scope(profiler::detail::EventKind::backward, [&] { return node->name(); }, in);
        out = is_anomaly_enabled() ? detail::apply_with_anomaly_checks(*node, std::move(in)) : node->apply(std::move(in));
        if (!keep_graph) node->release_variables();
      }
      const auto& edges = node->next_edges();
      for (size_t i = 0; i < edges.size(); ++i) {
        const Edge& e = edges[i];
        if (!e.valid()) continue;
        if (i < out.size() && out[i]) deposit(node.get(), i, e, std::move(out[i]));
        if (--deps[e.fn.get()] == 0) ready.push(e.fn);
      }
    }
  }
  return captured;
}

}  // namespace dl::autograd
