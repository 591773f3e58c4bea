// dl/nn/rnn.hpp — recurrent layers: RNN (tanh / relu), LSTM (with proj_size), GRU, and the cells
// RNNCell, LSTMCell, GRUCell, with PyTorch's options, shapes, parameter names and initialisation.
//
//   nn::LSTM lstm(128, 256, {.num_layers = 2, .batch_first = true, .bidirectional = true});
//   auto [out, state] = lstm(x);                 // x [B, T, 128] -> out [B, T, 512]
//   auto [h_n, c_n] = state;                     // [4, B, 256] each
//   auto packed = nn::utils::rnn::pack_padded_sequence(x, lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
//   auto [packed_out, state2] = lstm(packed);    // the padding is skipped
//
// Parameters are named as PyTorch names them (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l1,
// weight_hr_l0 with proj_size...), so PyTorch state dicts load directly. Each layer and direction
// projects the inputs of all time steps with one GEMM; each step then runs one GEMM for the hidden
// state and the gate arithmetic as fused expressions, and backward through time follows the
// recorded graph.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../config.hpp"
#include "../tensor.hpp"
#include "module.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

struct RNNOptions {
  int64_t num_layers = 1;
  std::string nonlinearity = "tanh";  ///< "tanh" or "relu"
  bool bias = true;
  bool batch_first = false;  ///< input and output [B, T, F] instead of [T, B, F] (states stay [L*D, B, H])
  double dropout = 0;        ///< dropout on the outputs of every layer but the last, in training
  bool bidirectional = false;
};

struct LSTMOptions {
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  int64_t proj_size = 0;  ///< > 0: h is projected to proj_size (weight_hr_l<k>)
};

struct GRUOptions {
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
};

namespace utils::rnn {
/// torch.nn.utils.rnn.PackedSequence: the steps of several sequences of different lengths, time
/// step by time step (data [sum of lengths, *]); batch_sizes[t] sequences are still running at step
/// t. sorted_indices / unsorted_indices (undefined when the input was already sorted) map between
/// the caller's batch order and the decreasing-length order inside.
struct PackedSequence {
  Tensor<float> data;
  Tensor<int64_t> batch_sizes;
  Tensor<int64_t> sorted_indices;
  Tensor<int64_t> unsorted_indices;
};

/// Packs a padded batch [T, B, *] ([B, T, *] with batch_first) of sequences with the given lengths.
/// enforce_sorted: lengths must decrease; otherwise the batch is sorted (and unsorted on the way out).
DL_API PackedSequence pack_padded_sequence(const Tensor<float>& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                           bool enforce_sorted = true);
DL_API PackedSequence pack_padded_sequence(const Tensor<float>& input, const Tensor<int64_t>& lengths, bool batch_first = false,
                                           bool enforce_sorted = true);
/// The inverse: (padded [T, B, *] or [B, T, *], lengths), in the caller's batch order; padding_value
/// fills the steps after each sequence's end; total_length pads T further (to a DataParallel-safe size).
DL_API std::tuple<Tensor<float>, Tensor<int64_t>> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                                                      double padding_value = 0.0,
                                                                      std::optional<int64_t> total_length = std::nullopt);
/// Stacks sequences of different lengths ([L_i, *] each) into [T_max, B, *] (or [B, T_max, *]), padded.
DL_API Tensor<float> pad_sequence(const std::vector<Tensor<float>>& sequences, bool batch_first = false, double padding_value = 0.0);
/// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted).
DL_API PackedSequence pack_sequence(const std::vector<Tensor<float>>& sequences, bool enforce_sorted = true);
}  // namespace utils::rnn

namespace detail {
enum class RnnMode { tanh, relu, lstm, gru };

/// What RNN, LSTM and GRU share: the parameters, the checks and the layer loop.
class RNNBase : public Module {
 public:
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  double dropout;
  bool bidirectional;
  int64_t proj_size;

  /// Accepted for PyTorch code (dl's weights are always laid out for its GEMMs).
  void flatten_parameters() {}
  /// Every weight and bias <- U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch.
  DL_API void reset_parameters();
  DL_API std::string extra_repr() const override;

 protected:
  DL_API RNNBase(RnnMode mode, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first,
                 double dropout, bool bidirectional, int64_t proj_size);
  /// input [T, B, I] or [B, T, I] (batch_first) or unbatched [T, I]; h0 [L*D, B, Hout], c0 [L*D, B, H]
  /// (LSTM). Returns output, h_n, c_n (c_n undefined but for LSTM).
  DL_API std::tuple<Tensor<float>, Tensor<float>, Tensor<float>> run(const Tensor<float>& input, const Tensor<float>& h0,
                                                                      const Tensor<float>& c0);
  /// The same on a packed batch: returns the packed output and h_n, c_n in the caller's batch order.
  DL_API std::tuple<utils::rnn::PackedSequence, Tensor<float>, Tensor<float>> run_packed(const utils::rnn::PackedSequence& input,
                                                                                         const Tensor<float>& h0, const Tensor<float>& c0);
  /// The layers over time-major packed rows data [N, I] with batch_sizes (decreasing); h0/c0 [L*D, B, *].
  DL_API std::tuple<Tensor<float>, Tensor<float>, Tensor<float>> run_layers(const Tensor<float>& data, const std::vector<int64_t>& batch_sizes,
                                                                             const Tensor<float>& h0, const Tensor<float>& c0);
  RnnMode mode_;
  const char* name_;
};
}  // namespace detail

/// torch.nn.RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).
class RNN : public detail::RNNBase {
 public:
  RNN(int64_t input_size, int64_t hidden_size, const RNNOptions& o = {});
  /// (output, h_n): output [T, B, D*H] ([B, T, D*H] with batch_first), h_n [num_layers*D, B, H];
  /// hx: the initial state (zeros when undefined).
  std::tuple<Tensor<float>, Tensor<float>> forward(const Tensor<float>& input, const Tensor<float>& hx = {}) {
    auto [out, h, c] = run(input, hx, {});
    return {out, h};
  }
  /// A packed batch: (packed output, h_n); the padding is skipped (h_n holds each sequence's last step).
  std::tuple<utils::rnn::PackedSequence, Tensor<float>> forward(const utils::rnn::PackedSequence& input, const Tensor<float>& hx = {}) {
    auto [out, h, c] = run_packed(input, hx, {});
    return {out, h};
  }
  DL_MODULE(RNN)
};

/// torch.nn.LSTM: gates i, f, g, o (weight_ih_l<k> rows in that order); c_t = f*c + i*g,
/// h_t = o*tanh(c_t) (then h_t W_hr^T with proj_size).
class LSTM : public detail::RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, const LSTMOptions& o = {});
  /// (output, (h_n, c_n)); hx: (h_0, c_0), zeros when not given.
  std::tuple<Tensor<float>, std::tuple<Tensor<float>, Tensor<float>>> forward(
      const Tensor<float>& input, const std::optional<std::tuple<Tensor<float>, Tensor<float>>>& hx = std::nullopt) {
    auto [out, h, c] = hx ? run(input, std::get<0>(*hx), std::get<1>(*hx)) : run(input, {}, {});
    return {out, {h, c}};
  }
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor<float>, Tensor<float>>> forward(
      const utils::rnn::PackedSequence& input, const std::optional<std::tuple<Tensor<float>, Tensor<float>>>& hx = std::nullopt) {
    auto [out, h, c] = hx ? run_packed(input, std::get<0>(*hx), std::get<1>(*hx)) : run_packed(input, {}, {});
    return {out, {h, c}};
  }
  DL_MODULE(LSTM)
};

/// torch.nn.GRU: gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
class GRU : public detail::RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, const GRUOptions& o = {});
  std::tuple<Tensor<float>, Tensor<float>> forward(const Tensor<float>& input, const Tensor<float>& hx = {}) {
    auto [out, h, c] = run(input, hx, {});
    return {out, h};
  }
  std::tuple<utils::rnn::PackedSequence, Tensor<float>> forward(const utils::rnn::PackedSequence& input, const Tensor<float>& hx = {}) {
    auto [out, h, c] = run_packed(input, hx, {});
    return {out, h};
  }
  DL_MODULE(GRU)
};

namespace detail {
/// The cells' shared parameters: weight_ih [G*H, I], weight_hh [G*H, H], bias_ih, bias_hh [G*H].
class RNNCellBase : public Module {
 public:
  int64_t input_size, hidden_size;
  bool bias;
  Tensor<float> weight_ih, weight_hh, bias_ih, bias_hh;
  DL_API void reset_parameters();
  DL_API std::string extra_repr() const override;

 protected:
  DL_API RNNCellBase(RnnMode mode, int64_t input_size, int64_t hidden_size, bool bias);
  /// input [B, I] or [I]; hx [B, H] or [H] (zeros when undefined). Returns the batched input and
  /// state and whether the input was unbatched.
  DL_API std::tuple<Tensor<float>, Tensor<float>, bool> prepare(const Tensor<float>& input, const Tensor<float>& hx, const char* name);
  RnnMode mode_;
};
}  // namespace detail

/// torch.nn.RNNCell: one step of RNN.
class RNNCell : public detail::RNNCellBase {
 public:
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true, const std::string& nonlinearity = "tanh");
  DL_API Tensor<float> forward(const Tensor<float>& input, const Tensor<float>& hx = {});
  DL_MODULE(RNNCell, weight_ih, weight_hh, bias_ih, bias_hh)
};

/// torch.nn.LSTMCell: one step of LSTM; returns (h', c').
class LSTMCell : public detail::RNNCellBase {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  DL_API std::tuple<Tensor<float>, Tensor<float>> forward(
      const Tensor<float>& input, const std::optional<std::tuple<Tensor<float>, Tensor<float>>>& hx = std::nullopt);
  DL_MODULE(LSTMCell, weight_ih, weight_hh, bias_ih, bias_hh)
};

/// torch.nn.GRUCell: one step of GRU.
class GRUCell : public detail::RNNCellBase {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  DL_API Tensor<float> forward(const Tensor<float>& input, const Tensor<float>& hx = {});
  DL_MODULE(GRUCell, weight_ih, weight_hh, bias_ih, bias_hh)
};

// ------------------------------------------------------------------------------ implementation

inline RNN::RNN(int64_t input_size, int64_t hidden_size, const RNNOptions& o)
    : RNNBase(o.nonlinearity == "relu" ? detail::RnnMode::relu : detail::RnnMode::tanh, input_size, hidden_size, o.num_layers, o.bias,
              o.batch_first, o.dropout, o.bidirectional, 0) {
  DL_CHECK(o.nonlinearity == "tanh" || o.nonlinearity == "relu", "Unknown nonlinearity '", o.nonlinearity,
           "'. Select from 'tanh' or 'relu'.");
}
inline LSTM::LSTM(int64_t input_size, int64_t hidden_size, const LSTMOptions& o)
    : RNNBase(detail::RnnMode::lstm, input_size, hidden_size, o.num_layers, o.bias, o.batch_first, o.dropout, o.bidirectional,
              o.proj_size) {}
inline GRU::GRU(int64_t input_size, int64_t hidden_size, const GRUOptions& o)
    : RNNBase(detail::RnnMode::gru, input_size, hidden_size, o.num_layers, o.bias, o.batch_first, o.dropout, o.bidirectional, 0) {}

inline RNNCell::RNNCell(int64_t input_size, int64_t hidden_size, bool bias, const std::string& nonlinearity)
    : RNNCellBase(nonlinearity == "relu" ? detail::RnnMode::relu : detail::RnnMode::tanh, input_size, hidden_size, bias) {
  DL_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", "Unknown nonlinearity: ", nonlinearity);
}
inline LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias)
    : RNNCellBase(detail::RnnMode::lstm, input_size, hidden_size, bias) {}
inline GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, bool bias)
    : RNNCellBase(detail::RnnMode::gru, input_size, hidden_size, bias) {}

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "rnn-inl.hpp"
#endif
