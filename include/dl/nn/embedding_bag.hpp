// dl/nn/embedding_bag.hpp — EmbeddingBag and F::embedding_bag (torch.nn.EmbeddingBag): the sum,
// mean or max of bags of embedding rows, without materialising the rows of each bag as a
// [B, N, D] tensor first.
//
//   nn::EmbeddingBag bag(10000, 64, {.mode = "sum"});
//   Tensor<float> y = bag(words, offsets);          // words [total] int64, offsets [B] -> [B, 64]
//   Tensor<float> z = bag(fixed);                   // fixed [B, N]: B bags of N indices each
//
// Indices equal to padding_idx are left out of their bag (and of its count, for the mean); an
// empty bag gives zeros. per_sample_weights (mode "sum" only) scales each looked-up row.
#pragma once

#include <optional>
#include <string>

#include "../config.hpp"
#include "../tensor.hpp"
#include "module.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

struct EmbeddingBagOptions {
  std::optional<double> max_norm = std::nullopt;  ///< looked-up rows are renormalised to at most this norm
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;  ///< each row's gradient divided by its count in the batch (not with "max")
  std::string mode = "mean";        ///< "sum", "mean" or "max"
  bool sparse = false;              ///< weight's gradient is a SparseTensor of the looked-up rows (not with max)
  bool include_last_offset = false;  ///< offsets has B + 1 entries, the last one the input's length
  std::optional<int64_t> padding_idx = std::nullopt;  ///< indices left out of their bags (its row starts at zero)
};

namespace functional {
/// torch.nn.functional.embedding_bag: input [B, N] (B bags of N) or input [M] with offsets [B]
/// (bag b is input[offsets[b] : offsets[b + 1]]); weight [num_embeddings, D] -> [B, D].
DL_API Tensor<float> embedding_bag(const Tensor<int64_t>& input, const Tensor<float>& weight, const Tensor<int64_t>& offsets = {},
                                   const EmbeddingBagOptions& options = {}, const Tensor<float>& per_sample_weights = {});
}  // namespace functional

/// torch.nn.EmbeddingBag: weight [num_embeddings, embedding_dim], N(0, 1) (its padding_idx row zero).
class EmbeddingBag : public Module {
 public:
  DL_API EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingBagOptions& o = {});
  /// An EmbeddingBag holding `embeddings` [num, dim] (copied); freeze: no gradient.
  DL_API static EmbeddingBag from_pretrained(const Tensor<float>& embeddings, bool freeze = true, const EmbeddingBagOptions& o = {});

  Tensor<float> weight;
  int64_t num_embeddings, embedding_dim;
  EmbeddingBagOptions options;

  Tensor<float> forward(const Tensor<int64_t>& input, const Tensor<int64_t>& offsets = {}, const Tensor<float>& per_sample_weights = {}) {
    return functional::embedding_bag(input, weight, offsets, options, per_sample_weights);
  }
  DL_API void reset_parameters();
  DL_API std::string extra_repr() const override;
  DL_MODULE(EmbeddingBag, weight)
};

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "embedding_bag-inl.hpp"
#endif
