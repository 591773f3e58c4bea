// dl/ops/indexing.hpp — joining and indexing: cat, stack, repeat, gather, scatter, scatter_add,
// index_select, index_add, index_copy, index_fill, index_put, put, nonzero, masked_select.
// Out-of-place forms record their backward rules; in-place forms (x.index_add_(...)) write
// straight into x, or, when gradients are needed, compute out of place and copy back so the
// history stays exact.
#pragma once

#include <initializer_list>
#include <vector>

#include "../deterministic.hpp"
#include "../tensor.hpp"
#include "index_geometry.hpp"
#include "kernel_backward.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// Concatenates tensors along an existing dim (all other sizes must agree).
template <scalar_type T>
Tensor<T> cat(const std::vector<Tensor<T>>& tensors, int64_t dim = 0);
/// Stacks equally shaped tensors along a new dim.
template <scalar_type T>
Tensor<T> stack(const std::vector<Tensor<T>>& tensors, int64_t dim = 0);
/// Braced lists, as libtorch: dl::cat({a, b}, 1), dl::stack({a, b}) (a vector parameter cannot
/// deduce T from a braced list).
template <scalar_type T>
Tensor<T> cat(std::initializer_list<Tensor<T>> tensors, int64_t dim = 0) { return cat(std::vector<Tensor<T>>(tensors), dim); }
template <scalar_type T>
Tensor<T> stack(std::initializer_list<Tensor<T>> tensors, int64_t dim = 0) { return stack(std::vector<Tensor<T>>(tensors), dim); }
/// Tiles the tensor: out.size(d) = repeats[d] * size(d) (leading repeats add dims).
template <scalar_type T>
Tensor<T> repeat(const Tensor<T>& x, Dims repeats);
/// out[i][j][k] = x[i][index[i][j][k]][k] for dim == 1 (and likewise for other dims).
template <scalar_type T>
Tensor<T> gather(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index);
/// A copy of x with x[i][index[i][j][k]][k] = src[i][j][k] (dim == 1).
template <scalar_type T>
Tensor<T> scatter(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src);
template <scalar_type T>
Tensor<T> scatter(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value);
/// A copy of x with src added at the scattered positions (duplicates accumulate).
template <scalar_type T>
Tensor<T> scatter_add(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src);
/// The slices x.select(dim, index[i]) stacked along dim.
template <scalar_type T>
Tensor<T> index_select(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index);
/// A copy of x with alpha * source.select(dim, i) added to slice index[i].
template <scalar_type T>
Tensor<T> index_add(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source, T alpha = T(1));
template <scalar_type T>
Tensor<T> index_copy(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source);
template <scalar_type T>
Tensor<T> index_fill(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value);
/// Advanced indexing assignment: x[indices...] = values (or += with accumulate). Index tensors
/// broadcast together and address the leading dims; a bool mask stands for its nonzero indices.
template <scalar_type T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices, const Tensor<T>& values, bool accumulate = false);
/// x[indices...]: the elements (or trailing slices) addressed by the index tensors.
template <scalar_type T>
Tensor<T> index(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices);
/// Coordinates of the non-zero elements, shape [count, x.dim()].
template <expression E>
Tensor<int64_t> nonzero(const E& x);
/// The elements of x where mask (broadcast) is true, as a 1-d tensor.
template <scalar_type T, expression M>
Tensor<T> masked_select(const Tensor<T>& x, const M& mask);

// In place (PyTorch's trailing underscore); each returns x.
template <scalar_type T>
Tensor<T>& scatter_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src);
template <scalar_type T>
Tensor<T>& scatter_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value);
template <scalar_type T>
Tensor<T>& scatter_add_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src);
template <scalar_type T>
Tensor<T>& index_add_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source, T alpha = T(1));
template <scalar_type T>
Tensor<T>& index_copy_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source);
template <scalar_type T>
Tensor<T>& index_fill_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value);
template <scalar_type T>
Tensor<T>& index_put_(Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices, const Tensor<T>& values, bool accumulate = false);
/// Treats x as 1-d (row-major) and writes source at the given flat indices.
template <scalar_type T>
Tensor<T>& put_(Tensor<T>& x, const Tensor<int64_t>& index, const Tensor<T>& source, bool accumulate = false);

// Free-function forms of the view members, as torch.chunk(x, 2, 0) etc.
template <scalar_type T>
std::vector<Tensor<T>> chunk(const Tensor<T>& x, int64_t chunks, int64_t dim = 0) { return x.chunk(chunks, dim); }
template <scalar_type T>
std::vector<Tensor<T>> split(const Tensor<T>& x, int64_t split_size, int64_t dim = 0) { return x.split(split_size, dim); }
template <scalar_type T>
std::vector<Tensor<T>> split(const Tensor<T>& x, std::vector<int64_t> sizes, int64_t dim = 0) { return x.split(std::move(sizes), dim); }
template <scalar_type T>
std::vector<Tensor<T>> unbind(const Tensor<T>& x, int64_t dim = 0) { return x.unbind(dim); }
template <scalar_type T>
Tensor<T> reshape(const Tensor<T>& x, Shape shape) { return x.reshape(shape); }
template <scalar_type T>
Tensor<T> flatten(const Tensor<T>& x, int64_t start_dim = 0, int64_t end_dim = -1) { return x.flatten(start_dim, end_dim); }
template <scalar_type T>
Tensor<T> transpose(const Tensor<T>& x, int64_t dim0, int64_t dim1) { return x.transpose(dim0, dim1); }
template <scalar_type T>
Tensor<T> permute(const Tensor<T>& x, Dims dims) { return x.permute(dims); }
template <scalar_type T>
Tensor<T> squeeze(const Tensor<T>& x) { return x.squeeze(); }
template <scalar_type T>
Tensor<T> unsqueeze(const Tensor<T>& x, int64_t dim) { return x.unsqueeze(dim); }
template <scalar_type T>
Tensor<T> narrow(const Tensor<T>& x, int64_t dim, int64_t start, int64_t length) { return x.narrow(dim, start, length); }

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Calls f(idx) for every multi-index of shape in row-major order.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = numel(shape);
  int64_t idx[kMaxDims] = {};
  for (int64_t i = 0; i < n; ++i) {
    f(static_cast<const int64_t*>(idx));
    for (int d = shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

inline int64_t offset_of(const int64_t* idx, const Strides& st) {
  int64_t o = 0;
  for (int d = 0; d < st.size(); ++d) o += idx[d] * st[d];
  return o;
}

inline int64_t checked_index(int64_t i, int64_t size, int dim, const char* what) {
  DL_CHECK(i >= -size && i < size, what, ": index ", i, " is out of bounds for dimension ", dim, " with size ", size);
  return i < 0 ? i + size : i;
}

inline std::vector<TensorImplPtr> impls(const std::vector<Tensor<int64_t>>& ts) {
  std::vector<TensorImplPtr> out;
  for (const auto& t : ts) out.push_back(t.impl());
  return out;
}

/// Records `rule(grad) -> {grad per input}` as out's history when any input requires grad;
/// `guarded` are the tensors the rule captured (checked against in-place changes).
template <class T, class F, class... Ins>
Tensor<T> with_grad(Tensor<T> out, const char* name, F rule, std::vector<TensorImplPtr> guarded, const Ins&... inputs) {
  return record_kernel(std::move(out), name, {}, std::move(guarded),
                       [rule = std::move(rule)](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) { return rule(g); },
                       inputs...);
}

template <class T>
void check_index_dims(const Tensor<T>& x, const Tensor<int64_t>& index, int d, const char* what, bool src_like = false) {
  DL_CHECK(index.dim() == x.dim() || (x.dim() == 0 && index.dim() <= 1), what,
           ": Index tensor must have the same number of dimensions as input tensor (index shape ", index.shape(),
           ", input shape ", x.shape(), ")");
  for (int i = 0; i < index.dim() && x.dim() > 0; ++i)
    if (i != d || src_like)
      DL_CHECK(index.shape()[i] <= x.shape()[i], what, ": Size does not match at dimension ", i,
               " expected index ", index.shape(), " to be smaller than self ", x.shape(), " apart from dimension ", d);
}

/// The geometry of gather / scatter along d (index_geometry.hpp): the space is index's shape,
/// `dense` the strides of the other operand over it (null: a scalar).
template <class T>
IndexGeometry dim_geometry(const Tensor<T>& x, int d, const Tensor<int64_t>& index, const Strides* dense) {
  IndexGeometry g;
  g.nd = index.dim();
  g.numel = index.numel();
  for (int k = 0; k < g.nd; ++k) {
    g.size[k] = index.shape()[k];
    g.dense[k] = dense ? (*dense)[k] : 0;
    g.base[k] = (x.dim() && k != d) ? x.strides()[k] : 0;
    g.idx_stride[0][k] = index.strides()[k];
  }
  g.nidx = 1;
  g.idx[0] = index.data_ptr();
  g.bound[0] = x.dim() ? x.shape()[d] : 1;
  g.step[0] = x.dim() ? x.strides()[d] : 0;
  g.dim_of[0] = d;
  return g;
}

/// The geometry of x[idx...] (advanced indexing): idx broadcast to bshape address x's leading
/// dims; the space is bshape followed by x's remaining dims.
template <class T>
IndexGeometry advanced_geometry(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& idx, const Shape& bshape,
                                const Strides* dense) {
  const int m = idx.size(), nb = bshape.size(), nd = nb + x.dim() - m;
  DL_CHECK(nd <= kMaxDims, "index: the indexing result would have ", nd, " dims; at most ", kMaxDims, " are supported");
  IndexGeometry g;
  g.nd = nd;
  g.nidx = m;
  for (int k = 0; k < nd; ++k) {
    g.size[k] = k < nb ? bshape[k] : x.shape()[m + k - nb];
    g.base[k] = k < nb ? 0 : x.strides()[m + k - nb];
    g.dense[k] = dense ? (*dense)[k] : 0;
    g.numel *= g.size[k];
  }
  for (int i = 0; i < m; ++i) {
    const Tensor<int64_t> e = idx[i].expand(bshape);
    g.idx[i] = e.data_ptr();
    for (int k = 0; k < nb; ++k) g.idx_stride[i][k] = e.strides()[k];
    g.bound[i] = x.shape()[i];
    g.step[i] = x.strides()[i];
    g.dim_of[i] = i;
  }
  return g;
}

/// Runs an indexed copy on the GPU (value: a scalar for Assign/Add without a dense operand, or a
/// factor applied to the dense operand of an Add).
template <class T>
void device_indexed_copy(IndexMode mode, const IndexGeometry& g, const Tensor<T>& indexed, const Tensor<T>* dense,
                         const T* value, const char* what) {
  if (g.numel == 0) return;
  if (mode == IndexMode::Add) alert_not_deterministic(cat(what, " on CUDA (atomic adds)"));
  index_hooks_for(indexed.device())
      .indexed_copy(dtype_of<T>, indexed.device().index, mode, g, indexed.data_ptr(), dense ? dense->data_ptr() : nullptr,
                    value, what);
}

/// The 1-d index of an index_* op as an index tensor over `shape` (its entries along d, broadcast
/// over the other dims), for the GPU's indexed copy.
inline Tensor<int64_t> slice_index_over(const Tensor<int64_t>& idx, int d, const Shape& shape) {
  if (shape.size() == 0) return idx.reshape({});
  Shape one = Dims::filled(shape.size(), 1);
  one[d] = idx.numel();
  return idx.view(one).expand(shape);
}

struct AssignOp {
  template <class T>
  void operator()(T& o, T v) const { o = v; }
};
struct AddOp {
  template <class T>
  void operator()(T& o, T v) const { o += v; }
};

/// Core of scatter/scatter_add on raw memory: for each index position p, out[p with p[d] =
/// index[p]] (op)= src[p]. `src` null means `value`.
template <class T, class Op>
void scatter_kernel(const Tensor<T>& out, int d, const Tensor<int64_t>& index, const Tensor<T>* src, T value, Op op,
                    const char* what) {
  check_index_dims(out, index, d, what);
  if (src) check_index_dims(*src, index, d, what, true);
  if (out.device().is_cuda() || index.device().is_cuda() || (src && src->device().is_cuda())) {
    check_devices(what, out, index);
    if (src) check_devices(what, out, *src);
    constexpr IndexMode mode = std::is_same_v<Op, AddOp> ? IndexMode::Add : IndexMode::Assign;
    device_indexed_copy(mode, dim_geometry(out, d, index, src ? &src->strides() : nullptr), out, src, src ? nullptr : &value, what);
    return;
  }
  const Tensor<int64_t> idx = index.contiguous();
  const int64_t n = out.dim() ? out.shape()[d] : 1;
  int64_t i = 0;
  for_each_index(idx.shape(), [&](const int64_t* p) {
    const int64_t k = checked_index(idx.data()[i++], n, d, what);
    int64_t o = 0;
    for (int a = 0; a < out.dim(); ++a) o += (a == d ? k : p[a]) * out.strides()[a];
    op(out.data()[o], src ? src->data()[offset_of(p, src->strides())] : value);
  });
}


/// x with the scatter written into a copy (not recorded).
template <class T, class Op>
Tensor<T> scattered(const Tensor<T>& x, int d, const Tensor<int64_t>& index, const Tensor<T>* src, T value, Op op, const char* what) {
  NoGradGuard no_grad;
  Tensor<T> out = x.clone();
  scatter_kernel(out, d, index, src, value, op, what);
  return out;
}

/// The gradient of a scatter's src: g read through index (index's shape), placed in the leading
/// corner of zeros of src's shape when index is smaller than src (the rest of src was never
/// read). Differentiable: the corner is written through a view, which records CopySlices.
template <class T>
Tensor<T> src_grad(const Tensor<T>& g, int d, const Tensor<int64_t>& index, const Shape& src_shape) {
  Tensor<T> read = gather(g, d, index);
  if (read.shape() == src_shape) return read;
  Tensor<T> out = zeros<T>(src_shape, g.device());
  Tensor<T> corner = out;
  for (int a = 0; a < read.dim(); ++a) corner = corner.narrow(a, 0, read.shape()[a]);
  corner.copy_(read);
  return out;
}

template <class T>
Tensor<int64_t> slice_index_check(const Tensor<int64_t>& index, int64_t size, int d, const char* what) {
  DL_CHECK(index.dim() <= 1, what, "(): Index is supposed to be a vector (got shape ", index.shape(), ")");
  Tensor<int64_t> idx = index.reshape({-1}).contiguous();
  if (idx.device().is_cuda()) return idx;  // checked by the kernel
  for (int64_t i = 0; i < idx.numel(); ++i) (void)checked_index(idx.data()[i], size, d, what);
  return idx;
}

/// Applies op(x.select(dim, index[i]), source.select(dim, i)) slice by slice.
template <class T, class Op>
void index_slices(const Tensor<T>& x, int d, const Tensor<int64_t>& idx, const Tensor<T>* source, Op op) {
  const int64_t n = x.shape()[d];
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t k = idx.data()[i] < 0 ? idx.data()[i] + n : idx.data()[i];
    Tensor<T> dst = x.select(d, k);
    op(dst, source ? source->select(d, i) : Tensor<T>());
  }
}

/// index_add/index_copy/index_fill on the GPU: one indexed copy over source's shape (or, for a
/// fill, x's shape with idx.numel() slices along d).
template <class T>
void device_index_slices(IndexMode mode, const Tensor<T>& x, int d, const Tensor<int64_t>& idx, const Tensor<T>* source,
                         const T* value, const char* what) {
  check_devices(what, x, idx);
  Shape space = x.shape();
  if (source) {
    check_devices(what, x, *source);
    space = source->shape();
    for (int a = 0; a < x.dim(); ++a)
      DL_CHECK(a == d || space[a] == x.shape()[a], what, "_(): source shape ", space, " must match self ", x.shape(),
               " apart from dimension ", d);
  } else if (x.dim()) {
    space[d] = idx.numel();
  }
  device_indexed_copy(mode, dim_geometry(x, d, slice_index_over(idx, d, space), source ? &source->strides() : nullptr), x,
                      source, value, what);
}

}  // namespace detail

// ---- cat / stack / repeat

template <scalar_type T>
Tensor<T> cat(const std::vector<Tensor<T>>& tensors, int64_t dim) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::cat", tensors);
  DL_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // 1-d empty tensors are skipped, as in PyTorch (legacy behaviour).
  std::vector<Tensor<T>> parts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  if (parts.empty()) return tensors[0].clone();
  const Tensor<T>& ref = parts[0];
  DL_CHECK(ref.dim() > 0, "zero-dimensional tensor (at position 0) cannot be concatenated");
  const int d = wrap_dim(dim, ref.dim(), "cat");
  Shape shape = ref.shape();
  shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& t = parts[i];
    detail::check_devices("cat", ref, t);
    DL_CHECK(t.dim() == ref.dim(), "Tensors must have same number of dimensions: got ", ref.dim(), " and ", t.dim());
    for (int a = 0; a < ref.dim(); ++a)
      DL_CHECK(a == d || t.shape()[a] == ref.shape()[a], "Sizes of tensors must match except in dimension ", d,
               ". Expected size ", ref.shape()[a], " but got size ", t.shape()[a], " for tensor number ", i, " in the list.");
    shape[d] += t.shape()[d];
  }
  Tensor<T> out = empty<T>(shape, ref.device());
  std::vector<int64_t> sizes;
  {
    NoGradGuard no_grad;
    int64_t start = 0;
    for (const auto& t : parts) {
      out.narrow(d, start, t.shape()[d]).copy_(t);
      start += t.shape()[d];
      sizes.push_back(t.shape()[d]);
    }
  }
  bool any = false;
  for (const auto& t : parts) any = any || autograd::any_requires_grad(t);
  if (any) {
    auto rule = [sizes, d](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
      std::vector<TensorImplPtr> grads;
      for (const auto& piece : g.split(sizes, d)) grads.push_back(piece.impl());
      return grads;
    };
    auto node = std::make_shared<detail::KernelBackward<T, decltype(rule)>>("CatBackward", std::vector<Tensor<T>>{},
                                                                             std::vector<TensorImplPtr>{}, rule);
    for (const auto& t : parts) node->mutable_next_edges().push_back(autograd::gradient_edge(t.impl()));
    autograd::set_history(out, node);
  }
  return out;
}

template <scalar_type T>
Tensor<T> stack(const std::vector<Tensor<T>>& tensors, int64_t dim) {
  DL_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  const int d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor<T>> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    DL_CHECK(tensors[i].shape() == tensors[0].shape(), "stack expects each tensor to be equal size, but got ",
             tensors[0].shape(), " at entry 0 and ", tensors[i].shape(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

template <scalar_type T>
Tensor<T> repeat(const Tensor<T>& x, Dims repeats) {
  DL_CHECK(repeats.size() >= x.dim(), "Number of dimensions of repeat dims (", repeats.size(),
           ") can not be smaller than number of dimensions of tensor (", x.dim(), ")");
  const int n = repeats.size(), off = n - x.dim();
  // View x as [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then flatten pairs.
  Shape padded, expanded, out_shape;
  for (int i = 0; i < n; ++i) {
    DL_CHECK(repeats[i] >= 0, "Trying to create tensor with negative dimension ", repeats[i], ": ", repeats);
    const int64_t s = i < off ? 1 : x.shape()[i - off];
    out_shape.push_back(s * repeats[i]);
  }
  DL_CHECK(2 * n <= kMaxDims || n == 0, "repeat: at most ", kMaxDims / 2, " dims supported, got ", n);
  for (int i = 0; i < n; ++i) {
    const int64_t s = i < off ? 1 : x.shape()[i - off];
    padded.push_back(1);
    padded.push_back(s);
    expanded.push_back(repeats[i]);
    expanded.push_back(s);
  }
  return x.reshape(padded).expand(expanded).contiguous().reshape(out_shape);
}

// ---- gather / scatter

template <scalar_type T>
Tensor<T> gather(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index) {
  const int d = wrap_dim(dim, x.dim(), "gather");
  detail::check_index_dims(x, index, d, "gather");
  detail::check_devices("gather", x, index);
  Tensor<T> out = empty<T>(index.shape(), x.device());
  const Tensor<int64_t> idx = index.contiguous();
  if (x.device().is_cuda()) {
    detail::device_indexed_copy(detail::IndexMode::Gather, detail::dim_geometry(x, d, idx, &out.strides()), x, &out,
                                static_cast<const T*>(nullptr), "gather");
  } else {
    const int64_t n = x.dim() ? x.shape()[d] : 1;
    int64_t i = 0;
    detail::for_each_index(idx.shape(), [&](const int64_t* p) {
      const int64_t k = detail::checked_index(idx.data()[i], n, d, "gather");
      int64_t o = 0;
      for (int a = 0; a < x.dim(); ++a) o += (a == d ? k : p[a]) * x.strides()[a];
      out.data()[i++] = x.data()[o];
    });
  }
  const Shape in = x.shape();
  return detail::with_grad(out, "GatherBackward", [in, d, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{scatter_add(zeros<T>(in, g.device()), d, idx, g).impl()};
  }, {idx.impl()}, x);
}

template <scalar_type T>
Tensor<T> scatter(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src) {
  const int d = wrap_dim(dim, x.dim(), "scatter");
  const Tensor<T> out = detail::scattered(x, d, index, &src, T(0), detail::AssignOp{}, "scatter");
  const Tensor<int64_t> idx = index.contiguous();
  const Shape src_shape = src.shape();
  return detail::with_grad(out, "ScatterBackward", [d, idx, src_shape](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{scatter(g, d, idx, T(0)).impl(), detail::src_grad(g, d, idx, src_shape).impl()};
  }, {idx.impl()}, x, src);
}

template <scalar_type T>
Tensor<T> scatter(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value) {
  const int d = wrap_dim(dim, x.dim(), "scatter");
  const Tensor<T> out = detail::scattered(x, d, index, static_cast<const Tensor<T>*>(nullptr), value, detail::AssignOp{}, "scatter");
  const Tensor<int64_t> idx = index.contiguous();
  return detail::with_grad(out, "ScatterBackward", [d, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{scatter(g, d, idx, T(0)).impl()};
  }, {idx.impl()}, x);
}

template <scalar_type T>
Tensor<T> scatter_add(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src) {
  const int d = wrap_dim(dim, x.dim(), "scatter_add");
  const Tensor<T> out = detail::scattered(x, d, index, &src, T(0), detail::AddOp{}, "scatter_add");
  const Tensor<int64_t> idx = index.contiguous();
  const Shape src_shape = src.shape();
  return detail::with_grad(out, "ScatterAddBackward", [d, idx, src_shape](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{g.impl(), detail::src_grad(g, d, idx, src_shape).impl()};
  }, {idx.impl()}, x, src);
}

// ---- index_select / index_add / index_copy / index_fill

template <scalar_type T>
Tensor<T> index_select(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index) {
  const int d = wrap_dim(dim, x.dim(), "index_select");
  const int64_t n = x.dim() ? x.shape()[d] : 1;
  const Tensor<int64_t> idx = detail::slice_index_check<T>(index, n, d, "index_select");
  Shape shape = x.shape();
  if (x.dim()) shape[d] = idx.numel();
  detail::check_devices("index_select", x, index);
  Tensor<T> out = empty<T>(shape, x.device());
  if (x.device().is_cuda()) {
    detail::device_indexed_copy(detail::IndexMode::Gather,
                                detail::dim_geometry(x, d, detail::slice_index_over(idx, d, shape), &out.strides()), x,
                                &out, static_cast<const T*>(nullptr), "index_select");
  } else {
    NoGradGuard no_grad;
    if (x.dim() == 0) out.copy_(x);
    for (int64_t i = 0; i < idx.numel() && x.dim(); ++i) {
      const int64_t k = idx.data()[i] < 0 ? idx.data()[i] + n : idx.data()[i];
      out.select(d, i).copy_(x.select(d, k));
    }
  }
  const Shape in = x.shape();
  return detail::with_grad(out, "IndexSelectBackward", [in, d, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{index_add(zeros<T>(in, g.device()), d, idx, g).impl()};
  }, {idx.impl()}, x);
}

template <scalar_type T>
Tensor<T> index_add(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source, T alpha) {
  const int d = wrap_dim(dim, x.dim(), "index_add");
  const Tensor<int64_t> idx = detail::slice_index_check<T>(index, x.dim() ? x.shape()[d] : 1, d, "index_add");
  DL_CHECK(source.dim() == x.dim() && (x.dim() == 0 || source.shape()[d] == idx.numel()), "index_add_(): source shape ",
           source.shape(), " does not match self ", x.shape(), " with ", idx.numel(), " indices along dim ", d);
  Tensor<T> out;
  {
    NoGradGuard no_grad;
    out = x.clone();
    if (out.device().is_cuda()) detail::device_index_slices(detail::IndexMode::Add, out, d, idx, &source, &alpha, "index_add");
    else detail::index_slices(out, d, idx, &source, [&](Tensor<T>& dst, const Tensor<T>& s) { dst.add_(s * alpha); });
  }
  return detail::with_grad(out, "IndexAddBackward", [d, idx, alpha](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{g.impl(), Tensor<T>(index_select(g, d, idx) * alpha).impl()};
  }, {idx.impl()}, x, source);
}

template <scalar_type T>
Tensor<T> index_copy(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source) {
  const int d = wrap_dim(dim, x.dim(), "index_copy");
  const Tensor<int64_t> idx = detail::slice_index_check<T>(index, x.dim() ? x.shape()[d] : 1, d, "index_copy");
  DL_CHECK(source.dim() == x.dim() && (x.dim() == 0 || source.shape()[d] == idx.numel()), "index_copy_(): source shape ",
           source.shape(), " does not match self ", x.shape(), " with ", idx.numel(), " indices along dim ", d);
  Tensor<T> out;
  {
    NoGradGuard no_grad;
    out = x.clone();
    if (out.device().is_cuda()) detail::device_index_slices(detail::IndexMode::Assign, out, d, idx, &source, static_cast<const T*>(nullptr), "index_copy");
    else detail::index_slices(out, d, idx, &source, [&](Tensor<T>& dst, const Tensor<T>& s) { dst.copy_(s); });
  }
  return detail::with_grad(out, "IndexCopyBackward", [d, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{index_fill(g, d, idx, T(0)).impl(), index_select(g, d, idx).impl()};
  }, {idx.impl()}, x, source);
}

template <scalar_type T>
Tensor<T> index_fill(const Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value) {
  const int d = wrap_dim(dim, x.dim(), "index_fill");
  const Tensor<int64_t> idx = detail::slice_index_check<T>(index, x.dim() ? x.shape()[d] : 1, d, "index_fill");
  Tensor<T> out;
  {
    NoGradGuard no_grad;
    out = x.clone();
    if (out.device().is_cuda()) detail::device_index_slices(detail::IndexMode::Assign, out, d, idx, static_cast<const Tensor<T>*>(nullptr), &value, "index_fill");
    else detail::index_slices(out, d, idx, static_cast<const Tensor<T>*>(nullptr), [&](Tensor<T>& dst, const Tensor<T>&) { dst.fill_(value); });
  }
  return detail::with_grad(out, "IndexFillBackward", [d, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{index_fill(g, d, idx, T(0)).impl()};
  }, {idx.impl()}, x);
}

// ---- advanced indexing

namespace detail {
/// Index tensors broadcast together, with negatives wrapped and bounds checked.
template <class T>
std::vector<Tensor<int64_t>> prepare_indices(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices, Shape& bshape) {
  DL_CHECK(!indices.empty() && int(indices.size()) <= x.dim(), "too many indices for tensor of dimension ", x.dim(),
           " (got ", indices.size(), ")");
  bshape = indices[0].shape();
  for (const auto& i : indices) bshape = broadcast_shapes(bshape, i.shape());
  std::vector<Tensor<int64_t>> out;
  for (size_t a = 0; a < indices.size(); ++a) {
    DL_CHECK(indices[a].device() == x.device(), "indices should be either on cpu or on the same device as the indexed tensor (",
             x.device(), "), but index ", a, " is on ", indices[a].device());
    Tensor<int64_t> e = indices[a].expand(bshape).contiguous();
    if (e.device().is_cuda()) {  // checked by the kernel
      out.push_back(e);
      continue;
    }
    for (int64_t j = 0; j < e.numel(); ++j) (void)checked_index(e.data()[j], x.shape()[int(a)], int(a), "index");
    out.push_back(e);
  }
  return out;
}
/// Offset (in x) of the slice addressed by element j of the broadcast index tensors.
template <class T>
int64_t indexed_offset(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& idx, int64_t j) {
  int64_t o = 0;
  for (size_t a = 0; a < idx.size(); ++a) {
    int64_t k = idx[a].data()[j];
    if (k < 0) k += x.shape()[int(a)];
    o += k * x.strides()[int(a)];
  }
  return o;
}
}  // namespace detail

template <scalar_type T>
Tensor<T> index(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices) {
  Shape bshape;
  const auto idx = detail::prepare_indices(x, indices, bshape);
  Shape rest, out_shape = bshape;
  for (int a = int(indices.size()); a < x.dim(); ++a) {
    rest.push_back(x.shape()[a]);
    out_shape.push_back(x.shape()[a]);
  }
  Tensor<T> out = empty<T>(out_shape, x.device());
  if (x.device().is_cuda()) {
    detail::device_indexed_copy(detail::IndexMode::Gather, detail::advanced_geometry(x, idx, bshape, &out.strides()), x,
                                &out, static_cast<const T*>(nullptr), "index");
  } else {
    const int64_t m = numel(bshape), r = numel(rest);
    Strides rest_st;
    for (int a = int(indices.size()); a < x.dim(); ++a) rest_st.push_back(x.strides()[a]);
    for (int64_t j = 0; j < m; ++j) {
      const T* src = x.data() + detail::indexed_offset(x, idx, j);
      int64_t k = 0;
      detail::for_each_index(rest, [&](const int64_t* p) { out.data()[j * r + k++] = src[detail::offset_of(p, rest_st)]; });
    }
  }
  const Shape in = x.shape();
  return detail::with_grad(out, "IndexBackward", [in, idx](const Tensor<T>& g) {
    return std::vector<TensorImplPtr>{index_put(zeros<T>(in, g.device()), idx, g, true).impl()};
  }, detail::impls(idx), x);
}

template <scalar_type T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices, const Tensor<T>& values, bool accumulate) {
  Shape bshape;
  const auto idx = detail::prepare_indices(x, indices, bshape);
  Shape target = bshape, rest;
  for (int a = int(indices.size()); a < x.dim(); ++a) {
    target.push_back(x.shape()[a]);
    rest.push_back(x.shape()[a]);
  }
  DL_CHECK(broadcast_shapes(values.shape(), target) == target, "shape mismatch: value tensor of shape ", values.shape(),
           " cannot be broadcast to indexing result of shape ", target);
  Tensor<T> out;
  {
    NoGradGuard no_grad;
    out = x.clone();
    if (out.device().is_cuda()) {
      detail::check_devices("index_put_", out, values);
      const Tensor<T> v = values.expand(target);
      detail::device_indexed_copy(accumulate ? detail::IndexMode::Add : detail::IndexMode::Assign,
                                  detail::advanced_geometry(out, idx, bshape, &v.strides()), out, &v,
                                  static_cast<const T*>(nullptr), "index_put_");
    } else {
    const Tensor<T> v = values.expand(target).contiguous();
    const int64_t m = numel(bshape), r = numel(rest);
    Strides rest_st;
    for (int a = int(indices.size()); a < x.dim(); ++a) rest_st.push_back(out.strides()[a]);
    for (int64_t j = 0; j < m; ++j) {
      T* dst = out.data() + detail::indexed_offset(out, idx, j);
      int64_t k = 0;
      detail::for_each_index(rest, [&](const int64_t* p) {
        T& o = dst[detail::offset_of(p, rest_st)];
        o = accumulate ? T(o + v.data()[j * r + k]) : v.data()[j * r + k];
        ++k;
      });
    }
    }
  }
  const Shape vshape = values.shape();
  return detail::with_grad(out, "IndexPutBackward", [idx, vshape, accumulate](const Tensor<T>& g) {
    Tensor<T> gx = accumulate ? g : index_put(g, idx, zeros<T>({}, g.device()), false);
    return std::vector<TensorImplPtr>{gx.impl(), detail::sum_to(index(g, idx), vshape).impl()};
  }, detail::impls(idx), x, values);
}

template <expression E>
Tensor<int64_t> nonzero(const E& e) {
  using T = expr::value_type_t<E>;
  const Tensor<T> x = detail::materialize(e);
  if (x.device().is_cuda()) {
    const Tensor<T> c = x.contiguous();
    const auto& hooks = detail::index_hooks_for(x.device());
    int64_t count = 0;
    const auto positions = hooks.nonzero_positions(dtype_of<T>, x.device().index, c.data_ptr(), c.numel(), &count);
    Tensor<int64_t> out = empty<int64_t>({count, int64_t(x.dim())}, x.device());
    if (count && x.dim())
      hooks.unravel(x.device().index, static_cast<const int64_t*>(positions->data()), count, x.dim(), x.shape().data(),
                    out.data_ptr());
    return out;
  }
  std::vector<int64_t> coords;
  int64_t count = 0;
  const Tensor<T> c = x.contiguous();
  int64_t i = 0;
  detail::for_each_index(x.shape(), [&](const int64_t* p) {
    if (c.data()[i++] != T(0)) {
      coords.insert(coords.end(), p, p + x.dim());
      ++count;
    }
  });
  Tensor<int64_t> out = empty<int64_t>({count, int64_t(x.dim())});
  std::copy(coords.begin(), coords.end(), out.data());
  return out;
}

template <scalar_type T, expression M>
Tensor<T> masked_select(const Tensor<T>& x, const M& mask_expr) {
  static_assert(std::is_same_v<expr::value_type_t<M>, bool>, "masked_select: the mask must be a bool tensor or expression");
  const Tensor<bool> mask = detail::materialize(mask_expr);
  const Shape shape = broadcast_shapes(x.shape(), mask.shape());
  const Tensor<bool> m = mask.expand(shape).contiguous();
  std::vector<Tensor<int64_t>> idx;
  const Tensor<int64_t> nz = nonzero(m);
  for (int d = 0; d < int(shape.size()); ++d) idx.push_back(nz.select(1, d).contiguous());
  if (shape.size() == 0) return index(x.reshape({1}), {nonzero(m.reshape({1})).select(1, 0).contiguous()});
  return index(x.expand(shape), idx);
}

// ---- in place

namespace detail {
/// Writes `result` (computed out of place, with history) into x: in-place ops under autograd.
template <class T>
Tensor<T>& assign_result(Tensor<T>& x, const Tensor<T>& result) {
  return x.copy_(result);
}
template <class T, class... Ins>
bool needs_history(const Tensor<T>& x, const Ins&... ins) {
  return autograd::any_requires_grad(x, ins...);
}
}  // namespace detail

template <scalar_type T>
Tensor<T>& scatter_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src) {
  if (detail::needs_history(x, src)) return detail::assign_result(x, scatter(x, dim, index, src));
  const int d = wrap_dim(dim, x.dim(), "scatter_");
  detail::scatter_kernel(x, d, index, &src, T(0), detail::AssignOp{}, "scatter_");
  x.bump_version();
  return x;
}
template <scalar_type T>
Tensor<T>& scatter_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value) {
  if (detail::needs_history(x)) return detail::assign_result(x, scatter(x, dim, index, value));
  const int d = wrap_dim(dim, x.dim(), "scatter_");
  detail::scatter_kernel(x, d, index, static_cast<const Tensor<T>*>(nullptr), value, detail::AssignOp{}, "scatter_");
  x.bump_version();
  return x;
}
template <scalar_type T>
Tensor<T>& scatter_add_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& src) {
  if (detail::needs_history(x, src)) return detail::assign_result(x, scatter_add(x, dim, index, src));
  const int d = wrap_dim(dim, x.dim(), "scatter_add_");
  detail::scatter_kernel(x, d, index, &src, T(0), detail::AddOp{}, "scatter_add_");
  x.bump_version();
  return x;
}
template <scalar_type T>
Tensor<T>& index_add_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source, T alpha) {
  return detail::assign_result(x, index_add(x, dim, index, source, alpha));
}
template <scalar_type T>
Tensor<T>& index_copy_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, const Tensor<T>& source) {
  return detail::assign_result(x, index_copy(x, dim, index, source));
}
template <scalar_type T>
Tensor<T>& index_fill_(Tensor<T>& x, int64_t dim, const Tensor<int64_t>& index, T value) {
  return detail::assign_result(x, index_fill(x, dim, index, value));
}
template <scalar_type T>
Tensor<T>& index_put_(Tensor<T>& x, const std::vector<Tensor<int64_t>>& indices, const Tensor<T>& values, bool accumulate) {
  return detail::assign_result(x, index_put(x, indices, values, accumulate));
}
template <scalar_type T>
Tensor<T>& put_(Tensor<T>& x, const Tensor<int64_t>& index, const Tensor<T>& source, bool accumulate) {
  DL_CHECK(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
           source.numel(), ", index.numel() = ", index.numel());
  DL_CHECK(x.is_contiguous(), "put_(): the destination must be contiguous (shape ", x.shape(), ")");
  Tensor<T> flat = x.view({-1});
  Tensor<T> result = index_put(flat, {index.reshape({-1})}, source.reshape({-1}), accumulate);
  if (!detail::needs_history(x, source) && x.device().is_cpu()) {
    std::copy(result.data(), result.data() + result.numel(), x.data());
    x.bump_version();
    return x;
  }
  return x.copy_(result.view(x.shape()));
}

// ---- Tensor members (declared in dl/tensor.hpp)

template <scalar_type T>
Tensor<T> Tensor<T>::gather(int64_t dim, const Tensor<int64_t>& index) const { return dl::gather(*this, dim, index); }
template <scalar_type T>
Tensor<T> Tensor<T>::scatter(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) const { return dl::scatter(*this, dim, index, src); }
template <scalar_type T>
Tensor<T> Tensor<T>::scatter(int64_t dim, const Tensor<int64_t>& index, T value) const { return dl::scatter(*this, dim, index, value); }
template <scalar_type T>
Tensor<T> Tensor<T>::scatter_add(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) const {
  return dl::scatter_add(*this, dim, index, src);
}
template <scalar_type T>
Tensor<T> Tensor<T>::index_select(int64_t dim, const Tensor<int64_t>& index) const { return dl::index_select(*this, dim, index); }
template <scalar_type T>
Tensor<T> Tensor<T>::index_add(int64_t dim, const Tensor<int64_t>& index, const Tensor& source, T alpha) const {
  return dl::index_add(*this, dim, index, source, alpha);
}
template <scalar_type T>
Tensor<T> Tensor<T>::index_copy(int64_t dim, const Tensor<int64_t>& index, const Tensor& source) const {
  return dl::index_copy(*this, dim, index, source);
}
template <scalar_type T>
Tensor<T> Tensor<T>::index_fill(int64_t dim, const Tensor<int64_t>& index, T value) const { return dl::index_fill(*this, dim, index, value); }
template <scalar_type T>
Tensor<T> Tensor<T>::repeat(Dims repeats) const { return dl::repeat(*this, repeats); }
template <scalar_type T>
Tensor<T>& Tensor<T>::scatter_(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) { return dl::scatter_(*this, dim, index, src); }
template <scalar_type T>
Tensor<T>& Tensor<T>::scatter_(int64_t dim, const Tensor<int64_t>& index, T value) { return dl::scatter_(*this, dim, index, value); }
template <scalar_type T>
Tensor<T>& Tensor<T>::scatter_add_(int64_t dim, const Tensor<int64_t>& index, const Tensor& src) {
  return dl::scatter_add_(*this, dim, index, src);
}
template <scalar_type T>
Tensor<T>& Tensor<T>::index_add_(int64_t dim, const Tensor<int64_t>& index, const Tensor& source, T alpha) {
  return dl::index_add_(*this, dim, index, source, alpha);
}
template <scalar_type T>
Tensor<T>& Tensor<T>::index_copy_(int64_t dim, const Tensor<int64_t>& index, const Tensor& source) {
  return dl::index_copy_(*this, dim, index, source);
}
template <scalar_type T>
Tensor<T>& Tensor<T>::index_fill_(int64_t dim, const Tensor<int64_t>& index, T value) { return dl::index_fill_(*this, dim, index, value); }

}  // namespace dl
