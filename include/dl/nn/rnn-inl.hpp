// dl/nn/rnn-inl.hpp — the bodies of dl/nn/rnn.hpp's non-template functions (DL_API): compiled into
// each program in header-only mode, once into libdl_kernels in compiled mode (see DL_HEADER_ONLY in
// dl/config.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>

#include "../ops/indexing.hpp"
#include "functional/dropout.hpp"
#include "functional/linear.hpp"
#include "init.hpp"
#include "rnn.hpp"

namespace dl::nn::detail {

namespace {
inline int64_t gate_count(RnnMode m) { return m == RnnMode::lstm ? 4 : m == RnnMode::gru ? 3 : 1; }
inline const char* mode_name(RnnMode m) {
  return m == RnnMode::lstm ? "LSTM" : m == RnnMode::gru ? "GRU" : "RNN";
}
}  // namespace

/// pre = gi + h W_hh^T, one step of a recurrent layer. Its backward gives gi and h their gradients;
/// W_hh gets its gradient from one GEMM over all the steps at once (recurrent_input's node) rather
/// than a thin GEMM and a full-size accumulation per step. A backward that builds a graph
/// (create_graph) takes the per-step, differentiable rule instead; both nodes ask grad mode, which
/// the engine sets for the whole pass.
inline Tensor<float> recurrent_step(const Tensor<float>& gi, const Tensor<float>& h, const Tensor<float>& w_hh) {
  Tensor<float> pre;
  {
    NoGradGuard no_grad;
    pre = dl::addmm(gi, h, w_hh.t());
  }
  return dl::detail::record_kernel(pre, "RecurrentStepBackward", {h, w_hh}, [](const Tensor<float>& g, const std::vector<Tensor<float>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    if (needs[0]) r[0] = g.impl();
    if (needs[1]) r[1] = dl::matmul(g, s[1]).impl();
    if (needs[2] && autograd::is_grad_enabled()) r[2] = dl::matmul(g.t(), s[0]).impl();
    return r;
  }, gi, h, w_hh);
}

/// The input projections of all steps [N, G*H], passed through a node that also owes W_hh its
/// gradient: the gradient reaching it is every step's gate gradient stacked (the steps' pieces of
/// one split), so dW_hh = G^T H_prev is one GEMM, with H_prev (each step's incoming state, stacked
/// in the same order) stored in `h_prev` once the steps have run.
inline Tensor<float> recurrent_input(const Tensor<float>& gi, const Tensor<float>& w_hh, std::shared_ptr<Tensor<float>> h_prev) {
  return dl::detail::record_kernel(gi.detach(), "RecurrentWeightBackward", {}, [h_prev](const Tensor<float>& g, const std::vector<Tensor<float>>&, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    if (needs[0]) r[0] = g.impl();
    if (needs[1] && !autograd::is_grad_enabled() && h_prev->defined()) r[1] = dl::matmul(g.t(), *h_prev).impl();
    return r;
  }, gi, w_hh);
}

/// One step of a cell: gi = x W_ih^T + b_ih (already computed for all steps), h and c the state.
/// Returns (h', c'); c' is undefined except for LSTM. For RNN and LSTM the caller may fold b_hh
/// into gi and pass it undefined: the hidden projection is then one GEMM accumulating onto gi
/// (addmm), the gates one split of its result, and the gate arithmetic fused expressions.
/// `whole_sequence` (RNN, LSTM): gi is a step of recurrent_input, where W_hh's gradient comes from.
inline std::pair<Tensor<float>, Tensor<float>> cell_step(RnnMode mode, const Tensor<float>& gi, const Tensor<float>& h,
                                                         const Tensor<float>& c, const Tensor<float>& w_hh,
                                                         const Tensor<float>& b_hh, const Tensor<float>& w_hr,
                                                         bool whole_sequence = false) {
  if (mode == RnnMode::gru) {  // the new gate reads r * (h W_hn^T + b_hn): gh stays apart
    const Tensor<float> gh = functional::linear(h, w_hh, b_hh);
    const std::vector<Tensor<float>> i = gi.chunk(3, 1), g = gh.chunk(3, 1);
    Tensor<float> r = dl::sigmoid(i[0] + g[0]);
    Tensor<float> z = dl::sigmoid(i[1] + g[1]);
    Tensor<float> n = dl::tanh(i[2] + r * g[2]);
    return {Tensor<float>((1.0f - z) * n + z * h), {}};
  }
  const Tensor<float> pre = whole_sequence ? recurrent_step(gi, h, w_hh)
                            : b_hh.defined()  ? dl::addmm(gi + b_hh, h, w_hh.t())
                                              : dl::addmm(gi, h, w_hh.t());
  switch (mode) {
    case RnnMode::tanh: return {Tensor<float>(dl::tanh(pre)), {}};
    case RnnMode::relu: return {Tensor<float>(dl::relu(pre)), {}};
    default: break;
  }
  const std::vector<Tensor<float>> g = pre.chunk(4, 1);  // input, forget, cell, output
  Tensor<float> c_new = dl::sigmoid(g[1]) * c + dl::sigmoid(g[0]) * dl::tanh(g[2]);
  Tensor<float> h_new = dl::sigmoid(g[3]) * dl::tanh(c_new);
  if (w_hr.defined()) h_new = functional::linear(h_new, w_hr);
  return {h_new, c_new};
}

DL_API RNNBase::RNNBase(RnnMode mode, int64_t input_size_, int64_t hidden_size_, int64_t num_layers_, bool bias_, bool batch_first_,
                        double dropout_, bool bidirectional_, int64_t proj_size_)
    : input_size(input_size_), hidden_size(hidden_size_), num_layers(num_layers_), bias(bias_), batch_first(batch_first_),
      dropout(dropout_), bidirectional(bidirectional_), proj_size(proj_size_), mode_(mode), name_(mode_name(mode)) {
  DL_CHECK(input_size > 0, name_, ": input_size must be positive, got ", input_size);
  DL_CHECK(hidden_size > 0, "hidden_size must be greater than zero");
  DL_CHECK(num_layers > 0, "num_layers must be greater than zero");
  DL_CHECK(dropout >= 0 && dropout <= 1, "dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
  DL_CHECK(proj_size >= 0, "proj_size should be a positive integer or zero to disable projections");
  DL_CHECK(proj_size < hidden_size, "proj_size has to be smaller than hidden_size");
  const int64_t gates = gate_count(mode) * hidden_size, real_hidden = proj_size > 0 ? proj_size : hidden_size;
  const int64_t dirs = bidirectional ? 2 : 1;
  for (int64_t layer = 0; layer < num_layers; ++layer)
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      const int64_t in = layer == 0 ? input_size : real_hidden * dirs;
      register_parameter("weight_ih" + sfx, empty<float>({gates, in}));
      register_parameter("weight_hh" + sfx, empty<float>({gates, real_hidden}));
      if (bias) {
        register_parameter("bias_ih" + sfx, empty<float>({gates}));
        register_parameter("bias_hh" + sfx, empty<float>({gates}));
      }
      if (proj_size > 0) register_parameter("weight_hr" + sfx, empty<float>({proj_size, hidden_size}));
    }
  reset_parameters();
}

DL_API void RNNBase::reset_parameters() {
  const double k = 1.0 / std::sqrt(double(hidden_size));
  NoGradGuard no_grad;
  for (auto& p : parameters(false)) init::uniform_(p, -k, k);
}

DL_API std::string RNNBase::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (proj_size != 0) s += ", proj_size=" + std::to_string(proj_size);
  if (num_layers != 1) s += ", num_layers=" + std::to_string(num_layers);
  if (!bias) s += ", bias=False";
  if (batch_first) s += ", batch_first=True";
  if (dropout != 0) s += ", dropout=" + dl::detail::py_float(dropout);
  if (bidirectional) s += ", bidirectional=True";
  return s;
}

namespace {
/// Checks an initial state against the expected [L*D, B, H] (batched) or [L*D, H] (unbatched).
inline void check_state(const Tensor<float>& s, const Shape& expect, const char* which, bool batched) {
  if (!s.defined()) return;
  if (!batched)
    DL_CHECK(s.dim() == 2, "For unbatched 2-D input, ", which, " should also be 2-D but got ", s.dim(), "-D tensor");
  else
    DL_CHECK(s.dim() == 3, "For batched 3-D input, ", which, " should also be 3-D but got ", s.dim(), "-D tensor");
  const Shape got = batched ? s.shape() : Shape{s.size(0), 1, s.size(1)};
  DL_CHECK(got == expect, "Expected ", which, " size (", expect[0], ", ", expect[1], ", ", expect[2], "), got ", s.shape());
}
}  // namespace

DL_API std::tuple<Tensor<float>, Tensor<float>, Tensor<float>> RNNBase::run_layers(const Tensor<float>& data,
                                                                                    const std::vector<int64_t>& batch_sizes,
                                                                                    const Tensor<float>& h_init, const Tensor<float>& c_init) {
  const bool lstm = mode_ == RnnMode::lstm;
  const int64_t dirs = bidirectional ? 2 : 1;
  const int64_t steps_n = int64_t(batch_sizes.size());
  const std::vector<Tensor<float>> params = parameters(false);
  const size_t per = 2 + (bias ? 2 : 0) + (proj_size > 0 ? 1 : 0);
  std::vector<Tensor<float>> h_n, c_n;
  Tensor<float> layer_in = data;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor<float>> dir_out;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t base = size_t(layer * dirs + d) * per;
      const Tensor<float>& w_ih = params[base];
      const Tensor<float>& w_hh = params[base + 1];
      const Tensor<float> w_hr = proj_size > 0 ? params[base + per - 1] : Tensor<float>();
      // The input projection of every step at once: one GEMM [N, in] x [in, G*H], with b_hh folded
      // in except for GRU; then one split into the steps (one backward pass for all of them).
      // RNN and LSTM: W_hh's gradient from one GEMM at recurrent_input. (GRU keeps a GEMM per step
      // for it: routing its gh through a split of b_hh broadcast to [N, G*H] measured 5% slower.)
      const bool whole = mode_ != RnnMode::gru, fold = bias && whole;
      const Tensor<float> b_ih = !bias ? Tensor<float>() : fold ? Tensor<float>(params[base + 2] + params[base + 3]) : params[base + 2];
      const Tensor<float> b_hh = bias && !fold ? params[base + 3] : Tensor<float>();
      Tensor<float> gi_all = functional::linear(layer_in, w_ih, b_ih);
      auto h_prev = std::make_shared<Tensor<float>>();
      if (whole) gi_all = recurrent_input(gi_all, w_hh, h_prev);
      const std::vector<Tensor<float>> gi = gi_all.split(batch_sizes, 0);
      std::vector<Tensor<float>> h_in(static_cast<size_t>(steps_n));  // each step's incoming state
      const Tensor<float> h0 = h_init.select(0, layer * dirs + d), c0 = lstm ? c_init.select(0, layer * dirs + d) : Tensor<float>();
      std::vector<Tensor<float>> outs(static_cast<size_t>(steps_n));
      Tensor<float> h, c;
      if (d == 0) {
        // Forward in time: sequences end (in decreasing-length order), their rows leave the batch.
        std::vector<Tensor<float>> done_h, done_c;  // final states of the rows that ended, latest first
        int64_t rows = batch_sizes.empty() ? h0.size(0) : batch_sizes[0];
        h = h0.narrow(0, 0, rows);
        if (lstm) c = c0.narrow(0, 0, rows);
        if (rows < h0.size(0)) {  // rows with length 0 never run
          done_h.push_back(h0.narrow(0, rows, h0.size(0) - rows));
          if (lstm) done_c.push_back(c0.narrow(0, rows, h0.size(0) - rows));
        }
        for (int64_t t = 0; t < steps_n; ++t) {
          const int64_t bs = batch_sizes[size_t(t)];
          if (bs < rows) {
            done_h.push_back(h.narrow(0, bs, rows - bs));
            h = h.narrow(0, 0, bs);
            if (lstm) {
              done_c.push_back(c.narrow(0, bs, rows - bs));
              c = c.narrow(0, 0, bs);
            }
            rows = bs;
          }
          h_in[size_t(t)] = h;
          auto [hn, cn] = cell_step(mode_, gi[size_t(t)], h, c, w_hh, b_hh, w_hr, whole);
          h = hn;
          c = cn;
          outs[size_t(t)] = h;
        }
        if (!done_h.empty()) {
          std::reverse(done_h.begin(), done_h.end());
          done_h.insert(done_h.begin(), h);
          h = dl::cat(done_h, 0);
          if (lstm) {
            std::reverse(done_c.begin(), done_c.end());
            done_c.insert(done_c.begin(), c);
            c = dl::cat(done_c, 0);
          }
        }
      } else {
        // Backward in time: sequences join the batch at their last step.
        int64_t rows = 0;
        for (int64_t t = steps_n - 1; t >= 0; --t) {
          const int64_t bs = batch_sizes[size_t(t)];
          if (bs > rows) {
            Tensor<float> nh = h0.narrow(0, rows, bs - rows);
            h = rows ? dl::cat({h, nh}, 0) : nh;
            if (lstm) {
              Tensor<float> nc = c0.narrow(0, rows, bs - rows);
              c = rows ? dl::cat({c, nc}, 0) : nc;
            }
            rows = bs;
          }
          h_in[size_t(t)] = h;
          auto [hn, cn] = cell_step(mode_, gi[size_t(t)], h, c, w_hh, b_hh, w_hr, whole);
          h = hn;
          c = cn;
          outs[size_t(t)] = h;
        }
        if (rows < h0.size(0)) {  // rows with length 0
          h = rows ? dl::cat({h, h0.narrow(0, rows, h0.size(0) - rows)}, 0) : h0;
          if (lstm) c = rows ? dl::cat({c, c0.narrow(0, rows, c0.size(0) - rows)}, 0) : c0;
        }
      }
      if (whole && steps_n > 0 && autograd::any_requires_grad(w_hh)) {
        NoGradGuard no_grad;
        *h_prev = dl::cat(h_in, 0).detach();
      }
      h_n.push_back(h);
      if (lstm) c_n.push_back(c);
      const int64_t out_features = proj_size > 0 ? proj_size : hidden_size;
      dir_out.push_back(steps_n > 0 ? dl::cat(outs, 0) : zeros<float>({0, out_features}, data.device()));
    }
    layer_in = dirs == 1 ? dir_out[0] : dl::cat(dir_out, 1);
    if (dropout > 0 && is_training() && layer + 1 < num_layers) layer_in = functional::dropout(layer_in, dropout, true);
  }
  return {layer_in, dl::stack(h_n, 0), lstm ? dl::stack(c_n, 0) : Tensor<float>()};
}

DL_API std::tuple<Tensor<float>, Tensor<float>, Tensor<float>> RNNBase::run(const Tensor<float>& input, const Tensor<float>& h0,
                                                                             const Tensor<float>& c0) {
  DL_CHECK(input.defined(), name_, ": the input is undefined");
  DL_CHECK(input.dim() == 2 || input.dim() == 3, name_, ": Expected input to be 2D or 3D, got ", input.dim(), "D instead");
  const bool batched = input.dim() == 3;
  DL_CHECK(input.size(-1) == input_size, "input.size(-1) must be equal to input_size. Expected ", input_size, ", got ", input.size(-1));
  // Time-major [T, B, I].
  Tensor<float> x = !batched ? input.unsqueeze(1) : batch_first ? input.transpose(0, 1) : input;
  const int64_t T = x.size(0), B = x.size(1);
  const int64_t dirs = bidirectional ? 2 : 1, real_hidden = proj_size > 0 ? proj_size : hidden_size;
  const Shape h_shape{num_layers * dirs, B, real_hidden}, c_shape{num_layers * dirs, B, hidden_size};
  const bool lstm = mode_ == RnnMode::lstm;
  check_state(h0, h_shape, lstm ? "hidden[0]" : "hidden", batched);
  if (lstm) check_state(c0, c_shape, "hidden[1]", batched);
  Tensor<float> h_init = h0.defined() ? (batched ? h0 : h0.unsqueeze(1)) : zeros<float>(h_shape, input.device());
  Tensor<float> c_init;
  if (lstm) c_init = c0.defined() ? (batched ? c0 : c0.unsqueeze(1)) : zeros<float>(c_shape, input.device());
  auto [data, hn, cn] = run_layers(x.reshape({T * B, input_size}), std::vector<int64_t>(size_t(T), B), h_init, c_init);
  Tensor<float> out = data.view({T, B, dirs * real_hidden});
  out = !batched ? out.squeeze(1) : batch_first ? out.transpose(0, 1) : out;
  if (!batched) {
    hn = hn.squeeze(1);
    if (lstm) cn = cn.squeeze(1);
  }
  return {out, hn, cn};
}

DL_API std::tuple<utils::rnn::PackedSequence, Tensor<float>, Tensor<float>> RNNBase::run_packed(const utils::rnn::PackedSequence& input,
                                                                                                const Tensor<float>& h0,
                                                                                                const Tensor<float>& c0) {
  DL_CHECK(input.data.defined() && input.batch_sizes.defined(), name_, ": the PackedSequence is empty");
  DL_CHECK(input.data.dim() == 2, name_, ": a PackedSequence's data must be 2-D [sum of lengths, input_size], got ", input.data.shape());
  DL_CHECK(input.data.size(1) == input_size, "input.size(-1) must be equal to input_size. Expected ", input_size, ", got ",
           input.data.size(1));
  const Tensor<int64_t> bs_t = input.batch_sizes.contiguous();
  std::vector<int64_t> batch_sizes(bs_t.data(), bs_t.data() + bs_t.numel());
  const int64_t B = batch_sizes.empty() ? 0 : batch_sizes[0];
  const int64_t dirs = bidirectional ? 2 : 1, real_hidden = proj_size > 0 ? proj_size : hidden_size;
  const Shape h_shape{num_layers * dirs, B, real_hidden}, c_shape{num_layers * dirs, B, hidden_size};
  const bool lstm = mode_ == RnnMode::lstm;
  check_state(h0, h_shape, lstm ? "hidden[0]" : "hidden", true);
  if (lstm) check_state(c0, c_shape, "hidden[1]", true);
  // Initial states come in the caller's batch order; inside, rows are in decreasing-length order.
  auto to_sorted = [&](const Tensor<float>& s) { return input.sorted_indices.defined() ? s.index_select(1, input.sorted_indices) : s; };
  Tensor<float> h_init = h0.defined() ? to_sorted(h0) : zeros<float>(h_shape, input.data.device());
  Tensor<float> c_init;
  if (lstm) c_init = c0.defined() ? to_sorted(c0) : zeros<float>(c_shape, input.data.device());
  auto [data, hn, cn] = run_layers(input.data, batch_sizes, h_init, c_init);
  if (input.unsorted_indices.defined()) {
    hn = hn.index_select(1, input.unsorted_indices);
    if (lstm) cn = cn.index_select(1, input.unsorted_indices);
  }
  return {utils::rnn::PackedSequence{data, input.batch_sizes, input.sorted_indices, input.unsorted_indices}, hn, cn};
}

DL_API RNNCellBase::RNNCellBase(RnnMode mode, int64_t input_size_, int64_t hidden_size_, bool bias_)
    : input_size(input_size_), hidden_size(hidden_size_), bias(bias_), mode_(mode) {
  const int64_t gates = gate_count(mode) * hidden_size;
  weight_ih = empty<float>({gates, input_size}).requires_grad_();
  weight_hh = empty<float>({gates, hidden_size}).requires_grad_();
  if (bias) {
    bias_ih = empty<float>({gates}).requires_grad_();
    bias_hh = empty<float>({gates}).requires_grad_();
  }
  reset_parameters();
}

DL_API void RNNCellBase::reset_parameters() {
  const double k = 1.0 / std::sqrt(double(hidden_size));
  NoGradGuard no_grad;
  for (Tensor<float>* p : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (p->defined()) init::uniform_(*p, -k, k);
}

DL_API std::string RNNCellBase::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (!bias) s += ", bias=False";
  if (mode_ == RnnMode::relu) s += ", nonlinearity=relu";
  return s;
}

DL_API std::tuple<Tensor<float>, Tensor<float>, bool> RNNCellBase::prepare(const Tensor<float>& input, const Tensor<float>& hx,
                                                                            const char* name) {
  DL_CHECK(input.defined(), name, ": the input is undefined");
  DL_CHECK(input.dim() == 1 || input.dim() == 2, name, ": Expected input to be 1D or 2D, got ", input.dim(), "D instead");
  const bool batched = input.dim() == 2;
  DL_CHECK(input.size(-1) == input_size, "input has inconsistent input_size: got ", input.size(-1), " expected ", input_size);
  Tensor<float> x = batched ? input : input.unsqueeze(0);
  Tensor<float> h;
  if (hx.defined()) {
    DL_CHECK(hx.dim() == input.dim(), name, ": Expected hidden to be ", input.dim(), "D for ", input.dim(), "D input, got ", hx.dim(),
             "D instead");
    h = batched ? hx : hx.unsqueeze(0);
    DL_CHECK(h.size(0) == x.size(0), "Input batch size ", x.size(0), " doesn't match hidden0 batch size ", h.size(0));
    DL_CHECK(h.size(1) == hidden_size, "hidden0 has inconsistent hidden_size: got ", h.size(1), ", expected ", hidden_size);
  } else {
    h = zeros<float>({x.size(0), hidden_size}, input.device());
  }
  return {x, h, batched};
}

}  // namespace dl::nn::detail

namespace dl::nn {

DL_API Tensor<float> RNNCell::forward(const Tensor<float>& input, const Tensor<float>& hx) {
  auto [x, h, batched] = prepare(input, hx, "RNNCell");
  Tensor<float> gi = functional::linear(x, weight_ih, bias_ih);
  Tensor<float> out = detail::cell_step(mode_, gi, h, {}, weight_hh, bias_hh, {}).first;
  return batched ? out : out.squeeze(0);
}

DL_API std::tuple<Tensor<float>, Tensor<float>> LSTMCell::forward(const Tensor<float>& input,
                                                                  const std::optional<std::tuple<Tensor<float>, Tensor<float>>>& hx) {
  auto [x, h, batched] = prepare(input, hx ? std::get<0>(*hx) : Tensor<float>(), "LSTMCell");
  Tensor<float> c;
  if (hx) {
    const Tensor<float>& c0 = std::get<1>(*hx);
    DL_CHECK(c0.defined() && c0.dim() == input.dim(), "LSTMCell: Expected hx[1] to be ", input.dim(), "D");
    c = batched ? c0 : c0.unsqueeze(0);
    DL_CHECK(c.shape() == h.shape(), "hidden1 has inconsistent size: got ", c.shape(), ", expected ", h.shape());
  } else {
    c = zeros<float>(h.shape(), input.device());
  }
  Tensor<float> gi = functional::linear(x, weight_ih, bias_ih);
  auto [hn, cn] = detail::cell_step(mode_, gi, h, c, weight_hh, bias_hh, {});
  if (!batched) return {hn.squeeze(0), cn.squeeze(0)};
  return {hn, cn};
}

DL_API Tensor<float> GRUCell::forward(const Tensor<float>& input, const Tensor<float>& hx) {
  auto [x, h, batched] = prepare(input, hx, "GRUCell");
  Tensor<float> gi = functional::linear(x, weight_ih, bias_ih);
  Tensor<float> out = detail::cell_step(mode_, gi, h, {}, weight_hh, bias_hh, {}).first;
  return batched ? out : out.squeeze(0);
}

}  // namespace dl::nn

namespace dl::nn::utils::rnn {

namespace {
/// The sizes after the first.
inline Shape trailing(const Shape& s) {
  Shape r;
  for (int i = 1; i < s.size(); ++i) r.push_back(s[i]);
  return r;
}
}  // namespace

DL_API PackedSequence pack_padded_sequence(const Tensor<float>& input, const std::vector<int64_t>& lengths, bool batch_first,
                                           bool enforce_sorted) {
  DL_CHECK(input.defined() && input.dim() >= 2, "pack_padded_sequence: the input must be at least 2-D [T, B, *], got ",
           input.defined() ? dl::detail::cat(input.shape()) : std::string("an undefined tensor"));
  Tensor<float> x = batch_first ? input.transpose(0, 1) : input;  // [T, B, *]
  const int64_t T = x.size(0), B = x.size(1);
  DL_CHECK(int64_t(lengths.size()) == B, "Expected `len(lengths)` to be equal to batch_size, but got ", lengths.size(), " (batch_size=", B,
           ")");
  for (size_t i = 0; i < lengths.size(); ++i) {
    DL_CHECK(lengths[i] > 0, "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
    DL_CHECK(lengths[i] <= T, "pack_padded_sequence: lengths[", i, "] = ", lengths[i], " is longer than the input's ", T, " time steps");
  }
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  Tensor<int64_t> sorted, unsorted;
  if (enforce_sorted) {
    for (size_t i = 1; i < lengths.size(); ++i)
      DL_CHECK(lengths[i - 1] >= lengths[i], "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can ",
               "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do not ",
               "need ONNX exportability.");
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[size_t(a)] > lengths[size_t(b)]; });
    sorted = dl::empty<int64_t>({B});
    unsorted = dl::empty<int64_t>({B});
    for (int64_t i = 0; i < B; ++i) {
      sorted.data()[i] = order[size_t(i)];
      unsorted.data()[order[size_t(i)]] = i;
    }
    x = x.index_select(1, sorted);
  }
  const int64_t steps = B ? lengths[size_t(order[0])] : 0;
  Tensor<int64_t> batch_sizes = dl::empty<int64_t>({steps});
  std::vector<Tensor<float>> rows;
  for (int64_t t = 0; t < steps; ++t) {
    int64_t bs = 0;
    while (bs < B && lengths[size_t(order[size_t(bs)])] > t) ++bs;
    batch_sizes.data()[t] = bs;
    rows.push_back(x.select(0, t).narrow(0, 0, bs));
  }
  return {dl::cat(rows, 0), batch_sizes, sorted, unsorted};
}

DL_API PackedSequence pack_padded_sequence(const Tensor<float>& input, const Tensor<int64_t>& lengths, bool batch_first,
                                           bool enforce_sorted) {
  DL_CHECK(lengths.defined() && lengths.dim() == 1, "pack_padded_sequence: lengths must be a 1-D tensor");
  const Tensor<int64_t> l = lengths.to(kCPU).contiguous();
  return pack_padded_sequence(input, std::vector<int64_t>(l.data(), l.data() + l.numel()), batch_first, enforce_sorted);
}

DL_API std::tuple<Tensor<float>, Tensor<int64_t>> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                                                      std::optional<int64_t> total_length) {
  const Tensor<int64_t> bs_t = sequence.batch_sizes.contiguous();
  const int64_t steps = bs_t.numel(), B = steps ? bs_t.data()[0] : 0;
  int64_t T = steps;
  if (total_length) {
    DL_CHECK(*total_length >= steps, "Expected total_length to be at least the length of the longest sequence in input, but got ",
             "total_length=", *total_length, " and max sequence length being ", steps);
    T = *total_length;
  }
  const Shape feature = trailing(sequence.data.shape());
  std::vector<Tensor<float>> padded;
  int64_t off = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t bs = t < steps ? bs_t.data()[t] : 0;
    Tensor<float> step = bs ? sequence.data.narrow(0, off, bs) : Tensor<float>();
    off += bs;
    if (bs < B) {
      Shape pad_shape = feature;
      pad_shape.insert(0, B - bs);
      Tensor<float> pad = dl::full<float>(pad_shape, float(padding_value), sequence.data.device());
      step = bs ? dl::cat({step, pad}, 0) : pad;
    }
    padded.push_back(step);
  }
  Tensor<float> out = T ? dl::stack(padded, 0) : dl::zeros<float>(Shape{0, B}, sequence.data.device());
  // Lengths in the sorted order: how many steps each row ran.
  Tensor<int64_t> lengths = dl::zeros<int64_t>({B});
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < bs_t.data()[t]; ++b) lengths.data()[b] += 1;
  if (sequence.unsorted_indices.defined()) {
    out = out.index_select(1, sequence.unsorted_indices);
    lengths = lengths.index_select(0, sequence.unsorted_indices);
  }
  return {batch_first ? Tensor<float>(out.transpose(0, 1)) : out, lengths};
}

DL_API Tensor<float> pad_sequence(const std::vector<Tensor<float>>& sequences, bool batch_first, double padding_value) {
  DL_CHECK(!sequences.empty(), "received an empty list of sequences");
  int64_t T = 0;
  for (const auto& s : sequences) {
    DL_CHECK(s.defined() && s.dim() >= 1, "pad_sequence: every sequence must be at least 1-D");
    DL_CHECK(trailing(s.shape()) == trailing(sequences[0].shape()),
             "pad_sequence: the sequences' trailing sizes differ: ", sequences[0].shape(), " and ", s.shape());
    T = std::max(T, s.size(0));
  }
  std::vector<Tensor<float>> cols;
  for (const auto& s : sequences) {
    if (s.size(0) == T) {
      cols.push_back(s);
      continue;
    }
    Shape pad_shape = s.shape();
    pad_shape[0] = T - s.size(0);
    cols.push_back(dl::cat({s, dl::full<float>(pad_shape, float(padding_value), s.device())}, 0));
  }
  return dl::stack(cols, batch_first ? 0 : 1);
}

DL_API PackedSequence pack_sequence(const std::vector<Tensor<float>>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const auto& s : sequences) lengths.push_back(s.defined() ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

}  // namespace dl::nn::utils::rnn
