// dl/autograd/graph.hpp — recording history: gradient edges, AccumulateGrad for leaves, and
// ExprBackward, the node of a fused elementwise expression. Its backward is one fused pass: for
// each element the forward values are recomputed from the leaves in registers and the op rules push
// the gradient to every leaf at once; nothing elementwise was stored by the forward pass.
#pragma once

#include <array>
#include <optional>
#include <sstream>

#include "../config.hpp"
#include "../expr/reduce_kernels.hpp"
#include "meta.hpp"

namespace dl::autograd {

// ---------------------------------------------------------------------------------------------
// Saved tensors, edges, recording
// ---------------------------------------------------------------------------------------------

inline SavedTensor::SavedTensor(TensorImplPtr impl, std::string saved_by)
    : impl_(std::move(impl)), version_(impl_ ? impl_->storage->version() : 0), saved_by_(std::move(saved_by)) {}

namespace detail {
inline void throw_released() {
  throw Error(
      "Trying to backward through the graph a second time (or directly access saved tensors after they "
      "have already been freed). Saved intermediate values of the graph are freed when you call "
      "backward() or autograd::grad(). Pass retain_graph = true if you need to backward through the "
      "graph a second time.");
}
inline void check_version(const TensorImpl& t, uint32_t saved, const std::string& by) {
  const uint32_t now = t.storage->version();
  DL_CHECK(now == saved,
           "one of the variables needed for gradient computation has been modified by an inplace "
           "operation: [",
           dtype_name(t.dtype), " ", t.shape, "], which is saved by ", by, ", is at version ", now,
           "; expected version ", saved, " instead. ",
           is_anomaly_enabled()
               ? "Hint: the forward call named below created the node that failed to compute its gradient. The "
                 "variable in question was changed in there or anywhere later. Good luck!"
               : "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                 "dl::autograd::set_detect_anomaly(true).");
}
}  // namespace detail

inline const TensorImplPtr& SavedTensor::unpack() const {
  if (released_) detail::throw_released();
  if (impl_) detail::check_version(*impl_, version_, saved_by_);
  return impl_;
}

namespace detail {
inline AutogradMeta& meta(const TensorImplPtr& t) {
  if (!t->autograd) t->autograd = std::make_shared<AutogradMeta>();
  return *t->autograd;
}
inline bool requires_grad(const TensorImpl& t) {
  return (t.autograd && (t.autograd->requires_grad || t.autograd->grad_fn)) || (t.view_base && requires_grad(*t.view_base));
}
void refresh_view(const TensorImplPtr& t);
}  // namespace detail

/// Accumulates incoming gradients into a leaf's grad().
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(TensorImplPtr variable) : variable_(std::move(variable)) {
    mutable_outputs().push_back({variable_->shape, uint8_t(variable_->dtype)});
  }
  std::string name() const override { return "AccumulateGrad"; }
  DL_API std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override;  // engine.hpp
  const TensorImplPtr& variable() const { return variable_; }

 private:
  TensorImplPtr variable_;
};

/// The create_graph pass's stand-in for one leaf of a fused node (ExprBackward::backward_graph):
/// passes its gradient on unchanged to the edge the fused node recorded for that leaf. It is
/// linked to that edge only once the leaf's gradient has been taken, so that pass stops here.
class AliasBackward : public Node {
 public:
  AliasBackward(const Shape& shape, ScalarType dtype) { mutable_outputs().push_back({shape, uint8_t(dtype)}); }
  std::string name() const override { return "AliasBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    grads.resize(1);
    return grads;
  }
  void link(const Edge& e) { mutable_next_edges().assign(1, e); }
};

/// The edge a gradient for tensor t must follow: its grad_fn, or the AccumulateGrad of a
/// trainable leaf, or none.
inline Edge gradient_edge(const TensorImplPtr& t) {
  if (t && t->view_base) detail::refresh_view(t);
  if (!t || !t->autograd) return {};
  auto& m = *t->autograd;
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  std::lock_guard lock(m.mutex);
  auto acc = m.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

/// Per-dtype gradient arithmetic for the (type-erased) engine. Filled by register_grad_ops<T>
/// for the element types that take part in autograd, so a program that trains in float never
/// compiles the double versions.
struct GradOps {
  TensorImplPtr (*add)(const TensorImplPtr&, const TensorImplPtr&) = nullptr;  // recorded under grad mode
  void (*add_inplace)(const TensorImplPtr& dst, const TensorImplPtr& src) = nullptr;
  TensorImplPtr (*clone)(const TensorImplPtr&) = nullptr;
  /// The grad_fn of `view` read straight from its base's current history (views.hpp).
  std::shared_ptr<Node> (*view_of_base)(const TensorImplPtr& view) = nullptr;
  /// A host copy (anomaly mode scans a CUDA gradient for NaN and infinity on the CPU).
  TensorImplPtr (*to_cpu)(const TensorImplPtr&) = nullptr;
};
namespace detail {
inline GradOps& grad_ops_slot(ScalarType t) {
  static GradOps table[kNumScalarTypes];
  return table[int(t)];
}
}  // namespace detail
inline const GradOps& grad_ops(ScalarType t) {
  const GradOps& ops = detail::grad_ops_slot(t);
  DL_CHECK(ops.add, "autograd: gradients of ", dtype_name(t), " tensors are not supported");
  return ops;
}
template <class T>
void register_grad_ops();  // engine.hpp

namespace detail {
/// Re-derives the history of a view whose storage changed in place since its grad_fn was set
/// (the base, or another view of it, was written): the view now reads the base's current value,
/// so its gradient goes through the base's current grad_fn. PyTorch does the same on access.
inline void refresh_view(const TensorImplPtr& t) {
  const TensorImpl& base = *t->view_base;
  if (!requires_grad(base)) return;
  auto& m = meta(t);
  if (m.grad_fn && m.view_version == t->storage->version()) return;
  if (m.requires_grad && !m.grad_fn) return;  // made a leaf by the user
  m.grad_fn = grad_ops(t->dtype).view_of_base(t);
  m.output_nr = 0;
  m.view_version = t->storage->version();
}
}  // namespace detail

/// Makes `node` the grad_fn of `out` (its output `output_nr`).
template <class T>
void set_history(const Tensor<T>& out, const std::shared_ptr<Node>& node, uint32_t output_nr = 0) {
  register_grad_ops<T>();
  auto& m = detail::meta(out.impl());
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.view_version = out.impl()->storage->version();
  auto& outs = node->mutable_outputs();
  if (outs.size() <= output_nr) outs.resize(output_nr + 1);
  outs[output_nr] = {out.shape(), uint8_t(dtype_of<T>)};
}

/// True when grad mode is on and any of the tensors requires grad.
template <class... Ts>
bool any_requires_grad(const Tensor<Ts>&... ts) {
  return is_grad_enabled() && ((ts.defined() && detail::requires_grad(*ts.impl())) || ...);
}

// ---------------------------------------------------------------------------------------------
// Fused expressions
// ---------------------------------------------------------------------------------------------

namespace detail {

template <class List, size_t K>
struct list_at;
template <class T, class... Ts>
struct list_at<expr::type_list<T, Ts...>, 0> {
  using type = T;
};
template <class T, class... Ts, size_t K>
struct list_at<expr::type_list<T, Ts...>, K> : list_at<expr::type_list<Ts...>, K - 1> {};

/// The element type of each leaf of a leaf list, and whether it takes a gradient.
template <class List>
struct leaf_dtypes;
template <class... Ts>
struct leaf_dtypes<expr::type_list<Ts...>> {
  static constexpr std::array<ScalarType, sizeof...(Ts)> dtype{dtype_of<Ts>...};
  static constexpr std::array<bool, sizeof...(Ts)> floating{floating_scalar<Ts>...};
};

/// Whether a leaf list holds a 16-bit float (its SIMD stores narrow, so they never stream).
template <class List>
inline constexpr bool has_half_leaf = false;
template <class... Ts>
inline constexpr bool has_half_leaf<expr::type_list<Ts...>> = (half_float<Ts> || ...);

/// Writes the adjoints of the selected leaves (outs[k] non-null) in one pass.
template <class View, class GView>
struct BackwardBody {
  View src;
  GView g;
  void* outs[View::leaves];
  int64_t st[kMaxDims];
  int64_t row_off = 0;
  bool stream = false;  // streaming stores (large gradients, see expr::kStreamBytes)

  DL_HD DL_INLINE void seek(const int64_t* idx, int nouter) {
    src.seek(idx, nouter);
    g.seek(idx, nouter);
    row_off = 0;
    for (int d = 0; d < nouter; ++d) row_off += idx[d] * st[d];
  }
  template <bool Simd, expr::Access A>
  DL_HD DL_INLINE void step(int64_t j) {
    const auto tape = src.template tape<A, Simd>(j);
    expr::acc_t<View, Simd> acc{};
    src.template backprop<0, Simd>(tape, g.template at<A, Simd>(j), acc);
    expr::static_for<View::leaves>([&](auto k) {
      using L = typename list_at<typename View::leaf_types, k>::type;
      if constexpr (floating_scalar<L>) {
        if (outs[k]) {
          L* p = static_cast<L*>(outs[k]) + row_off + j;
          if constexpr (Simd && half_float<L>) {
#if !defined(__CUDACC__)
            expr::narrow_lanes(p, expr::get<k>(acc));
#endif
          } else if constexpr (Simd) {
            if (stream) expr::stream_store(p, expr::get<k>(acc));
            else expr::get<k>(acc).store_unaligned(p);
          } else {
            *p = expr::get<k>(acc);
          }
        }
      }
    });
  }
  DL_INLINE int64_t first_align_peel(int64_t j) const {
    using E = typename View::simd_type;
    for (size_t k = 0; k < View::leaves; ++k)
      if (outs[k]) return expr::align_peel(static_cast<const E*>(outs[k]) + row_off + j);
    return 0;
  }
  /// Elements [j0, j1) of the current row; `lanes` false keeps to the scalar loop (Strided rows).
  template <expr::Access A>
  DL_HD DL_INLINE void run(int64_t j0, int64_t j1, bool lanes = true) {
    int64_t j = j0;
    using E = typename View::simd_type;
    if constexpr (A != expr::Access::Strided && !std::is_void_v<E> && std::is_same_v<E, typename GView::simd_type>) {
      constexpr int64_t W = expr::batch<E>::size;
      if (lanes && stream)  // every output is a fresh allocation laid out alike: one peel aligns them all
        for (const int64_t peel = std::min(j1, j + first_align_peel(j)); j < peel; ++j) step<false, A>(j);
      if (lanes)
        for (; j + W <= j1; j += W) step<true, A>(j);
    }
    for (; j < j1; ++j) step<false, A>(j);
  }
};

/// Converts an expression operand to element type T for the create_graph path.
template <class T, class N>
auto convert_node(const N& n) {
  if constexpr (std::is_same_v<expr::value_type_t<N>, T>) return n;
  else return expr::apply(expr::Cast<T>{}, n);
}

/// Calls f(integral_constant<K>, adjoint expression of leaf K) for every leaf that gradient
/// reaches: the same rules as the fused pass, applied to lazy expressions so that the result is
/// itself differentiable (create_graph).
template <size_t Offset, class N, class G, class F>
void backprop_expr(const N& n, const G& g, F&& f);

/// The adjoint of operand I of apply node n, pushed on down (when gradient flows into it). A
/// function of its own: nvcc does not discard an `if constexpr` branch inside a generic lambda.
template <size_t Offset, size_t I, class N, class G, class F, size_t... Is>
void backprop_operand(const N& n, const G& g, F& f, std::index_sequence<Is...>) {
  using V = expr::view_t<N>;
  if constexpr (V::template grad_flows<I>) {
    auto gi = n.op.template d<I>(convert_node<typename V::template input_t<Is>>(expr::get<Is>(n.args))..., n, g);
    backprop_expr<Offset + V::leaf_offsets[I]>(expr::get<I>(n.args), expr::as_node(gi), f);
  }
}

template <size_t Offset, class N, class G, class F>
void backprop_expr(const N& n, const G& g, F&& f) {
  if constexpr (expr::is_leaf_v<N>) {
    f(std::integral_constant<size_t, Offset>{}, g);
  } else if constexpr (expr::is_apply_v<N>) {
    expr::static_for<N::arity>([&](auto I) {
      backprop_operand<Offset, I>(n, g, f, std::make_index_sequence<N::arity>{});
    });
  }
}

template <class N>
void describe(std::ostream& os, const N& n, int& leaf) {
  if constexpr (expr::is_leaf_v<N>) os << 'x' << leaf++;
  else if constexpr (expr::is_scalar_node_v<N>) os << +n.value;
  else {
    os << N::op_name() << '(';
    expr::static_for<N::arity>([&](auto I) {
      if (I > 0) os << ", ";
      describe(os, expr::get<I>(n.args), leaf);
    });
    os << ')';
  }
}

/// Ops whose derivatives never read their inputs' values.
template <class Op>
inline constexpr bool linear_op = std::is_same_v<Op, expr::Add> || std::is_same_v<Op, expr::Sub> ||
                                  std::is_same_v<Op, expr::Neg> || std::is_same_v<Op, expr::Copy>;
template <class To>
inline constexpr bool linear_op<expr::Cast<To>> = true;

/// Sets read[k] for every leaf k whose value the backward pass of expression N reads: the leaves
/// under an operand whose value an op's derivative uses. Only those must be unchanged when the
/// backward pass runs (as PyTorch checks only the tensors an op saves): `y = x + 1` may be
/// followed by `x.add_(1)`, `y = where(m > 0, a, b)` may not be followed by a change of m.
template <class N>
void mark_value_reads(bool* read, bool value_read) {
  if constexpr (expr::is_leaf_v<N>) {
    read[0] = value_read;
  } else if constexpr (expr::is_apply_v<N>) {
    using V = expr::view_t<N>;
    using Op = std::remove_cvref_t<decltype(std::declval<N>().op)>;
    expr::static_for<N::arity>([&](auto I) {
      using Arg = std::remove_cvref_t<decltype(expr::get<I>(std::declval<N>().args))>;
      bool reads = !linear_op<Op>;
      if constexpr (std::is_same_v<Op, expr::Mul>) reads = V::template grad_flows<1 - I>;  // d(a*b)/da = b
      mark_value_reads<Arg>(read + V::leaf_offsets[I], value_read || reads);
    });
  }
}

}  // namespace detail

/// Gradient dims of a leaf of shape `leaf` inside an expression of shape `out`: the dims (of out)
/// over which its adjoint must be summed (bit set), 0 when the leaf has the full shape.
inline uint32_t broadcast_mask(const Shape& leaf, const Shape& out) {
  uint32_t mask = 0;
  const int off = out.size() - leaf.size();
  for (int d = 0; d < out.size(); ++d)
    if ((d < off || leaf[d - off] == 1) && out[d] != 1) mask |= 1u << d;
  return mask;
}

namespace detail {
/// The gradient of a leaf of shape `leaf` written at the expression's shape `full` (broadcast
/// dimensions kept), summed over those dimensions; `g` itself when the shapes match.
template <class L>
TensorImplPtr sum_broadcast_grad(const TensorImplPtr& g, const Shape& full, const Shape& leaf, Device device) {
  const uint32_t mask = broadcast_mask(leaf, full);
  if (!mask) return g;
  Shape keep = full;
  for (int d = 0; d < keep.size(); ++d)
    if ((mask >> d) & 1) keep[d] = 1;
  auto sum = dl::detail::make_impl(dtype_of<L>, keep, device);
  expr::reduce_into<expr::SumReducer<L>, L>(expr::lower(expr::Leaf<L>{Tensor<L>(g)}, full), full, mask, static_cast<L*>(sum->data()),
                                            device);
  sum->shape = leaf;
  sum->strides = contiguous_strides(leaf);
  return sum;
}
}  // namespace detail

/// The backward node of a materialised elementwise expression.
template <class N>
class ExprBackward : public Node {
 public:
  using View = expr::view_t<N>;
  using T = expr::value_type_t<N>;
  static constexpr size_t kLeaves = View::leaves;

  ExprBackward(const N& e, Shape shape) : expr_(e), shape_(shape) {
    auto& edges = mutable_next_edges();
    edges.reserve(kLeaves);
    expr::for_each_leaf(*expr_, [&](const auto& t) {
      edges.push_back(gradient_edge(t.impl()));
      versions_.push_back(t.version());
    });
    std::array<bool, kLeaves + 1> read{};
    detail::mark_value_reads<N>(read.data(), false);
    for (size_t k = 0; k < unchecked_.size(); ++k) unchecked_[k] = !read[k];
  }

  std::string name() const override {
    std::ostringstream os;
    if constexpr (N::depth == 1) {
      os << N::op_name() << "Backward";
    } else {
      int leaf = 0;
      os << "FusedBackward[";
      detail::describe(os, *expr_, leaf);
      os << ']';
    }
    return os.str();
  }

  void release_variables() override { expr_.reset(); }

  /// Exempts the leaves that are `t` from the in-place check: an in-place op's own target when its
  /// rules never read the old value (add_, sub_), so later writes to the target do not matter.
  void skip_version_check(const TensorImplPtr& t) {
    size_t k = 0;
    expr::for_each_leaf(*expr_, [&](const auto& leaf) {
      if (leaf.impl() == t) unchecked_[k] = true;
      ++k;
    });
  }

  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    if (!expr_) detail::throw_released();
    std::vector<TensorImplPtr> out(kLeaves);
    if (grads.empty() || !grads[0]) return out;
    size_t k = 0;
    expr::for_each_leaf(*expr_, [&](const auto& t) {
      if (!unchecked_[k] && t.version() != versions_[k]) detail::check_version(*t.impl(), versions_[k], name());
      ++k;
    });
    const Tensor<T> g(grads[0]);
    if (is_grad_enabled()) backward_graph(g, out);
    else backward_fused(g, out);
    return out;
  }

 private:
  /// Each leaf's shape, in leaf order.
  std::array<Shape, kLeaves> leaf_shapes() const {
    std::array<Shape, kLeaves> s;
    size_t k = 0;
    expr::for_each_leaf(*expr_, [&](const auto& t) { s[k++] = t.shape(); });
    return s;
  }

  // Per-leaf work is a run-time loop (or calls templated on the leaf's type alone): a loop
  // unrolled per leaf index compiled one function per leaf of every expression.
  void backward_fused(const Tensor<T>& g, std::vector<TensorImplPtr>& out) {
    if (const Device d = expr::device_of(*expr_); g.device() != d) [[unlikely]]
      throw Error(dl::detail::cat("Function ", name(), ": the gradient is on ", g.device(), " but the forward ran on ", d,
                                  "; pass a gradient on ", d));
    using Leaves = detail::leaf_dtypes<typename View::leaf_types>;
    const View view = expr::lower(*expr_, shape_);
    const expr::LeafView<T> gview = expr::lower(expr::Leaf<T>{g}, shape_);
    const Strides st = contiguous_strides(shape_);
    detail::BackwardBody<View, expr::LeafView<T>> body{view, gview, {}, {}, 0};
    for (int d = 0; d < st.size(); ++d) body.st[d] = st[d];
    const std::array<Shape, kLeaves> shapes = leaf_shapes();
    bool any = false;
    for (size_t k = 0; k < kLeaves; ++k) {
      if (!Leaves::floating[k] || !next_edges()[k].valid()) continue;
      // A broadcast leaf's adjoint is written at full size, then summed to the leaf's shape.
      auto impl = dl::detail::make_impl(Leaves::dtype[k], broadcast_mask(shapes[k], shape_) ? shape_ : shapes[k], g.device());
      body.outs[k] = impl->data();
      out[k] = impl;
      any = true;
    }
    if (!any) return;
    run_body(body, g.device());
    expr::static_for<kLeaves>([&](auto K) {
      using L = typename detail::list_at<typename View::leaf_types, K>::type;
      if constexpr (floating_scalar<L>)
        if (out[K]) out[K] = detail::sum_broadcast_grad<L>(out[K], shape_, shapes[K], g.device());
    });
  }

  template <class Body>
  void run_body(Body& body, Device device) {
    std::array<int64_t*, 80> inputs;
    size_t n = 0;
    body.src.for_each_stride([&](int64_t* s) { inputs[n++] = s; });
    body.g.for_each_stride([&](int64_t* s) { inputs[n++] = s; });
    int64_t* outputs[1] = {body.st};
    const expr::LoopPlan plan = expr::plan_loop(shape_, std::span(inputs.data(), n), outputs);
    if (device.is_cuda()) {
      body.stream = false;
      expr::run_loop_device(plan, body, device);
      return;
    }
    body.stream = !detail::has_half_leaf<typename decltype(body.src)::leaf_types> &&
                  size_t(plan.numel) * sizeof(T) >= expr::kStreamBytes;
    expr::run_loop<false>(plan, body);
  }

  void backward_graph(const Tensor<T>& g, std::vector<TensorImplPtr>& out);  // engine.hpp

  std::optional<N> expr_;
  Shape shape_;
  std::vector<uint32_t> versions_;
  std::array<bool, kLeaves> unchecked_{};
};

/// Records an ExprBackward for `out`, the materialised value of expression `e`, when grad mode is
/// on and a leaf requires grad.
template <class N, class T>
void record_expr(const N& e, const Tensor<T>& out) {
  if constexpr (floating_scalar<T>) {
    if (!is_grad_enabled()) return;
    bool any = false;
    expr::for_each_leaf(e, [&](const auto& t) { any = any || detail::requires_grad(*t.impl()); });
    if (any) set_history(out, std::make_shared<ExprBackward<N>>(e, out.shape()));
  }
}

/// The edge through which gradient reaches an operand of an evaluation boundary: a tensor's own
/// edge, or for an unevaluated expression a fresh ExprBackward (so the expression is never
/// materialised: its backward runs fused on the gradient of the boundary op).
template <class E>
Edge input_edge(const E& e) {
  if constexpr (expr::is_tensor_v<E>) {
    return is_grad_enabled() ? gradient_edge(e.impl()) : Edge{};
  } else {
    if constexpr (floating_scalar<expr::value_type_t<E>>) {
      if (!is_grad_enabled()) return {};
      bool any = false;
      expr::for_each_leaf(e, [&](const auto& t) { any = any || detail::requires_grad(*t.impl()); });
      if (any) {
        const Shape shape = expr::shape_of(e);
        auto node = std::make_shared<ExprBackward<E>>(e, shape);
        node->mutable_outputs().push_back({shape, uint8_t(dtype_of<expr::value_type_t<E>>)});
        return {node, 0};
      }
    }
    return {};
  }
}

}  // namespace dl::autograd
