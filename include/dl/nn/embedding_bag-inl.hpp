// dl/nn/embedding_bag-inl.hpp — the bodies of dl/nn/embedding_bag.hpp's non-template functions
// (DL_API): compiled into each program in header-only mode, once into libdl_kernels in compiled
// mode (see DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <vector>

#include "../ops/indexing.hpp"
#include "embedding_bag.hpp"
#include "functional/sparse.hpp"
#include "init.hpp"

namespace dl::nn {

namespace functional {

DL_API Tensor<float> embedding_bag(const Tensor<int64_t>& input_, const Tensor<float>& weight, const Tensor<int64_t>& offsets_,
                                   const EmbeddingBagOptions& o, const Tensor<float>& per_sample_weights_) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::embedding_bag", weight, input_);
  DL_CHECK(o.mode == "sum" || o.mode == "mean" || o.mode == "max", "embedding_bag: mode has to be one of sum, mean or max, got '", o.mode,
           "'");
  DL_CHECK(!(o.mode == "max" && o.sparse), "max mode does not support sparse weights");
  DL_CHECK(weight.defined() && weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got shape ",
           weight.defined() ? weight.shape() : Shape{});
  DL_CHECK(input_.defined() && (input_.dim() == 1 || input_.dim() == 2),
           "input has to be 1D or 2D Tensor, but got Tensor of dimension ", input_.defined() ? input_.dim() : 0);
  DL_CHECK(!(o.mode == "max" && o.scale_grad_by_freq), "max mode does not support scaling the gradient by the frequency");
  if (per_sample_weights_.defined()) {
    DL_CHECK(o.mode == "sum", "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='",
             o.mode, "'). Please open a feature request on GitHub.");
    DL_CHECK(per_sample_weights_.shape() == input_.shape(), "embedding_bag: If per_sample_weights (", per_sample_weights_.shape(),
             ") is not None, then it must have the same shape as the input (", input_.shape(), ")");
  }
  const int64_t V = weight.size(0), D = weight.size(1);
  // The bags as [first, end) ranges of the flat input.
  const Tensor<int64_t> input = input_.contiguous().reshape({-1});
  const int64_t M = input.numel();
  std::vector<int64_t> starts;
  if (input_.dim() == 2) {
    DL_CHECK(!offsets_.defined(), "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. "
                                  "However, found offsets of type Tensor");
    const int64_t B = input_.size(0), N = input_.size(1);
    for (int64_t b = 0; b <= B; ++b) starts.push_back(b * N);
  } else {
    DL_CHECK(offsets_.defined() && offsets_.dim() == 1, "offsets has to be a 1D Tensor",
             offsets_.defined() ? "" : " but got None (a 1D input needs the offsets of its bags)");
    const Tensor<int64_t> off = offsets_.contiguous();
    starts.assign(off.data(), off.data() + off.numel());
    if (!o.include_last_offset) starts.push_back(M);
    DL_CHECK(!starts.empty(), "embedding_bag: include_last_offset needs at least one offset");
    DL_CHECK(starts.size() == 1 || starts[0] == 0,
             "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got ", starts[0]);
    for (size_t i = 1; i < starts.size(); ++i)
      DL_CHECK(starts[i] >= starts[i - 1] && starts[i] <= M, "offsets must be non-decreasing and at most the input's length ", M,
               ", got offsets[", i, "] = ", starts[i], " after ", starts[i - 1]);
  }
  const int64_t B = static_cast<int64_t>(starts.size()) - 1;
  int64_t pad = -1;
  if (o.padding_idx) {
    DL_CHECK(*o.padding_idx < V && *o.padding_idx >= -V, "padding_idx must be within num_embeddings (got ", *o.padding_idx, " for ", V,
             " embeddings)");
    pad = *o.padding_idx < 0 ? *o.padding_idx + V : *o.padding_idx;
  }
  // The entries that take part (padding left out), the bag of each and each bag's count.
  std::vector<int64_t> kept, bag_of;
  std::vector<int64_t> count(size_t(B), 0);
  const int64_t* in = input.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = starts[size_t(b)]; i < starts[size_t(b) + 1]; ++i) {
      DL_CHECK(in[i] >= 0 && in[i] < V, "embedding_bag: index ", in[i], " out of range for ", V, " embeddings");
      if (in[i] == pad) continue;
      kept.push_back(i);
      bag_of.push_back(b);
      ++count[size_t(b)];
    }
  const auto K = static_cast<int64_t>(kept.size());
  Tensor<int64_t> rows_index = empty<int64_t>({K}), bag_index = empty<int64_t>({K}), kept_index = empty<int64_t>({K});
  for (int64_t k = 0; k < K; ++k) {
    rows_index.data()[k] = in[kept[size_t(k)]];
    bag_index.data()[k] = bag_of[size_t(k)];
    kept_index.data()[k] = kept[size_t(k)];
  }
  // [K, D]; with sparse, weight's gradient holds one row per kept index (PyTorch's sparse layout).
  Tensor<float> rows = embedding(rows_index, weight, std::nullopt, o.max_norm, o.norm_type, o.scale_grad_by_freq, o.sparse);
  if (per_sample_weights_.defined())
    rows = rows * index_select(per_sample_weights_.reshape({-1}), 0, kept_index).unsqueeze(1);
  if (o.mode == "max") {
    // Each (bag, column) takes the row holding its maximum; an empty bag the zero row appended at K.
    Tensor<int64_t> pick = full<int64_t>({B, D}, K);
    const Tensor<float> r = rows.detach().contiguous();
    std::vector<float> best(size_t(B * D));
    for (int64_t k = 0; k < K; ++k) {
      const int64_t b = bag_of[size_t(k)];
      for (int64_t d = 0; d < D; ++d) {
        const float v = r.data()[k * D + d];
        int64_t& p = pick.data()[b * D + d];
        if (p == K || v > best[size_t(b * D + d)]) p = k, best[size_t(b * D + d)] = v;
      }
    }
    return gather(cat({rows, zeros<float>({1, D})}, 0), 0, pick);
  }
  Tensor<float> out = index_add(zeros<float>({B, D}), 0, bag_index, rows);
  if (o.mode == "mean") {
    Tensor<float> inv = empty<float>({B, 1});
    for (int64_t b = 0; b < B; ++b) inv.data()[b] = count[size_t(b)] ? 1.0f / float(count[size_t(b)]) : 0.0f;
    out = out * inv;
  }
  return out;
}

}  // namespace functional

DL_API EmbeddingBag::EmbeddingBag(int64_t num_embeddings_, int64_t embedding_dim_, const EmbeddingBagOptions& o)
    : num_embeddings(num_embeddings_), embedding_dim(embedding_dim_), options(o) {
  DL_CHECK(num_embeddings > 0 && embedding_dim > 0, "EmbeddingBag: num_embeddings and embedding_dim must be positive, got ", num_embeddings,
           " and ", embedding_dim);
  DL_CHECK(o.mode == "sum" || o.mode == "mean" || o.mode == "max", "EmbeddingBag: mode has to be one of sum, mean or max, got '", o.mode, "'");
  DL_CHECK(!(o.mode == "max" && o.sparse), "max mode does not support sparse weights");
  if (options.padding_idx) {
    DL_CHECK(*options.padding_idx < num_embeddings && *options.padding_idx >= -num_embeddings, "padding_idx must be within num_embeddings (got ",
             *options.padding_idx, " for ", num_embeddings, " embeddings)");
    if (*options.padding_idx < 0) *options.padding_idx += num_embeddings;
  }
  weight = empty<float>({num_embeddings, embedding_dim}).requires_grad_();
  reset_parameters();
}

DL_API void EmbeddingBag::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx) {
    NoGradGuard no_grad;
    weight[*options.padding_idx].zero_();
  }
}

DL_API EmbeddingBag EmbeddingBag::from_pretrained(const Tensor<float>& embeddings, bool freeze, const EmbeddingBagOptions& o) {
  DL_CHECK(embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional, got shape ", embeddings.shape());
  EmbeddingBag e(embeddings.size(0), embeddings.size(1), o);
  {
    NoGradGuard no_grad;
    e.weight.copy_(embeddings);
  }
  e.weight.requires_grad_(!freeze);
  return e;
}

DL_API std::string EmbeddingBag::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (options.max_norm) s += ", max_norm=" + detail::py_float(*options.max_norm);
  if (options.norm_type != 2) s += ", norm_type=" + detail::py_float(options.norm_type);
  if (options.scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  s += ", mode=" + options.mode;
  if (options.padding_idx) s += ", padding_idx=" + std::to_string(*options.padding_idx);
  return s;
}

}  // namespace dl::nn
