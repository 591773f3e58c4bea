// dl/nn/embedding.hpp — Embedding: a lookup table of num_embeddings vectors of embedding_dim.
//   nn::Embedding<10000, 64> emb;   nn::Embedding emb2(10, 3, {.padding_idx = 0});
#pragma once

#include <optional>
#include <string>

#include "../config.hpp"
#include "container.hpp"
#include "functional/sparse.hpp"
#include "init.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

struct EmbeddingOptions {
  std::optional<int64_t> padding_idx = std::nullopt;  ///< its row gets no gradient (and starts at zero)
  std::optional<double> max_norm = std::nullopt;      ///< looked-up rows are renormalised to at most this norm
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  bool sparse = false;  ///< sparse gradients are not supported by dl: must stay false
};

template <int64_t NumEmbeddings = dynamic, int64_t EmbeddingDim = dynamic>
class Embedding;

template <>
class Embedding<dynamic, dynamic> : public Module {
 public:
  static constexpr int64_t static_out_features = dynamic;
  static constexpr detail::Axis feature_axis = detail::Axis::last;
  Embedding(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingOptions& o = {});
  /// An embedding holding `embeddings` [num, dim] (copied); freeze: no gradient.
  static Embedding from_pretrained(const Tensor<float>& embeddings, bool freeze = true, const EmbeddingOptions& o = {});

  Tensor<float> weight;  // [num_embeddings, embedding_dim], N(0, 1)
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  std::optional<double> max_norm;
  double norm_type;
  bool scale_grad_by_freq;

  /// input: indices of any shape; output: input.shape + [embedding_dim].
  Tensor<float> forward(const Tensor<int64_t>& input) {
    return functional::embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq);
  }
  void reset_parameters();
  int64_t output_size() const { return embedding_dim; }
  DL_API std::string extra_repr() const override;
  DL_MODULE(Embedding, weight)
};

template <int64_t NumEmbeddings, int64_t EmbeddingDim>
class Embedding : public Embedding<> {
  static_assert(NumEmbeddings > 0 && EmbeddingDim > 0, "nn::Embedding<Num, Dim>: sizes must be positive");

 public:
  static constexpr int64_t static_out_features = EmbeddingDim;
  explicit Embedding(const EmbeddingOptions& o = {}) : Embedding<>(NumEmbeddings, EmbeddingDim, o) {}
};

Embedding(int64_t, int64_t) -> Embedding<>;
Embedding(int64_t, int64_t, const EmbeddingOptions&) -> Embedding<>;

// ------------------------------------------------------------------------------ implementation

#if DL_HEADER_ONLY
DL_API Embedding<>::Embedding(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingOptions& o)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim), padding_idx(o.padding_idx), max_norm(o.max_norm),
      norm_type(o.norm_type), scale_grad_by_freq(o.scale_grad_by_freq) {
  DL_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: num_embeddings and embedding_dim must be positive, got ",
           num_embeddings, " and ", embedding_dim);
  DL_CHECK(!o.sparse, "Embedding: sparse gradients are not supported by dl (sparse must be false)");
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
  return s;
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::nn
