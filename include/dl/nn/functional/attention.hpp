// dl/nn/functional/attention.hpp — F::scaled_dot_product_attention (torch.nn.functional.
// scaled_dot_product_attention) and nn::AttnMask, the mask type of the attention layers.
//
//   auto out = F::scaled_dot_product_attention(q, k, v, {.is_causal = true});  // [B, H, L, E] each
//   auto out2 = F::scaled_dot_product_attention(q, k, v, {.attn_mask = keep, .dropout_p = 0.1});
//
// The scores' scaling and mask are read fused by the softmax (one pass over [..., L, S]), the two
// products are batched GEMMs, and the whole is differentiable through the recorded graph.
#pragma once

#include <optional>
#include <utility>

#include "../../config.hpp"
#include "../../random.hpp"
#include "../../tensor.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// An attention mask, either kind PyTorch takes: a bool tensor or a float tensor added to the
/// attention scores (0 keeps a position, -inf removes it). What a bool true means depends on the
/// function, as in PyTorch: F::scaled_dot_product_attention keeps the positions that are true;
/// MultiheadAttention and the transformer layers mask out the positions that are true.
class AttnMask {
 public:
  AttnMask() = default;
  AttnMask(Tensor<bool> mask) : bool_(std::move(mask)) {}
  AttnMask(Tensor<float> mask) : float_(std::move(mask)) {}
  bool defined() const { return bool_.defined() || float_.defined(); }
  bool is_bool() const { return bool_.defined(); }
  const Shape& shape() const { return bool_.defined() ? bool_.shape() : float_.shape(); }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  const Tensor<bool>& bool_mask() const { return bool_; }
  const Tensor<float>& float_mask() const { return float_; }
  /// The mask as scores to add: a float mask as it is; a bool mask as -inf where it equals
  /// `masked` and 0 elsewhere. Undefined when the mask is.
  DL_API Tensor<float> additive(bool masked = true) const;

 private:
  Tensor<bool> bool_;
  Tensor<float> float_;
};

namespace functional {

struct ScaledDotProductAttentionOptions {
  /// Broadcast to [..., L, S]: bool (true = takes part in attention) or float (added to the scores).
  AttnMask attn_mask{};
  double dropout_p = 0;  ///< dropout on the attention weights (applied whenever > 0, as PyTorch)
  bool is_causal = false;  ///< query i attends keys 0..i (the top-left lower triangle); no attn_mask then
  std::optional<double> scale{};  ///< default 1 / sqrt(E)
  bool enable_gqa = false;  ///< key/value may have fewer heads (dim -3) than the query, each shared by a group
  Generator* generator = nullptr;  ///< the dropout's generator (default: the global one)
};

/// softmax(query key^T * scale + mask) value, with dropout on the weights: query [..., L, E],
/// key [..., S, E], value [..., S, Ev] -> [..., L, Ev] (batch dims broadcast).
DL_API Tensor<float> scaled_dot_product_attention(const Tensor<float>& query, const Tensor<float>& key, const Tensor<float>& value,
                                                  const ScaledDotProductAttentionOptions& options = {});

}  // namespace functional

namespace detail {
/// The [L, S] float mask with -inf above the diagonal (j > i) and 0 elsewhere.
DL_API Tensor<float> causal_mask(int64_t L, int64_t S);
/// softmax(scores * scale + mask, -1), the sum read fused by the softmax; mask may be undefined.
DL_API Tensor<float> masked_softmax(const Tensor<float>& scores, double scale, const Tensor<float>& mask);
}  // namespace detail

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "attention-inl.hpp"
#endif
