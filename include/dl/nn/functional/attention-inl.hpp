// dl/nn/functional/attention-inl.hpp — the bodies of dl/nn/functional/attention.hpp's non-template
// functions (DL_API): compiled into each program in header-only mode, once into libdl_kernels in
// compiled mode (see DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <cmath>
#include <limits>

#include "../../ops/matmul.hpp"
#include "../../ops/softmax.hpp"
#include "attention.hpp"
#include "dropout.hpp"

namespace dl::nn {

DL_API Tensor<float> AttnMask::additive(bool masked) const {
  if (float_.defined()) return float_;
  if (!bool_.defined()) return {};
  constexpr float inf = std::numeric_limits<float>::infinity();
  return masked ? Tensor<float>(dl::where(bool_, -inf, 0.0f)) : Tensor<float>(dl::where(bool_, 0.0f, -inf));
}

namespace detail {

DL_API Tensor<float> causal_mask(int64_t L, int64_t S) {
  Tensor<float> m = zeros<float>({L, S});
  float* p = m.data();
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = i + 1; j < S; ++j) p[i * S + j] = -std::numeric_limits<float>::infinity();
  return m;
}

DL_API Tensor<float> masked_softmax(const Tensor<float>& scores, double scale, const Tensor<float>& mask) {
  const auto s = static_cast<float>(scale);
  if (!mask.defined()) return dl::detail::softmax_op<false>(scores * s, -1, "softmax");
  return dl::detail::softmax_op<false>(scores * s + mask, -1, "softmax");
}

/// True when `from` broadcasts to `to` (numpy's rule, from the trailing dims).
inline bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (int i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

}  // namespace detail

namespace functional {

DL_API Tensor<float> scaled_dot_product_attention(const Tensor<float>& query, const Tensor<float>& key_in, const Tensor<float>& value_in,
                                                  const ScaledDotProductAttentionOptions& o) {
  DL_CHECK(query.defined() && key_in.defined() && value_in.defined(), "scaled_dot_product_attention: query, key and value must be defined");
  DL_CHECK(query.dim() >= 2 && key_in.dim() >= 2 && value_in.dim() >= 2,
           "scaled_dot_product_attention: query, key and value need at least 2 dims ([..., L, E], [..., S, E], [..., S, Ev]), got ",
           query.shape(), ", ", key_in.shape(), ", ", value_in.shape());
  DL_CHECK(query.size(-1) == key_in.size(-1), "scaled_dot_product_attention: query [..., L, E] and key [..., S, E] must have the same E, got ",
           query.shape(), " and ", key_in.shape());
  DL_CHECK(key_in.size(-2) == value_in.size(-2),
           "scaled_dot_product_attention: key [..., S, E] and value [..., S, Ev] must have the same S, got ", key_in.shape(), " and ",
           value_in.shape());
  DL_CHECK(o.dropout_p >= 0 && o.dropout_p <= 1, "scaled_dot_product_attention: dropout_p must be in [0, 1], got ", o.dropout_p);
  DL_CHECK(!(o.is_causal && o.attn_mask.defined()),
           "scaled_dot_product_attention: an explicit attn_mask should not be set when is_causal=true");
  Tensor<float> key = key_in, value = value_in;
  if (o.enable_gqa && query.dim() >= 3 && key.dim() >= 3 && query.size(-3) != key.size(-3)) {
    const int64_t hq = query.size(-3), hk = key.size(-3);
    DL_CHECK(value.dim() >= 3 && value.size(-3) == hk && hk > 0 && hq % hk == 0,
             "scaled_dot_product_attention: with enable_gqa the query's heads (", hq, ") must be a multiple of the key's and value's (", hk,
             ", ", value.dim() >= 3 ? value.size(-3) : 0, ")");
    auto repeat = [&](const Tensor<float>& t) {  // repeat_interleave(hq / hk, dim=-3)
      Shape e = t.shape();
      e.insert(e.size() - 2, hq / hk);
      Shape r = t.shape();
      r[r.size() - 3] = hq;
      return t.unsqueeze(-3).expand(e).reshape(r);
    };
    key = repeat(key);
    value = repeat(value);
  }
  const int64_t L = query.size(-2), S = key.size(-2);
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  Tensor<float> scores = dl::matmul(query, key.transpose(-2, -1));  // [..., L, S]
  Tensor<float> mask;
  if (o.is_causal) {
    mask = nn::detail::causal_mask(L, S);
  } else if (o.attn_mask.defined()) {
    DL_CHECK(nn::detail::broadcasts_to(o.attn_mask.shape(), scores.shape()), "scaled_dot_product_attention: attn_mask of shape ",
             o.attn_mask.shape(), " does not broadcast to the attention scores ", scores.shape(),
             " ([..., L, S])");
    mask = o.attn_mask.additive(/*masked=*/false);
  }
  Tensor<float> attn = nn::detail::masked_softmax(scores, scale, mask);
  if (o.dropout_p > 0) attn = dropout(attn, o.dropout_p, true, o.generator);
  return dl::matmul(attn, value);
}

}  // namespace functional
}  // namespace dl::nn
