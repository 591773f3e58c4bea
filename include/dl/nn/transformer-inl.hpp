// dl/nn/transformer-inl.hpp — the bodies of dl/nn/transformer.hpp's non-template functions (DL_API):
// compiled into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <cmath>
#include <limits>

#include "../ops/indexing.hpp"
#include "../ops/matmul.hpp"
#include "functional/activation.hpp"
#include "functional/attention.hpp"
#include "functional/dropout.hpp"
#include "functional/linear.hpp"
#include "init.hpp"
#include "transformer.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ MultiheadAttention

namespace detail {
namespace mha {
inline int64_t checked_embed_dim(int64_t embed_dim, int64_t num_heads) {
  DL_CHECK(embed_dim > 0 && num_heads > 0, "MultiheadAttention: embed_dim and num_heads must be positive, got embed_dim=", embed_dim,
           " and num_heads=", num_heads);
  return embed_dim;
}
/// A mask padded with one more key (a zero / false column), for add_bias_kv and add_zero_attn.
inline AttnMask pad_key(const AttnMask& m) {
  if (!m.defined()) return m;
  if (m.is_bool()) {
    Shape s = m.shape();
    s[s.size() - 1] = 1;
    return AttnMask(dl::cat({m.bool_mask(), zeros<bool>(s)}, -1));
  }
  Shape s = m.shape();
  s[s.size() - 1] = 1;
  return AttnMask(dl::cat({m.float_mask(), zeros<float>(s)}, -1));
}
}  // namespace mha
}  // namespace detail

DL_API MultiheadAttention::MultiheadAttention(int64_t embed_dim_, int64_t num_heads_, const MultiheadAttentionOptions& o)
    : embed_dim(embed_dim_), kdim(o.kdim > 0 ? o.kdim : embed_dim_), vdim(o.vdim > 0 ? o.vdim : embed_dim_), num_heads(num_heads_),
      head_dim(num_heads_ > 0 ? embed_dim_ / num_heads_ : 0), dropout(o.dropout), batch_first(o.batch_first),
      add_zero_attn(o.add_zero_attn), out_proj(detail::mha::checked_embed_dim(embed_dim_, num_heads_), embed_dim_, o.bias) {
  DL_CHECK(head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads (embed_dim=", embed_dim, ", num_heads=", num_heads, ")");
  DL_CHECK(o.dropout >= 0 && o.dropout <= 1, "MultiheadAttention: dropout must be in [0, 1], got ", o.dropout);
  if (kdim == embed_dim && vdim == embed_dim) {
    in_proj_weight = empty<float>({3 * embed_dim, embed_dim}).requires_grad_();
  } else {
    q_proj_weight = empty<float>({embed_dim, embed_dim}).requires_grad_();
    k_proj_weight = empty<float>({embed_dim, kdim}).requires_grad_();
    v_proj_weight = empty<float>({embed_dim, vdim}).requires_grad_();
  }
  if (o.bias) in_proj_bias = empty<float>({3 * embed_dim}).requires_grad_();
  if (o.add_bias_kv) {
    bias_k = empty<float>({1, 1, embed_dim}).requires_grad_();
    bias_v = empty<float>({1, 1, embed_dim}).requires_grad_();
  }
  reset_parameters();
}

DL_API void MultiheadAttention::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj.bias);
  }
  if (bias_k.defined()) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}


DL_API std::tuple<Tensor<float>, Tensor<float>> MultiheadAttention::forward(const Tensor<float>& query, const Tensor<float>& key,
                                                                            const Tensor<float>& value, const AttnMask& key_padding_mask_in,
                                                                            bool need_weights, const AttnMask& attn_mask_in,
                                                                            bool average_attn_weights, bool is_causal) {
  DL_CHECK(query.defined() && key.defined() && value.defined(), "MultiheadAttention: query, key and value must be defined");
  const bool batched = query.dim() == 3;
  DL_CHECK(query.dim() == 3 || query.dim() == 2, "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ",
           query.dim(), "-D query tensor (shape ", query.shape(), ")");
  DL_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), "MultiheadAttention: for ", batched ? "batched (3-D)" : "unbatched (2-D)",
           " `query`, expected `key` and `value` to be ", query.dim(), "-D but found ", key.dim(), "-D and ", value.dim(),
           "-D tensors respectively");
  DL_CHECK(query.size(-1) == embed_dim, "MultiheadAttention: was expecting embedding dimension of ", embed_dim, ", but got ", query.size(-1),
           " (query shape ", query.shape(), ")");
  DL_CHECK(key.size(-1) == kdim && value.size(-1) == vdim, "MultiheadAttention: key and value must have ", kdim, " and ", vdim,
           " features (kdim, vdim), got key ", key.shape(), " and value ", value.shape());
  // [N, L, E] internally: batch_first as it is, [L, N, E] transposed, unbatched [L, E] unsqueezed.
  auto to_nle = [&](const Tensor<float>& t) { return !batched ? t.unsqueeze(0) : batch_first ? t : t.transpose(0, 1); };
  const Tensor<float> q_in = to_nle(query), k_in = to_nle(key), v_in = to_nle(value);
  const int64_t N = q_in.size(0), L = q_in.size(1), S0 = k_in.size(1), E = embed_dim, H = num_heads, hd = head_dim;
  DL_CHECK(k_in.size(0) == N && v_in.size(0) == N, "MultiheadAttention: query, key and value must have the same batch size, got query ",
           query.shape(), ", key ", key.shape(), ", value ", value.shape(), batch_first ? " (batch_first)" : "");
  DL_CHECK(v_in.size(1) == S0, "MultiheadAttention: key and value must have the same sequence length, got key ", key.shape(), " and value ",
           value.shape());
  if (key_padding_mask_in.defined()) {
    const Shape want = batched ? Shape{N, S0} : Shape{S0};
    DL_CHECK(key_padding_mask_in.shape() == want, "MultiheadAttention: expected key_padding_mask of shape ", want, ", but got ",
             key_padding_mask_in.shape());
  }
  if (attn_mask_in.defined()) {
    const Shape two{L, S0}, three{N * H, L, S0};
    DL_CHECK(attn_mask_in.shape() == two || (attn_mask_in.dim() == 3 && attn_mask_in.shape() == three),
             "MultiheadAttention: attn_mask must be of shape ", two, " or ", three, " ([L, S] or [batch * num_heads, L, S]), but got ",
             attn_mask_in.shape());
  }
  DL_CHECK(!is_causal || attn_mask_in.defined(),
           "MultiheadAttention: need attn_mask if specifying the is_causal hint (nn::Transformer::generate_square_subsequent_mask(L) "
           "makes the causal mask)");

  // Input projections: one GEMM for q, k, v together when they are the same tensor.
  const Tensor<float> b = in_proj_bias;
  auto bias_part = [&](int64_t k) { return b.defined() ? b.narrow(0, k * E, E) : Tensor<float>(); };
  Tensor<float> q, k, v;
  if (in_proj_weight.defined() && query.is_same(key) && key.is_same(value)) {
    const Tensor<float> qkv = functional::linear(q_in, in_proj_weight, b);
    q = qkv.narrow(2, 0, E);
    k = qkv.narrow(2, E, E);
    v = qkv.narrow(2, 2 * E, E);
  } else if (in_proj_weight.defined()) {
    q = functional::linear(q_in, in_proj_weight.narrow(0, 0, E), bias_part(0));
    if (key.is_same(value)) {
      const Tensor<float> kv = functional::linear(k_in, in_proj_weight.narrow(0, E, 2 * E), b.defined() ? b.narrow(0, E, 2 * E) : Tensor<float>());
      k = kv.narrow(2, 0, E);
      v = kv.narrow(2, E, E);
    } else {
      k = functional::linear(k_in, in_proj_weight.narrow(0, E, E), bias_part(1));
      v = functional::linear(v_in, in_proj_weight.narrow(0, 2 * E, E), bias_part(2));
    }
  } else {
    q = functional::linear(q_in, q_proj_weight, bias_part(0));
    k = functional::linear(k_in, k_proj_weight, bias_part(1));
    v = functional::linear(v_in, v_proj_weight, bias_part(2));
  }
  AttnMask key_padding_mask = key_padding_mask_in, attn_mask = attn_mask_in;
  if (!batched && key_padding_mask.defined())
    key_padding_mask = key_padding_mask.is_bool() ? AttnMask(key_padding_mask.bool_mask().unsqueeze(0))
                                                  : AttnMask(key_padding_mask.float_mask().unsqueeze(0));
  if (bias_k.defined()) {
    k = dl::cat({k, bias_k.expand({N, 1, E})}, 1);
    v = dl::cat({v, bias_v.expand({N, 1, E})}, 1);
    attn_mask = detail::mha::pad_key(attn_mask);
    key_padding_mask = detail::mha::pad_key(key_padding_mask);
  }
  // Heads: [N, L, E] -> [N, H, L, hd].
  auto heads = [&](const Tensor<float>& t) { return t.reshape({N, t.size(1), H, hd}).permute({0, 2, 1, 3}); };
  q = heads(q);
  k = heads(k);
  v = heads(v);
  if (add_zero_attn) {
    k = dl::cat({k, zeros<float>({N, H, 1, hd})}, 2);
    v = dl::cat({v, zeros<float>({N, H, 1, hd})}, 2);
    attn_mask = detail::mha::pad_key(attn_mask);
    key_padding_mask = detail::mha::pad_key(key_padding_mask);
  }
  const int64_t S = k.size(2);
  // One additive mask [N or 1, H or 1, L or 1, S], read fused by the softmax.
  Tensor<float> mask;
  if (attn_mask.defined()) {
    mask = attn_mask.additive();
    if (mask.dim() == 3) mask = mask.reshape({N, H, L, S});
  }
  if (key_padding_mask.defined()) {
    const Tensor<float> kpm = key_padding_mask.additive().reshape({N, 1, 1, S});
    mask = mask.defined() ? Tensor<float>(mask + kpm) : kpm;
  }
  Tensor<float> attn = detail::masked_softmax(dl::matmul(q, k.transpose(-2, -1)), 1.0 / std::sqrt(static_cast<double>(hd)), mask);
  if (is_training() && dropout > 0) attn = functional::dropout(attn, dropout, true);
  Tensor<float> out = dl::matmul(attn, v).permute({0, 2, 1, 3}).reshape({N, L, E});  // [N, L, E]
  out = out_proj(out);
  out = !batched ? out.squeeze(0) : batch_first ? out : out.transpose(0, 1).contiguous();
  Tensor<float> weights;
  if (need_weights) {
    weights = average_attn_weights ? Tensor<float>(attn.mean(1)) : attn;
    if (!batched) weights = weights.squeeze(0);
  }
  return {out, weights};
}

// ------------------------------------------------------------------------------ transformer layers

namespace detail {
namespace tfm {
inline TransformerActivation activation(const TransformerEncoderLayerOptions& o) {
  if (o.activation_fn) return o.activation_fn;
  if (o.activation == "relu") return [](const Tensor<float>& x) { return Tensor<float>(dl::relu(x)); };
  if (o.activation == "gelu") return [](const Tensor<float>& x) { return Tensor<float>(functional::gelu(x)); };
  throw Error(dl::detail::cat("activation should be relu/gelu, not ", o.activation));
}
inline MultiheadAttentionOptions attention_options(const TransformerEncoderLayerOptions& o) {
  return {.dropout = o.dropout, .bias = o.bias, .batch_first = o.batch_first};
}
inline LayerNormOptions norm_options(const TransformerEncoderLayerOptions& o) { return {.eps = o.layer_norm_eps, .bias = o.bias}; }
}  // namespace tfm
}  // namespace detail

DL_API TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerEncoderLayerOptions& o)
    : self_attn(d_model, nhead, detail::tfm::attention_options(o)), linear1(d_model, o.dim_feedforward, o.bias), dropout(o.dropout),
      linear2(o.dim_feedforward, d_model, o.bias), norm1(d_model, detail::tfm::norm_options(o)), norm2(d_model, detail::tfm::norm_options(o)),
      dropout1(o.dropout), dropout2(o.dropout), norm_first(o.norm_first), activation_fn(detail::tfm::activation(o)) {}

DL_API Tensor<float> TransformerEncoderLayer::forward(const Tensor<float>& src, const AttnMask& src_mask, const AttnMask& src_key_padding_mask,
                                                      bool is_causal) {
  auto sa = [&](const Tensor<float>& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor<float>& x) { return dropout2(linear2(dropout(activation_fn(linear1(x))))); };
  Tensor<float> x = src;
  if (norm_first) {
    x = x + sa(norm1(x));
    x = x + ff(norm2(x));
  } else {
    x = norm1(x + sa(x));
    x = norm2(x + ff(x));
  }
  return x;
}

DL_API TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t nhead, const TransformerDecoderLayerOptions& o)
    : self_attn(d_model, nhead, detail::tfm::attention_options(o)), multihead_attn(d_model, nhead, detail::tfm::attention_options(o)),
      linear1(d_model, o.dim_feedforward, o.bias), dropout(o.dropout), linear2(o.dim_feedforward, d_model, o.bias),
      norm1(d_model, detail::tfm::norm_options(o)), norm2(d_model, detail::tfm::norm_options(o)), norm3(d_model, detail::tfm::norm_options(o)),
      dropout1(o.dropout), dropout2(o.dropout), dropout3(o.dropout), norm_first(o.norm_first),
      activation_fn(detail::tfm::activation(o)) {}

DL_API Tensor<float> TransformerDecoderLayer::forward(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask,
                                                      const AttnMask& memory_mask, const AttnMask& tgt_key_padding_mask,
                                                      const AttnMask& memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
  auto sa = [&](const Tensor<float>& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor<float>& x) {
    return dropout2(std::get<0>(multihead_attn(x, memory, memory, memory_key_padding_mask, false, memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor<float>& x) { return dropout3(linear2(dropout(activation_fn(linear1(x))))); };
  Tensor<float> x = tgt;
  if (norm_first) {
    x = x + sa(norm1(x));
    x = x + mha(norm2(x));
    x = x + ff(norm3(x));
  } else {
    x = norm1(x + sa(x));
    x = norm2(x + mha(x));
    x = norm3(x + ff(x));
  }
  return x;
}

namespace detail {

DL_API void clone_parameters_(Module& m) {
  struct Cloner final : MemberVisitor {
    void parameter(const std::string&, const TensorSlot& s) override {
      const AnyTensor t = s.get();
      if (!t.is<float>()) return;
      const Tensor<float> f = t.as<float>();
      s.set(AnyTensor(f.detach().clone().requires_grad_(f.requires_grad())));
    }
    void buffer(const std::string&, const TensorSlot& s) override {
      const AnyTensor t = s.get();
      if (t.is<float>()) s.set(AnyTensor(t.as<float>().clone()));
      else if (t.is<int64_t>()) s.set(AnyTensor(t.as<int64_t>().clone()));
    }
    void child(const std::string&, Module& c) override { clone_parameters_(c); }
  } v;
  m.visit_members(v);
}

template <class Layer>
void make_layers(ModuleList& list, std::vector<std::shared_ptr<Layer>>& typed, const Layer& layer, int64_t n) {
  DL_CHECK(n >= 0, "num_layers must be non-negative, got ", n);
  for (int64_t i = 0; i < n; ++i) {
    auto copy = std::make_shared<Layer>(layer);
    clone_parameters_(*copy);
    typed.push_back(copy);
    list.push_back(AnyModule(copy));
  }
}

}  // namespace detail

DL_API TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers_, std::optional<LayerNorm> norm_)
    : norm(std::move(norm_)), num_layers(num_layers_) {
  detail::make_layers(layers, layers_, encoder_layer, num_layers);
}

DL_API Tensor<float> TransformerEncoder::forward(const Tensor<float>& src, const AttnMask& mask, const AttnMask& src_key_padding_mask,
                                                 bool is_causal) {
  Tensor<float> x = src;
  for (auto& l : layers_) x = (*l)(x, mask, src_key_padding_mask, is_causal);
  if (norm) x = (*norm)(x);
  return x;
}

DL_API TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers_, std::optional<LayerNorm> norm_)
    : norm(std::move(norm_)), num_layers(num_layers_) {
  detail::make_layers(layers, layers_, decoder_layer, num_layers);
}

DL_API Tensor<float> TransformerDecoder::forward(const Tensor<float>& tgt, const Tensor<float>& memory, const AttnMask& tgt_mask,
                                                 const AttnMask& memory_mask, const AttnMask& tgt_key_padding_mask,
                                                 const AttnMask& memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
  Tensor<float> x = tgt;
  for (auto& l : layers_)
    x = (*l)(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  if (norm) x = (*norm)(x);
  return x;
}

// ------------------------------------------------------------------------------ Transformer

namespace detail::tfm {
inline TransformerEncoderLayerOptions layer_options(const TransformerOptions& o) {
  return {.dim_feedforward = o.dim_feedforward, .dropout = o.dropout, .activation = o.activation, .activation_fn = o.activation_fn,
          .layer_norm_eps = o.layer_norm_eps, .batch_first = o.batch_first, .norm_first = o.norm_first, .bias = o.bias};
}
}  // namespace detail::tfm

DL_API Transformer::Transformer(const TransformerOptions& o)
    : encoder(TransformerEncoderLayer(o.d_model, o.nhead, detail::tfm::layer_options(o)), o.num_encoder_layers,
              LayerNorm(o.d_model, detail::tfm::norm_options(detail::tfm::layer_options(o)))),
      decoder(TransformerDecoderLayer(o.d_model, o.nhead, detail::tfm::layer_options(o)), o.num_decoder_layers,
              LayerNorm(o.d_model, detail::tfm::norm_options(detail::tfm::layer_options(o)))),
      d_model(o.d_model), nhead(o.nhead), batch_first(o.batch_first) {
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

DL_API Tensor<float> Transformer::forward(const Tensor<float>& src, const Tensor<float>& tgt, const AttnMask& src_mask, const AttnMask& tgt_mask,
                                          const AttnMask& memory_mask, const AttnMask& src_key_padding_mask,
                                          const AttnMask& tgt_key_padding_mask, const AttnMask& memory_key_padding_mask, bool src_is_causal,
                                          bool tgt_is_causal, bool memory_is_causal) {
  const bool batched = src.dim() == 3;
  if (batched) {
    const int b = batch_first ? 0 : 1;
    DL_CHECK(tgt.dim() == 3 && src.size(b) == tgt.size(b), "the batch number of src and tgt must be equal (src ", src.shape(), ", tgt ",
             tgt.shape(), batch_first ? ", batch_first)" : ")");
  }
  DL_CHECK(src.size(-1) == d_model && tgt.size(-1) == d_model, "the feature number of src and tgt must be equal to d_model (", d_model,
           "), got src ", src.shape(), " and tgt ", tgt.shape());
  const Tensor<float> memory = encoder(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal, memory_is_causal);
}

DL_API Tensor<float> Transformer::generate_square_subsequent_mask(int64_t sz) {
  DL_CHECK(sz >= 0, "generate_square_subsequent_mask: size must be non-negative, got ", sz);
  return detail::causal_mask(sz, sz);
}

}  // namespace dl::nn
