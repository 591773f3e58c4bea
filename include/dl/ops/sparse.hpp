// dl/ops/sparse.hpp — dl::SparseTensor<T>, a sparse tensor in PyTorch's COO layout (torch.sparse_coo):
// indices [sparse_dim, nnz] (int64), values [nnz, dense sizes...] and the dense size. It is what an
// nn::Embedding with sparse = true leaves as its weight's gradient (read with p.sparse_grad()), and
// what optim::SparseAdam, SGD and Adagrad step with: only the rows present are touched.
//
//   auto s = dl::sparse_coo_tensor(dl::tensor<int64_t>({{0, 2, 0}}), dl::tensor<float>({{1, 2}, {3, 4}, {5, 6}}), {4, 2});
//   s.is_coalesced();       // false: index 0 appears twice
//   auto c = s.coalesce();  // indices [[0, 2]], values [[6, 8], [3, 4]]
//   dl::Tensor<float> d = c.to_dense();
#pragma once

#include <algorithm>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "../tensor.hpp"
#include "indexing.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

template <scalar_type T>
class SparseTensor {
 public:
  SparseTensor() = default;
  /// indices [sparse_dim, nnz] int64 (each column the position of one value), values
  /// [nnz, size[sparse_dim:]...]; duplicates are allowed (they add up), as PyTorch's.
  /// is_coalesced: the caller promises sorted, unique indices.
  SparseTensor(Tensor<int64_t> indices, Tensor<T> values, Shape size, bool is_coalesced = false);

  bool defined() const { return values_.defined(); }
  const Shape& shape() const { return size_; }
  const Shape& sizes() const { return size_; }
  int64_t size(int d) const { return size_[d < 0 ? d + int(size_.size()) : d]; }
  int dim() const { return int(size_.size()); }
  int sparse_dim() const { return int(indices_.size(0)); }
  int dense_dim() const { return dim() - sparse_dim(); }
  /// The number of stored values (duplicates counted).
  int64_t _nnz() const { return indices_.size(1); }
  bool is_coalesced() const { return coalesced_; }
  /// Indices and values of a coalesced tensor (PyTorch's indices() / values(): an uncoalesced one is
  /// an error; _indices() / _values() give the stored ones either way).
  const Tensor<int64_t>& indices() const;
  const Tensor<T>& values() const;
  const Tensor<int64_t>& _indices() const { return indices_; }
  const Tensor<T>& _values() const { return values_; }

  /// Sorted, unique indices; the values of repeated indices summed (in their stored order).
  SparseTensor coalesce() const;
  /// The dense tensor (duplicates summed).
  Tensor<T> to_dense() const;
  /// Every stored value times s.
  SparseTensor operator*(T s) const { return SparseTensor(indices_, Tensor<T>(values_ * s), size_, coalesced_); }
  SparseTensor operator-() const { return *this * T(-1); }

 private:
  Tensor<int64_t> indices_;
  Tensor<T> values_;
  Shape size_;
  bool coalesced_ = false;
};

/// PyTorch's torch.sparse_coo_tensor(indices, values, size): checked (ranks, sizes, index bounds).
template <scalar_type T>
SparseTensor<T> sparse_coo_tensor(const Tensor<int64_t>& indices, const Tensor<T>& values, const Shape& size);

/// a + b (same size), PyTorch's sparse add: coalesced when both are; see the body for the entries
/// of uncoalesced operands.
template <scalar_type T>
SparseTensor<T> operator+(const SparseTensor<T>& a, const SparseTensor<T>& b);

/// PyTorch's repr: `tensor(indices=tensor([[0, 2]]),\n       values=tensor([...]),\n       size=(4, 2), nnz=2, layout=torch.sparse_coo)`.
template <scalar_type T>
std::string to_string(const SparseTensor<T>& s);
template <scalar_type T>
std::ostream& operator<<(std::ostream& os, const SparseTensor<T>& s) {
  return os << to_string(s);
}

namespace detail {
/// Adds the sparse gradient g into the leaf t's gradient slot, as AccumulateGrad adds a dense one:
/// kept sparse (PyTorch's sparse add) unless t already has a dense gradient,
/// which it is added into; then t's post-accumulate hooks run.
template <scalar_type T>
void accumulate_sparse_grad(const TensorImplPtr& t, const SparseTensor<T>& g);
}  // namespace detail

// ------------------------------------------------------------------------------ implementation

template <scalar_type T>
SparseTensor<T>::SparseTensor(Tensor<int64_t> indices, Tensor<T> values, Shape size, bool is_coalesced)
    : indices_(std::move(indices)), values_(std::move(values)), size_(std::move(size)), coalesced_(is_coalesced) {}

template <scalar_type T>
const Tensor<int64_t>& SparseTensor<T>::indices() const {
  DL_CHECK(coalesced_, "Cannot get indices on an uncoalesced tensor, please call .coalesce() first");
  return indices_;
}

template <scalar_type T>
const Tensor<T>& SparseTensor<T>::values() const {
  DL_CHECK(coalesced_, "Cannot get values on an uncoalesced tensor, please call .coalesce() first");
  return values_;
}

namespace detail {
/// Row-major linear positions of the nnz index columns within the sparse dimensions of size.
inline std::vector<int64_t> sparse_linear_index(const Tensor<int64_t>& indices, const Shape& size) {
  const Tensor<int64_t> idx = indices.contiguous();
  const int64_t sd = idx.size(0), nnz = idx.size(1);
  std::vector<int64_t> lin(size_t(nnz), 0);
  const int64_t* p = idx.data();
  for (int64_t d = 0; d < sd; ++d)
    for (int64_t k = 0; k < nnz; ++k) lin[size_t(k)] = lin[size_t(k)] * size[int(d)] + p[d * nnz + k];
  return lin;
}
}  // namespace detail

template <scalar_type T>
SparseTensor<T> SparseTensor<T>::coalesce() const {
  if (coalesced_) return *this;
  const int64_t nnz = _nnz(), sd = sparse_dim();
  const std::vector<int64_t> lin = detail::sparse_linear_index(indices_, size_);
  std::vector<int64_t> order(static_cast<size_t>(nnz));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lin[size_t(a)] < lin[size_t(b)]; });
  int64_t unique = 0;
  for (int64_t k = 0; k < nnz; ++k) unique += k == 0 || lin[size_t(order[size_t(k)])] != lin[size_t(order[size_t(k - 1)])];
  const Tensor<T> vals = values_.contiguous();
  const int64_t row = nnz ? vals.numel() / nnz : 0;
  Shape vshape = values_.shape();
  vshape[0] = unique;
  Tensor<T> out_vals = zeros<T>(vshape);
  Tensor<int64_t> out_idx = empty<int64_t>({sd, unique});
  const Tensor<int64_t> idx = indices_.contiguous();
  int64_t u = -1;
  for (int64_t k = 0; k < nnz; ++k) {
    const int64_t src = order[size_t(k)];
    if (k == 0 || lin[size_t(src)] != lin[size_t(order[size_t(k - 1)])]) {
      ++u;
      for (int64_t d = 0; d < sd; ++d) out_idx.data()[d * unique + u] = idx.data()[d * nnz + src];
    }
    T* dst = out_vals.data() + u * row;
    const T* from = vals.data() + src * row;
    for (int64_t j = 0; j < row; ++j) dst[j] += from[j];
  }
  return SparseTensor(out_idx, out_vals, size_, true);
}

template <scalar_type T>
Tensor<T> SparseTensor<T>::to_dense() const {
  Tensor<T> out = zeros<T>(size_);
  const int64_t nnz = _nnz();
  if (nnz == 0) return out;
  const std::vector<int64_t> lin = detail::sparse_linear_index(indices_, size_);
  const Tensor<T> vals = values_.contiguous();
  const int64_t row = vals.numel() / nnz;
  for (int64_t k = 0; k < nnz; ++k) {
    T* dst = out.data() + lin[size_t(k)] * row;
    const T* from = vals.data() + k * row;
    for (int64_t j = 0; j < row; ++j) dst[j] += from[j];
  }
  return out;
}

template <scalar_type T>
SparseTensor<T> sparse_coo_tensor(const Tensor<int64_t>& indices, const Tensor<T>& values, const Shape& size) {
  DL_CHECK(indices.dim() == 2, "indices must be sparse_dim x nnz, but got: ", indices.shape());
  DL_CHECK(values.dim() >= 1, "values must have at least one dimension (nnz), but got: ", values.shape());
  const int64_t sd = indices.size(0), nnz = indices.size(1);
  DL_CHECK(values.size(0) == nnz, "indices and values must have same nnz, but got nnz from indices: ", nnz,
           ", nnz from values: ", values.size(0));
  DL_CHECK(sd + values.dim() - 1 == int64_t(size.size()), "number of dimensions must be sparse_dim (", sd,
           ") + dense_dim (", values.dim() - 1, "), but got ", size.size());
  for (int d = 1; d < values.dim(); ++d)
    DL_CHECK(values.size(d) == size[int(sd) + d - 1], "values has incorrect size, expected ", size, ", got ", values.shape());
  const Tensor<int64_t> idx = indices.contiguous();
  for (int64_t d = 0; d < sd; ++d)
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t i = idx.data()[d * nnz + k];
      DL_CHECK(i >= 0 && i < size[int(d)], "size is inconsistent with indices: for dim ", d, ", size is ", size[int(d)],
               " but found index ", i);
    }
  return SparseTensor<T>(idx, values.contiguous(), size, false);
}

template <scalar_type T>
SparseTensor<T> operator+(const SparseTensor<T>& a, const SparseTensor<T>& b) {
  DL_CHECK(a.shape() == b.shape(), "add: expected sizes of 'self' and 'other' to match, but ", a.shape(), " != ", b.shape());
  DL_CHECK(a.sparse_dim() == b.sparse_dim(), "add: expected 'self' and 'other' to have same sparse dimensions, but ",
           a.sparse_dim(), " != ", b.sparse_dim());
  // PyTorch's merge walk: the two index lists are walked side by side, the smaller index taken first,
  // equal indices met at the same step summed into one entry. Coalesced operands give the coalesced
  // sum; uncoalesced ones keep (most of) their entries, in the order PyTorch's sum has them.
  const Tensor<int64_t> ai = a._indices().contiguous(), bi = b._indices().contiguous();
  const Tensor<T> av = a._values().contiguous(), bv = b._values().contiguous();
  const int64_t sd = a.sparse_dim(), na = a._nnz(), nb = b._nnz();
  const int64_t row = na ? av.numel() / na : (nb ? bv.numel() / nb : 0);
  std::vector<int64_t> idx;
  std::vector<T> vals;
  idx.reserve(size_t((na + nb) * sd));
  vals.reserve(size_t((na + nb) * row));
  int64_t i = 0, j = 0, n = 0;
  while (i < na || j < nb) {
    int cmp = 0;
    if (i >= na) cmp = -1;
    else if (j >= nb) cmp = 1;
    else
      for (int64_t d = 0; d < sd && cmp == 0; ++d) {
        const int64_t x = ai.data()[d * na + i], y = bi.data()[d * nb + j];
        cmp = x < y ? 1 : (x > y ? -1 : 0);
      }
    const bool take_a = cmp >= 0, take_b = cmp <= 0;
    for (int64_t d = 0; d < sd; ++d) idx.push_back(take_a ? ai.data()[d * na + i] : bi.data()[d * nb + j]);
    for (int64_t c = 0; c < row; ++c) vals.push_back((take_a ? av.data()[i * row + c] : T(0)) + (take_b ? bv.data()[j * row + c] : T(0)));
    i += take_a;
    j += take_b;
    ++n;
  }
  Tensor<int64_t> out_idx = empty<int64_t>({sd, n});
  for (int64_t k = 0; k < n; ++k)
    for (int64_t d = 0; d < sd; ++d) out_idx.data()[d * n + k] = idx[size_t(k * sd + d)];
  Shape vshape = av.shape();
  vshape[0] = n;
  Tensor<T> out_vals = empty<T>(vshape);
  std::copy(vals.begin(), vals.end(), out_vals.data());
  return SparseTensor<T>(out_idx, out_vals, a.shape(), a.is_coalesced() && b.is_coalesced());
}

template <scalar_type T>
std::string to_string(const SparseTensor<T>& s) {
  if (!s.defined()) return "tensor(undefined)";
  // Continuation lines of a nested tensor line up under its first one.
  auto nested = [](std::string str, size_t indent) {
    for (size_t at = str.find('\n'); at != std::string::npos; at = str.find('\n', at + 1)) str.insert(at + 1, indent, ' ');
    return str;
  };
  std::string size = "size=(";
  for (int d = 0; d < s.dim(); ++d) size += (d ? ", " : "") + std::to_string(s.size(d));
  if (s.dim() == 1) size += ",";
  std::string out = "tensor(indices=" + nested(to_string(s._indices()), 15) + ",\n";
  std::string vals = to_string(s._values());
  if (const size_t dt = vals.find(", dtype="); dt != std::string::npos) vals.erase(dt, vals.find(')', dt) - dt);
  out += "       values=" + nested(vals, 14) + ",\n";
  out += "       " + size + "), nnz=" + std::to_string(s._nnz());
  if (!std::is_same_v<T, float>) out += ", dtype=torch." + std::string(dtype_name(dtype_of<T>));
  return out + ", layout=torch.sparse_coo)";
}

namespace detail {
/// The typed view of a leaf's sparse gradient slot.
template <scalar_type T>
SparseTensor<T> sparse_of(const autograd::SparseGrad& g) {
  return SparseTensor<T>(Tensor<int64_t>(g.indices), Tensor<T>(g.values), g.size, g.coalesced);
}
template <scalar_type T>
TensorImplPtr sparse_grad_to_dense(const autograd::SparseGrad& g) {
  return sparse_of<T>(g).to_dense().impl();
}

template <scalar_type T>
void accumulate_sparse_grad(const TensorImplPtr& t, const SparseTensor<T>& g) {
  auto& m = autograd::detail::meta(t);
  std::unique_lock lock(m.mutex);
  if (m.grad) {  // a dense gradient is there: the sum is dense
    Tensor<T> dense(m.grad);
    const Tensor<T> add = g.to_dense();
    NoGradGuard no_grad;
    dense.add_(add);
  } else {
    const SparseTensor<T> sum = m.sparse_grad ? sparse_of<T>(*m.sparse_grad) + g : g;
    m.sparse_grad = std::make_shared<autograd::SparseGrad>(
        autograd::SparseGrad{sum._indices().impl(), sum._values().impl(), sum.shape(), sum.is_coalesced(), &sparse_grad_to_dense<T>});
  }
  autograd::detail::run_post_accumulate_hooks(m, lock);
}
}  // namespace detail

template <scalar_type T>
SparseTensor<T> Tensor<T>::sparse_grad() const {
  DL_CHECK(grad_is_sparse(), "sparse_grad(): this tensor's gradient is ", impl_->autograd && impl_->autograd->grad ? "dense; read it with grad()" : "none");
  return detail::sparse_of<T>(*impl_->autograd->sparse_grad);
}

}  // namespace dl
