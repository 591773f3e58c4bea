// dl/ops/sorting.hpp — order statistics and searching: sort, argsort, topk, kthvalue, median,
// mode, unique, searchsorted, bucketize, histc, bincount. Values returned with their indices come
// as a small struct with .values / .indices that also works with structured bindings
// (`auto [v, i] = dl::sort(x, 1);`), like torch.return_types. Values are differentiable (the
// gradient goes to the selected elements); indices, unique, histc and bincount are not.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "../tensor.hpp"
#include "dim_rows.hpp"
#include "indexing.hpp"
#include "kernel_backward.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

// The (values, indices) pairs of torch.return_types: one struct, named after each function.
template <class T> using SortResult = MaxResult<T>;
template <class T> using TopkResult = MaxResult<T>;
template <class T> using KthvalueResult = MaxResult<T>;
template <class T> using MedianResult = MaxResult<T>;
template <class T> using ModeResult = MaxResult<T>;

/// unique's results: the unique elements (or slices), and when asked for, the index of each input
/// element (slice) in `output` and the number of occurrences of each unique element. What was not
/// asked for is an empty tensor, as in libtorch.
template <class T>
struct UniqueResult {
  Tensor<T> output;
  Tensor<int64_t> inverse_indices;
  Tensor<int64_t> counts;
};

/// Sorts along dim (negative counts from the end), ascending unless `descending`. NaN is ordered
/// after every number (first when descending), as in PyTorch. The sort is always stable (equal
/// elements keep their order), so `stable` only exists to match torch.sort's signature.
/// values and indices have x's shape.
template <scalar_type T>
SortResult<T> sort(const Tensor<T>& x, int64_t dim = -1, bool descending = false);
template <scalar_type T>
SortResult<T> sort(const Tensor<T>& x, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
/// The indices that sort x along dim (sort(...).indices).
template <scalar_type T>
Tensor<int64_t> argsort(const Tensor<T>& x, int64_t dim = -1, bool descending = false, bool stable = false);
/// The k largest (smallest unless `largest`) elements along dim, in sorted order (also when
/// `sorted` is false, which PyTorch leaves unspecified). Shape: x's with size(dim) = k.
/// Throws "selected index k out of range" unless 0 <= k <= size(dim).
template <scalar_type T>
TopkResult<T> topk(const Tensor<T>& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
/// The k-th smallest element (k counts from 1) along dim; dim removed unless keepdim.
template <scalar_type T>
KthvalueResult<T> kthvalue(const Tensor<T>& x, int64_t k, int64_t dim = -1, bool keepdim = false);
/// The lower median of all elements (the element at position (n - 1) / 2 of the sorted input; NaN
/// when any element is NaN, or when x is empty). Its gradient is shared evenly among the elements
/// equal to the median, as PyTorch's.
template <scalar_type T>
Tensor<T> median(const Tensor<T>& x);
/// The lower median along dim and its index (the first NaN's when the row holds a NaN).
template <scalar_type T>
MedianResult<T> median(const Tensor<T>& x, int64_t dim, bool keepdim = false);
/// The most frequent value along dim (the smallest of equally frequent ones) and the index of its
/// last occurrence.
template <scalar_type T>
ModeResult<T> mode(const Tensor<T>& x, int64_t dim = -1, bool keepdim = false);
/// The unique elements of x, sorted (also when `sorted` is false), with the inverse indices (x's
/// shape) and counts when asked for. With a dim, the unique slices along dim, sorted
/// lexicographically; inverse_indices then has size(dim) entries. NaNs compare unequal, so each is
/// its own unique element, as in PyTorch.
template <scalar_type T>
UniqueResult<T> unique(const Tensor<T>& x, bool sorted = true, bool return_inverse = false, bool return_counts = false,
                       std::optional<int64_t> dim = std::nullopt);
/// For each value, the index at which inserting it keeps the innermost dim of sorted_sequence
/// sorted: the first such index, or the last when `right` (or side == "right"). A 1-d sequence
/// serves every value; an N-d one must share values's leading N - 1 dims (one sequence per row).
/// `sorter` (sequence's shape) holds indices that sort an unsorted sequence. Result: values's
/// shape, int64 (call .to_int() for PyTorch's out_int32).
template <scalar_type T>
Tensor<int64_t> searchsorted(const Tensor<T>& sorted_sequence, const Tensor<T>& values, bool right = false,
                             std::optional<std::string_view> side = std::nullopt,
                             const std::optional<Tensor<int64_t>>& sorter = std::nullopt);
/// One value: a 0-d result.
template <scalar_type T, expr::number V>
Tensor<int64_t> searchsorted(const Tensor<T>& sorted_sequence, V value, bool right = false,
                             std::optional<std::string_view> side = std::nullopt,
                             const std::optional<Tensor<int64_t>>& sorter = std::nullopt);
/// The index of the bucket of each element: boundaries[i-1] < x <= boundaries[i] (or
/// boundaries[i-1] <= x < boundaries[i] when `right`). boundaries: 1-d, increasing.
template <scalar_type T>
Tensor<int64_t> bucketize(const Tensor<T>& input, const Tensor<T>& boundaries, bool right = false);
template <scalar_type T, expr::number V>
Tensor<int64_t> bucketize(V value, const Tensor<T>& boundaries, bool right = false);
/// Histogram of the elements in `bins` equal-width bins over [min, max] (the data's range when
/// min == max; widened by 1 each way when that range is one point). Elements outside the range
/// (and NaNs) are ignored; max itself goes into the last bin. Shape [bins], x's element type.
template <floating_scalar T>
Tensor<T> histc(const Tensor<T>& x, int64_t bins = 100, double min = 0, double max = 0);
/// Count of each value of a 1-d non-negative integer tensor: out[v] = #{i : x[i] == v}, of size
/// max(max(x) + 1, minlength).
template <class I>
  requires std::integral<I> && scalar_type<I>
Tensor<int64_t> bincount(const Tensor<I>& x, int64_t minlength = 0);
/// Weighted count: out[v] = sum of weights[i] where x[i] == v; float weights give a float result,
/// other weights a double one (PyTorch's rule).
template <class I, scalar_type W>
  requires std::integral<I>
Tensor<std::conditional_t<std::is_same_v<W, float>, float, double>> bincount(const Tensor<I>& x, const Tensor<W>& weights,
                                                                              int64_t minlength = 0);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// a before b in ascending (descending) order, NaN after (before) every number.
template <class T>
bool value_before(T a, T b, bool descending) {
  if constexpr (floating_scalar<T>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) return descending ? (na && !nb) : (!na && nb);
  }
  return descending ? b < a : a < b;
}

/// Total order on (value, index) pairs: by value, ties by index (which makes every sort stable
/// without the allocation std::stable_sort makes).
template <class T>
struct RowOrder {
  bool descending;
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    if (value_before(a.first, b.first, descending)) return true;
    if (value_before(b.first, a.first, descending)) return false;
    return a.second < b.second;
  }
};

/// Calls f(buf, r) for every row r of x along d, buf holding the row's (value, index) pairs.
/// Rows run in parallel; each chunk of rows reuses one buffer.
template <class T, class F>
void for_each_row_pairs(const Tensor<T>& x, int d, F&& f) {
  const DimRows rows(x.shape(), x.strides(), d);
  if (rows.n == 0) return;
  const T* src = x.data();
  parallel_for(0, rows.count, rows.grain(), [&](int64_t b, int64_t e) {
    std::vector<std::pair<T, int64_t>> buf(static_cast<size_t>(rows.n));
    for (int64_t r = b; r < e; ++r) {
      const T* p = src + rows.offset(r);
      for (int64_t i = 0; i < rows.n; ++i) buf[size_t(i)] = {p[i * rows.stride], i};
      f(buf.data(), r);
    }
  });
}

/// x's shape with dim d set to `size` (removed when size < 0).
inline Shape with_dim_size(Shape s, int d, int64_t size) {
  if (s.size() == 0) return s;
  if (size < 0) s.erase(d);
  else s[d] = size;
  return s;
}

/// Records the backward of values selected from x along d at `indices`: the gradient scattered
/// back to the selected positions (PyTorch's value_selecting_reduction_backward).
template <class T>
Tensor<T> record_selection(Tensor<T> values, const Tensor<int64_t>& indices, const Tensor<T>& x, int d, bool keepdim,
                           const char* name) {
  if (!autograd::any_requires_grad(x)) return values;
  const Shape in = x.shape();
  return record_kernel(std::move(values), name, {}, {indices.impl()},
                       [in, d, keepdim, indices](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                         if (in.size() == 0) return std::vector<TensorImplPtr>{g.reshape({}).impl()};
                         Tensor<T> gg = keepdim ? g : g.unsqueeze(d);
                         const Tensor<int64_t> idx = keepdim ? indices : indices.unsqueeze(d);
                         return std::vector<TensorImplPtr>{scatter_add(zeros<T>(in), d, idx, gg).impl()};
                       },
                       x);
}

inline void check_reduction_size(const Shape& s, int d, const char* what) {
  DL_CHECK(s.size() == 0 || s[d] > 0, what, "(): Expected reduction dim ", d, " to have non-zero size.");
}

/// Shared by kthvalue, median and mode: one (value, index) per row of x along d.
template <class T, class Pick>
MaxResult<T> select_per_row(const Tensor<T>& x, int d, bool keepdim, const char* name, Pick pick) {
  const Shape shape = with_dim_size(x.shape(), d, keepdim ? 1 : -1);
  Tensor<T> values = empty<T>(shape);
  Tensor<int64_t> indices = empty<int64_t>(shape);
  T* vo = values.data();
  int64_t* io = indices.data();
  const int64_t n = x.dim() ? x.shape()[d] : 1;
  // Rows of x along d enumerate the other dims in row-major order, as the reduced output does.
  for_each_row_pairs(x, d, [&](std::pair<T, int64_t>* buf, int64_t r) {
    const std::pair<T, int64_t> p = pick(buf, n);
    vo[r] = p.first;
    io[r] = p.second;
  });
  values = record_selection(values, indices, x, d, keepdim, name);
  return {values, indices};
}

template <class T>
int64_t search_row(const T* seq, const int64_t* sort, int64_t n, T v, bool right) {
  // PyTorch's comparisons (!(mid >= v) / !(mid > v)): a NaN value lands after every element.
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const T m = sort ? seq[sort[mid]] : seq[mid];
    if (right ? !(m > v) : !(m >= v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace detail

// ---- sort / argsort / topk

template <scalar_type T>
SortResult<T> sort(const Tensor<T>& x, int64_t dim, bool descending) {
  const int d = wrap_dim(dim, x.dim(), "sort");
  Tensor<T> values = empty<T>(x.shape());
  Tensor<int64_t> indices = empty<int64_t>(x.shape());
  const detail::DimRows out(values.shape(), values.strides(), d);
  T* vo = values.data();
  int64_t* io = indices.data();
  detail::for_each_row_pairs(x, d, [&](std::pair<T, int64_t>* buf, int64_t r) {
    std::sort(buf, buf + out.n, detail::RowOrder<T>{descending});
    const int64_t o = out.offset(r);
    for (int64_t i = 0; i < out.n; ++i) {
      vo[o + i * out.stride] = buf[i].first;
      io[o + i * out.stride] = buf[i].second;
    }
  });
  values = detail::record_selection(values, indices, x, d, true, "SortBackward0");
  return {values, indices};
}

template <scalar_type T>
SortResult<T> sort(const Tensor<T>& x, std::optional<bool>, int64_t dim, bool descending) {
  return sort(x, dim, descending);
}

template <scalar_type T>
Tensor<int64_t> argsort(const Tensor<T>& x, int64_t dim, bool descending, bool) {
  NoGradGuard no_grad;
  return sort(x, dim, descending).indices;
}

template <scalar_type T>
TopkResult<T> topk(const Tensor<T>& x, int64_t k, int64_t dim, bool largest, bool) {
  const int d = wrap_dim(dim, x.dim(), "topk");
  const int64_t n = x.dim() ? x.shape()[d] : 1;
  DL_CHECK(k >= 0 && k <= n, "selected index k out of range");
  const Shape shape = detail::with_dim_size(x.shape(), d, k);
  Tensor<T> values = empty<T>(shape);
  Tensor<int64_t> indices = empty<int64_t>(shape);
  const detail::DimRows out(shape, values.strides(), d);
  T* vo = values.data();
  int64_t* io = indices.data();
  if (k > 0)
    detail::for_each_row_pairs(x, d, [&](std::pair<T, int64_t>* buf, int64_t r) {
      std::partial_sort(buf, buf + k, buf + n, detail::RowOrder<T>{largest});
      const int64_t o = out.offset(r);
      for (int64_t i = 0; i < k; ++i) {
        vo[o + i * out.stride] = buf[i].first;
        io[o + i * out.stride] = buf[i].second;
      }
    });
  values = detail::record_selection(values, indices, x, d, true, "TopkBackward0");
  return {values, indices};
}

// ---- kthvalue / median / mode

template <scalar_type T>
KthvalueResult<T> kthvalue(const Tensor<T>& x, int64_t k, int64_t dim, bool keepdim) {
  const int d = wrap_dim(dim, x.dim(), "kthvalue");
  detail::check_reduction_size(x.shape(), d, "kthvalue");
  const int64_t n = x.dim() ? x.shape()[d] : 1;
  DL_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", d);
  return detail::select_per_row(x, d, keepdim, "KthvalueBackward0", [k](std::pair<T, int64_t>* buf, int64_t m) {
    std::nth_element(buf, buf + (k - 1), buf + m, detail::RowOrder<T>{false});
    return buf[k - 1];
  });
}

template <scalar_type T>
Tensor<T> median(const Tensor<T>& x) {
  Tensor<T> out = empty<T>({});
  const Tensor<T> flat = x.detach().contiguous().reshape({-1});
  const int64_t n = flat.numel();
  std::vector<std::pair<T, int64_t>> buf(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = {flat.data()[i], i};
  if (n == 0) {
    out.data()[0] = std::numeric_limits<T>::quiet_NaN();
  } else {
    // The median of a tensor holding a NaN is NaN, as in PyTorch.
    auto nan = std::find_if(buf.begin(), buf.end(), [](const auto& p) { return p.first != p.first; });
    if (nan != buf.end()) {
      out.data()[0] = nan->first;
    } else {
      std::nth_element(buf.begin(), buf.begin() + (n - 1) / 2, buf.end(), detail::RowOrder<T>{false});
      out.data()[0] = buf[size_t((n - 1) / 2)].first;
    }
  }
  // Integer medians have no gradient. Otherwise the gradient is shared evenly among the elements
  // equal to the median (the NaNs when it is NaN).
  if constexpr (floating_scalar<T>) {
    if (!autograd::any_requires_grad(x)) return out;
    const T m = out.data()[0];
    const Tensor<bool> mask = m != m ? Tensor<bool>(x.detach().isnan()) : Tensor<bool>(x.detach() == m);
    int64_t count = 0;
    const Tensor<bool> mc = mask.contiguous();
    for (int64_t i = 0; i < mc.numel(); ++i) count += mc.data()[i];
    return detail::record_kernel(out, "MedianBackward0", {},
                                 [mask, count](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                                   return std::vector<TensorImplPtr>{Tensor<T>(where(mask, g / T(count), T(0))).impl()};
                                 },
                                 x);
  }
  return out;
}

template <scalar_type T>
MedianResult<T> median(const Tensor<T>& x, int64_t dim, bool keepdim) {
  const int d = wrap_dim(dim, x.dim(), "median");
  detail::check_reduction_size(x.shape(), d, "median");
  return detail::select_per_row(x, d, keepdim, "MedianBackward1", [](std::pair<T, int64_t>* buf, int64_t m) {
    auto nan = std::find_if(buf, buf + m, [](const auto& p) { return p.first != p.first; });
    if (nan != buf + m) return *nan;
    std::nth_element(buf, buf + (m - 1) / 2, buf + m, detail::RowOrder<T>{false});
    return buf[(m - 1) / 2];
  });
}

template <scalar_type T>
ModeResult<T> mode(const Tensor<T>& x, int64_t dim, bool keepdim) {
  const int d = wrap_dim(dim, x.dim(), "mode");
  detail::check_reduction_size(x.shape(), d, "mode");
  return detail::select_per_row(x, d, keepdim, "ModeBackward0", [](std::pair<T, int64_t>* buf, int64_t m) {
    std::sort(buf, buf + m, detail::RowOrder<T>{false});
    // PyTorch's scan: the first run of the largest length wins; its last element's index.
    std::pair<T, int64_t> best = buf[0];
    int64_t run = 0, best_run = 0;
    for (int64_t i = 0; i < m; ++i) {
      ++run;
      if (i == m - 1 || buf[i].first != buf[i + 1].first) {
        if (run > best_run) best = buf[i], best_run = run;
        run = 0;
      }
    }
    return best;
  });
}

// ---- unique

template <scalar_type T>
UniqueResult<T> unique(const Tensor<T>& x, bool, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
  NoGradGuard no_grad;
  std::vector<int64_t> inverse, counts;
  UniqueResult<T> r;
  if (!dim) {
    const Tensor<T> flat = x.detach().contiguous().reshape({-1});
    const int64_t n = flat.numel();
    std::vector<std::pair<T, int64_t>> buf(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = {flat.data()[i], i};
    std::sort(buf.begin(), buf.end(), detail::RowOrder<T>{false});
    std::vector<T> values;
    inverse.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !(buf[size_t(i)].first == buf[size_t(i - 1)].first)) {
        values.push_back(buf[size_t(i)].first);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[size_t(buf[size_t(i)].second)] = int64_t(values.size()) - 1;
    }
    r.output = empty<T>({int64_t(values.size())});
    std::copy(values.begin(), values.end(), r.output.data());
    if (return_inverse) {
      r.inverse_indices = empty<int64_t>(x.shape());
      std::copy(inverse.begin(), inverse.end(), r.inverse_indices.data());
    }
  } else {
    const int d = wrap_dim(*dim, x.dim(), "unique");
    // Slices along d as rows of a [n, m] matrix, sorted lexicographically (ties by position).
    const Tensor<T> rows = x.detach().dim() ? x.detach().transpose(0, d).contiguous() : x.detach().reshape({1});
    const int64_t n = rows.dim() ? rows.shape()[0] : 1, m = n ? rows.numel() / n : 0;
    const T* p = rows.data();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto row_less = [&](int64_t a, int64_t b) {
      for (int64_t j = 0; j < m; ++j) {
        if (p[a * m + j] < p[b * m + j]) return true;
        if (p[b * m + j] < p[a * m + j]) return false;
      }
      return a < b;
    };
    auto row_equal = [&](int64_t a, int64_t b) { return std::equal(p + a * m, p + a * m + m, p + b * m); };
    std::sort(order.begin(), order.end(), row_less);
    std::vector<int64_t> firsts;
    inverse.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !row_equal(order[size_t(i)], order[size_t(i - 1)])) {
        firsts.push_back(order[size_t(i)]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[size_t(order[size_t(i)])] = int64_t(firsts.size()) - 1;
    }
    Tensor<int64_t> idx = empty<int64_t>({int64_t(firsts.size())});
    std::copy(firsts.begin(), firsts.end(), idx.data());
    r.output = index_select(x.detach(), d, idx);
    if (return_inverse) {
      r.inverse_indices = empty<int64_t>({n});
      std::copy(inverse.begin(), inverse.end(), r.inverse_indices.data());
    }
  }
  if (!return_inverse) r.inverse_indices = empty<int64_t>({0});
  r.counts = empty<int64_t>({return_counts ? int64_t(counts.size()) : 0});
  if (return_counts) std::copy(counts.begin(), counts.end(), r.counts.data());
  return r;
}

// ---- searchsorted / bucketize

template <scalar_type T>
Tensor<int64_t> searchsorted(const Tensor<T>& sorted_sequence, const Tensor<T>& values, bool right, std::optional<std::string_view> side,
                             const std::optional<Tensor<int64_t>>& sorter) {
  const Tensor<T>& seq = sorted_sequence;
  DL_CHECK(seq.dim() > 0, "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
  bool leading_match = seq.dim() == values.dim();
  for (int a = 0; leading_match && a + 1 < seq.dim(); ++a) leading_match = seq.shape()[a] == values.shape()[a];
  DL_CHECK(seq.dim() == 1 || leading_match,
           "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and "
           "input value tensor must match, but we got boundaries tensor ", seq.shape(), " and input value tensor ", values.shape());
  if (side) {
    DL_CHECK(*side == "left" || *side == "right", "torch.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    DL_CHECK(!(right && *side == "left"),
             "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
    right = *side == "right";
  }
  Tensor<int64_t> sort;
  if (sorter && sorter->defined()) {
    DL_CHECK(sorter->shape() == seq.shape(), "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor ",
             seq.shape(), "and got sorter tensor ", sorter->shape());
    sort = sorter->contiguous();
    const int64_t n = seq.shape()[seq.dim() - 1];
    for (int64_t i = 0; i < sort.numel(); ++i)
      DL_CHECK(sort.data()[i] >= 0 && sort.data()[i] < n, "torch.searchsorted(): sorter index out of range (", sort.data()[i],
               " for a sequence of ", n, " elements)");
  }
  const Tensor<T> s = seq.contiguous(), v = values.contiguous();
  Tensor<int64_t> out = empty<int64_t>(values.shape());
  const int64_t n = seq.shape()[seq.dim() - 1], rows = n ? s.numel() / n : 0;
  // Values per sequence row: all of them for a 1-d sequence, else the innermost dim of values.
  const int64_t per_row = seq.dim() == 1 ? v.numel() : (values.dim() ? values.shape()[values.dim() - 1] : 1);
  const T* sp = s.data();
  const int64_t* so = sort.defined() ? sort.data() : nullptr;
  const T* vp = v.data();
  int64_t* op = out.data();
  detail::parallel_for(0, v.numel(), 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = seq.dim() == 1 || per_row == 0 ? 0 : std::min(i / per_row, rows - 1);
      op[i] = detail::search_row(sp + row * n, so ? so + row * n : nullptr, n, vp[i], right);
    }
  });
  return out;
}

template <scalar_type T, expr::number V>
Tensor<int64_t> searchsorted(const Tensor<T>& sorted_sequence, V value, bool right, std::optional<std::string_view> side,
                             const std::optional<Tensor<int64_t>>& sorter) {
  DL_CHECK(sorted_sequence.dim() == 1 || sorted_sequence.dim() == 0,
           "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries "
           "tensor dim(", sorted_sequence.dim(), ") and input value's dim(0) numel(1)");
  Tensor<T> v = empty<T>({});
  v.data()[0] = T(value);
  return searchsorted(sorted_sequence, v, right, side, sorter);
}

template <scalar_type T>
Tensor<int64_t> bucketize(const Tensor<T>& input, const Tensor<T>& boundaries, bool right) {
  DL_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, input, right);
}

template <scalar_type T, expr::number V>
Tensor<int64_t> bucketize(V value, const Tensor<T>& boundaries, bool right) {
  DL_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted(boundaries, value, right);
}

// ---- histc / bincount

template <floating_scalar T>
Tensor<T> histc(const Tensor<T>& x, int64_t bins, double min, double max) {
  DL_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  const Tensor<T> v = x.detach().contiguous();
  const int64_t n = v.numel();
  const T* p = v.data();
  T lo = T(min), hi = T(max);
  if (lo == hi && n > 0) {
    lo = hi = p[0];
    for (int64_t i = 0; i < n; ++i) {
      // A NaN makes the range NaN, which then fails the finiteness check as in PyTorch.
      if (p[i] != p[i]) {
        lo = hi = p[i];
        break;
      }
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
  }
  DL_CHECK(!(lo > hi), "torch.histc: max must be larger than min");
  DL_CHECK(std::isfinite(double(lo)) && std::isfinite(double(hi)), "torch.histc: range of [", double(lo), ", ", double(hi),
           "] is not finite");
  if (lo == hi) lo -= 1, hi += 1;
  Tensor<T> out = zeros<T>({bins});
  T* o = out.data();
  for (int64_t i = 0; i < n; ++i) {
    const T e = p[i];
    if (!(e >= lo && e <= hi)) continue;
    // PyTorch's linear interpolation in the input's type; max itself belongs to the last bin.
    int64_t pos = int64_t((e - lo) * T(bins) / (hi - lo));
    if (pos == bins) pos -= 1;
    o[pos] += T(1);
  }
  return out;
}

namespace detail {
template <class I>
int64_t bincount_size(const Tensor<I>& x, int64_t minlength) {
  DL_CHECK(minlength >= 0, "minlength should be >= 0");
  DL_CHECK(x.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  int64_t size = minlength;
  const Tensor<I> c = x.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) {
    DL_CHECK(c.data()[i] >= 0, "bincount only supports 1-d non-negative integral inputs.");
    size = std::max<int64_t>(size, int64_t(c.data()[i]) + 1);
  }
  return size;
}
}  // namespace detail

template <class I>
  requires std::integral<I> && scalar_type<I>
Tensor<int64_t> bincount(const Tensor<I>& x, int64_t minlength) {
  const int64_t size = detail::bincount_size(x, minlength);
  Tensor<int64_t> out = zeros<int64_t>({size});
  const Tensor<I> c = x.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) ++out.data()[c.data()[i]];
  return out;
}

template <class I, scalar_type W>
  requires std::integral<I>
Tensor<std::conditional_t<std::is_same_v<W, float>, float, double>> bincount(const Tensor<I>& x, const Tensor<W>& weights,
                                                                              int64_t minlength) {
  using R = std::conditional_t<std::is_same_v<W, float>, float, double>;
  const int64_t size = detail::bincount_size(x, minlength);
  DL_CHECK(weights.dim() == 1 && weights.numel() == x.numel(), "weights should be 1-d and have the same length as input");
  Tensor<R> out = zeros<R>({size});
  const Tensor<I> c = x.contiguous();
  const Tensor<W> w = weights.detach().contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) out.data()[c.data()[i]] += R(w.data()[i]);
  return out;
}

// ---- Tensor members

template <scalar_type T>
MaxResult<T> Tensor<T>::sort(int64_t dim, bool descending) const { return dl::sort(*this, dim, descending); }
template <scalar_type T>
Tensor<int64_t> Tensor<T>::argsort(int64_t dim, bool descending) const { return dl::argsort(*this, dim, descending); }
template <scalar_type T>
MaxResult<T> Tensor<T>::topk(int64_t k, int64_t dim, bool largest, bool sorted) const { return dl::topk(*this, k, dim, largest, sorted); }
template <scalar_type T>
MaxResult<T> Tensor<T>::kthvalue(int64_t k, int64_t dim, bool keepdim) const { return dl::kthvalue(*this, k, dim, keepdim); }
template <scalar_type T>
Tensor<T> Tensor<T>::median() const { return dl::median(*this); }
template <scalar_type T>
MaxResult<T> Tensor<T>::median(int64_t dim, bool keepdim) const { return dl::median(*this, dim, keepdim); }
template <scalar_type T>
MaxResult<T> Tensor<T>::mode(int64_t dim, bool keepdim) const { return dl::mode(*this, dim, keepdim); }

}  // namespace dl
