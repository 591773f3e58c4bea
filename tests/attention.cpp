// Tests of dl/nn/functional/attention.hpp and dl/nn/transformer.hpp against PyTorch
// (tests/gen_attention_reference.py writes tests/data/attention_ref.bin and attention_print.txt):
// F::scaled_dot_product_attention, MultiheadAttention, the transformer encoder and decoder layers
// and stacks, nn::Transformer, and EmbeddingBag (the bag-of-words layer of sequence models) —
// outputs, attention weights and the gradients of every input and parameter; finite differences;
// masks of both kinds; printouts; errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/dl.hpp>
#include <dl/nn/embedding_bag.hpp>
#include <dl/nn/transformer.hpp>

#include "module_ref.hpp"
#include "refbin.hpp"

using dl::Shape;
using dl::Tensor;
namespace nn = dl::nn;
namespace F = dl::nn::functional;

namespace {

const refbin::File ref("attention_ref.bin");

void load(nn::Module& m, const std::string& name) { testutil::load(m, ref, name); }

Tensor<float> input(Shape s, int64_t seed) { return refbin::det<float>(s, seed).requires_grad_(); }
Tensor<bool> bool_ref(const std::string& key) { return ref.tensor<int64_t>(key) != int64_t(0); }
Tensor<float> float_ref(const std::string& key) { return ref.tensor<float>(key); }

void backward(const Tensor<float>& out, const Tensor<float>& weights = {}) {
  Tensor<float> loss = (out * refbin::det<float>(out.shape(), 999)).sum();
  if (weights.defined()) loss = loss + (weights * refbin::det<float>(weights.shape(), 998)).sum();
  loss.backward();
}

void check_param_grads(nn::Module& m, const std::string& name, double tol = 1e-4) {
  for (auto& [n, p] : m.named_parameters()) {
    INFO("parameter ", n);
    REQUIRE(p.grad().defined());
    ref.check(p.grad(), name + "/g/" + n, tol);
  }
}

using testutil::has;
using testutil::msg;
using testutil::printed;


}  // namespace

TEST_CASE("scaled_dot_product_attention matches PyTorch's definition, with gradients") {
  struct Case {
    std::string name;
    Shape q, k, v;
    F::ScaledDotProductAttentionOptions o;
  };
  std::vector<Case> cases = {
      {"sdpa", {2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 6}, {}},
      {"sdpa_float_mask", {2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 6}, {.attn_mask = refbin::det<float>({4, 5}, 7)}},
      {"sdpa_bool_mask", {2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 6}, {.attn_mask = bool_ref("sdpa_bool_mask/mask")}},
      {"sdpa_causal_scale", {3, 6, 4}, {3, 6, 4}, {3, 6, 5}, {.is_causal = true, .scale = 0.3}},
      {"sdpa_causal_rect", {2, 4, 8}, {2, 6, 8}, {2, 6, 3}, {.is_causal = true}},
      {"sdpa_broadcast", {2, 3, 4, 8}, {1, 3, 5, 8}, {3, 5, 6}, {}},
  };
  for (auto& c : cases) {
    INFO("case ", c.name);
    Tensor<float> q = input(c.q, 1), k = input(c.k, 2), v = input(c.v, 3);
    Tensor<float> out = F::scaled_dot_product_attention(q, k, v, c.o);
    ref.check(out, c.name + "/out", 1e-5);
    backward(out);
    ref.check(q.grad(), c.name + "/gq", 1e-4);
    ref.check(k.grad(), c.name + "/gk", 1e-4);
    ref.check(v.grad(), c.name + "/gv", 1e-4);
  }
}

TEST_CASE("scaled_dot_product_attention: finite differences, dropout, grouped-query attention") {
  dl::manual_seed(1);
  Tensor<float> q = dl::randn<float>({2, 3, 4}), k = dl::randn<float>({2, 5, 4}), v = dl::randn<float>({2, 5, 3});
  Tensor<float> mask = dl::randn<float>({3, 5});
  const dl::autograd::GradcheckOptions fd{.eps = 1e-3, .atol = 2e-3, .rtol = 2e-2};
  CHECK(dl::autograd::gradcheck([&](std::vector<Tensor<float>>& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2]); },
                                {q, k, v}, fd));
  CHECK(dl::autograd::gradcheck(
      [&](std::vector<Tensor<float>>& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], {.attn_mask = in[3]}); },
      {q, k, v, mask}, fd));
  CHECK(dl::autograd::gradcheck(
      [&](std::vector<Tensor<float>>& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], {.is_causal = true, .scale = 0.7}); },
      {q, k, v}, fd));

  // Dropout: the weights are zeroed with probability p and the rest scaled by 1/(1-p); the same
  // generator state gives the same result; p = 1 gives zeros.
  Tensor<float> ones_v = dl::ones<float>({2, 5, 3});
  dl::Generator g1(7), g2(7);
  Tensor<float> a = F::scaled_dot_product_attention(q, k, ones_v, {.dropout_p = 0.5, .generator = &g1});
  Tensor<float> b = F::scaled_dot_product_attention(q, k, ones_v, {.dropout_p = 0.5, .generator = &g2});
  CHECK(dl::equal(a, b));
  CHECK_FALSE(dl::allclose(a, dl::ones<float>({2, 3, 3})));  // rows no longer sum to 1
  CHECK(dl::equal(F::scaled_dot_product_attention(q, k, v, {.dropout_p = 1.0}), dl::zeros<float>({2, 3, 3})));

  // enable_gqa: 4 query heads share 2 key/value heads, as repeat_interleave(2, dim=-3) of k and v.
  Tensor<float> q4 = dl::randn<float>({1, 4, 3, 8}), k2 = dl::randn<float>({1, 2, 5, 8}), v2 = dl::randn<float>({1, 2, 5, 6});
  auto rep = [](const Tensor<float>& t) { return dl::cat({t.narrow(1, 0, 1), t.narrow(1, 0, 1), t.narrow(1, 1, 1), t.narrow(1, 1, 1)}, 1); };
  CHECK(dl::allclose(F::scaled_dot_product_attention(q4, k2, v2, {.enable_gqa = true}),
                     F::scaled_dot_product_attention(q4, rep(k2), rep(v2)), 1e-5, 1e-6));
}

TEST_CASE("MultiheadAttention matches PyTorch: self-attention, kdim/vdim with masks, bias_kv + zero_attn, unbatched") {
  {
    nn::MultiheadAttention m(8, 2);
    load(m, "mha_self");
    Tensor<float> x = input({5, 3, 8}, 1);
    auto [out, w] = m(x, x, x);
    ref.check(out, "mha_self/out", 1e-5);
    ref.check(w, "mha_self/weights", 1e-5);
    backward(out, w);
    ref.check(x.grad(), "mha_self/gq", 1e-4);
    check_param_grads(m, "mha_self");
  }
  struct Case {
    std::string name;
    nn::MultiheadAttentionOptions o;
    Shape q, k, v;
    nn::AttnMask kpm, attn_mask;
    bool average;
  };
  std::vector<Case> cases = {
      {"mha_cross", {.kdim = 6, .vdim = 5, .batch_first = true}, {3, 4, 8}, {3, 6, 6}, {3, 6, 5}, bool_ref("mha_cross/kpm"),
       refbin::det<float>({4, 6}, 12), false},
      {"mha_bias_kv", {.add_bias_kv = true, .add_zero_attn = true}, {4, 3, 8}, {7, 3, 8}, {7, 3, 8}, bool_ref("mha_bias_kv/kpm"),
       bool_ref("mha_bias_kv/attn_mask"), true},
      {"mha_unbatched", {.bias = false}, {4, 8}, {6, 8}, {6, 8}, bool_ref("mha_unbatched/kpm"), {}, true},
  };
  for (auto& c : cases) {
    INFO("case ", c.name);
    nn::MultiheadAttention m(8, c.name == "mha_cross" ? 4 : 2, c.o);
    load(m, c.name);
    Tensor<float> q = input(c.q, 1), k = input(c.k, 2), v = input(c.v, 3);
    auto [out, w] = m(q, k, v, c.kpm, true, c.attn_mask, c.average);
    ref.check(out, c.name + "/out", 1e-5);
    ref.check(w, c.name + "/weights", 1e-5);
    backward(out, w);
    ref.check(q.grad(), c.name + "/gq", 1e-4);
    ref.check(k.grad(), c.name + "/gk", 1e-4);
    ref.check(v.grad(), c.name + "/gv", 1e-4);
    check_param_grads(m, c.name);
  }
}

TEST_CASE("MultiheadAttention: float masks equal bool masks, need_weights, is_causal, eval without dropout") {
  dl::manual_seed(3);
  nn::MultiheadAttention m(8, 2, {.dropout = 0.5, .batch_first = true});
  m.eval();
  Tensor<float> x = dl::randn<float>({2, 5, 8});
  Tensor<bool> kpm = dl::zeros<bool>({2, 5});
  kpm.data()[4] = true;  // batch 0, key 4 is padding
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor<float> kpm_f = dl::where(kpm, -inf, 0.0f);
  auto [a, wa] = m(x, x, x, kpm);
  auto [b, wb] = m(x, x, x, kpm_f);
  CHECK(dl::allclose(a, b, 1e-6, 1e-7));
  CHECK(dl::allclose(wa, wb, 1e-6, 1e-7));
  CHECK(wa.shape() == Shape{2, 5, 5});
  CHECK(dl::allclose(wa.sum(-1), dl::ones<float>({2, 5}), 1e-5, 1e-6));
  for (int64_t i = 0; i < 5; ++i) CHECK(wa.data()[i * 5 + 4] == 0.0f);  // nobody attends the padding
  // need_weights = false: no weights, the same output; eval: dropout is off (deterministic).
  auto [c, wc] = m(x, x, x, kpm, false);
  CHECK_FALSE(wc.defined());
  CHECK(dl::allclose(a, c, 1e-6, 1e-7));
  // average_attn_weights = false: [N, H, L, S], whose mean over heads is the average.
  auto [d, wd] = m(x, x, x, {}, true, {}, false);
  CHECK(wd.shape() == Shape{2, 2, 5, 5});
  auto [e, we] = m(x, x, x);
  CHECK(dl::allclose(wd.mean(1), we, 1e-6, 1e-7));
  // is_causal is a hint about attn_mask (which must be given), as in PyTorch.
  Tensor<float> causal = nn::Transformer::generate_square_subsequent_mask(5);
  auto [f, wf] = m(x, x, x, {}, true, causal, true, true);
  auto [g, wg] = m(x, x, x, {}, true, causal);
  CHECK(dl::allclose(f, g));
  CHECK(wf.data()[1] == 0.0f);  // query 0 does not see key 1
  CHECK(has(msg([&] { m(x, x, x, {}, true, {}, true, true); }), "need attn_mask if specifying the is_causal hint"));
  // Training with dropout: the weights change from call to call, eval gives them back.
  m.train();
  auto [h, wh] = m(x, x, x);
  auto [i, wi] = m(x, x, x);
  CHECK_FALSE(dl::allclose(wh, wi));
}

TEST_CASE("MultiheadAttention: PyTorch's parameter names, initialisation and printout") {
  nn::MultiheadAttention m(8, 2, {.add_bias_kv = true});
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters()) names.push_back(n + ":" + dl::detail::cat(p.shape()));
  CHECK(names == std::vector<std::string>{"in_proj_weight:[24, 8]", "in_proj_bias:[24]", "bias_k:[1, 1, 8]", "bias_v:[1, 1, 8]",
                                          "out_proj.weight:[8, 8]", "out_proj.bias:[8]"});
  CHECK(dl::abs(m.in_proj_weight).max().item() <= std::sqrt(6.0f / (24 + 8)));  // xavier_uniform_
  CHECK(dl::equal(m.in_proj_bias, dl::zeros<float>({24})));
  CHECK(dl::equal(m.out_proj.bias, dl::zeros<float>({8})));
  nn::MultiheadAttention kv(8, 2, {.kdim = 4, .vdim = 6});
  names.clear();
  for (auto& [n, p] : kv.named_parameters()) names.push_back(n + ":" + dl::detail::cat(p.shape()));
  CHECK(names == std::vector<std::string>{"q_proj_weight:[8, 8]", "k_proj_weight:[8, 4]", "v_proj_weight:[8, 6]", "in_proj_bias:[24]",
                                          "out_proj.weight:[8, 8]", "out_proj.bias:[8]"});
  const auto prints = refbin::sections("attention_print.txt");
  CHECK(printed(kv) == prints.at("mha_kdim"));
}

namespace {
/// The masks of a layer case, by PyTorch's keyword.
nn::AttnMask mask_of(const std::string& name, const std::string& key) {
  const std::string k = name + "/" + key;
  if (!ref.has(k)) return {};
  const auto& r = ref.get(k);
  return r.is_int ? nn::AttnMask(bool_ref(k)) : nn::AttnMask(float_ref(k));
}

void check_layer(nn::Module& m, const std::string& name, const Tensor<float>& src, const Tensor<float>& mem, const Tensor<float>& out) {
  ref.check(out, name + "/out", 2e-5);
  backward(out);
  ref.check(src.grad(), name + "/gsrc", 1e-4);
  if (mem.defined()) ref.check(mem.grad(), name + "/gmem", 1e-4);
  check_param_grads(m, name);
  const auto prints = refbin::sections("attention_print.txt");
  CHECK(printed(m) == prints.at(name));
}
}  // namespace

TEST_CASE("TransformerEncoderLayer and TransformerEncoder match PyTorch (post-norm relu, pre-norm gelu, stacks with a final norm)") {
  {
    nn::TransformerEncoderLayer m(8, 2, {.dim_feedforward = 16, .dropout = 0.0});
    load(m, "enc_layer");
    Tensor<float> src = input({5, 3, 8}, 1);
    check_layer(m, "enc_layer", src, {}, m(src, mask_of("enc_layer", "src_mask"), mask_of("enc_layer", "src_key_padding_mask")));
  }
  {
    nn::TransformerEncoderLayer m(8, 4, {.dim_feedforward = 12, .dropout = 0.0, .activation = "gelu", .batch_first = true, .norm_first = true});
    load(m, "enc_layer_prenorm_gelu");
    Tensor<float> src = input({2, 6, 8}, 1);
    check_layer(m, "enc_layer_prenorm_gelu", src, {}, m(src));
  }
  {
    nn::TransformerEncoder m(nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16, .dropout = 0.0}), 2, nn::LayerNorm(8));
    load(m, "encoder");
    Tensor<float> src = input({5, 2, 8}, 1);
    check_layer(m, "encoder", src, {}, m(src, mask_of("encoder", "mask")));
  }
}

TEST_CASE("a TransformerEncoder state dict saved by torch.save loads and gives PyTorch's output") {
  nn::TransformerEncoder m(nn::TransformerEncoderLayer(8, 2, {.dim_feedforward = 16, .dropout = 0.0}), 2, nn::LayerNorm(8));
  const dl::StateDict sd = dl::load(std::string(DL_TEST_DATA) + "/transformer_encoder.pth");
  m.load_state_dict(sd);  // strict: every key of PyTorch's file and of the module matches
  ref.check(m(refbin::det<float>({5, 2, 8}, 1), mask_of("encoder", "mask")), "encoder/out", 2e-5);
}

TEST_CASE("TransformerDecoderLayer, TransformerDecoder and Transformer match PyTorch") {
  {
    nn::TransformerDecoderLayer m(8, 2, {.dim_feedforward = 16, .dropout = 0.0});
    load(m, "dec_layer");
    Tensor<float> tgt = input({4, 3, 8}, 1), mem = input({6, 3, 8}, 2);
    check_layer(m, "dec_layer", tgt, mem,
                m(tgt, mem, mask_of("dec_layer", "tgt_mask"), {}, {}, mask_of("dec_layer", "memory_key_padding_mask")));
  }
  {
    nn::TransformerDecoder m(nn::TransformerDecoderLayer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .batch_first = true, .norm_first = true}),
                             2, nn::LayerNorm(8));
    load(m, "decoder");
    Tensor<float> tgt = input({2, 4, 8}, 1), mem = input({2, 5, 8}, 2);
    check_layer(m, "decoder", tgt, mem, m(tgt, mem, mask_of("decoder", "tgt_mask")));
  }
  {
    nn::Transformer m({.d_model = 8, .nhead = 2, .num_encoder_layers = 2, .num_decoder_layers = 1, .dim_feedforward = 16, .dropout = 0.0,
                       .batch_first = true});
    load(m, "transformer");
    Tensor<float> src = input({2, 5, 8}, 1), tgt = input({2, 4, 8}, 2);
    check_layer(m, "transformer", src, tgt,
                m(src, tgt, {}, mask_of("transformer", "tgt_mask"), {}, mask_of("transformer", "src_key_padding_mask")));
  }
  ref.check(nn::Transformer::generate_square_subsequent_mask(4), "square_subsequent_mask");
}

TEST_CASE("Transformer stacks own their layers' parameters; Transformer initialises like PyTorch") {
  nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16});
  nn::TransformerEncoder enc(layer, 3);
  CHECK(enc.named_parameters().size() == 3 * layer.named_parameters().size());
  CHECK(enc.named_parameters()[0].first == "layers.0.self_attn.in_proj_weight");
  // each copy has its own storage, equal to the prototype's values at first
  CHECK(dl::equal(enc.layer(0).linear1.weight, layer.linear1.weight));
  CHECK_FALSE(enc.layer(0).linear1.weight.is_same(layer.linear1.weight));
  enc.layer(1).linear1.weight.detach().fill_(0.0f);
  CHECK_FALSE(dl::equal(enc.layer(0).linear1.weight, enc.layer(1).linear1.weight));
  // train()/eval() reach every copy
  enc.eval();
  CHECK_FALSE(enc.layer(2).dropout.is_training());
  nn::Transformer t({.d_model = 16, .nhead = 4, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 32});
  for (auto& [n, p] : t.named_parameters())
    if (p.dim() > 1) {
      INFO(n);
      CHECK(dl::abs(p).max().item() <= std::sqrt(6.0f / float(p.size(0) + p.size(1))) + 1e-6f);
    }
  // A causal language-model step trains: the loss goes down.
  dl::manual_seed(0);
  nn::TransformerEncoder lm(nn::TransformerEncoderLayer(16, 4, {.dim_feedforward = 32, .dropout = 0.0, .batch_first = true}), 2);
  nn::Linear<> head(16, 16);
  Tensor<float> x = dl::randn<float>({4, 6, 16}), target = dl::randn<float>({4, 6, 16});
  std::vector<Tensor<float>> params = lm.parameters();
  for (auto& p : head.parameters()) params.push_back(p);
  dl::optim::Adam opt(params, {.lr = 1e-2});
  const Tensor<float> causal = nn::Transformer::generate_square_subsequent_mask(6);
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor<float> loss = (head(lm(x, causal)) - target).pow(2).mean();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(last < 0.7f * first);
}

TEST_CASE("attention errors name the shapes and the fix") {
  Tensor<float> q = dl::randn<float>({2, 4, 8}), k = dl::randn<float>({2, 5, 8}), v = dl::randn<float>({2, 5, 6});
  CHECK(has(msg([&] { F::scaled_dot_product_attention(q, dl::randn<float>({2, 5, 7}), v); }), "must have the same E"));
  CHECK(has(msg([&] { F::scaled_dot_product_attention(q, k, dl::randn<float>({2, 4, 6})); }), "must have the same S"));
  CHECK(has(msg([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = dl::randn<float>({3, 5})}); }),
            "attn_mask of shape [3, 5] does not broadcast to the attention scores [2, 4, 5]"));
  CHECK(has(msg([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = dl::randn<float>({4, 5}), .is_causal = true}); }),
            "should not be set when is_causal=true"));
  CHECK(has(msg([&] { nn::MultiheadAttention(10, 3); }), "embed_dim must be divisible by num_heads"));
  nn::MultiheadAttention m(8, 2);
  Tensor<float> x = dl::randn<float>({5, 3, 8});
  CHECK(has(msg([&] { m(dl::randn<float>({5, 3, 6}), x, x); }), "was expecting embedding dimension of 8, but got 6"));
  CHECK(has(msg([&] { m(x, x, x, dl::zeros<bool>({5, 3})); }), "expected key_padding_mask of shape [3, 5], but got [5, 3]"));
  CHECK(has(msg([&] { m(x, x, x, {}, true, dl::zeros<float>({5, 4})); }), "attn_mask must be of shape [5, 5] or [6, 5, 5]"));
  CHECK(has(msg([&] { m(x, dl::randn<float>({5, 2, 8}), dl::randn<float>({5, 2, 8})); }), "same batch size"));
  CHECK(has(msg([&] { nn::TransformerEncoderLayer(8, 2, {.activation = "tanh"}); }), "activation should be relu/gelu, not tanh"));
  nn::Transformer t({.d_model = 8, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1, .dim_feedforward = 8});
  CHECK(has(msg([&] { t(dl::randn<float>({5, 2, 8}), dl::randn<float>({4, 3, 8})); }), "the batch number of src and tgt must be equal"));
  CHECK(has(msg([&] { t(dl::randn<float>({5, 2, 8}), dl::randn<float>({4, 2, 6})); }), "must be equal to d_model (8)"));
}

TEST_CASE("EmbeddingBag matches PyTorch: sum with per_sample_weights, mean over a 2-D input with padding, max with include_last_offset, "
          "scale_grad_by_freq with max_norm") {
  struct Case {
    std::string name;
    int64_t dim;
    nn::EmbeddingBagOptions o;
  };
  std::vector<Case> cases = {
      {"bag_sum_psw", 3, {.mode = "sum"}},
      {"bag_mean_2d_pad", 4, {.mode = "mean", .padding_idx = 2}},
      {"bag_max_last", 3, {.mode = "max", .include_last_offset = true}},
      {"bag_mean_freq_norm", 3, {.max_norm = 1.0, .scale_grad_by_freq = true, .mode = "mean"}},
  };
  const auto prints = refbin::sections("attention_print.txt");
  for (auto& c : cases) {
    INFO("case ", c.name);
    nn::EmbeddingBag m(10, c.dim, c.o);
    load(m, c.name);
    const Tensor<int64_t> x = ref.tensor<int64_t>(c.name + "/input");
    const Tensor<int64_t> off = ref.has(c.name + "/offsets") ? ref.tensor<int64_t>(c.name + "/offsets") : Tensor<int64_t>();
    const Tensor<float> psw = c.name == "bag_sum_psw" ? input(x.shape(), 5) : Tensor<float>();
    Tensor<float> out = m(x, off, psw);
    ref.check(out, c.name + "/out", 1e-5);
    ref.check(m.weight, c.name + "/weight_after", 1e-6);
    backward(out);
    check_param_grads(m, c.name, 1e-5);
    if (psw.defined()) ref.check(psw.grad(), c.name + "/gpsw", 1e-5);
    CHECK(printed(m) == prints.at(c.name));
  }
}

TEST_CASE("EmbeddingBag: the same sums as Embedding, empty bags, errors") {
  dl::manual_seed(2);
  nn::EmbeddingBag sum(20, 5, {.mode = "sum"});
  nn::Embedding<> emb(20, 5);
  {
    dl::NoGradGuard no_grad;
    emb.weight.copy_(sum.weight);
  }
  const Tensor<int64_t> words = dl::tensor<int64_t>({3, 7, 7, 1, 19, 0, 4});
  const Tensor<int64_t> offsets = dl::tensor<int64_t>({0, 3, 3, 5});  // bags [3 7 7], [], [1 19], [0 4]
  Tensor<float> y = sum(words, offsets);
  CHECK(y.shape() == Shape{4, 5});
  CHECK(dl::allclose(y[0], emb(words.narrow(0, 0, 3)).sum(0), 1e-5, 1e-6));
  CHECK(dl::equal(y[1], dl::zeros<float>({5})));
  CHECK(dl::allclose(y[3], emb(words.narrow(0, 5, 2)).sum(0), 1e-5, 1e-6));
  // Finite differences (float; the function is float-only) for the weights and per-sample weights.
  const dl::autograd::GradcheckOptions fd{.eps = 1e-3, .atol = 2e-3, .rtol = 2e-2};
  Tensor<float> w = dl::randn<float>({20, 5}), psw = dl::rand<float>({7});
  CHECK(dl::autograd::gradcheck(
      [&](std::vector<Tensor<float>>& in) { return F::embedding_bag(words, in[0], offsets, {.mode = "sum"}, in[1]); }, {w, psw}, fd));
  for (std::string mode : {"mean", "max"})
    CHECK(dl::autograd::gradcheck([&](std::vector<Tensor<float>>& in) { return F::embedding_bag(words, in[0], offsets, {.mode = mode}); },
                                  {w}, fd));
  nn::EmbeddingBag mean(20, 5);
  CHECK(has(msg([&] { mean(words, offsets, dl::ones<float>({7})); }), "per_sample_weights is only supported for mode='sum' (got mode='mean')"));
  CHECK(has(msg([&] { mean(words); }), "offsets has to be a 1D Tensor"));
  CHECK(has(msg([&] { mean(words.reshape({7, 1}), offsets); }), "if input is 2D, then offsets has to be None"));
  CHECK(has(msg([&] { mean(words, dl::tensor<int64_t>({1, 3})); }), "offsets[0] has to be 0"));
  CHECK(has(msg([&] { mean(words, dl::tensor<int64_t>({0, 9})); }), "at most the input's length 7"));
  CHECK(has(msg([&] { mean(dl::tensor<int64_t>({0, 25}), dl::tensor<int64_t>({0})); }), "index 25 out of range for 20 embeddings"));
  CHECK(has(msg([&] { nn::EmbeddingBag(20, 5, {.mode = "median"}); }), "mode has to be one of sum, mean or max"));
  CHECK(has(msg([&] { nn::EmbeddingBag(20, 5, {.mode = "max", .sparse = true}); }), "max mode does not support sparse weights"));
  CHECK(has(msg([&] { nn::EmbeddingBag(20, 5, {.scale_grad_by_freq = true, .mode = "max"})(words, offsets); }),
            "max mode does not support scaling the gradient by the frequency"));
}
