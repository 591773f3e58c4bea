// dl/tensor/views.hpp — Tensor members that return views sharing storage (view, reshape, transpose,
// permute, narrow, slice, select, squeeze, unsqueeze, expand, flatten, unflatten, as_strided,
// split, chunk, unbind) and conversions (to, clone, contiguous, detach). Views of tensors that
// require grad record their backward rule (AsStridedBackward; CopySlices for in-place changes).
#pragma once

#include <numeric>
#include <optional>

#include "creation.hpp"
#include "tensor.hpp"

namespace dl {

namespace detail {

inline TensorImplPtr view_impl(const TensorImplPtr& src, const Shape& shape, const Strides& strides, int64_t offset) {
  auto v = std::make_shared<TensorImpl>();
  v->storage = src->storage;
  v->shape = shape;
  v->strides = strides;
  v->offset = offset;
  v->dtype = src->dtype;
  v->is_view = true;
  return v;
}

/// Strides that let a tensor of (shape, strides) be viewed as new_shape without copying, or
/// nothing when the layout does not allow it. Dims are grouped into runs that are contiguous with
/// each other; every run must be split exactly by the new dims.
inline std::optional<Strides> view_strides(const Shape& shape, const Strides& strides, const Shape& new_shape) {
  Strides out = Dims::filled(new_shape.size(), 0);
  if (numel(shape) == 0 || shape.size() == 0) return contiguous_strides(new_shape);
  int vd = new_shape.size() - 1;
  int64_t base = strides[shape.size() - 1], tensor_n = 1, view_n = 1;
  for (int td = shape.size() - 1; td >= 0; --td) {
    tensor_n *= shape[td];
    const bool run_ends = td == 0 || (shape[td - 1] != 1 && strides[td - 1] != tensor_n * base);
    if (!run_ends) continue;
    while (vd >= 0 && (view_n < tensor_n || new_shape[vd] == 1)) {
      out[vd] = view_n * base;
      view_n *= new_shape[vd];
      --vd;
    }
    if (view_n != tensor_n) return std::nullopt;
    if (td > 0) {
      base = strides[td - 1];
      tensor_n = 1;
      view_n = 1;
    }
  }
  if (vd != -1) return std::nullopt;
  return out;
}

/// Resolves one -1 in a requested shape and checks the element count.
inline Shape infer_shape(Shape s, int64_t n, const char* what) {
  int infer = -1;
  int64_t known = 1;
  for (int d = 0; d < s.size(); ++d) {
    if (s[d] == -1) {
      DL_CHECK(infer < 0, what, ": only one dimension can be inferred (shape ", s, ")");
      infer = d;
    } else {
      DL_CHECK(s[d] >= 0, what, ": invalid shape dimension ", s[d], " in ", s);
      known *= s[d];
    }
  }
  if (infer >= 0) {
    DL_CHECK(known != 0 && n % known == 0, what, ": shape '", s, "' is invalid for input of size ", n);
    s[infer] = n / known;
  }
  DL_CHECK(numel(s) == n, what, ": shape '", s, "' is invalid for input of size ", n);
  return s;
}

/// Backward of shape-only views: the gradient reshaped back.
template <class T>
class ReshapeBackward : public autograd::Node {
 public:
  ReshapeBackward(std::string name, Shape in) : name_(std::move(name)), in_(in) {}
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override { return {Tensor<T>(g[0]).reshape(in_).impl()}; }

 private:
  std::string name_;
  Shape in_;
};

template <class T>
class PermuteBackward : public autograd::Node {
 public:
  PermuteBackward(std::string name, Dims inverse) : name_(std::move(name)), inverse_(inverse) {}
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override { return {Tensor<T>(g[0]).permute(inverse_).impl()}; }

 private:
  std::string name_;
  Dims inverse_;
};

template <class T>
class ExpandBackward : public autograd::Node {
 public:
  explicit ExpandBackward(Shape in) : in_(in) {}
  std::string name() const override { return "ExpandBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    return {sum_to(Tensor<T>(g[0]), in_).impl()};
  }

 private:
  Shape in_;
};

template <class T>
Tensor<T> embed_slice(const Tensor<T>& g, const Shape& in, int dim, int64_t start, int64_t step);

/// Backward of narrow/slice/select: the gradient placed into zeros of the input's shape. Its own
/// backward is the slice again, so second derivatives flow through.
template <class T>
class SliceBackward : public autograd::Node {
 public:
  SliceBackward(std::string name, Shape in, int dim, int64_t start, int64_t step, bool squeezed)
      : name_(std::move(name)), in_(in), dim_(dim), start_(start), step_(step), squeezed_(squeezed) {}
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    Tensor<T> grad(g[0]);
    if (squeezed_) grad = grad.unsqueeze(dim_);
    return {embed_slice(grad, in_, dim_, start_, step_).impl()};
  }

 private:
  std::string name_;
  Shape in_;
  int dim_;
  int64_t start_, step_;
  bool squeezed_;
};

template <class T>
class EmbedBackward : public autograd::Node {
 public:
  EmbedBackward(int dim, int64_t start, int64_t length, int64_t step) : dim_(dim), start_(start), length_(length), step_(step) {}
  std::string name() const override { return "SliceBackwardBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    return {Tensor<T>(g[0]).slice(dim_, start_, start_ + length_ * step_, step_).impl()};
  }

 private:
  int dim_;
  int64_t start_, length_, step_;
};

template <class T>
Tensor<T> embed_slice(const Tensor<T>& g, const Shape& in, int dim, int64_t start, int64_t step) {
  Tensor<T> out = zeros<T>(in);
  {
    NoGradGuard no_grad;
    out.slice(dim, start, start + g.size(dim) * step, step).copy_(g);
  }
  if (autograd::any_requires_grad(g)) {
    auto node = std::make_shared<EmbedBackward<T>>(dim, start, g.size(dim), step);
    node->mutable_next_edges().push_back(autograd::gradient_edge(g.impl()));
    autograd::set_history(out, node);
  }
  return out;
}

/// Backward of unfold: window j's element k goes back to input position j * step + k along dim (windows
/// that overlap add up), one strided add per window element into zeros of the input's shape. Its own
/// backward is unfold again (a 0-d input's gradient is the sum of its one-or-no window element).
template <class T>
Tensor<T> fold_windows(const Tensor<T>& g, const Shape& in, int dim, int64_t size, int64_t step);

template <class T>
class UnfoldBackward : public autograd::Node {
 public:
  /// of_fold: the node of fold_windows (its backward is unfold), else of unfold (its backward is fold_windows).
  UnfoldBackward(bool of_fold, Shape in, int dim, int64_t size, int64_t step)
      : of_fold_(of_fold), in_(in), dim_(dim), size_(size), step_(step) {}
  std::string name() const override { return of_fold_ ? "UnfoldBackwardBackward" : "UnfoldBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    if (of_fold_) return {Tensor<T>(g[0]).unfold(dim_, size_, step_).impl()};
    return {fold_windows(Tensor<T>(g[0]), in_, dim_, size_, step_).impl()};
  }

 private:
  bool of_fold_;
  Shape in_;
  int dim_;
  int64_t size_, step_;
};

template <class T>
Tensor<T> fold_windows(const Tensor<T>& g, const Shape& in, int dim, int64_t size, int64_t step) {
  Tensor<T> out;
  {
    NoGradGuard no_grad;
    if (in.size() == 0) {
      out = g.numel() == 1 ? g.reshape({}).clone() : zeros<T>({});  // the one window element, or none
    } else {
      out = zeros<T>(in);
      const int64_t windows = g.size(dim);
      for (int64_t k = 0; k < size; ++k) out.slice(dim, k, k + (windows - 1) * step + 1, step).add_(g.select(-1, k));
    }
  }
  if (autograd::any_requires_grad(g)) {
    auto node = std::make_shared<UnfoldBackward<T>>(true, in, dim, size, step);
    node->mutable_next_edges().push_back(autograd::gradient_edge(g.impl()));
    autograd::set_history(out, node);
  }
  return out;
}

/// Backward of the backward of split/chunk/unbind: the input gradient cut back into the pieces.
template <class T>
class SplitBackwardBackward : public autograd::Node {
 public:
  SplitBackwardBackward(int dim, std::vector<int64_t> sizes, bool squeezed) : dim_(dim), sizes_(std::move(sizes)), squeezed_(squeezed) {}
  std::string name() const override { return "SplitBackwardBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    const Tensor<T> grad(g[0]);
    std::vector<TensorImplPtr> out;
    int64_t start = 0;
    for (int64_t n : sizes_) {
      Tensor<T> piece = grad.narrow(dim_, start, n);
      out.push_back((squeezed_ ? piece.squeeze(dim_) : piece).impl());
      start += n;
    }
    return out;
  }

 private:
  int dim_;
  std::vector<int64_t> sizes_;
  bool squeezed_;
};

/// Backward of split/chunk/unbind (PyTorch's SplitBackward0, SplitWithSizesBackward0,
/// UnbindBackward0): one node for all the pieces, whose gradients are laid side by side in one
/// tensor of the input's shape (zeros only where a piece got none). One pass over the input
/// however many pieces there are; narrow per piece would build and add a full-size gradient per
/// piece, quadratic in their number (an RNN's per-step slices of its input projection).
template <class T>
class SplitBackward : public autograd::Node {
 public:
  SplitBackward(std::string name, Shape in, Device device, int dim, std::vector<int64_t> sizes, bool squeezed)
      : name_(std::move(name)), in_(in), device_(device), dim_(dim), sizes_(std::move(sizes)), squeezed_(squeezed) {}
  std::string name() const override { return name_; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    g.resize(sizes_.size());
    const bool all = std::all_of(g.begin(), g.end(), [](const TensorImplPtr& p) { return bool(p); });
    Tensor<T> out = all ? empty<T>(in_, device_) : zeros<T>(in_, device_);
    bool graph = false;
    {
      NoGradGuard no_grad;
      int64_t start = 0;
      for (size_t i = 0; i < sizes_.size(); ++i) {
        if (g[i]) {
          const Tensor<T> piece(g[i]);
          out.narrow(dim_, start, sizes_[i]).copy_(squeezed_ ? piece.unsqueeze(dim_) : piece);
          graph = graph || autograd::detail::requires_grad(*g[i]);
        }
        start += sizes_[i];
      }
    }
    if (graph && autograd::is_grad_enabled()) {  // create_graph: the result's backward cuts it again
      auto node = std::make_shared<SplitBackwardBackward<T>>(dim_, sizes_, squeezed_);
      for (const TensorImplPtr& p : g) node->mutable_next_edges().push_back(p ? autograd::gradient_edge(p) : autograd::Edge{});
      autograd::set_history(out, node);
    }
    return {out.impl()};
  }

 private:
  std::string name_;
  Shape in_;
  Device device_;
  int dim_;
  std::vector<int64_t> sizes_;
  bool squeezed_;
};

/// Where a tensor's elements lie in its storage.
struct Geometry {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  static Geometry of(const TensorImpl& t) { return {t.shape, t.strides, t.offset}; }
  /// One past the largest storage position it reaches (its offset when empty).
  int64_t end() const {
    int64_t e = offset + 1;
    for (int d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) return offset;
      e += (shape[d] - 1) * strides[d];
    }
    return e;
  }
};

/// Gradients of a view and of the base it lives in, computed in a scratch buffer laid out like the
/// base's storage (from the base's first position on): base and view geometries index it directly,
/// whatever the base's strides. Plain tensor ops, so under create_graph they record themselves.
template <class T>
struct BaseBuffer {
  Geometry base, view;
  int64_t first = 0, size = 0;
  BaseBuffer(Geometry b, Geometry v) : base(std::move(b)), view(std::move(v)) {
    first = base.offset;
    size = std::max<int64_t>(base.end() - first, 0);
  }
  Tensor<T> at(const Tensor<T>& buf, const Geometry& g) const {
    return buf.as_strided(g.shape, g.strides, numel(g.shape) ? g.offset - first : 0);
  }
  /// The base-shaped gradient whose view elements are g and all others zero.
  Tensor<T> view_to_base(const Tensor<T>& g) const {
    Tensor<T> buf = zeros<T>({size});
    at(buf, view).copy_(g);
    return at(buf, base).contiguous();
  }
  /// A buffer whose base elements are g (no zero fill when the base covers it).
  Tensor<T> filled(const Tensor<T>& g) const {
    Tensor<T> buf = base.strides == contiguous_strides(base.shape) ? empty<T>({size}) : zeros<T>({size});
    at(buf, base).copy_(g);
    return buf;
  }
};

/// Backward of as_strided: each output element's gradient goes to the input element stored at the
/// same memory position.
template <class T>
class AsStridedBackward : public autograd::Node {
 public:
  AsStridedBackward(Shape in_shape, Strides in_strides, int64_t in_offset, Shape shape, Strides strides, int64_t offset)
      : in_shape_(in_shape), in_strides_(in_strides), in_offset_(in_offset), shape_(shape), strides_(strides), offset_(offset) {}
  std::string name() const override { return "AsStridedBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    if (reads_contiguous_input_once())  // differentiable, no position map
      return {BaseBuffer<T>({in_shape_, in_strides_, in_offset_}, {shape_, strides_, offset_}).view_to_base(Tensor<T>(g[0])).impl()};
    const Tensor<T> grad = Tensor<T>(g[0]).contiguous();
    Tensor<T> out = zeros<T>(in_shape_);
    std::unordered_map<int64_t, int64_t> where;  // storage position -> input flat index
    for_each_position(in_shape_, in_strides_, in_offset_, [&](int64_t flat, int64_t pos) { where.emplace(pos, flat); });
    for_each_position(shape_, strides_, offset_, [&](int64_t flat, int64_t pos) {
      auto it = where.find(pos);
      DL_CHECK(it != where.end(), "as_strided backward: the view reads memory outside its input (position ", pos, ")");
      out.data()[it->second] += grad.data()[flat];
    });
    return {out.impl()};
  }

 private:
  bool reads_contiguous_input_once() const {
    if (in_strides_ != contiguous_strides(in_shape_) || numel(shape_) == 0) return false;
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims that move
    int64_t last = offset_;
    for (int d = 0; d < shape_.size(); ++d)
      if (shape_[d] > 1) {
        dims.push_back({strides_[d], shape_[d]});
        last += (shape_[d] - 1) * strides_[d];
      }
    if (offset_ < in_offset_ || last >= in_offset_ + numel(in_shape_)) return false;
    std::sort(dims.begin(), dims.end());
    int64_t reach = 1;  // positions spanned by the dims with smaller strides
    for (auto [stride, size] : dims) {
      if (stride < reach) return false;
      reach += (size - 1) * stride;
    }
    return true;
  }
  template <class F>
  static void for_each_position(const Shape& s, const Strides& st, int64_t offset, F&& f) {
    const int64_t n = numel(s);
    for (int64_t i = 0; i < n; ++i) {
      int64_t q = i, pos = offset;
      for (int d = s.size() - 1; d >= 0; --d) {
        pos += (q % s[d]) * st[d];
        q /= s[d];
      }
      f(i, pos);
    }
  }
  Shape in_shape_;
  Strides in_strides_;
  int64_t in_offset_;
  Shape shape_;
  Strides strides_;
  int64_t offset_;
};

/// Backward of a view whose history was re-derived from its base (after an in-place change of the
/// base or of a view of it): the gradient lands on the view's elements of a zero base gradient.
template <class T>
class ViewOfBaseBackward : public autograd::Node {
 public:
  ViewOfBaseBackward(const TensorImpl& base, const TensorImpl& view) : b_(Geometry::of(base), Geometry::of(view)) {}
  std::string name() const override { return "AsStridedBackward"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    if (!g[0]) return {nullptr};
    return {b_.view_to_base(Tensor<T>(g[0])).impl()};
  }

 private:
  BaseBuffer<T> b_;
};

/// The base's new history after an in-place op on one of its views (PyTorch's CopySlices):
/// elements outside the view keep the base's old history (edge 0), the view's elements get the
/// in-place op's gradient (edge 1, the op's own node, whose input is the view's old value).
template <class T>
class CopySlices : public autograd::Node {
 public:
  CopySlices(const TensorImpl& base, const TensorImpl& view) : b_(Geometry::of(base), Geometry::of(view)) {}
  std::string name() const override { return "CopySlices"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override {
    if (!g[0]) return {nullptr, nullptr};
    const Tensor<T> grad(g[0]);
    Tensor<T> buf = b_.filled(grad);
    TensorImplPtr view_grad;
    if (next_edges()[1].valid()) {
      view_grad = b_.at(buf, b_.view).clone().impl();
      if (is_grad_enabled()) buf = b_.filled(grad);  // create_graph: the clone's input must stay intact
    }
    b_.at(buf, b_.view).zero_();
    return {b_.at(buf, b_.base).contiguous().impl(), view_grad};
  }

 private:
  BaseBuffer<T> b_;
};

template <class T>
std::shared_ptr<autograd::Node> view_of_base_node(const TensorImplPtr& view) {
  const TensorImplPtr& base = view->view_base;
  auto node = std::make_shared<ViewOfBaseBackward<T>>(*base, *view);
  node->mutable_next_edges().push_back(autograd::gradient_edge(base));
  node->mutable_outputs().push_back({view->shape, uint8_t(dtype_of<T>)});
  return node;
}

/// A view of src with the given geometry; records `make_node()` as its grad_fn when src requires
/// grad.
template <class T, class MakeNode>
Tensor<T> make_view(const Tensor<T>& src, const Shape& shape, const Strides& strides, int64_t offset, MakeNode&& make_node) {
  Tensor<T> v(view_impl(src.impl(), shape, strides, offset));
  if (floating_scalar<T> && autograd::is_grad_enabled()) v.impl()->view_base = src.impl()->view_base ? src.impl()->view_base : src.impl();
  if (autograd::any_requires_grad(src)) {
    std::shared_ptr<autograd::Node> node = make_node();
    node->mutable_next_edges().push_back(autograd::gradient_edge(src.impl()));
    autograd::set_history(v, node);
  }
  return v;
}

/// Views of src cut along dim into pieces of `sizes` (each squeezed away for unbind), sharing one
/// SplitBackward as their grad_fn (piece i is its output i).
template <class T>
std::vector<Tensor<T>> split_views(const Tensor<T>& src, int dim, std::vector<int64_t> sizes, bool squeezed, const char* name) {
  std::shared_ptr<autograd::Node> node;
  if (autograd::any_requires_grad(src)) {
    node = std::make_shared<SplitBackward<T>>(name, src.shape(), src.device(), dim, sizes, squeezed);
    node->mutable_next_edges().push_back(autograd::gradient_edge(src.impl()));
  }
  const TensorImplPtr base = floating_scalar<T> && autograd::is_grad_enabled()
                                 ? (src.impl()->view_base ? src.impl()->view_base : src.impl())
                                 : nullptr;
  std::vector<Tensor<T>> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape s = src.shape();
    Strides st = src.strides();
    if (squeezed) {
      s.erase(dim);
      st.erase(dim);
    } else {
      s[dim] = sizes[i];
    }
    Tensor<T> v(view_impl(src.impl(), s, st, src.storage_offset() + start * src.strides()[dim]));
    if (base) v.impl()->view_base = base;
    if (node) autograd::set_history(v, node, uint32_t(i));
    out.push_back(std::move(v));
    start += sizes[i];
  }
  return out;
}

}  // namespace detail

// ------------------------------------------------------------------------------ conversions

template <scalar_type T>
template <scalar_type U>
Tensor<U> Tensor<T>::to() const {
  if constexpr (std::is_same_v<T, U>) return *this;
  else return Tensor<U>(expr::cast<U>(*this));
}

namespace detail {
/// Backward of a copy between devices: the gradient copied back.
template <class T>
class ToCopyBackward : public autograd::Node {
 public:
  explicit ToCopyBackward(Device src) : src_(src) {}
  std::string name() const override { return "ToCopyBackward0"; }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> g) override { return {Tensor<T>(g[0]).to(src_).impl()}; }

 private:
  Device src_;
};
template <class T>
void record_to_device(const Tensor<T>& src, const Tensor<T>& out) {
  if (!autograd::any_requires_grad(src)) return;
  auto node = std::make_shared<ToCopyBackward<T>>(src.device());
  node->mutable_next_edges().push_back(autograd::gradient_edge(src.impl()));
  autograd::set_history(out, node);
}

/// A contiguous copy of `src` on `device`; src must be contiguous (elements copied as bytes).
template <class T>
Tensor<T> copy_to_device(const Tensor<T>& src, Device device, bool non_blocking) {
  auto& hooks = cuda_backend();
  if (!hooks.copy) no_cuda_runtime(src.device().is_cuda() ? src.device() : device);
  Tensor<T> out(make_impl(dtype_of<T>, src.shape(), device));
  if (src.numel() > 0)
    hooks.copy(out.data_ptr(), device, src.data_ptr(), src.device(), size_t(src.numel()) * sizeof(T), non_blocking);
  return out;
}
}  // namespace detail

template <scalar_type T>
Tensor<T> Tensor<T>::to(Device device, bool non_blocking) const {
  if (device == this->device()) return *this;
  // Strided sources are made contiguous where they are (a kernel on the GPU, a loop on the CPU),
  // then copied as one block.
  Tensor<T> out = detail::copy_to_device(contiguous(), device, non_blocking);
  if constexpr (floating_scalar<T>) detail::record_to_device(*this, out);
  return out;
}

template <scalar_type T>
Tensor<T> Tensor<T>::pin_memory() const {
  DL_CHECK(device().is_cpu(), "cannot pin '", type_name(), "': only dense CPU tensors can be pinned");
  if (is_pinned()) return *this;
  auto& hooks = detail::cuda_backend();
  if (!hooks.pinned_alloc) detail::no_cuda_runtime(Device(kCUDA, 0));
  const Tensor<T> src = contiguous();
  const size_t nbytes = size_t(numel()) * sizeof(T);
  void* p = hooks.pinned_alloc(nbytes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(p, nbytes, kCPU, hooks.pinned_free);
  impl->shape = shape();
  impl->strides = contiguous_strides(shape());
  impl->dtype = dtype_of<T>;
  if (nbytes) std::memcpy(p, src.data(), nbytes);
  return Tensor<T>(impl);
}

template <scalar_type T>
bool Tensor<T>::is_pinned() const {
  auto& hooks = detail::cuda_backend();
  return device().is_cpu() && hooks.is_pinned && numel() > 0 && hooks.is_pinned(data());
}

template <scalar_type T>
Tensor<T> Tensor<T>::clone() const {
  return Tensor<T>(expr::apply(expr::Copy{}, *this));
}

template <scalar_type T>
Tensor<T> Tensor<T>::contiguous() const {
  return is_contiguous() ? *this : clone();
}

template <scalar_type T> Tensor<float> Tensor<T>::to_float() const { return to<float>(); }
template <scalar_type T> Tensor<double> Tensor<T>::to_double() const { return to<double>(); }
template <scalar_type T> Tensor<int64_t> Tensor<T>::to_long() const { return to<int64_t>(); }
template <scalar_type T> Tensor<int32_t> Tensor<T>::to_int() const { return to<int32_t>(); }
template <scalar_type T> Tensor<bool> Tensor<T>::to_bool() const { return to<bool>(); }
template <scalar_type T> Tensor<uint8_t> Tensor<T>::byte() const { return to<uint8_t>(); }
template <scalar_type T> Tensor<Half> Tensor<T>::half() const { return to<Half>(); }
template <scalar_type T> Tensor<BFloat16> Tensor<T>::bfloat16() const { return to<BFloat16>(); }
template <scalar_type T> Tensor<float> Tensor<T>::float_() const { return to<float>(); }
template <scalar_type T> Tensor<double> Tensor<T>::double_() const { return to<double>(); }
template <scalar_type T> Tensor<int64_t> Tensor<T>::long_() const { return to<int64_t>(); }
template <scalar_type T> Tensor<int32_t> Tensor<T>::int_() const { return to<int32_t>(); }
template <scalar_type T> Tensor<bool> Tensor<T>::bool_() const { return to<bool>(); }

template <scalar_type T>
template <scalar_type U>
Tensor<U> Tensor<T>::type_as(const Tensor<U>& other) const {
  return to<U>().to(other.device());
}

template <scalar_type T>
std::string Tensor<T>::type_name() const {
  constexpr const char* name = std::is_same_v<T, float>     ? "FloatTensor"
                               : std::is_same_v<T, double>  ? "DoubleTensor"
                               : std::is_same_v<T, int64_t> ? "LongTensor"
                               : std::is_same_v<T, int32_t> ? "IntTensor"
                               : std::is_same_v<T, uint8_t> ? "ByteTensor"
                               : std::is_same_v<T, Half>    ? "HalfTensor"
                               : std::is_same_v<T, BFloat16> ? "BFloat16Tensor"
                                                            : "BoolTensor";
  return std::string(device().is_cuda() ? "torch.cuda." : "torch.") + name;
}

template <scalar_type T>
Tensor<T> Tensor<T>::detach() const {
  auto v = detail::view_impl(impl_, impl_->shape, impl_->strides, impl_->offset);
  v->is_view = false;  // shares memory, but starts a history of its own
  return Tensor<T>(v);
}

// ------------------------------------------------------------------------------ views

template <scalar_type T>
Tensor<T> Tensor<T>::view(Shape shape) const {
  shape = detail::infer_shape(shape, numel(), "view");
  auto st = detail::view_strides(this->shape(), strides(), shape);
  DL_CHECK(st.has_value(), "view size is not compatible with input tensor's size and stride (at least one dimension "
           "spans across two contiguous subspaces): input shape ", this->shape(), " strides ", strides(),
           ", view shape ", shape, ". Use .reshape(...) instead.");
  const Shape in = this->shape();
  return detail::make_view(*this, shape, *st, storage_offset(), [&] { return std::make_shared<detail::ReshapeBackward<T>>("ViewBackward", in); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::reshape(Shape shape) const {
  shape = detail::infer_shape(shape, numel(), "reshape");
  if (auto st = detail::view_strides(this->shape(), strides(), shape)) {
    const Shape in = this->shape();
    return detail::make_view(*this, shape, *st, storage_offset(), [&] { return std::make_shared<detail::ReshapeBackward<T>>("ReshapeBackward", in); });
  }
  return clone().view(shape);
}

template <scalar_type T>
Tensor<T> Tensor<T>::transpose(int64_t dim0, int64_t dim1) const {
  const int a = wrap_dim(dim0, dim(), "transpose"), b = wrap_dim(dim1, dim(), "transpose");
  if (dim() == 0) return detail::make_view(*this, shape(), strides(), storage_offset(), [] { return std::make_shared<detail::PermuteBackward<T>>("TransposeBackward", Dims{}); });
  Dims perm;
  for (int d = 0; d < dim(); ++d) perm.push_back(d);
  std::swap(perm[a], perm[b]);
  Shape s = shape();
  Strides st = strides();
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return detail::make_view(*this, s, st, storage_offset(), [&] { return std::make_shared<detail::PermuteBackward<T>>("TransposeBackward", perm); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::t() const {
  DL_CHECK(dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D (shape ", shape(), ")");
  return dim() < 2 ? transpose(0, 0) : transpose(0, 1);
}

template <scalar_type T>
Tensor<T> Tensor<T>::permute(Dims dims) const {
  DL_CHECK(dims.size() == dim(), "permute: number of dims don't match in permute: the tensor has ", dim(),
           " dimensions (shape ", shape(), ") but the ordering has ", dims.size(), " (", dims, ")");
  Shape s = shape();
  Strides st = strides();
  Dims inverse = Dims::filled(dim(), -1);
  for (int i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], dim(), "permute");
    DL_CHECK(inverse[d] < 0, "permute: repeated dim ", d, " in ", dims);
    inverse[d] = i;
    s[i] = shape()[d];
    st[i] = strides()[d];
  }
  return detail::make_view(*this, s, st, storage_offset(), [&] { return std::make_shared<detail::PermuteBackward<T>>("PermuteBackward", inverse); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  DL_CHECK(this->dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  DL_CHECK(step > 0, "slice step must be positive, got ", step);
  const int d = wrap_dim(dim, this->dim(), "slice");
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = shape();
  Strides st = strides();
  s[d] = (end - start + step - 1) / step;
  st[d] = strides()[d] * step;
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset() + start * strides()[d],
                           [&] { return std::make_shared<detail::SliceBackward<T>>("SliceBackward", in, d, start, step, false); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::narrow(int64_t dim, int64_t start, int64_t length) const {
  DL_CHECK(this->dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  const int d = wrap_dim(dim, this->dim(), "narrow");
  const int64_t n = shape()[d];
  DL_CHECK(start >= -n && start <= n, "start out of range (expected to be in range of [", -n, ", ", n, "], but got ", start, ")");
  if (start < 0) start += n;
  DL_CHECK(length >= 0 && start + length <= n, "start (", start, ") + length (", length, ") exceeds dimension size (", n, ").");
  return slice(d, start, start + length, 1);
}

template <scalar_type T>
Tensor<T> Tensor<T>::select(int64_t dim, int64_t index) const {
  DL_CHECK(this->dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  const int d = wrap_dim(dim, this->dim(), "select");
  const int64_t n = shape()[d];
  DL_CHECK(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ", shape(), " at dimension ", d);
  if (index < 0) index += n;
  Shape s = shape();
  Strides st = strides();
  s.erase(d);
  st.erase(d);
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset() + index * strides()[d],
                           [&] { return std::make_shared<detail::SliceBackward<T>>("SelectBackward", in, d, index, 1, true); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::squeeze() const {
  Shape s;
  Strides st;
  for (int d = 0; d < dim(); ++d)
    if (shape()[d] != 1) {
      s.push_back(shape()[d]);
      st.push_back(strides()[d]);
    }
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset(), [&] { return std::make_shared<detail::ReshapeBackward<T>>("SqueezeBackward", in); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::squeeze(int64_t dim) const {
  const int d = wrap_dim(dim, this->dim(), "squeeze");
  Shape s = shape();
  Strides st = strides();
  if (this->dim() > 0 && s[d] == 1) {
    s.erase(d);
    st.erase(d);
  }
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset(), [&] { return std::make_shared<detail::ReshapeBackward<T>>("SqueezeBackward", in); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::unsqueeze(int64_t dim) const {
  const int d = wrap_dim(dim, this->dim() + 1, "unsqueeze");
  Shape s = shape();
  Strides st = strides();
  const int64_t stride = d < this->dim() ? strides()[d] * shape()[d] : 1;
  s.insert(d, 1);
  st.insert(d, stride);
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset(), [&] { return std::make_shared<detail::ReshapeBackward<T>>("UnsqueezeBackward", in); });
}

// ------------------------------------------------------------------------------ in-place views

namespace detail {
template <class T>
void check_inplace_allowed(const Tensor<T>& self, const char* what);  // dl/inplace.hpp

/// Gives self the geometry of v (a view of self made by the out-of-place op) and v's history.
template <class T>
Tensor<T>& become_view(Tensor<T>& self, const Tensor<T>& v, const char* what) {
  check_inplace_allowed(self, what);
  TensorImpl& impl = *self.impl();
  impl.shape = v.shape();
  impl.strides = v.strides();
  impl.offset = v.storage_offset();
  self.bump_version();
  // After the bump, so that a view's history is not re-derived from its base at once.
  if (v.impl()->autograd && v.impl()->autograd->grad_fn) autograd::set_history(self, v.impl()->autograd->grad_fn);
  return self;
}
}  // namespace detail

template <scalar_type T>
Tensor<T>& Tensor<T>::t_() {
  return detail::become_view(*this, t(), "t_");
}
template <scalar_type T>
Tensor<T>& Tensor<T>::transpose_(int64_t dim0, int64_t dim1) {
  return detail::become_view(*this, transpose(dim0, dim1), "transpose_");
}
template <scalar_type T>
Tensor<T>& Tensor<T>::squeeze_() {
  return detail::become_view(*this, squeeze(), "squeeze_");
}
template <scalar_type T>
Tensor<T>& Tensor<T>::squeeze_(int64_t dim) {
  return detail::become_view(*this, squeeze(dim), "squeeze_");
}
template <scalar_type T>
Tensor<T>& Tensor<T>::unsqueeze_(int64_t dim) {
  return detail::become_view(*this, unsqueeze(dim), "unsqueeze_");
}

template <scalar_type T>
Tensor<T> Tensor<T>::expand(Shape target) const {
  DL_CHECK(target.size() >= dim(), "expand: the number of sizes provided (", target.size(),
           ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  const int off = target.size() - dim();
  Strides st = Dims::filled(target.size(), 0);
  for (int i = 0; i < target.size(); ++i) {
    const int d = i - off;
    if (d < 0) {
      DL_CHECK(target[i] >= 0, "expand: the expanded size of the tensor (", target[i], ") isn't allowed in a leading, non-existing dimension ", i);
      continue;
    }
    if (target[i] == -1) target[i] = shape()[d];
    if (shape()[d] == target[i]) {
      st[i] = strides()[d];
    } else {
      DL_CHECK(shape()[d] == 1, "The expanded size of the tensor (", target[i], ") must match the existing size (", shape()[d],
               ") at non-singleton dimension ", i, ".  Target sizes: ", target, ".  Tensor sizes: ", shape());
    }
  }
  const Shape in = shape();
  return detail::make_view(*this, target, st, storage_offset(), [&] { return std::make_shared<detail::ExpandBackward<T>>(in); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int a = wrap_dim(start_dim, dim(), "flatten"), b = wrap_dim(end_dim, dim(), "flatten");
  DL_CHECK(a <= b, "flatten() has invalid args: start_dim (", a, ") cannot come after end_dim (", b, ")");
  Shape s;
  for (int d = 0; d < a; ++d) s.push_back(shape()[d]);
  int64_t n = 1;
  for (int d = a; d <= b; ++d) n *= shape()[d];
  s.push_back(n);
  for (int d = b + 1; d < dim(); ++d) s.push_back(shape()[d]);
  return reshape(s);
}

template <scalar_type T>
Tensor<T> Tensor<T>::unflatten(int64_t dim, Shape sizes) const {
  const int d = wrap_dim(dim, this->dim(), "unflatten");
  sizes = detail::infer_shape(sizes, shape()[d], "unflatten");
  Shape s;
  for (int i = 0; i < d; ++i) s.push_back(shape()[i]);
  for (int64_t x : sizes) s.push_back(x);
  for (int i = d + 1; i < this->dim(); ++i) s.push_back(shape()[i]);
  return view(s);
}

template <scalar_type T>
Tensor<T> Tensor<T>::as_strided(Shape shape, Strides strides, int64_t storage_offset) const {
  DL_CHECK(shape.size() == strides.size(), "as_strided: mismatch in length of strides and shape (", shape, " and ", strides, ")");
  int64_t extent = storage_offset + 1;
  for (int d = 0; d < shape.size(); ++d) {
    DL_CHECK(shape[d] >= 0 && strides[d] >= 0, "as_strided: negative size or stride in ", shape, " ", strides);
    if (shape[d] == 0) extent = 0;
    else if (extent) extent += (shape[d] - 1) * strides[d];
  }
  DL_CHECK(size_t(extent) * sizeof(T) <= impl_->storage->nbytes(), "as_strided: setStorage: sizes ", shape, ", strides ", strides,
           ", storage offset ", storage_offset, " require ", extent * int64_t(sizeof(T)), " bytes but the storage has ",
           impl_->storage->nbytes());
  const Shape in = this->shape();
  const Strides in_st = this->strides();
  const int64_t in_off = this->storage_offset();
  return detail::make_view(*this, shape, strides, storage_offset,
                           [&] { return std::make_shared<detail::AsStridedBackward<T>>(in, in_st, in_off, shape, strides, storage_offset); });
}

template <scalar_type T>
Tensor<T> Tensor<T>::unfold(int64_t dimension, int64_t size, int64_t step) const {
  const int d = wrap_dim(dimension, this->dim(), "unfold");  // 0 or -1 for a 0-d tensor
  const int64_t n = this->dim() == 0 ? 1 : shape()[d];
  DL_CHECK(size >= 0, "unfold: size must be non-negative, but got size ", size);
  DL_CHECK(size <= n, "maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
  DL_CHECK(step > 0, "step is ", step, " but must be > 0");
  Shape s = shape();
  Strides st = strides();
  if (this->dim() == 0) {
    s = Shape{size};
    st = Strides{1};
  } else {
    s[d] = (n - size) / step + 1;
    st[d] = strides()[d] * step;
    s.push_back(size);
    st.push_back(strides()[d]);
  }
  const Shape in = shape();
  return detail::make_view(*this, s, st, storage_offset(),
                           [&] { return std::make_shared<detail::UnfoldBackward<T>>(false, in, d, size, step); });
}

template <scalar_type T>
std::vector<Tensor<T>> Tensor<T>::split(int64_t split_size, int64_t dim) const {
  const int d = wrap_dim(dim, this->dim(), "split");
  const int64_t n = shape()[d];
  DL_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split expects split_size be non-negative, but got split_size=", split_size);
  if (n == 0) return {*this};
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  return detail::split_views(*this, d, std::move(sizes), false, "SplitBackward");
}

template <scalar_type T>
std::vector<Tensor<T>> Tensor<T>::split(std::vector<int64_t> sizes, int64_t dim) const {
  const int d = wrap_dim(dim, this->dim(), "split");
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  DL_CHECK(total == shape()[d], "split_with_sizes expects split_sizes to sum exactly to ", shape()[d],
           " (input tensor's size at dimension ", d, "), but got split_sizes summing to ", total);
  for (int64_t s : sizes) DL_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got ", s);
  return detail::split_views(*this, d, std::move(sizes), false, "SplitWithSizesBackward");
}

template <scalar_type T>
std::vector<Tensor<T>> Tensor<T>::chunk(int64_t chunks, int64_t dim) const {
  DL_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int d = wrap_dim(dim, this->dim(), "chunk");
  const int64_t n = shape()[d];
  return split(std::max<int64_t>((n + chunks - 1) / chunks, n == 0 ? 0 : 1), d);
}

template <scalar_type T>
std::vector<Tensor<T>> Tensor<T>::unbind(int64_t dim) const {
  const int d = wrap_dim(dim, this->dim(), "unbind");
  return detail::split_views(*this, d, std::vector<int64_t>(size_t(shape()[d]), 1), true, "UnbindBackward");
}

}  // namespace dl

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(reduce, class dl::detail::AsStridedBackward<float>)
DL_EXTERN_TEMPLATE(reduce, class dl::detail::CopySlices<float>)
DL_EXTERN_TEMPLATE(reduce, struct dl::detail::BaseBuffer<float>)
