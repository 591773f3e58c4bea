// Sequence-model benchmark: forward + backward of
//  - nn::LSTM(128, 256, {.num_layers = 2, .batch_first = true}), batch 64, sequence 100, and
//  - nn::TransformerEncoderLayer(256, 4, {.batch_first = true}) (dim_feedforward 2048, dropout 0.1,
//    training), batch 32, sequence 128,
// against the same in PyTorch (bench/sequence.py, 2 threads) run interleaved, round by round, in a
// child process; medians and ratios. The loss is sum(out * g) with a fixed g on both sides.
//   build/bench/bench_sequence [rounds] [--no-torch]
#include <cstdio>
#include <string>
#include <vector>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/nn/rnn.hpp>
#include <dl/nn/transformer.hpp>

#include "common.hpp"

namespace nn = dl::nn;
using dl::Tensor;

namespace {
std::vector<double> torch_ms(int rounds) {
  const std::string cmd = bench::python() + " " + std::string(DL_BENCH_DIR) + "/sequence.py " + std::to_string(rounds) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::vector<double> a, b;
  double x = 0, y = 0;
  while (p && std::fscanf(p, "%lf %lf", &x, &y) == 2) a.push_back(x), b.push_back(y);
  if (p) pclose(p);
  if (a.empty()) return {-1, -1};
  return {bench::median(a), bench::median(b)};
}
}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  nn::LSTM lstm(128, 256, {.num_layers = 2, .batch_first = true});
  const Tensor<float> x = dl::randn({64, 100, 128}).requires_grad_(), g = dl::randn({64, 100, 256});
  nn::TransformerEncoderLayer enc(256, 4, {.batch_first = true});
  const Tensor<float> s = dl::randn({32, 128, 256}).requires_grad_(), gs = dl::randn({32, 128, 256});
  auto lstm_step = [&] {
    auto [out, state] = lstm(x);
    Tensor<float>((out * g).sum()).backward();
  };
  auto enc_step = [&] { Tensor<float>((enc(s) * gs).sum()).backward(); };
  std::vector<double> l, e, tl, te;
  for (int r = 0; r < rounds; ++r) {
    l.push_back(bench::per_call_ms(lstm_step, 2, 5));
    e.push_back(bench::per_call_ms(enc_step, 2, 5));
    if (with_torch) {
      const auto t = torch_ms(1);
      tl.push_back(t[0]);
      te.push_back(t[1]);
    }
  }
  const double ll = bench::median(l), ee = bench::median(e);
  const double tll = with_torch ? bench::median(tl) : -1, tee = with_torch ? bench::median(te) : -1;
  std::printf("Sequence models, forward + backward, float, 2 threads; medians of %d interleaved rounds\n", rounds);
  std::printf("%-58s %10s %14s %12s\n", "workload", "dl ms", "PyTorch ms", "dl speedup");
  std::printf("%-58s %10.2f %14.2f %11.2fx\n", "LSTM 128->256, 2 layers, batch 64, seq 100", ll, tll, tll > 0 ? tll / ll : -1);
  std::printf("%-58s %10.2f %14.2f %11.2fx\n", "TransformerEncoderLayer 256/4 heads/ff 2048, batch 32, seq 128", ee, tee,
              tee > 0 ? tee / ee : -1);
  return 0;
}
