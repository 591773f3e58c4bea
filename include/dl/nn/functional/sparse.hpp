// dl/nn/functional/sparse.hpp — F::embedding (rows of a table looked up by index, with
// padding_idx, max_norm renormalisation and scale_grad_by_freq) and F::one_hot.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "../../config.hpp"
#include "../../ops/embedding.hpp"
#include "../../ops/sparse.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// weight[input]: for input of any shape, the rows of weight [num_embeddings, embedding_dim],
/// shape input.shape + [embedding_dim]. The gradient of weight accumulates over repeated indices;
/// the row padding_idx gets none (a negative padding_idx counts from the end). With max_norm,
/// the looked-up rows whose norm_type-norm exceeds max_norm are scaled down to it in place
/// (without gradient) first. scale_grad_by_freq divides each row's gradient by its count in input.
/// sparse: a backward() leaves weight a sparse gradient (p.sparse_grad(): one row per looked-up
/// index, padding_idx left out, uncoalesced as PyTorch's) instead of a dense [V, D] one; for a weight
/// that is not a leaf, and in autograd::grad or create_graph passes, the gradient stays dense.
template <class T>
Tensor<T> embedding(const Tensor<int64_t>& input, const Tensor<T>& weight, std::optional<int64_t> padding_idx = {},
                    std::optional<double> max_norm = {}, double norm_type = 2.0, bool scale_grad_by_freq = false,
                    bool sparse = false);

/// One-hot encoding of class indices: shape input.shape + [num_classes], int64 zeros and ones;
/// num_classes = -1 takes max(input) + 1.
Tensor<int64_t> one_hot(const Tensor<int64_t>& input, int64_t num_classes = -1);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// PyTorch's embedding_renorm_: each distinct looked-up row whose norm exceeds max_norm is scaled
/// by max_norm / (norm + 1e-7), in place.
template <class T>
void embedding_renorm(const Tensor<T>& weight, const Tensor<int64_t>& index, double max_norm, double norm_type) {
  std::vector<int64_t> rows(index.data(), index.data() + index.numel());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  const int64_t D = weight.size(1), rs = weight.stride(0), cs = weight.stride(1);
  T* w = weight.data();
  bool changed = false;
  for (int64_t v : rows) {
    T* row = w + v * rs;
    double norm = 0;
    if (norm_type == 2) {
      for (int64_t j = 0; j < D; ++j) norm += double(row[j * cs]) * double(row[j * cs]);
      norm = std::sqrt(norm);
    } else if (norm_type == 1) {
      for (int64_t j = 0; j < D; ++j) norm += std::abs(double(row[j * cs]));
    } else if (std::isinf(norm_type)) {
      norm = norm_type > 0 ? 0 : INFINITY;
      for (int64_t j = 0; j < D; ++j)
        norm = norm_type > 0 ? std::max(norm, std::abs(double(row[j * cs]))) : std::min(norm, std::abs(double(row[j * cs])));
    } else {
      for (int64_t j = 0; j < D; ++j) norm += std::pow(std::abs(double(row[j * cs])), norm_type);
      norm = std::pow(norm, 1.0 / norm_type);
    }
    if (norm > max_norm) {
      const T scale = T(max_norm / (norm + 1e-7));
      for (int64_t j = 0; j < D; ++j) row[j * cs] *= scale;
      changed = true;
    }
  }
  if (changed) weight.bump_version();
}

/// embedding's sparse gradient: one row of g per index that is not pad (times scale), added to the
/// leaf weight's gradient.
template <class T>
void accumulate_sparse_embedding_grad(const TensorImplPtr& weight, const Tensor<T>& g, const Tensor<int64_t>& index, int64_t V,
                                      int64_t pad, const Tensor<T>& scale) {
  const int64_t n = index.numel();
  const Tensor<T> rows = g.contiguous().reshape({n, -1});
  const int64_t D = rows.size(1);
  const int64_t* idx = index.data();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += idx[i] != pad;
  Tensor<int64_t> indices = empty<int64_t>({1, kept});
  Tensor<T> values = empty<T>({kept, D});
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] == pad) continue;
    indices.data()[k] = idx[i];
    const T s = scale.defined() ? scale.data()[i] : T(1);
    const T* src = rows.data() + i * D;
    T* dst = values.data() + k * D;
    for (int64_t j = 0; j < D; ++j) dst[j] = src[j] * s;
    ++k;
  }
  dl::detail::accumulate_sparse_grad(weight, SparseTensor<T>(indices, values, {V, D}, false));
}

}  // namespace detail

template <class T>
Tensor<T> embedding(const Tensor<int64_t>& input, const Tensor<T>& weight, std::optional<int64_t> padding_idx,
                    std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, bool sparse) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::embedding", weight, input);
  static_assert(floating_scalar<T>, "embedding: the weight must be a floating tensor");
  DL_CHECK(weight.dim() == 2, "'weight' must be 2-D (got weight of size ", weight.shape(), ")");
  const int64_t V = weight.size(0), D = weight.size(1);
  int64_t pad = -1;
  if (padding_idx) {
    DL_CHECK(*padding_idx < V && *padding_idx >= -V, "Padding_idx must be within num_embeddings (padding_idx = ", *padding_idx,
             ", num_embeddings = ", V, ")");
    pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
  }
  const Tensor<int64_t> index = input.contiguous().reshape({-1});
  {
    const int64_t* p = index.data();
    for (int64_t i = 0; i < index.numel(); ++i)
      DL_CHECK(p[i] >= 0 && p[i] < V, "index out of range in self: embedding index ", p[i], " is not in [0, ", V,
               ") (num_embeddings = ", V, ")");
  }
  if (max_norm) detail::embedding_renorm(weight, index, *max_norm, norm_type);
  Shape out_shape = input.shape();
  out_shape.push_back(D);
  Tensor<T> out = dl::detail::gather_rows_raw(weight, index, -1, Tensor<T>());
  if (autograd::any_requires_grad(weight)) {
    DL_CHECK(!(sparse && scale_grad_by_freq), "embedding_backward: scale_grad_by_freq not supported with sparse gradients");
    Tensor<T> scale;
    if (scale_grad_by_freq) {
      std::vector<int64_t> count(size_t(V), 0);
      for (int64_t i = 0; i < index.numel(); ++i) ++count[size_t(index.data()[i])];
      scale = empty<T>({index.numel()});
      for (int64_t i = 0; i < index.numel(); ++i) scale.data()[i] = T(1) / T(count[size_t(index.data()[i])]);
    }
    // A sparse gradient goes straight into the leaf's slot; the edge to it carries nothing then.
    TensorImplPtr leaf = sparse && weight.is_leaf() ? weight.impl() : nullptr;
    out = dl::detail::record_kernel(out, "EmbeddingBackward", {}, {index.impl()},
                                    [index, V, pad, scale, leaf](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                                      if (leaf && autograd::detail::sparse_grads_allowed()) {
                                        detail::accumulate_sparse_embedding_grad(leaf, g, index, V, pad, scale);
                                        return std::vector<TensorImplPtr>{nullptr};
                                      }
                                      return std::vector<TensorImplPtr>{dl::detail::scatter_rows_op(g, index, V, pad, scale).impl()};
                                    },
                                    weight);
  }
  return out.view(out_shape);
}

DL_API Tensor<int64_t> one_hot(const Tensor<int64_t>& input, int64_t num_classes);

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::embedding(const dl::Tensor<int64_t>&, const dl::Tensor<float>&, std::optional<int64_t>,
                                                         std::optional<double>, double, bool, bool))

#if DL_HEADER_ONLY
#include "sparse-inl.hpp"
#endif
