// dl/ops/einsum.hpp — Einstein summation (einsum) and tensordot, both lowered to permutes,
// reshapes, sums and dl's batched matmul, so they are fast and differentiable to any order.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "../tensor.hpp"
#include "matmul.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// Einstein summation as torch.einsum: "ij,jk->ik" is a matrix product, "bij,bjk->bik" a batched
/// one, "ii->i" a diagonal (a view), "ii" a trace, "...ij->...ji" a transpose of the last two dims.
/// Subscripts are letters [a-zA-Z]; "..." stands for the dims not named (broadcast across
/// operands, right-aligned). Without "->" the output has the ellipsis dims, then the letters that
/// occur once, in alphabetical order (upper case first). Dims of size 1 broadcast against the same
/// subscript in other operands. Operands are contracted left to right, each pair by one batched
/// matmul. Errors name the subscript, operand and sizes involved, as PyTorch's.
template <floating_scalar T>
Tensor<T> einsum(std::string_view equation, const std::vector<Tensor<T>>& operands);
template <floating_scalar T>
Tensor<T> einsum(std::string_view equation, std::initializer_list<Tensor<T>> operands) {
  return einsum(equation, std::vector<Tensor<T>>(operands));
}
template <floating_scalar T, class... Rest>
  requires(std::same_as<Rest, Tensor<T>> && ...)
Tensor<T> einsum(std::string_view equation, const Tensor<T>& first, const Rest&... rest) {
  return einsum(equation, std::vector<Tensor<T>>{first, rest...});
}
/// Contracts dims_a of a with dims_b of b (pairwise, equal sizes or one of them 1); the result has
/// a's remaining dims, then b's. [2, 3, 4] . [4, 3, 5] over ({1, 2}, {1, 0}) -> [2, 5].
template <floating_scalar T>
Tensor<T> tensordot(const Tensor<T>& a, const Tensor<T>& b, Dims dims_a, Dims dims_b);
/// Contracts the last `dims` dims of a with the first `dims` dims of b.
template <floating_scalar T>
Tensor<T> tensordot(const Tensor<T>& a, const Tensor<T>& b, int64_t dims = 2);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Labels: 'A'-'Z' -> 0..25, 'a'-'z' -> 26..51 (PyTorch's implicit output order), and dims
/// covered by an ellipsis -> 52 + k, right-aligned over the widest ellipsis.
inline constexpr int kEllipsisLabel = 52;
inline int einsum_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}
inline char einsum_char(int label) { return label < 26 ? char('A' + label) : char('a' + label - 26); }

/// An operand on its way through the contraction: one label per dim, each label once.
template <class T>
struct Labeled {
  Tensor<T> t;
  std::vector<int> labels;
  int64_t size_of(int label) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == label) return t.shape()[int(i)];
    return -1;
  }
};

/// Sums t over the dims whose labels satisfy `drop` (no-op when none does).
template <class T, class Drop>
Labeled<T> sum_labels(Labeled<T> x, Drop drop) {
  Dims dims;
  std::vector<int> keep;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (drop(x.labels[i])) dims.push_back(int64_t(i));
    else keep.push_back(x.labels[i]);
  }
  if (dims.empty()) return x;
  return {sum(x.t, dims), keep};
}

/// Permutes t so that its labels come in `order` (a permutation of its labels).
template <class T>
Tensor<T> permute_to(const Labeled<T>& x, const std::vector<int>& order) {
  Dims perm;
  for (int l : order)
    for (size_t i = 0; i < x.labels.size(); ++i)
      if (x.labels[i] == l) perm.push_back(int64_t(i));
  return x.t.permute(perm);
}

/// Contracts a and b over the labels in `contract` (summed unless `keep(label)`), as one batched
/// matmul: a -> [batch, left, contracted], b -> [batch, contracted, right].
template <class T, class Keep>
Labeled<T> contract_pair(Labeled<T> a, Labeled<T> b, Keep keep) {
  std::vector<int> batch, left, right, con;
  auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  // Labels that one side has with size 1 where the other is larger (or absent and summed) are
  // dropped from that side: a size-1 dim broadcasts.
  std::vector<int> drop_a, drop_b;
  for (int l : a.labels) {
    const int64_t sa = a.size_of(l), sb = b.size_of(l);
    if (sb < 0) {
      if (keep(l)) left.push_back(l);
      else drop_a.push_back(l);  // only in a and summed
    } else if (!keep(l)) {
      if (sa > 1 && sb > 1) con.push_back(l);
      else if (sa == sb) drop_a.push_back(l), drop_b.push_back(l);
      else if (sa == 1) drop_a.push_back(l);
      else drop_b.push_back(l);
    } else if (sa == sb) {
      batch.push_back(l);
    } else if (sa == 1) {
      drop_a.push_back(l);
      right.push_back(l);
    } else {
      drop_b.push_back(l);
      left.push_back(l);
    }
  }
  for (int l : b.labels)
    if (a.size_of(l) < 0) {
      if (keep(l)) right.push_back(l);
      else drop_b.push_back(l);
    }
  // Dropped dims are summed (a size-1 dim's sum is the dim squeezed; a larger one is summed
  // before the product, which is the same as after it).
  a = sum_labels(std::move(a), [&](int l) { return has(drop_a, l); });
  b = sum_labels(std::move(b), [&](int l) { return has(drop_b, l); });
  int64_t nb = 1, nl = 1, nr = 1, nc = 1;
  Shape out_shape;
  std::vector<int> out_labels;
  for (int l : batch) nb *= a.size_of(l), out_shape.push_back(a.size_of(l)), out_labels.push_back(l);
  for (int l : left) nl *= a.size_of(l), out_shape.push_back(a.size_of(l)), out_labels.push_back(l);
  for (int l : right) nr *= b.size_of(l), out_shape.push_back(b.size_of(l)), out_labels.push_back(l);
  for (int l : con) nc *= a.size_of(l);
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), left.begin(), left.end());
  order_a.insert(order_a.end(), con.begin(), con.end());
  order_b.insert(order_b.end(), con.begin(), con.end());
  order_b.insert(order_b.end(), right.begin(), right.end());
  const Tensor<T> a3 = permute_to(a, order_a).reshape({nb, nl, nc});
  const Tensor<T> b3 = permute_to(b, order_b).reshape({nb, nc, nr});
  return {matmul(a3, b3).reshape(out_shape), out_labels};
}

}  // namespace detail

template <floating_scalar T>
Tensor<T> einsum(std::string_view equation, const std::vector<Tensor<T>>& operands) {
  using detail::kEllipsisLabel;
  const size_t arrow = equation.find("->");
  const std::string_view lhs = equation.substr(0, arrow);
  // Parse the input terms: one label per subscript, -1 for an ellipsis.
  std::vector<std::vector<int>> terms(1);
  std::vector<bool> has_ellipsis(1, false);
  for (size_t i = 0; i < lhs.size(); ++i) {
    const char c = lhs[i];
    const size_t op = terms.size() - 1;
    if (c == ' ') continue;
    if (c == ',') {
      terms.emplace_back();
      has_ellipsis.push_back(false);
    } else if (c == '.') {
      DL_CHECK(!has_ellipsis[op], "einsum(): found '.' for operand ", op, " for which an ellipsis was already found");
      DL_CHECK(i + 2 < lhs.size() && lhs[i + 1] == '.' && lhs[i + 2] == '.', "einsum(): found '.' for operand ", op,
               " that is not part of any ellipsis");
      terms.back().push_back(-1);
      has_ellipsis[op] = true;
      i += 2;
    } else {
      const int l = detail::einsum_label(c);
      DL_CHECK(l >= 0, "einsum(): invalid subscript given at index ", i, " in the equation string, subscripts must be in [a-zA-Z]");
      terms.back().push_back(l);
    }
  }
  DL_CHECK(terms.size() <= operands.size(), "einsum(): fewer operands were provided than specified in the equation");
  DL_CHECK(terms.size() >= operands.size(), "einsum(): more operands were provided than specified in the equation");
  // The widest ellipsis, then each operand's labels per dim.
  int ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int named = int(terms[i].size()) - (has_ellipsis[i] ? 1 : 0), nd = operands[i].dim();
    if (has_ellipsis[i]) {
      DL_CHECK(named <= nd, "einsum(): the number of subscripts in the equation (", named,
               ") is more than the number of dimensions (", nd, ") for operand ", i);
      ell = std::max(ell, nd - named);
    } else {
      DL_CHECK(named == nd, "einsum(): the number of subscripts in the equation (", named,
               ") does not match the number of dimensions (", nd, ") for operand ", i, " and no ellipsis was given");
    }
  }
  const int nlabels = kEllipsisLabel + ell;
  std::vector<int64_t> size(size_t(nlabels), 1);
  std::vector<int> occurrences(size_t(nlabels), 0), last_operand(size_t(nlabels), -1);
  std::vector<detail::Labeled<T>> ops;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor<T>& t = operands[i];
    std::vector<int> labels;
    for (int l : terms[i]) {
      if (l >= 0) {
        labels.push_back(l);
        continue;
      }
      const int e = t.dim() - (int(terms[i].size()) - 1);
      for (int j = 0; j < e; ++j) labels.push_back(kEllipsisLabel + ell - e + j);
    }
    for (size_t k = 0; k < labels.size(); ++k) {
      const int l = labels[k];
      const int64_t s = t.shape()[int(k)];
      for (size_t j = 0; j < k; ++j)
        DL_CHECK(labels[j] != l || t.shape()[int(j)] == s, "einsum(): subscript ", detail::einsum_char(l),
                 " is repeated for operand ", i, " but the sizes don't match, ", s, " != ", t.shape()[int(j)]);
      if (l < kEllipsisLabel)
        DL_CHECK(s == 1 || size[size_t(l)] == 1 || size[size_t(l)] == s, "einsum(): subscript ", detail::einsum_char(l), " has size ", s,
                 " for operand ", i, " which does not broadcast with previously seen size ", size[size_t(l)]);
      else
        DL_CHECK(s == 1 || size[size_t(l)] == 1 || size[size_t(l)] == s, "einsum(): dimension ", k, " covered by ellipsis in operand ", i,
                 " has size ", s, " which does not broadcast with previously seen ellipsis with size ", size[size_t(l)],
                 " for the respective dimension");
      if (s != 1) size[size_t(l)] = s;
      ++occurrences[size_t(l)];
      last_operand[size_t(l)] = int(i);
    }
    // A repeated subscript takes the diagonal: one dim whose stride is the sum of the strides.
    detail::Labeled<T> x{t, {}};
    bool repeated = false;
    for (size_t k = 0; k < labels.size(); ++k)
      repeated = repeated || std::find(labels.begin(), labels.begin() + k, labels[k]) != labels.begin() + k;
    if (repeated) {
      const Tensor<T> c = t.contiguous();
      Shape shape;
      Strides strides;
      for (size_t k = 0; k < labels.size(); ++k) {
        auto it = std::find(x.labels.begin(), x.labels.end(), labels[k]);
        if (it == x.labels.end()) {
          x.labels.push_back(labels[k]);
          shape.push_back(c.shape()[int(k)]);
          strides.push_back(c.strides()[int(k)]);
        } else {
          strides[int(it - x.labels.begin())] += c.strides()[int(k)];
        }
      }
      x.t = c.as_strided(shape, strides, c.storage_offset());
    } else {
      x.labels = labels;
    }
    ops.push_back(std::move(x));
  }
  // The output's labels.
  std::vector<int> out;
  if (arrow != std::string_view::npos) {
    const std::string_view rhs = equation.substr(arrow + 2);
    bool out_ellipsis = false;
    for (size_t i = 0; i < rhs.size(); ++i) {
      const char c = rhs[i];
      if (c == ' ') continue;
      if (c == '.') {
        DL_CHECK(!out_ellipsis, "einsum(): found '.' for output but an ellipsis (...) was already found");
        DL_CHECK(i + 2 < rhs.size() && rhs[i + 1] == '.' && rhs[i + 2] == '.', "einsum(): found '.' for output that is not part of any ellipsis (...)");
        for (int j = 0; j < ell; ++j) out.push_back(kEllipsisLabel + j);
        out_ellipsis = true;
        i += 2;
        continue;
      }
      const int l = detail::einsum_label(c);
      DL_CHECK(l >= 0, "einsum(): invalid subscript given at index ", arrow + 2 + i,
               " in the equation string, subscripts must be in [a-zA-Z]");
      DL_CHECK(occurrences[size_t(l)] > 0, "einsum(): output subscript ", c, " does not appear in the equation for any input operand");
      DL_CHECK(std::find(out.begin(), out.end(), l) == out.end(), "einsum(): output subscript ", c, " appears more than once in the output");
      out.push_back(l);
    }
  } else {
    for (int j = 0; j < ell; ++j) out.push_back(kEllipsisLabel + j);
    for (int l = 0; l < kEllipsisLabel; ++l)
      if (occurrences[size_t(l)] == 1) out.push_back(l);
  }
  auto in_out = [&](int l) { return std::find(out.begin(), out.end(), l) != out.end(); };
  // Contract left to right; a label is summed at the last operand that has it.
  detail::Labeled<T> acc = ops[0];
  if (ops.size() == 1) {
    acc = detail::sum_labels(std::move(acc), [&](int l) { return !in_out(l); });
  } else {
    for (size_t i = 1; i < ops.size(); ++i)
      acc = detail::contract_pair(std::move(acc), ops[i], [&](int l) { return in_out(l) || last_operand[size_t(l)] > int(i); });
  }
  return detail::permute_to(acc, out);
}

template <floating_scalar T>
Tensor<T> tensordot(const Tensor<T>& a_, const Tensor<T>& b_, Dims dims_a, Dims dims_b) {
  DL_CHECK(dims_a.size() == dims_b.size(), "both dimension lists should have same length");
  Tensor<T> a = a_, b = b_;
  std::vector<bool> con_a(size_t(a.dim()), false), con_b(size_t(b.dim()), false);
  Dims da, db;
  for (int i = 0; i < dims_a.size(); ++i) {
    const int x = wrap_dim(dims_a[i], a.dim(), "tensordot"), y = wrap_dim(dims_b[i], b.dim(), "tensordot");
    DL_CHECK(!con_a[size_t(x)], "dim ", x, " appears multiple times in the list of dims");
    DL_CHECK(!con_b[size_t(y)], "dim ", y, " appears multiple times in the list of dims");
    con_a[size_t(x)] = con_b[size_t(y)] = true;
    const int64_t sa = a.shape()[x], sb = b.shape()[y];
    // A size-1 dim broadcasts: the other operand is summed over its dim instead.
    if (sa != sb && sb == 1) a = sum(a, Dims{x}, true);
    else if (sa != sb && sa == 1) b = sum(b, Dims{y}, true);
    else DL_CHECK(sa == sb, "contracted dimensions need to match, but first has size ", sa, " in dim ", dims_a[i],
                  " and second has size ", sb, " in dim ", dims_b[i]);
    da.push_back(x);
    db.push_back(y);
  }
  Dims perm_a, perm_b;
  Shape out_shape;
  int64_t pa = 1, pb = 1, k = 1;
  for (int d = 0; d < a.dim(); ++d)
    if (!con_a[size_t(d)]) perm_a.push_back(d), out_shape.push_back(a.shape()[d]), pa *= a.shape()[d];
  for (int64_t d : da) perm_a.push_back(d), k *= a.shape()[int(d)];
  for (int64_t d : db) perm_b.push_back(d);
  for (int d = 0; d < b.dim(); ++d)
    if (!con_b[size_t(d)]) perm_b.push_back(d), out_shape.push_back(b.shape()[d]), pb *= b.shape()[d];
  return mm(a.permute(perm_a).reshape({pa, k}), b.permute(perm_b).reshape({k, pb})).reshape(out_shape);
}

template <floating_scalar T>
Tensor<T> tensordot(const Tensor<T>& a, const Tensor<T>& b, int64_t dims) {
  DL_CHECK(dims >= 0, "tensordot expects dims >= 0, but got dims=", dims);
  DL_CHECK(dims <= a.dim() && dims <= b.dim(), "tensordot expects dims < ndim_a or ndim_b, but got dims=", dims);
  Dims da, db;
  for (int64_t i = 0; i < dims; ++i) da.push_back(a.dim() - dims + i), db.push_back(i);
  return tensordot(a, b, da, db);
}

}  // namespace dl
