// Tests of dl/nn/rnn.hpp: RNN, LSTM, GRU and their cells against PyTorch (tests/gen_rnn_reference.py
// writes tests/data/rnn_ref.bin): outputs, final states and the gradients of the input, the initial
// states and every parameter; finite-difference checks in double of the cell arithmetic; errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <dl/autograd/gradcheck.hpp>
#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/nn/rnn.hpp>

#include "module_ref.hpp"
#include "refbin.hpp"

using dl::Shape;
using dl::Tensor;
namespace nn = dl::nn;

namespace {

const refbin::File ref("rnn_ref.bin");

/// Loads the case's state dict (the module must have exactly PyTorch's keys).
void load(nn::Module& m, const std::string& name) { testutil::load(m, ref, name); }

Tensor<float> det_input(Shape s, int64_t seed) { return refbin::det<float>(s, seed).requires_grad_(); }

/// The generator's loss: sum(out * det(999)) + sum(h_n * det(998)) + sum(c_n * det(997)).
void backward_loss(const Tensor<float>& out, const Tensor<float>& h_n, const Tensor<float>& c_n) {
  Tensor<float> loss = (out * refbin::det<float>(out.shape(), 999)).sum();
  if (h_n.defined()) loss = loss + (h_n * refbin::det<float>(h_n.shape(), 998)).sum();
  if (c_n.defined()) loss = loss + (c_n * refbin::det<float>(c_n.shape(), 997)).sum();
  loss.backward();
}

void check_grads(nn::Module& m, const std::string& name, const Tensor<float>& x, const Tensor<float>& h0, const Tensor<float>& c0) {
  ref.check(x.grad(), name + "/gx", 1e-4);
  if (h0.defined()) ref.check(h0.grad(), name + "/gh0", 1e-4);
  if (c0.defined()) ref.check(c0.grad(), name + "/gc0", 1e-4);
  for (auto& [n, p] : m.named_parameters()) {
    INFO("parameter ", n);
    REQUIRE(p.grad().defined());
    ref.check(p.grad(), name + "/g/" + n, 1e-4);
  }
}

template <class M>
void check_rnn(const std::string& name, M& m, Shape x_shape, Shape h0_shape = {}) {
  INFO("case ", name);
  load(m, name);
  Tensor<float> x = det_input(x_shape, 1);
  Tensor<float> h0 = h0_shape.size() ? det_input(h0_shape, 2) : Tensor<float>();
  auto [out, h_n] = m(x, h0);
  ref.check(out, name + "/out", 1e-5);
  ref.check(h_n, name + "/h_n", 1e-5);
  backward_loss(out, h_n, {});
  check_grads(m, name, x, h0, {});
}

void check_lstm(const std::string& name, nn::LSTM& m, Shape x_shape, Shape h0_shape = {}, Shape c0_shape = {}) {
  INFO("case ", name);
  load(m, name);
  Tensor<float> x = det_input(x_shape, 1);
  Tensor<float> h0 = h0_shape.size() ? det_input(h0_shape, 2) : Tensor<float>();
  Tensor<float> c0 = c0_shape.size() ? det_input(c0_shape, 3) : Tensor<float>();
  auto [out, state] = h0.defined() ? m(x, std::tuple{h0, c0}) : m(x);
  auto [h_n, c_n] = state;
  ref.check(out, name + "/out", 1e-5);
  ref.check(h_n, name + "/h_n", 1e-5);
  ref.check(c_n, name + "/c_n", 1e-5);
  backward_loss(out, h_n, c_n);
  check_grads(m, name, x, h0, c0);
}

using testutil::has;
using testutil::msg;
using testutil::printed;


}  // namespace

TEST_CASE("RNN (tanh and relu, 2 layers, bidirectional, batch_first) matches PyTorch with its gradients") {
  nn::RNN a(5, 7);
  check_rnn("rnn_tanh", a, {4, 3, 5});
  nn::RNN b(5, 7, {.num_layers = 2, .nonlinearity = "relu", .batch_first = true, .bidirectional = true});
  check_rnn("rnn_relu_2l_bi_bf", b, {3, 4, 5}, {4, 3, 7});
}

TEST_CASE("LSTM: initial states, 3 layers bidirectional batch_first, proj_size, no bias") {
  nn::LSTM a(5, 7);
  check_lstm("lstm", a, {4, 3, 5}, {1, 3, 7}, {1, 3, 7});
  nn::LSTM b(4, 6, {.num_layers = 3, .batch_first = true, .bidirectional = true});
  check_lstm("lstm_3l_bi_bf", b, {2, 5, 4});
  nn::LSTM c(5, 8, {.num_layers = 2, .bidirectional = true, .proj_size = 3});
  check_lstm("lstm_proj_2l_bi", c, {4, 2, 5}, {4, 2, 3}, {4, 2, 8});
  nn::LSTM d(5, 7, {.bias = false});
  check_lstm("lstm_nobias", d, {3, 2, 5});
}

TEST_CASE("GRU: 2 layers bidirectional with h0, and an unbatched input") {
  nn::GRU a(5, 7, {.num_layers = 2, .bidirectional = true});
  check_rnn("gru_2l_bi", a, {4, 3, 5}, {4, 3, 7});
  nn::GRU b(5, 7);
  check_rnn("gru_unbatched", b, {4, 5}, {1, 7});
}

TEST_CASE("RNNCell, LSTMCell, GRUCell match PyTorch with their gradients") {
  for (std::string name : {"rnncell_tanh", "rnncell_relu", "grucell"}) {
    INFO("case ", name);
    const bool gru = name == "grucell";
    nn::RNNCell rc(5, 7, true, name == "rnncell_relu" ? "relu" : "tanh");
    nn::GRUCell gc(5, 7);
    nn::Module& m = gru ? static_cast<nn::Module&>(gc) : rc;
    load(m, name);
    Tensor<float> x = det_input({3, 5}, 1);
    Tensor<float> h0 = name == "rnncell_relu" ? Tensor<float>() : det_input({3, 7}, 2);
    Tensor<float> out = gru ? gc(x, h0) : rc(x, h0);
    ref.check(out, name + "/out", 1e-5);
    backward_loss(out, {}, {});
    check_grads(m, name, x, h0, {});
  }
  nn::LSTMCell lc(5, 7);
  load(lc, "lstmcell");
  Tensor<float> x = det_input({3, 5}, 1), h0 = det_input({3, 7}, 2), c0 = det_input({3, 7}, 3);
  auto [h, c] = lc(x, std::tuple{h0, c0});
  ref.check(h, "lstmcell/out", 1e-5);
  ref.check(c, "lstmcell/c_n", 1e-5);
  backward_loss(h, {}, c);
  check_grads(lc, "lstmcell", x, h0, c0);
  // unbatched
  auto [h1, c1] = lc(x.detach()[0]);
  CHECK(h1.shape() == Shape{7});
  CHECK(c1.shape() == Shape{7});
}

TEST_CASE("PyTorch's parameter names, shapes, printouts and initialisation range") {
  nn::LSTM lstm(10, 20, {.num_layers = 2, .bidirectional = true, .proj_size = 5});
  std::vector<std::string> names;
  for (auto& [n, p] : lstm.named_parameters()) names.push_back(n + ":" + dl::detail::cat(p.shape()));
  CHECK(names == std::vector<std::string>{
                     "weight_ih_l0:[80, 10]", "weight_hh_l0:[80, 5]", "bias_ih_l0:[80]", "bias_hh_l0:[80]", "weight_hr_l0:[5, 20]",
                     "weight_ih_l0_reverse:[80, 10]", "weight_hh_l0_reverse:[80, 5]", "bias_ih_l0_reverse:[80]",
                     "bias_hh_l0_reverse:[80]", "weight_hr_l0_reverse:[5, 20]", "weight_ih_l1:[80, 10]", "weight_hh_l1:[80, 5]",
                     "bias_ih_l1:[80]", "bias_hh_l1:[80]", "weight_hr_l1:[5, 20]", "weight_ih_l1_reverse:[80, 10]",
                     "weight_hh_l1_reverse:[80, 5]", "bias_ih_l1_reverse:[80]", "bias_hh_l1_reverse:[80]",
                     "weight_hr_l1_reverse:[5, 20]"});
  for (auto& p : lstm.parameters()) CHECK(dl::abs(p).max().item() <= 1.0f / std::sqrt(20.0f));
  CHECK(printed(lstm) == "LSTM(10, 20, proj_size=5, num_layers=2, bidirectional=True)");
  nn::RNN rnn(3, 4, {.num_layers = 2, .nonlinearity = "relu", .bias = false, .batch_first = true, .dropout = 0.5, .bidirectional = true});
  CHECK(printed(rnn) == "RNN(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)");
  nn::RNNCell cell(3, 4, false, "relu");
  CHECK(printed(cell) == "RNNCell(3, 4, bias=False, nonlinearity=relu)");
  nn::GRU gru(3, 4);
  CHECK(printed(gru) == "GRU(3, 4)");
  gru.flatten_parameters();  // accepted
  // shapes: output [T, B, D*H], h_n [L*D, B, H]
  auto [out, state] = lstm(dl::randn<float>({6, 2, 10}));
  CHECK(out.shape() == Shape{6, 2, 10});
  CHECK(std::get<0>(state).shape() == Shape{4, 2, 5});
  CHECK(std::get<1>(state).shape() == Shape{4, 2, 20});
}

TEST_CASE("dropout between layers only in training; eval is deterministic") {
  dl::manual_seed(0);
  nn::GRU gru(4, 8, {.num_layers = 3, .dropout = 0.5});
  Tensor<float> x = dl::randn<float>({5, 2, 4});
  gru.eval();
  auto [a, ha] = gru(x);
  auto [b, hb] = gru(x);
  CHECK(dl::equal(a, b));
  gru.train();
  auto [c, hc] = gru(x);
  auto [d, hd] = gru(x);
  CHECK_FALSE(dl::equal(c, d));
}

TEST_CASE("cell arithmetic passes finite-difference gradient checks in double") {
  // The same fused gate expressions as the layers use, in double.
  dl::manual_seed(1);
  auto make = [](Shape s) { return Tensor<double>(dl::randn<double>(s) * 0.5).requires_grad_(); };
  const int64_t H = 3;
  Tensor<double> gi = make({2, 4 * H}), gh = make({2, 4 * H}), c = make({2, H});
  auto lstm = [&](const std::vector<Tensor<double>>& v) {
    auto g = [&](const Tensor<double>& t, int64_t k) { return t.narrow(1, k * H, H); };
    Tensor<double> c_new = dl::sigmoid(g(v[0], 1) + g(v[1], 1)) * v[2] + dl::sigmoid(g(v[0], 0) + g(v[1], 0)) * dl::tanh(g(v[0], 2) + g(v[1], 2));
    return Tensor<double>(dl::sigmoid(g(v[0], 3) + g(v[1], 3)) * dl::tanh(c_new) + c_new);
  };
  CHECK(dl::autograd::gradcheck(lstm, {gi, gh, c}));
  Tensor<double> gi3 = make({2, 3 * H}), gh3 = make({2, 3 * H}), h = make({2, H});
  auto gru = [&](const std::vector<Tensor<double>>& v) {
    auto g = [&](const Tensor<double>& t, int64_t k) { return t.narrow(1, k * H, H); };
    Tensor<double> r = dl::sigmoid(g(v[0], 0) + g(v[1], 0)), z = dl::sigmoid(g(v[0], 1) + g(v[1], 1));
    Tensor<double> n = dl::tanh(g(v[0], 2) + r * g(v[1], 2));
    return Tensor<double>((1.0 - z) * n + z * v[2]);
  };
  CHECK(dl::autograd::gradcheck(gru, {gi3, gh3, h}));
}

TEST_CASE("RNN, LSTM and GRU layers equal their cells unrolled by hand, in first and second derivatives (the whole-sequence W_hh gradient)") {
  // The layers give W_hh its gradient from one GEMM over all steps; with create_graph each
  // step returns its own, differentiable part. Both must agree with the cells, which use neither.
  dl::manual_seed(3);
  const Tensor<float> x0 = dl::randn<float>({4, 3, 5});
  auto run = [&](auto& layer, auto& cell) {
    std::map<std::string, Tensor<float>> p;
    for (auto& [n, t] : layer.named_parameters()) p[n] = t;
    {
      dl::NoGradGuard no_grad;
      cell.weight_ih.copy_(p["weight_ih_l0"]);
      cell.weight_hh.copy_(p["weight_hh_l0"]);
      cell.bias_ih.copy_(p["bias_ih_l0"]);
      cell.bias_hh.copy_(p["bias_hh_l0"]);
    }
    auto by_layer = [&](const Tensor<float>& x) { return std::get<0>(layer(x)); };
    auto by_cell = [&](const Tensor<float>& x) {
      std::vector<Tensor<float>> outs;
      Tensor<float> h = dl::zeros<float>({3, 7}), c = dl::zeros<float>({3, 7});
      for (int64_t t = 0; t < x.size(0); ++t) {
        if constexpr (requires { std::get<1>(cell(x[t])); }) {
          std::tie(h, c) = cell(x[t], std::tuple{h, c});
        } else {
          h = cell(x[t], h);
        }
        outs.push_back(h);
      }
      return dl::stack(outs, 0);
    };
    auto grads = [&](auto&& f, const Tensor<float>& w_hh, const Tensor<float>& w_ih) {
      Tensor<float> x = x0.clone().requires_grad_();
      Tensor<float> y = f(x);
      Tensor<float> loss = Tensor<float>((y * y).sum());
      auto first = dl::autograd::grad<float>({loss}, {w_hh, x}, {}, {}, /*create_graph=*/true);
      Tensor<float> penalty = Tensor<float>((first[1] * first[1]).sum() + (first[0] * first[0]).sum());
      auto second = dl::autograd::grad<float>({penalty}, {w_hh, w_ih});
      auto plain = dl::autograd::grad<float>({Tensor<float>((f(x) * f(x)).sum())}, {w_hh});  // no graph: the batched rule
      return std::vector<Tensor<float>>{first[0].detach(), plain[0], second[0], second[1]};
    };
    auto a = grads(by_layer, p["weight_hh_l0"], p["weight_ih_l0"]);
    auto b = grads(by_cell, cell.weight_hh, cell.weight_ih);
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(dl::allclose(a[i], b[i], 1e-4, 1e-5));
    }
    CHECK(dl::allclose(a[0], a[1], 1e-4, 1e-5));
  };
  nn::LSTM lstm(5, 7);
  nn::LSTMCell lstm_cell(5, 7);
  run(lstm, lstm_cell);
  nn::RNN rnn(5, 7);
  nn::RNNCell rnn_cell(5, 7);
  run(rnn, rnn_cell);
  nn::GRU gru(5, 7);
  nn::GRUCell gru_cell(5, 7);
  run(gru, gru_cell);
}

TEST_CASE("bad input is an error with PyTorch's message and the shapes") {
  nn::LSTM lstm(5, 7, {.num_layers = 2});
  CHECK(has(msg([&] { lstm(dl::zeros<float>({4, 3, 6})); }), "input.size(-1) must be equal to input_size. Expected 5, got 6"));
  CHECK(has(msg([&] { lstm(dl::zeros<float>({2, 4, 3, 5})); }), "LSTM: Expected input to be 2D or 3D, got 4D instead"));
  CHECK(has(msg([&] { lstm(dl::zeros<float>({4, 3, 5}), std::tuple{dl::zeros<float>({1, 3, 7}), dl::zeros<float>({2, 3, 7})}); }),
            "Expected hidden[0] size (2, 3, 7), got [1, 3, 7]"));
  CHECK(has(msg([&] { lstm(dl::zeros<float>({4, 3, 5}), std::tuple{dl::zeros<float>({2, 3, 7}), dl::zeros<float>({2, 3, 6})}); }),
            "Expected hidden[1] size (2, 3, 7), got [2, 3, 6]"));
  nn::GRU gru(5, 7);
  CHECK(has(msg([&] { gru(dl::zeros<float>({4, 3, 5}), dl::zeros<float>({1, 7})); }), "For batched 3-D input, hidden should also be 3-D"));
  CHECK(has(msg([] { nn::RNN(3, 4, {.nonlinearity = "sigmoid"}); }), "Unknown nonlinearity 'sigmoid'"));
  CHECK(has(msg([] { nn::LSTM(3, 4, {.proj_size = 4}); }), "proj_size has to be smaller than hidden_size"));
  CHECK(has(msg([] { nn::GRU(3, 4, {.dropout = 1.5}); }), "dropout should be a number in range [0, 1]"));
  nn::GRUCell cell(5, 7);
  CHECK(has(msg([&] { cell(dl::zeros<float>({3, 4})); }), "input has inconsistent input_size: got 4 expected 5"));
  CHECK(has(msg([&] { cell(dl::zeros<float>({3, 5}), dl::zeros<float>({2, 7})); }), "Input batch size 3 doesn't match hidden0 batch size 2"));
}

namespace {
/// pack_padded_sequence -> module -> pad_packed_sequence (padding -1), as the generator's packed_case.
template <class M>
void check_packed(const std::string& name, M& m, Shape x_shape, std::vector<int64_t> lengths, bool batch_first, bool enforce_sorted,
                  Shape h0_shape = {}, Shape c0_shape = {}, std::optional<int64_t> total_length = std::nullopt) {
  namespace rnn = nn::utils::rnn;
  INFO("case ", name);
  load(m, name);
  Tensor<float> x = det_input(x_shape, 1);
  Tensor<float> h0 = h0_shape.size() ? det_input(h0_shape, 2) : Tensor<float>();
  Tensor<float> c0 = c0_shape.size() ? det_input(c0_shape, 3) : Tensor<float>();
  rnn::PackedSequence packed = rnn::pack_padded_sequence(x, lengths, batch_first, enforce_sorted);
  ref.check(packed.batch_sizes, name + "/batch_sizes");
  Tensor<float> h_n, c_n;
  rnn::PackedSequence out;
  if constexpr (std::is_same_v<M, nn::LSTM>) {
    auto [o, state] = h0.defined() ? m(packed, std::tuple{h0, c0}) : m(packed);
    out = o;
    h_n = std::get<0>(state);
    c_n = std::get<1>(state);
  } else {
    auto [o, h] = m(packed, h0);
    out = o;
    h_n = h;
  }
  auto [padded, lens] = rnn::pad_packed_sequence(out, batch_first, -1.0, total_length);
  ref.check(padded, name + "/out", 1e-5);
  ref.check(lens, name + "/lengths");
  ref.check(h_n, name + "/h_n", 1e-5);
  if (c_n.defined()) ref.check(c_n, name + "/c_n", 1e-5);
  backward_loss(padded, h_n, c_n);
  check_grads(m, name, x, h0, c0);
}
}  // namespace

TEST_CASE("packed sequences: unsorted lengths, batch_first, total_length, sorted; h_n holds each sequence's last step") {
  nn::LSTM lstm(5, 7, {.num_layers = 2, .bidirectional = true});
  check_packed("lstm_packed", lstm, {5, 4, 5}, {3, 5, 1, 4}, false, false, {4, 4, 7}, {4, 4, 7});
  nn::GRU gru(5, 7, {.batch_first = true});
  check_packed("gru_packed_bf", gru, {3, 4, 5}, {4, 2, 3}, true, false, {}, {}, 6);
  nn::RNN rnn(5, 7, {.bidirectional = true});
  check_packed("rnn_packed_sorted", rnn, {4, 3, 5}, {4, 3, 1}, false, true, {2, 3, 7});
}

TEST_CASE("pad_sequence, pack_sequence and their errors") {
  namespace rnn = nn::utils::rnn;
  Tensor<float> a = dl::ones<float>({3, 2}), b = dl::full<float>({1, 2}, 2.0f), c = dl::full<float>({2, 2}, 3.0f);
  Tensor<float> p = rnn::pad_sequence({a, b, c}, /*batch_first=*/true, /*padding_value=*/-5.0);
  CHECK(p.shape() == Shape{3, 3, 2});
  CHECK(p.data()[1 * 6 + 1 * 2] == -5.0f);  // b's second step is padding
  CHECK(p.data()[2 * 6 + 1 * 2] == 3.0f);
  CHECK(rnn::pad_sequence({a, b}).shape() == Shape{3, 2, 2});
  rnn::PackedSequence ps = rnn::pack_sequence({a, c, b});
  CHECK(ps.data.shape() == Shape{6, 2});
  CHECK(std::vector<int64_t>(ps.batch_sizes.data(), ps.batch_sizes.data() + 3) == std::vector<int64_t>{3, 2, 1});
  auto [back, lens] = rnn::pad_packed_sequence(ps);
  CHECK(dl::equal(back, rnn::pad_sequence({a, c, b})));
  CHECK(std::vector<int64_t>(lens.data(), lens.data() + 3) == std::vector<int64_t>{3, 2, 1});
  CHECK(has(msg([&] { rnn::pack_sequence({b, a}); }), "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"));
  CHECK(has(msg([&] { rnn::pack_padded_sequence(dl::zeros<float>({4, 2, 3}), {5, 2}); }), "lengths[0] = 5 is longer than the input's 4 time steps"));
  CHECK(has(msg([&] { rnn::pack_padded_sequence(dl::zeros<float>({4, 2, 3}), {2, 0}); }), "Length of all samples has to be greater than 0"));
  CHECK(has(msg([&] { rnn::pack_padded_sequence(dl::zeros<float>({4, 2, 3}), {2}); }), "Expected `len(lengths)` to be equal to batch_size, but got 1"));
  CHECK(has(msg([&] { rnn::pad_packed_sequence(ps, false, 0.0, 2); }), "Expected total_length to be at least the length of the longest sequence"));
  CHECK(has(msg([&] { rnn::pad_sequence({a, dl::zeros<float>({2, 3})}); }), "the sequences' trailing sizes differ"));
}
