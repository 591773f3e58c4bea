// dl/nn/transformer.hpp — attention and transformers: MultiheadAttention, TransformerEncoderLayer,
// TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and Transformer, with PyTorch's
// options, shapes, masks, parameter names (so PyTorch state dicts load directly), initialisation
// and printouts.
//
//   nn::MultiheadAttention mha(64, 8, {.batch_first = true});
//   auto [out, weights] = mha(x, x, x);                  // x [B, L, 64] -> out [B, L, 64], weights [B, L, L]
//   nn::TransformerEncoder enc(nn::TransformerEncoderLayer(64, 8, {.dim_feedforward = 256, .batch_first = true}), 2);
//   auto y = enc(x, nn::Transformer::generate_square_subsequent_mask(L));   // causal self-attention
//
// Masks are nn::AttnMask: a bool tensor (true = may NOT attend, PyTorch's convention for these
// layers) or a float tensor added to the scores. Key padding masks are [B, S] (true = padding).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../config.hpp"
#include "../tensor.hpp"
#include "container.hpp"
#include "dropout.hpp"
#include "functional/attention.hpp"
#include "linear.hpp"
#include "module.hpp"
#include "normalization.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

struct MultiheadAttentionOptions {
  double dropout = 0;      ///< dropout on the attention weights, in training
  bool bias = true;        ///< in_proj_bias and out_proj.bias
  bool add_bias_kv = false;  ///< learned bias_k, bias_v appended to the keys and values
  bool add_zero_attn = false;  ///< a zero key and value appended (after the projections)
  int64_t kdim = 0;        ///< the keys' features (0: embed_dim)
  int64_t vdim = 0;        ///< the values' features (0: embed_dim)
  bool batch_first = false;  ///< inputs and output [B, L, E] instead of [L, B, E]
};

/// out_proj's class, named as PyTorch names it (a Linear).
class NonDynamicallyQuantizableLinear : public Linear<> {
 public:
  using Linear<>::Linear;
  std::string type_name() const override { return "NonDynamicallyQuantizableLinear"; }
};

/// torch.nn.MultiheadAttention: softmax(q k^T / sqrt(head_dim) + masks) v per head, with the
/// input projections in_proj_weight [3E, E] / in_proj_bias [3E] (q_proj_weight, k_proj_weight,
/// v_proj_weight when kdim or vdim differ from embed_dim) and out_proj.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& o = {});

  int64_t embed_dim, kdim, vdim, num_heads, head_dim;
  double dropout;
  bool batch_first, add_zero_attn;
  Tensor<float> in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  NonDynamicallyQuantizableLinear out_proj;

  /// (attn_output, attn_weights). query [L, B, E] ([B, L, E] with batch_first, or unbatched
  /// [L, E]), key [S, B, kdim], value [S, B, vdim]. key_padding_mask [B, S] (true / -inf: ignore
  /// that key); attn_mask [L, S] or [B*num_heads, L, S] (true / -inf: may not attend). attn_weights:
  /// [B, L, S] averaged over heads (average_attn_weights) or [B, num_heads, L, S]; undefined
  /// unless need_weights. is_causal: a hint that attn_mask is the causal mask (which must be given).
  DL_API std::tuple<Tensor<float>, Tensor<float>> forward(const Tensor<float>& query, const Tensor<float>& key, const Tensor<float>& value,
                                                          const AttnMask& key_padding_mask = {}, bool need_weights = true,
                                                          const AttnMask& attn_mask = {}, bool average_attn_weights = true,
                                                          bool is_causal = false);
  /// PyTorch's initialisation: xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/v.
  DL_API void reset_parameters();
  DL_MODULE(MultiheadAttention, in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v, out_proj)
  /// Calls with braces for the optional arguments (`mha(q, k, v, {}, false)`) run the hooks too.
  std::tuple<Tensor<float>, Tensor<float>> operator()(const Tensor<float>& query, const Tensor<float>& key, const Tensor<float>& value,
                                                      const AttnMask& key_padding_mask = {}, bool need_weights = true,
                                                      const AttnMask& attn_mask = {}, bool average_attn_weights = true,
                                                      bool is_causal = false) {
    return detail::call_module(*this, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal);
  }
};

/// The feed-forward activation of the transformer layers: "relu", "gelu" or any function.
using TransformerActivation = std::function<Tensor<float>(const Tensor<float>&)>;

struct TransformerEncoderLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  ///< "relu" or "gelu"
  TransformerActivation activation_fn{};  ///< used instead of `activation` when set
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  ///< pre-norm: x + sa(norm1(x)), x + ff(norm2(x))
  bool bias = true;         ///< biases of the linear layers, the attention and the layer norms
};
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

/// torch.nn.TransformerEncoderLayer: self-attention and a feed-forward block, each with dropout,
/// a residual connection and a layer norm (after, or before with norm_first).
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerEncoderLayerOptions& o = {});
  MultiheadAttention self_attn;
  Linear<> linear1;
  Dropout dropout;
  Linear<> linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;
  bool norm_first;
  TransformerActivation activation_fn;  ///< the feed-forward activation

  /// src [S, B, E] ([B, S, E] with batch_first, or [S, E]); src_mask [S, S] or [B*nhead, S, S];
  /// src_key_padding_mask [B, S]. is_causal: a hint that src_mask is the causal mask.
  DL_API Tensor<float> forward(const Tensor<float>& src, const AttnMask& src_mask = {}, const AttnMask& src_key_padding_mask = {},
                               bool is_causal = false);
  DL_MODULE(TransformerEncoderLayer, self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2)
  Tensor<float> operator()(const Tensor<float>& src, const AttnMask& src_mask = {}, const AttnMask& src_key_padding_mask = {},
                           bool is_causal = false) {
    return detail::call_module(*this, src, src_mask, src_key_padding_mask, is_causal);
  }
};

/// torch.nn.TransformerDecoderLayer: self-attention, attention over the encoder's output (memory)
/// and a feed-forward block, each with dropout, a residual connection and a layer norm.
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, const TransformerDecoderLayerOptions& o = {});
  MultiheadAttention self_attn, multihead_attn;
  Linear<> linear1;
  Dropout dropout;
  Linear<> linear2;
  LayerNorm norm1, norm2, norm3;
  Dropout dropout1, dropout2, dropout3;
  bool norm_first;
  TransformerActivation activation_fn;  ///< the feed-forward activation

  /// tgt [T, B, E], memory [S, B, E] (batch first with batch_first); tgt_mask [T, T],
  /// memory_mask [T, S]; the key padding masks [B, T] and [B, S].
  DL_API Tensor<float> forward(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask = {},
                               const AttnMask& memory_mask = {}, const AttnMask& tgt_key_padding_mask = {},
                               const AttnMask& memory_key_padding_mask = {}, bool tgt_is_causal = false, bool memory_is_causal = false);
  DL_MODULE(TransformerDecoderLayer, self_attn, multihead_attn, linear1, dropout, linear2, norm1, norm2, norm3, dropout1, dropout2,
            dropout3)
  Tensor<float> operator()(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask = {},
                           const AttnMask& memory_mask = {}, const AttnMask& tgt_key_padding_mask = {},
                           const AttnMask& memory_key_padding_mask = {}, bool tgt_is_causal = false, bool memory_is_causal = false) {
    return detail::call_module(*this, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                               memory_is_causal);
  }
};

/// torch.nn.TransformerEncoder: num_layers copies of encoder_layer (each with its own parameters,
/// named layers.0, layers.1, ...), then the optional final norm.
class TransformerEncoder : public Module {
 public:
  DL_API TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers, std::optional<LayerNorm> norm = std::nullopt);
  ModuleList layers;
  std::optional<LayerNorm> norm;
  int64_t num_layers;
  /// The layer i (a TransformerEncoderLayer).
  TransformerEncoderLayer& layer(size_t i) { return *layers_.at(i); }
  DL_API Tensor<float> forward(const Tensor<float>& src, const AttnMask& mask = {}, const AttnMask& src_key_padding_mask = {},
                               bool is_causal = false);
  DL_MODULE(TransformerEncoder, layers, norm)
  Tensor<float> operator()(const Tensor<float>& src, const AttnMask& mask = {}, const AttnMask& src_key_padding_mask = {},
                           bool is_causal = false) {
    return detail::call_module(*this, src, mask, src_key_padding_mask, is_causal);
  }

 private:
  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers_;
};

/// torch.nn.TransformerDecoder: num_layers copies of decoder_layer, then the optional final norm.
class TransformerDecoder : public Module {
 public:
  DL_API TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers, std::optional<LayerNorm> norm = std::nullopt);
  ModuleList layers;
  std::optional<LayerNorm> norm;
  int64_t num_layers;
  TransformerDecoderLayer& layer(size_t i) { return *layers_.at(i); }
  DL_API Tensor<float> forward(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask = {},
                               const AttnMask& memory_mask = {}, const AttnMask& tgt_key_padding_mask = {},
                               const AttnMask& memory_key_padding_mask = {}, bool tgt_is_causal = false, bool memory_is_causal = false);
  DL_MODULE(TransformerDecoder, layers, norm)
  Tensor<float> operator()(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask = {},
                           const AttnMask& memory_mask = {}, const AttnMask& tgt_key_padding_mask = {},
                           const AttnMask& memory_key_padding_mask = {}, bool tgt_is_causal = false, bool memory_is_causal = false) {
    return detail::call_module(*this, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                               memory_is_causal);
  }

 private:
  std::vector<std::shared_ptr<TransformerDecoderLayer>> layers_;
};

struct TransformerOptions {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";
  TransformerActivation activation_fn{};
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool bias = true;
};

/// torch.nn.Transformer: an encoder and a decoder (each with a final LayerNorm); every parameter
/// with more than one dim initialised xavier_uniform_, as PyTorch.
class Transformer : public Module {
 public:
  DL_API explicit Transformer(const TransformerOptions& o = {});
  TransformerEncoder encoder;
  TransformerDecoder decoder;
  int64_t d_model, nhead;
  bool batch_first;
  /// src [S, B, E], tgt [T, B, E] (batch first with batch_first) -> [T, B, E].
  DL_API Tensor<float> forward(const Tensor<float>& src, const Tensor<float>& tgt, const AttnMask& src_mask = {},
                               const AttnMask& tgt_mask = {}, const AttnMask& memory_mask = {},
                               const AttnMask& src_key_padding_mask = {}, const AttnMask& tgt_key_padding_mask = {},
                               const AttnMask& memory_key_padding_mask = {}, bool src_is_causal = false, bool tgt_is_causal = false,
                               bool memory_is_causal = false);
  /// The [sz, sz] float mask with -inf above the diagonal: position i attends positions 0..i.
  DL_API static Tensor<float> generate_square_subsequent_mask(int64_t sz);
  DL_MODULE(Transformer, encoder, decoder)
  Tensor<float> operator()(const Tensor<float>& src, const Tensor<float>& tgt, const AttnMask& src_mask = {}, const AttnMask& tgt_mask = {},
                           const AttnMask& memory_mask = {}, const AttnMask& src_key_padding_mask = {},
                           const AttnMask& tgt_key_padding_mask = {}, const AttnMask& memory_key_padding_mask = {},
                           bool src_is_causal = false, bool tgt_is_causal = false, bool memory_is_causal = false) {
    return detail::call_module(*this, src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
                               memory_key_padding_mask, src_is_causal, tgt_is_causal, memory_is_causal);
  }
};

namespace detail {
/// Gives every parameter and buffer of m (and its submodules) its own copy of the values, so a
/// copied module no longer shares them with the original (PyTorch's copy.deepcopy of a layer).
DL_API void clone_parameters_(Module& m);
}  // namespace detail

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "transformer-inl.hpp"
#endif
