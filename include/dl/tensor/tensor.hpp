// dl/tensor/tensor.hpp — dl::Tensor<T>: a cheap, copyable handle to a strided array (shared storage
// + shape + strides + offset + autograd slot), like torch::Tensor: the class, its construction from
// an impl or an expression (one fused pass), element access. The rest of its members are defined by
// tensor/views.hpp, tensor/inplace.hpp, tensor/autograd.hpp and dl/ops/; dl/tensor.hpp has them all.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "../autograd/anomaly.hpp"
#include "../autograd/graph.hpp"
#include "../expr/loop.hpp"
#include "../expr/methods.hpp"
#include "../profiler_hook.hpp"
#include "../source_location.hpp"
#include "../tensor_impl.hpp"

namespace dl {

namespace autograd {
class Node;
}  // namespace autograd

template <scalar_type T>
class GradSlot;  // assignable gradient slot (autograd/engine.hpp)
template <class T>
struct MaxResult;  // (values, indices) of max/min/sort/topk... (expr/reduce.hpp)
template <scalar_type T>
class SparseTensor;  // a sparse COO tensor (ops/sparse.hpp)

template <scalar_type T = float>
class Tensor : public expr::ExprBase<Tensor<T>> {
 public:
  using value_type = T;

  /// An undefined tensor (defined() is false), like a default torch::Tensor.
  Tensor() = default;
  /// Adopts an impl; its dtype must be T.
  explicit Tensor(TensorImplPtr impl);
  /// Evaluates an elementwise expression into a new tensor (one fused pass). `site` is the
  /// caller's line, recorded for anomaly detection (never pass it).
  template <expr::node E>
    requires expr::is_apply_v<E>
  Tensor(const E& e, dl::SourceLocation site = dl::SourceLocation::current());

  // ------------------------------------------------------------------------------ properties
  bool defined() const { return bool(impl_); }
  const Shape& shape() const { return impl_->shape; }
  const Shape& sizes() const { return impl_->shape; }
  /// Size of dimension `dim` (negative counts from the end).
  int64_t size(int64_t dim) const { return impl_->shape[wrap_dim(dim, this->dim(), "size")]; }
  int dim() const { return impl_->shape.size(); }
  int64_t numel() const { return dl::numel(impl_->shape); }
  const Strides& strides() const { return impl_->strides; }
  int64_t stride(int64_t dim) const { return impl_->strides[wrap_dim(dim, this->dim(), "stride")]; }
  int64_t storage_offset() const { return impl_->offset; }
  ScalarType dtype() const { return dtype_of<T>; }
  Device device() const { return impl_->storage->device(); }
  bool is_contiguous() const { return dl::is_contiguous(impl_->shape, impl_->strides); }
  /// Pointer to the first element (storage data + offset) in host memory; a CUDA tensor throws
  /// (its memory is not readable here: copy it with cpu(), or take data_ptr()). Writes through it
  /// are not seen by autograd's version counter; use bump_version() after writing through raw
  /// pointers.
  T* data() const {
    if (impl_->storage->device().is_cuda()) [[unlikely]]
      detail::host_data_of_device_tensor(impl_->storage->device());
    return static_cast<T*>(impl_->data());
  }
  /// Pointer to the first element on whatever device holds it (a device pointer for a CUDA
  /// tensor, to pass to CUDA libraries and kernels), as torch.Tensor.data_ptr().
  T* data_ptr() const { return static_cast<T*>(impl_->data()); }
  /// Version counter of the storage (incremented by every in-place op).
  uint32_t version() const { return impl_->storage->version(); }
  void bump_version() const { impl_->storage->bump_version(); }
  const TensorImplPtr& impl() const { return impl_; }
  /// True when both handles refer to the same tensor (not an elementwise comparison).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// The single element of a one-element tensor.
  T item() const;
  /// The single element converted to U, as libtorch's x.item<double>().
  template <class U>
    requires std::is_arithmetic_v<U>
  U item() const { return static_cast<U>(item()); }
  /// Reference to one element, e.g. x.at(1, 2); indices may be negative.
  template <std::integral... I>
  T& at(I... idx) const;

  // ------------------------------------------------------------------------------ conversions
  /// A copy converted to element type U (the same tensor when U == T, as PyTorch).
  template <scalar_type U>
  Tensor<U> to() const;
  /// A copy converted to a dtype tag's element type: libtorch's x.to(torch::kFloat) (dl/torch.hpp).
  template <class Tag>
    requires requires { typename Tag::dl_element_type; }
  Tensor<typename Tag::dl_element_type> to(Tag) const {
    return this->template to<typename Tag::dl_element_type>();
  }
  /// The tensor on `device` (itself when already there); differentiable. non_blocking copies
  /// between pinned host memory and the GPU run asynchronously on the current stream.
  Tensor to(Device device, bool non_blocking = false) const;
  /// The tensor on CUDA device `index` (to(Device(kCUDA, index))).
  Tensor cuda(int index = 0, bool non_blocking = false) const { return to(Device(kCUDA, index), non_blocking); }
  /// The tensor on the CPU.
  Tensor cpu() const { return to(kCPU); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  /// A copy in page-locked (pinned) host memory, for asynchronous copies to the GPU (needs
  /// <dl/cuda.hpp>); a pinned tensor is returned as is.
  Tensor pin_memory() const;
  bool is_pinned() const;
  /// Materialised copy with its own storage (contiguous); differentiable.
  Tensor clone() const;
  /// This tensor if contiguous, otherwise a contiguous copy.
  Tensor contiguous() const;
  /// Shares storage, drops autograd history.
  Tensor detach() const;
  // Conversions by name (differentiable, a new tensor unless the type already matches). Python's
  // x.float(), x.double(), x.long(), x.int(), x.bool() are C++ keywords, so dl spells them
  // to_float() ... to_bool(): PyTorch reserves a trailing underscore for in-place ops, and these
  // are not in place. float_(), double_(), long_(), int_(), bool_() are the same functions under
  // the keyword-escaped names a porter types first.
  Tensor<float> to_float() const;
  Tensor<double> to_double() const;
  Tensor<int64_t> to_long() const;
  Tensor<int32_t> to_int() const;
  Tensor<bool> to_bool() const;
  Tensor<uint8_t> byte() const;
  /// x.half() / x.bfloat16(): the 16-bit floating copies (round to nearest even), differentiable.
  Tensor<Half> half() const;
  Tensor<BFloat16> bfloat16() const;
  Tensor<float> float_() const;
  Tensor<double> double_() const;
  Tensor<int64_t> long_() const;
  Tensor<int32_t> int_() const;
  Tensor<bool> bool_() const;
  /// This tensor with other's element type and device (torch.Tensor.type_as).
  template <scalar_type U>
  Tensor<U> type_as(const Tensor<U>& other) const;
  /// PyTorch's legacy type text: "torch.FloatTensor", "torch.LongTensor", "torch.cuda.FloatTensor".
  std::string type_name() const;
  /// New tensors with this tensor's device and (unless U is given) element type; they never
  /// require grad (torch.Tensor.new_zeros etc.).
  template <scalar_type U = T>
  Tensor<U> new_empty(Shape shape) const;
  template <scalar_type U = T>
  Tensor<U> new_zeros(Shape shape) const;
  template <scalar_type U = T>
  Tensor<U> new_ones(Shape shape) const;
  template <scalar_type U = T, expr::number V = T>
  Tensor<U> new_full(Shape shape, V value) const;

  // ------------------------------------------------------------------------------ views
  // All share storage with this tensor (writes through a view are seen here).
  Tensor view(Shape shape) const;        ///< one size may be -1; strides must allow it
  Tensor reshape(Shape shape) const;     ///< a view when possible, else a copy
  Tensor view_as(const Tensor& other) const { return view(other.shape()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.shape()); }
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;                      ///< transpose of a <= 2-d tensor
  Tensor permute(Dims dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// x[start:end:step] along dim, Python-style (negative and out-of-range bounds are clamped).
  Tensor slice(int64_t dim, int64_t start = 0, int64_t end = INT64_MAX, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(Shape shape) const;      ///< -1 keeps a size; new leading dims allowed
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, Shape sizes) const;
  Tensor as_strided(Shape shape, Strides strides, int64_t storage_offset) const;
  /// The windows of `size` elements along `dimension`, `step` apart, as a view with a new last dim of
  /// that size (torch.Tensor.unfold): [7].unfold(0, 3, 2) is [3, 3]. Overlapping windows share memory.
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(std::vector<int64_t> sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;

  // ------------------------------------------------------------------------------ in-place views
  // Change this tensor's shape and strides (every handle to it sees the change), bump the version
  // counter and, under autograd, make the view op its new history (PyTorch's TBackward1 etc.); a
  // leaf that requires grad is refused, as in PyTorch.
  Tensor& t_();
  Tensor& transpose_(int64_t dim0, int64_t dim1);
  Tensor& squeeze_();
  Tensor& squeeze_(int64_t dim);
  Tensor& unsqueeze_(int64_t dim);

  // ------------------------------------------------------------------------------ indexing
  // The functions of <dl/ops/indexing.hpp> (included by <dl/dl.hpp>) as members, as torch.Tensor's.
  Tensor gather(int64_t dim, const Tensor<int64_t>& index) const;
  Tensor scatter(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor<int64_t>& index, T value) const;
  Tensor scatter_add(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) const;
  Tensor index_select(int64_t dim, const Tensor<int64_t>& index) const;
  Tensor index_add(int64_t dim, const Tensor<int64_t>& index, const Tensor& source, T alpha = T(1)) const;
  Tensor index_copy(int64_t dim, const Tensor<int64_t>& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor<int64_t>& index, T value) const;
  Tensor repeat(Dims repeats) const;
  Tensor& scatter_(int64_t dim, const Tensor<int64_t>& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor<int64_t>& index, T value);
  Tensor& scatter_add_(int64_t dim, const Tensor<int64_t>& index, const Tensor& src);
  Tensor& index_add_(int64_t dim, const Tensor<int64_t>& index, const Tensor& source, T alpha = T(1));
  Tensor& index_copy_(int64_t dim, const Tensor<int64_t>& index, const Tensor& source);
  Tensor& index_fill_(int64_t dim, const Tensor<int64_t>& index, T value);

  // ------------------------------------------------------------------------------ tensor ops
  // The functions of <dl/ops/sorting.hpp>, <dl/ops/scan.hpp> and <dl/ops/rearrange.hpp> (included
  // by <dl/dl.hpp>) as members, as torch.Tensor's; the (values, indices) pairs are MaxResult<T>.
  MaxResult<T> sort(int64_t dim = -1, bool descending = false) const;
  Tensor<int64_t> argsort(int64_t dim = -1, bool descending = false) const;
  MaxResult<T> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  MaxResult<T> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  MaxResult<T> median(int64_t dim, bool keepdim = false) const;
  MaxResult<T> mode(int64_t dim = -1, bool keepdim = false) const;
  Tensor<sum_t<T>> cumsum(int64_t dim) const;
  Tensor<sum_t<T>> cumprod(int64_t dim) const;
  Tensor diff(int64_t n = 1, int64_t dim = -1) const;
  Tensor flip(Dims dims) const;
  Tensor roll(Dims shifts, Dims dims = {}) const;
  Tensor rot90(int64_t k = 1, Dims dims = {0, 1}) const;

  // ------------------------------------------------------------------------------ in place
  // Each evaluates into this tensor's memory (any strides) and bumps the version counter.
  Tensor& fill_(T value);
  Tensor& zero_() { return fill_(T(0)); }
  /// Copies src (a tensor or an expression, broadcast to this shape, converted to T).
  template <expr::operand E>
  Tensor& copy_(const E& src);
  /// Random fills; floating tensors only (the constraint is what an integral tensor's call reports).
  Tensor& uniform_(double from = 0, double to = 1)
    requires floating_scalar<T>;
  Tensor& normal_(double mean = 0, double std = 1)
    requires floating_scalar<T>;
  template <expr::operand E>
  Tensor& add_(const E& other);
  template <expr::operand E, expr::number A>
  Tensor& add_(const E& other, A alpha);  ///< this += alpha * other
  template <expr::operand E>
  Tensor& sub_(const E& other);
  template <expr::operand E>
  Tensor& mul_(const E& other);
  template <expr::operand E>
  Tensor& div_(const E& other);
  template <expr::number L, expr::number H>
  Tensor& clamp_(L lo, H hi);
  template <expr::expression M, expr::number V>
  Tensor& masked_fill_(const M& mask, V value);
  template <expr::operand E>
  Tensor& operator+=(const E& other) { return add_(other); }
  template <expr::operand E>
  Tensor& operator-=(const E& other) { return sub_(other); }
  template <expr::operand E>
  Tensor& operator*=(const E& other) { return mul_(other); }
  template <expr::operand E>
  Tensor& operator/=(const E& other) { return div_(other); }

  // ------------------------------------------------------------------------------ autograd
  /// Marks a leaf as trainable (gradients are accumulated into grad()).
  Tensor& requires_grad_(bool requires_grad = true);
  bool requires_grad() const;
  /// The accumulated gradient; undefined until a backward pass reaches this tensor. Throws when
  /// the gradient is sparse (nn::Embedding with sparse = true): read that one with sparse_grad().
  Tensor grad() const;
  /// Whether the accumulated gradient is sparse (PyTorch's `p.grad.is_sparse`).
  bool grad_is_sparse() const { return impl_ && impl_->autograd && impl_->autograd->sparse_grad; }
  /// The sparse gradient (a COO SparseTensor; dl/ops/sparse.hpp); throws when it is dense or none.
  SparseTensor<T> sparse_grad() const;
  /// Assignable gradient slot: `t.mutable_grad() = dl::Tensor<float>{}` is PyTorch's `t.grad = None`.
  GradSlot<T> mutable_grad() const;
  /// True for tensors not produced by a recorded op (user-created tensors, detached results).
  bool is_leaf() const;
  /// The node that produced this tensor, or null for leaves.
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Backpropagates from a one-element tensor (gradient 1).
  void backward(bool retain_graph = false, bool create_graph = false) const;
  /// Backpropagates `gradient` (same shape as this tensor).
  void backward(const Tensor& gradient, bool retain_graph = false, bool create_graph = false) const;
  /// Keeps grad() of this non-leaf tensor after backward.
  void retain_grad() const;
  /// Calls fn(grad) when this tensor's gradient is computed; a defined return value replaces it.
  void register_hook(std::function<Tensor(const Tensor&)> fn) const;
  /// Calls fn(*this) after each backward pass accumulated into this leaf's grad() (PyTorch's
  /// register_post_accumulate_grad_hook: a per-parameter optimizer step, DDP's gradient buckets).
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const;
  uint32_t output_nr() const;

 private:
  TensorImplPtr impl_;
};

// ------------------------------------------------------------------------------ construction

namespace expr {
/// The profiler's name for materialising expression e: PyTorch's op name for a single op
/// ("aten::mul", "aten::leaky_relu"), "dl::fused[Mul(Add(x0, x1), 2)]" for a fused expression.
template <class E>
std::string profile_name(const E& e) {
  if constexpr (E::depth == 1) {
    static const std::string name = [] {
      std::string s = "aten::";
      for (const char c : E::op_name()) {
        if (c >= 'A' && c <= 'Z') {
          if (s.size() > 6) s += '_';
          s += char(c - 'A' + 'a');
        } else {
          s += c;
        }
      }
      return s;
    }();
    return name;
  } else {
    std::ostringstream os;
    int leaf = 0;
    autograd::detail::describe(os, e, leaf);
    return "dl::fused[" + os.str() + "]";
  }
}
}  // namespace expr

template <scalar_type T>
Tensor<T>::Tensor(TensorImplPtr impl) : impl_(std::move(impl)) {
  DL_CHECK(!impl_ || impl_->dtype == dtype_of<T>, "Tensor<", dtype_name(dtype_of<T>), "> cannot hold a ",
           dtype_name(impl_->dtype), " tensor");
}

template <scalar_type T>
template <expr::node E>
  requires expr::is_apply_v<E>
Tensor<T>::Tensor(const E& e, dl::SourceLocation site) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>,
                "the expression's element type differs from the Tensor's: convert it with dl::cast<T>(expr)");
  const autograd::detail::CallSiteScope call_site(site);
  const profiler::detail::RecordScope scope(profiler::detail::EventKind::op, [&] { return expr::profile_name(e); });
  if (scope) [[unlikely]]
    expr::for_each_leaf(e, [&](const auto& leaf) { scope.input(leaf); });
  const Shape shape = expr::shape_of(e);
  impl_ = detail::make_impl(dtype_of<T>, shape, expr::device_of(e));
  expr::assign(*this, e);
  autograd::record_expr(e, *this);
}

// ------------------------------------------------------------------------------ access

template <scalar_type T>
T Tensor<T>::item() const {
  DL_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar (shape ", shape(), ")");
  if (device().is_cuda()) {
    T v;
    auto& hooks = detail::cuda_backend();
    if (!hooks.copy) detail::no_cuda_runtime(device());
    hooks.copy(&v, kCPU, data_ptr(), device(), sizeof(T), false);
    return v;
  }
  return *data();
}

template <scalar_type T>
template <std::integral... I>
T& Tensor<T>::at(I... idx) const {
  DL_CHECK(int(sizeof...(I)) == dim(), "at: got ", sizeof...(I), " indices for a ", dim(), "-d tensor of shape ", shape());
  DL_CHECK(device().is_cpu(), "at(): the tensor is on ", device(),
           "; a reference to one element needs host memory (use item(), or to(dl::kCPU) first)");
  const int64_t ix[] = {int64_t(idx)..., 0};
  int64_t off = 0;
  for (int d = 0; d < dim(); ++d) {
    int64_t i = ix[d];
    const int64_t n = impl_->shape[d];
    DL_CHECK(i >= -n && i < n, "index ", i, " is out of bounds for dimension ", d, " with size ", n);
    if (i < 0) i += n;
    off += i * impl_->strides[d];
  }
  return data()[off];
}

}  // namespace dl
