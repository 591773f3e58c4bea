// dl/nn/embedding-inl.hpp — the bodies of dl/nn/embedding.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "embedding.hpp"

namespace dl::nn {

DL_API Embedding<>::Embedding(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingOptions& o)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim), padding_idx(o.padding_idx), max_norm(o.max_norm),
      norm_type(o.norm_type), scale_grad_by_freq(o.scale_grad_by_freq), sparse(o.sparse) {
  DL_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: num_embeddings and embedding_dim must be positive, got ",
           num_embeddings, " and ", embedding_dim);
  if (padding_idx) {
    DL_CHECK(*padding_idx < num_embeddings && *padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings (got ",
             *padding_idx, " for ", num_embeddings, " embeddings)");
    if (*padding_idx < 0) *padding_idx += num_embeddings;
  }
  weight = empty<float>({num_embeddings, embedding_dim}).requires_grad_();
  reset_parameters();
}

DL_API void Embedding<>::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight[*padding_idx].zero_();
  }
}

DL_API Embedding<> Embedding<>::from_pretrained(const Tensor<float>& embeddings, bool freeze, const EmbeddingOptions& o) {
  DL_CHECK(embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional, got shape ", embeddings.shape());
  Embedding e(embeddings.size(0), embeddings.size(1), o);
  {
    NoGradGuard no_grad;
    e.weight.copy_(embeddings);
  }
  e.weight.requires_grad_(!freeze);
  return e;
}

DL_API std::string Embedding<>::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  if (max_norm) s += ", max_norm=" + detail::py_float(*max_norm);
  if (norm_type != 2) s += ", norm_type=" + detail::py_float(norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  if (sparse) s += ", sparse=True";
  return s;
}

}  // namespace dl::nn
