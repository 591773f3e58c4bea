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
  bool sparse = false;  ///< weight's gradient is a SparseTensor of the looked-up rows (optim::SparseAdam, SGD, Adagrad)
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
  bool sparse;

  /// input: indices of any shape; output: input.shape + [embedding_dim].
  Tensor<float> forward(const Tensor<int64_t>& input) {
    return functional::embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse);
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

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "embedding-inl.hpp"
#endif
