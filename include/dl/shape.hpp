// dl/shape.hpp — Shape/Strides (a small inline vector of int64) and the shape arithmetic every
// op shares: numel, contiguous strides, dimension wrapping, NumPy broadcasting.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <span>

#include "config.hpp"
#include "error.hpp"

namespace dl {

namespace detail {
/// Contiguous integers with data() and size(): std::vector<int64_t>, std::array<int, 2>, std::span...
template <class R>
concept integer_array = requires(const R& r) {
  { std::size(r) } -> std::convertible_to<size_t>;                                   // a shape needs contiguous integers: {2, 3}, std::vector<int64_t>, std::array<int, 2>
  requires std::is_pointer_v<decltype(std::data(r))>;                                // a shape needs contiguous integers: {2, 3}, std::vector<int64_t>, std::array<int, 2>
  requires std::is_integral_v<std::remove_cvref_t<decltype(*std::data(r))>>;         // a shape needs integers: {2, 3}, std::vector<int64_t>, std::array<int, 2>
  requires !std::is_same_v<std::remove_cvref_t<decltype(*std::data(r))>, bool>;      // a shape needs integers, not bools
};
}  // namespace detail

/// A list of up to kMaxDims int64 values: a shape, strides or a list of dims. Stored inline and
/// trivially copyable, so building one never allocates.
class Dims {
 public:
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  constexpr Dims() = default;
  constexpr Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  /// Any contiguous range of integers converts, as libtorch's IntArrayRef: a `std::vector<int64_t>`
  /// (or `<int>`), std::array or std::span holding a shape or a list of dims passes wherever a
  /// Shape/Dims is expected (x.reshape(v), x.sum(dims), dl::from_blob(p, v)).
  template <class R>
    requires(!std::same_as<R, Dims> && detail::integer_array<R>)
  constexpr Dims(const R& values) { assign(std::data(values), std::data(values) + std::size(values)); }
  /// n copies of value.
  static constexpr Dims filled(int n, int64_t value) {
    Dims d;
    d.resize(n, value);
    return d;
  }

  constexpr int size() const { return n_; }
  constexpr bool empty() const { return n_ == 0; }
  constexpr int64_t& operator[](int i) { return v_[i]; }
  constexpr int64_t operator[](int i) const { return v_[i]; }
  constexpr int64_t* data() { return v_.data(); }
  constexpr const int64_t* data() const { return v_.data(); }
  constexpr iterator begin() { return v_.data(); }
  constexpr iterator end() { return v_.data() + n_; }
  constexpr const_iterator begin() const { return v_.data(); }
  constexpr const_iterator end() const { return v_.data() + n_; }
  constexpr int64_t back() const { return v_[n_ - 1]; }
  constexpr operator std::span<const int64_t>() const { return {v_.data(), size_t(n_)}; }

  constexpr void push_back(int64_t x) {
    check_capacity(n_ + 1);
    v_[n_++] = x;
  }
  constexpr void pop_back() { --n_; }
  constexpr void resize(int n, int64_t fill = 0) {
    check_capacity(n);
    for (int i = n_; i < n; ++i) v_[i] = fill;
    n_ = n;
  }
  constexpr void insert(int pos, int64_t x) {
    check_capacity(n_ + 1);
    for (int i = n_; i > pos; --i) v_[i] = v_[i - 1];
    v_[pos] = x;
    ++n_;
  }
  constexpr void erase(int pos) {
    for (int i = pos; i + 1 < n_; ++i) v_[i] = v_[i + 1];
    --n_;
  }

  friend constexpr bool operator==(const Dims& a, const Dims& b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  template <class It>
  constexpr void assign(It first, It last) {
    check_capacity(int(last - first));
    n_ = 0;
    for (; first != last; ++first) v_[n_++] = *first;
  }
  static constexpr void check_capacity(int n) {
    if (n > kMaxDims) throw Error(detail::cat("dl supports tensors of at most ", kMaxDims,
                                              " dimensions, got ", n));
  }

  std::array<int64_t, kMaxDims> v_{};
  int n_ = 0;
};

using Shape = Dims;
using Strides = Dims;

inline std::ostream& operator<<(std::ostream& os, const Dims& d) {
  os << '[';
  for (int i = 0; i < d.size(); ++i) os << (i ? ", " : "") << d[i];
  return os << ']';
}

/// Product of the sizes (1 for a 0-d shape).
constexpr int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

/// Row-major strides of a dense tensor of this shape (in elements).
constexpr Strides contiguous_strides(const Shape& s) {
  Strides st = Dims::filled(s.size(), 1);
  for (int i = s.size() - 2; i >= 0; --i) st[i] = st[i + 1] * std::max<int64_t>(s[i + 1], 1);
  return st;
}

/// True when (shape, strides) describe a dense row-major layout. Size-1 dims may have any stride.
constexpr bool is_contiguous(const Shape& s, const Strides& st) {
  int64_t expected = 1;
  for (int i = s.size() - 1; i >= 0; --i) {
    if (s[i] == 1) continue;
    if (s[i] == 0) return true;
    if (st[i] != expected) return false;
    expected *= s[i];
  }
  return true;
}

/// Maps a possibly negative dim into [0, ndim). `what` names the caller in the error message.
inline int wrap_dim(int64_t dim, int ndim, const char* what = "dim") {
  const int n = std::max(ndim, 1);  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  DL_CHECK(dim >= -n && dim < n, what, ": dimension out of range (expected to be in range of [",
           -n, ", ", n - 1, "], but got ", dim, ")");
  return int(dim < 0 ? dim + n : dim);
}

/// NumPy broadcasting of two shapes; throws naming both shapes when they disagree.
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const int n = std::max(a.size(), b.size());
  Shape out = Dims::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    DL_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
             ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
             " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Strides that read a tensor of (shape, strides) as if it had shape `target` (broadcast dims get
/// stride 0). @pre shape broadcasts to target.
inline Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target) {
  Strides out = Dims::filled(target.size(), 0);
  const int off = target.size() - shape.size();
  for (int i = 0; i < shape.size(); ++i) out[i + off] = shape[i] == 1 ? 0 : strides[i];
  return out;
}

}  // namespace dl
