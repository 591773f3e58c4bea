// dl/torch/layers.hpp — libtorch's holders for the layers beyond dl/torch/nn.hpp's first set:
// embeddings and bags, layer/group norm, recurrent layers and cells, attention and the transformers,
// padding, 1-d and adaptive pooling, Bilinear, the other activations, and the loss modules (namespace
// torch::nn; see dl/torch.hpp). As there, each `XImpl` is dl's layer plus libtorch's constructors
// and an `options` member:
//
//   torch::nn::Embedding emb(torch::nn::EmbeddingOptions(1000, 64).padding_idx(0));
//   torch::nn::LSTM lstm(torch::nn::LSTMOptions(64, 128).num_layers(2).batch_first(true));
//   auto [out, state] = lstm->forward(emb->forward(tokens));
//   torch::nn::CrossEntropyLoss loss_fn(torch::nn::CrossEntropyLossOptions().label_smoothing(0.1));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../nn/embedding_bag.hpp"
#include "../nn/rnn.hpp"
#include "../nn/transformer.hpp"
#include "core.hpp"
#include "functional.hpp"
#include "nn.hpp"

namespace torch::nn {

// ------------------------------------------------------------------------------ embeddings, norms

namespace detail {
/// Embedding's and EmbeddingBag's `_weight(t)`: the layer holds t itself ([num_embeddings,
/// embedding_dim]), as libtorch's.
template <class Options>
void adopt_weight(Tensor& weight, const Options& o) {
  if (!o._weight().defined()) return;
  TORCH_CHECK(o._weight().shape() == dl::Shape({o.num_embeddings(), o.embedding_dim()}),
              "Shape of _weight does not match num_embeddings and embedding_dim");
  weight = o._weight();
  weight.requires_grad_(true);
}
}  // namespace detail

class EmbeddingImpl : public dl::nn::Embedding<> {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim) : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  /// With `_weight(t)` the layer holds t itself ([num_embeddings, embedding_dim]), as libtorch's.
  explicit EmbeddingImpl(const EmbeddingOptions& o)
      : dl::nn::Embedding<>(o.num_embeddings(), o.embedding_dim(), o.dl()), options(o) {
    detail::adopt_weight(weight, o);
  }
  EmbeddingOptions options;
};
/// libtorch's Embedding holder, with from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl = EmbeddingImpl;
  /// An embedding holding `embeddings` [num, dim] itself; freeze (the default): no gradient.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o = {}) {
    TORCH_CHECK(embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional");
    Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                    ._weight(embeddings)
                    .padding_idx(o.padding_idx())
                    .max_norm(o.max_norm())
                    .norm_type(o.norm_type())
                    .scale_grad_by_freq(o.scale_grad_by_freq())
                    .sparse(o.sparse()));
    e->weight.requires_grad_(!o.freeze());
    return e;
  }
};

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim) : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TORCH_ARG(int64_t, num_embeddings);
  TORCH_ARG(int64_t, embedding_dim);
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.0;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(enumtype::Name, mode) = kMean;
  TORCH_ARG(bool, sparse) = false;
  TORCH_ARG(Tensor, _weight) = Tensor();
  TORCH_ARG(bool, include_last_offset) = false;
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;

 public:
  dl::nn::EmbeddingBagOptions dl() const {
    return {max_norm_, norm_type_, scale_grad_by_freq_, mode_, sparse_, include_last_offset_, padding_idx_};
  }
};
/// forward(input, offsets = {}, per_sample_weights = {}), as libtorch's.
class EmbeddingBagImpl : public dl::nn::EmbeddingBag {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& o)
      : dl::nn::EmbeddingBag(o.num_embeddings(), o.embedding_dim(), o.dl()), options(o) {
    detail::adopt_weight(weight, o);
  }
  EmbeddingBagOptions options;  // libtorch's (dl's own stay reachable as dl::nn::EmbeddingBag::options)
};
TORCH_MODULE(EmbeddingBag);

class LayerNormImpl : public dl::nn::LayerNorm {
 public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& o)
      : dl::nn::LayerNorm(dl::Shape(o.normalized_shape()), {.eps = o.eps(), .elementwise_affine = o.elementwise_affine()}),
        options(o) {}
  LayerNormOptions options;
};
TORCH_MODULE(LayerNorm);

class GroupNormImpl : public dl::nn::GroupNorm<> {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& o)
      : dl::nn::GroupNorm<>(o.num_groups(), o.num_channels(), {.eps = o.eps(), .affine = o.affine()}), options(o) {}
  GroupNormOptions options;
};
TORCH_MODULE(GroupNorm);

// ------------------------------------------------------------------------------ recurrent layers

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(int64_t, num_layers) = 1;
  TORCH_ARG(enumtype::Name, nonlinearity) = kTanh;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, batch_first) = false;
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bidirectional) = false;
};
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(int64_t, num_layers) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, batch_first) = false;
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bidirectional) = false;
  TORCH_ARG(int64_t, proj_size) = 0;
};
struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(int64_t, num_layers) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, batch_first) = false;
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bidirectional) = false;
};

class RNNImpl : public dl::nn::RNN {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& o)
      : dl::nn::RNN(o.input_size(), o.hidden_size(),
                    {.num_layers = o.num_layers(), .nonlinearity = o.nonlinearity(), .bias = o.bias(),
                     .batch_first = o.batch_first(), .dropout = o.dropout(), .bidirectional = o.bidirectional()}),
        options(o) {}
  RNNOptions options;
};
TORCH_MODULE(RNN);
class LSTMImpl : public dl::nn::LSTM {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& o)
      : dl::nn::LSTM(o.input_size(), o.hidden_size(),
                     {.num_layers = o.num_layers(), .bias = o.bias(), .batch_first = o.batch_first(), .dropout = o.dropout(),
                      .bidirectional = o.bidirectional(), .proj_size = o.proj_size()}),
        options(o) {}
  LSTMOptions options;
};
TORCH_MODULE(LSTM);
class GRUImpl : public dl::nn::GRU {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& o)
      : dl::nn::GRU(o.input_size(), o.hidden_size(),
                    {.num_layers = o.num_layers(), .bias = o.bias(), .batch_first = o.batch_first(), .dropout = o.dropout(),
                     .bidirectional = o.bidirectional()}),
        options(o) {}
  GRUOptions options;
};
TORCH_MODULE(GRU);

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(enumtype::Name, nonlinearity) = kTanh;
};
struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(bool, bias) = true;
};
using GRUCellOptions = LSTMCellOptions;

class RNNCellImpl : public dl::nn::RNNCell {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& o)
      : dl::nn::RNNCell(o.input_size(), o.hidden_size(), o.bias(), o.nonlinearity()), options(o) {}
  RNNCellOptions options;
};
TORCH_MODULE(RNNCell);
class LSTMCellImpl : public dl::nn::LSTMCell {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& o) : dl::nn::LSTMCell(o.input_size(), o.hidden_size(), o.bias()), options(o) {}
  LSTMCellOptions options;
};
TORCH_MODULE(LSTMCell);
class GRUCellImpl : public dl::nn::GRUCell {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& o) : dl::nn::GRUCell(o.input_size(), o.hidden_size(), o.bias()), options(o) {}
  GRUCellOptions options;
};
TORCH_MODULE(GRUCell);

// ------------------------------------------------------------------------------ attention

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, add_bias_kv) = false;
  TORCH_ARG(bool, add_zero_attn) = false;
  TORCH_ARG(int64_t, kdim) = 0;  // 0: embed_dim
  TORCH_ARG(int64_t, vdim) = 0;
};
class MultiheadAttentionImpl : public dl::nn::MultiheadAttention {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads) : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& o)
      : dl::nn::MultiheadAttention(o.embed_dim(), o.num_heads(),
                                   {.dropout = o.dropout(), .bias = o.bias(), .add_bias_kv = o.add_bias_kv(),
                                    .add_zero_attn = o.add_zero_attn(), .kdim = o.kdim(), .vdim = o.vdim()}),
        options(o) {}
  MultiheadAttentionOptions options;
};
TORCH_MODULE(MultiheadAttention);

/// The options of both transformer layers (TransformerEncoderLayerOptions and
/// TransformerDecoderLayerOptions); activation: torch::kReLU, torch::kGELU or a function of a tensor.
struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, nhead);
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;

 public:
  auto activation(enumtype::Name a) -> decltype(*this) {
    activation_ = a.name;
    activation_fn_ = {};
    return *this;
  }
  auto activation(std::function<Tensor(const Tensor&)> fn) -> decltype(*this) {
    activation_fn_ = std::move(fn);
    return *this;
  }
  dl::nn::TransformerEncoderLayerOptions dl() const {
    return {.dim_feedforward = dim_feedforward_, .dropout = dropout_, .activation = activation_, .activation_fn = activation_fn_};
  }

 private:
  std::string activation_ = "relu";
  std::function<Tensor(const Tensor&)> activation_fn_;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;
// The encoder and decoder stacks: a layer holder, the stack's options (the layer, how many copies,
// an optional final LayerNorm) and the stack (num_layers copies of the layer, each its own
// parameters, then the norm). One macro spells both, as libtorch's twins.
#define DL_TORCH_TRANSFORMER_STACK(Part, part)                                                                 \
  class Transformer##Part##LayerImpl : public dl::nn::Transformer##Part##Layer {                               \
   public:                                                                                                     \
    Transformer##Part##LayerImpl(int64_t d_model, int64_t nhead)                                               \
        : Transformer##Part##LayerImpl(TransformerLayerOptions(d_model, nhead)) {}                             \
    explicit Transformer##Part##LayerImpl(const TransformerLayerOptions& o)                                    \
        : dl::nn::Transformer##Part##Layer(o.d_model(), o.nhead(), o.dl()), options(o) {}                      \
    TransformerLayerOptions options;                                                                           \
  };                                                                                                           \
  TORCH_MODULE(Transformer##Part##Layer);                                                                      \
  struct Transformer##Part##Options {                                                                          \
    Transformer##Part##Options(Transformer##Part##Layer layer, int64_t num_layers)                            \
        : part##_layer_(std::move(layer)), num_layers_(num_layers) {}                                         \
    Transformer##Part##Options(const TransformerLayerOptions& layer_options, int64_t num_layers)              \
        : part##_layer_(layer_options), num_layers_(num_layers) {}                                            \
    TORCH_ARG(Transformer##Part##Layer, part##_layer);                                                         \
    TORCH_ARG(int64_t, num_layers);                                                                            \
    TORCH_ARG(std::optional<LayerNorm>, norm) = std::nullopt;                                                  \
  };                                                                                                           \
  class Transformer##Part##Impl : public dl::nn::Transformer##Part {                                           \
   public:                                                                                                     \
    explicit Transformer##Part##Impl(const Transformer##Part##Options& o)                                      \
        : dl::nn::Transformer##Part(*o.part##_layer(), o.num_layers(),                                         \
                                    o.norm() ? std::optional<dl::nn::LayerNorm>(**o.norm()) : std::nullopt),   \
          options(o) {}                                                                                        \
    Transformer##Part##Options options;                                                                        \
  };                                                                                                           \
  TORCH_MODULE(Transformer##Part);
DL_TORCH_TRANSFORMER_STACK(Encoder, encoder)
DL_TORCH_TRANSFORMER_STACK(Decoder, decoder)
#undef DL_TORCH_TRANSFORMER_STACK

struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model), nhead_(nhead), num_encoder_layers_(num_encoder_layers), num_decoder_layers_(num_decoder_layers) {}
  TORCH_ARG(int64_t, d_model) = 512;
  TORCH_ARG(int64_t, nhead) = 8;
  TORCH_ARG(int64_t, num_encoder_layers) = 6;
  TORCH_ARG(int64_t, num_decoder_layers) = 6;
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(enumtype::Name, activation) = kReLU;
};
/// An encoder-decoder transformer (libtorch's; custom_encoder / custom_decoder are not offered).
class TransformerImpl : public dl::nn::Transformer {
 public:
  explicit TransformerImpl(const TransformerOptions& o = {})
      : dl::nn::Transformer({.d_model = o.d_model(), .nhead = o.nhead(), .num_encoder_layers = o.num_encoder_layers(),
                             .num_decoder_layers = o.num_decoder_layers(), .dim_feedforward = o.dim_feedforward(),
                             .dropout = o.dropout(), .activation = o.activation()}),
        options(o) {}
  TransformerOptions options;
};
TORCH_MODULE(Transformer);

// ------------------------------------------------------------------------------ padding, pooling

template <size_t D>
struct PadOptions {
  PadOptions(ExpandingArray<D> padding) : padding_(padding) {}  // NOLINT
  TORCH_ARG(ExpandingArray<D>, padding);

 public:
  std::vector<int64_t> dl() const { return std::vector<int64_t>(padding_.data(), padding_.data() + D); }
};
template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D> padding, double value) : padding_(padding), value_(value) {}
  TORCH_ARG(ExpandingArray<D>, padding);
  TORCH_ARG(double, value);

 public:
  std::vector<int64_t> dl() const { return std::vector<int64_t>(padding_.data(), padding_.data() + D); }
};
using ZeroPad2dOptions = PadOptions<4>;
using ReflectionPad1dOptions = PadOptions<2>;
using ReflectionPad2dOptions = PadOptions<4>;
using ReplicationPad1dOptions = PadOptions<2>;
using ReplicationPad2dOptions = PadOptions<4>;
using ConstantPad1dOptions = ConstantPadOptions<2>;
using ConstantPad2dOptions = ConstantPadOptions<4>;

#define DL_TORCH_PAD(Name, N)                                                                  \
  class Name##Impl : public dl::nn::Name {                                                     \
   public:                                                                                     \
    explicit Name##Impl(ExpandingArray<N> padding) : Name##Impl(Name##Options(padding)) {}     \
    explicit Name##Impl(const Name##Options& o) : dl::nn::Name(o.dl()), options(o) {}          \
    Name##Options options;                                                                     \
  };                                                                                           \
  TORCH_MODULE(Name);
DL_TORCH_PAD(ZeroPad2d, 4)
DL_TORCH_PAD(ReflectionPad1d, 2)
DL_TORCH_PAD(ReflectionPad2d, 4)
DL_TORCH_PAD(ReplicationPad1d, 2)
DL_TORCH_PAD(ReplicationPad2d, 4)
#undef DL_TORCH_PAD
#define DL_TORCH_CONSTANT_PAD(Name, N)                                                                    \
  class Name##Impl : public dl::nn::Name {                                                                \
   public:                                                                                                \
    Name##Impl(ExpandingArray<N> padding, double value) : Name##Impl(Name##Options(padding, value)) {}   \
    explicit Name##Impl(const Name##Options& o) : dl::nn::Name(o.dl(), o.value()), options(o) {}          \
    Name##Options options;                                                                                \
  };                                                                                                      \
  TORCH_MODULE(Name);
DL_TORCH_CONSTANT_PAD(ConstantPad1d, 2)
DL_TORCH_CONSTANT_PAD(ConstantPad2d, 4)
#undef DL_TORCH_CONSTANT_PAD

class MaxPool1dImpl : public dl::nn::MaxPool1d {
 public:
  explicit MaxPool1dImpl(ExpandingArray<1> kernel_size) : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}
  explicit MaxPool1dImpl(const MaxPool1dOptions& o)
      : dl::nn::MaxPool1d(o.kernel_size().dl(), {.stride = o.stride().dl(), .padding = o.padding().dl(),
                                                 .dilation = o.dilation().dl(), .ceil_mode = o.ceil_mode()}),
        options(o) {}
  MaxPool1dOptions options;
};
TORCH_MODULE(MaxPool1d);
class AvgPool1dImpl : public dl::nn::AvgPool1d {
 public:
  explicit AvgPool1dImpl(ExpandingArray<1> kernel_size) : AvgPool1dImpl(AvgPool1dOptions(kernel_size)) {}
  explicit AvgPool1dImpl(const AvgPool1dOptions& o)
      : dl::nn::AvgPool1d(o.kernel_size().dl(), {.stride = o.stride().dl(), .padding = o.padding().dl(), .ceil_mode = o.ceil_mode(),
                                                 .count_include_pad = o.count_include_pad()}),
        options(o) {}
  AvgPool1dOptions options;
};
TORCH_MODULE(AvgPool1d);

#define DL_TORCH_ADAPTIVE(Name, D)                                                                     \
  class Name##Impl : public dl::nn::Name {                                                             \
   public:                                                                                             \
    explicit Name##Impl(const Name##Options& o) : dl::nn::Name(o.output_size().dl()), options(o) {}    \
    explicit Name##Impl(ExpandingArray<D> output_size) : Name##Impl(Name##Options(output_size)) {}     \
    Name##Options options;                                                                             \
  };                                                                                                   \
  TORCH_MODULE(Name);
DL_TORCH_ADAPTIVE(AdaptiveAvgPool1d, 1)
DL_TORCH_ADAPTIVE(AdaptiveAvgPool2d, 2)
DL_TORCH_ADAPTIVE(AdaptiveMaxPool1d, 1)
DL_TORCH_ADAPTIVE(AdaptiveMaxPool2d, 2)
#undef DL_TORCH_ADAPTIVE

// ------------------------------------------------------------------------------ activations, shapes

class GELUImpl : public dl::nn::GELU {
 public:
  explicit GELUImpl(const GELUOptions& o = {}) : dl::nn::GELU(o.approximate()), options(o) {}
  GELUOptions options;
};
TORCH_MODULE(GELU);
class ELUImpl : public dl::nn::ELU {
 public:
  explicit ELUImpl(const ELUOptions& o = {}) : dl::nn::ELU(o.alpha()), options(o) {}
  ELUOptions options;
};
TORCH_MODULE(ELU);
class CELUImpl : public dl::nn::CELU {
 public:
  explicit CELUImpl(const CELUOptions& o = {}) : dl::nn::CELU(o.alpha()), options(o) {}
  CELUOptions options;
};
TORCH_MODULE(CELU);
class SoftplusImpl : public dl::nn::Softplus {
 public:
  explicit SoftplusImpl(const SoftplusOptions& o = {}) : dl::nn::Softplus(o.beta(), o.threshold()), options(o) {}
  SoftplusOptions options;
};
TORCH_MODULE(Softplus);
class HardtanhImpl : public dl::nn::Hardtanh {
 public:
  explicit HardtanhImpl(const HardtanhOptions& o = {}) : dl::nn::Hardtanh(o.min_val(), o.max_val()), options(o) {}
  HardtanhOptions options;
};
TORCH_MODULE(Hardtanh);
class PReLUImpl : public dl::nn::PReLU {
 public:
  explicit PReLUImpl(const PReLUOptions& o = {}) : dl::nn::PReLU(o.num_parameters(), o.init()), options(o) {}
  PReLUOptions options;
};
TORCH_MODULE(PReLU);
#define DL_TORCH_PLAIN(Name)                     \
  class Name##Impl : public dl::nn::Name {       \
   public:                                       \
    using dl::nn::Name::Name;                    \
  };                                             \
  TORCH_MODULE(Name);
DL_TORCH_PLAIN(SELU)
DL_TORCH_PLAIN(ReLU6)
DL_TORCH_PLAIN(SiLU)
DL_TORCH_PLAIN(Mish)
DL_TORCH_PLAIN(LogSigmoid)
DL_TORCH_PLAIN(Softsign)
DL_TORCH_PLAIN(Tanhshrink)
DL_TORCH_PLAIN(Identity)
#undef DL_TORCH_PLAIN

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in1_features);
  TORCH_ARG(int64_t, in2_features);
  TORCH_ARG(int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
};
class BilinearImpl : public dl::nn::Bilinear<> {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& o)
      : dl::nn::Bilinear<>(o.in1_features(), o.in2_features(), o.out_features(), o.bias()), options(o) {}
  BilinearOptions options;
};
TORCH_MODULE(Bilinear);

struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  TORCH_ARG(double, threshold);
  TORCH_ARG(double, value);
  TORCH_ARG(bool, inplace) = false;
};
class ThresholdImpl : public dl::nn::Threshold {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& o) : dl::nn::Threshold(o.threshold(), o.value()), options(o) {}
  ThresholdOptions options;
};
TORCH_MODULE(Threshold);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(std::vector<int64_t>, sizes);
};
class UnflattenImpl : public dl::nn::Unflatten {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& o) : dl::nn::Unflatten(o.dim(), dl::Shape(o.sizes())), options(o) {}
  UnflattenOptions options;
};
TORCH_MODULE(Unflatten);

class PixelShuffleImpl : public dl::nn::PixelShuffle {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& o) : dl::nn::PixelShuffle(o.upscale_factor()), options(o) {}
  PixelShuffleOptions options;
};
TORCH_MODULE(PixelShuffle);
class PixelUnshuffleImpl : public dl::nn::PixelUnshuffle {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& o) : dl::nn::PixelUnshuffle(o.downscale_factor()), options(o) {}
  PixelUnshuffleOptions options;
};
TORCH_MODULE(PixelUnshuffle);
class UpsampleImpl : public dl::nn::Upsample {
 public:
  explicit UpsampleImpl(const UpsampleOptions& o = {})
      : dl::nn::Upsample({o.size().value_or(std::vector<int64_t>{}), o.scale_factor().value_or(std::vector<double>{}), o.mode().name,
                          o.align_corners(), std::nullopt}),
        options(o) {}
  UpsampleOptions options;
};
TORCH_MODULE(Upsample);
class UnfoldImpl : public dl::nn::Unfold {
 public:
  explicit UnfoldImpl(const UnfoldOptions& o)
      : dl::nn::Unfold({o.kernel_size().dl(), o.dilation().dl(), o.padding().dl(), o.stride().dl()}), options(o) {}
  UnfoldOptions options;
};
TORCH_MODULE(Unfold);
class FoldImpl : public dl::nn::Fold {
 public:
  explicit FoldImpl(const FoldOptions& o)
      : dl::nn::Fold({o.output_size().dl(), o.kernel_size().dl(), o.dilation().dl(), o.padding().dl(), o.stride().dl()}), options(o) {}
  FoldOptions options;
};
TORCH_MODULE(Fold);

// ------------------------------------------------------------------------------ losses

// Each loss holder: dl's loss module built from libtorch's options (the macro's tail is dl's
// options, made from `o`), with the options kept as libtorch's `options` member.
#define DL_TORCH_LOSS(Name, ...)                                                                       \
  class Name##Impl : public dl::nn::Name {                                                             \
   public:                                                                                             \
    explicit Name##Impl(const Name##Options& o = {}) : dl::nn::Name(__VA_ARGS__), options(o) {}        \
    Name##Options options;                                                                             \
  };                                                                                                   \
  TORCH_MODULE(Name);
DL_TORCH_LOSS(MSELoss, {.reduction = ::torch::detail::reduction(o.reduction())})
DL_TORCH_LOSS(L1Loss, {.reduction = ::torch::detail::reduction(o.reduction())})
DL_TORCH_LOSS(CrossEntropyLoss, {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()),
                                 .ignore_index = o.ignore_index(), .label_smoothing = o.label_smoothing()})
DL_TORCH_LOSS(NLLLoss, {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()), .ignore_index = o.ignore_index()})
DL_TORCH_LOSS(BCELoss, {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction())})
DL_TORCH_LOSS(BCEWithLogitsLoss,
              {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()), .pos_weight = o.pos_weight()})
DL_TORCH_LOSS(SmoothL1Loss, {.reduction = ::torch::detail::reduction(o.reduction()), .beta = o.beta().value_or(1.0)})
DL_TORCH_LOSS(HuberLoss, {.reduction = ::torch::detail::reduction(o.reduction()), .delta = o.delta()})
DL_TORCH_LOSS(KLDivLoss, {.reduction = ::torch::detail::reduction(o.reduction(), true), .log_target = o.log_target()})
#undef DL_TORCH_LOSS

}  // namespace torch::nn
