// Sequence-model benchmark: forward + backward of
//  - nn::LSTM(128, 256, {.num_layers = 2, .batch_first = true}), batch 64, sequence 100, and
//  - nn::TransformerEncoderLayer(256, 4, {.batch_first = true}) (dim_feedforward 2048, dropout 0.1,
//    training), batch 32, sequence 128, and
//  - nn::Embedding(1'000'000, 64, {.sparse = true}) looking up 512 x 20 indices with an
//    optim::SparseAdam step (forward, backward, step; the indices (i * 2654435761) mod 1e6),
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
#include <dl/optim/sparse_adam.hpp>

#include "common.hpp"

namespace nn = dl::nn;
using dl::Tensor;

namespace {
std::vector<double> torch_ms(int rounds) {
  const std::string cmd = bench::python() + " " + std::string(DL_BENCH_DIR) + "/sequence.py " + std::to_string(rounds) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::vector<double> a, b, c;
  double x = 0, y = 0, z = 0;
  while (p && std::fscanf(p, "%lf %lf %lf", &x, &y, &z) == 3) a.push_back(x), b.push_back(y), c.push_back(z);
  if (p) pclose(p);
  if (a.empty()) return {-1, -1, -1};
  return {bench::median(a), bench::median(b), bench::median(c)};
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
  nn::Embedding emb(1'000'000, 64, {.sparse = true});
  dl::optim::SparseAdam opt(emb.parameters());
  Tensor<int64_t> idx = dl::empty<int64_t>({512, 20});
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data()[i] = int64_t((uint64_t(i) * 2654435761u) % 1'000'000u);
  const Tensor<float> ge = dl::randn({512, 20, 64});
  auto emb_step = [&] {
    opt.zero_grad();
    Tensor<float>((emb(idx) * ge).sum()).backward();
    opt.step();
  };
  std::vector<double> l, e, m, tl, te, tm;
  for (int r = 0; r < rounds; ++r) {
    l.push_back(bench::per_call_ms(lstm_step, 2, 5));
    e.push_back(bench::per_call_ms(enc_step, 2, 5));
    m.push_back(bench::per_call_ms(emb_step, 5, 5));
    if (with_torch) {
      const auto t = torch_ms(1);
      tl.push_back(t[0]);
      te.push_back(t[1]);
      tm.push_back(t[2]);
    }
  }
  const double ll = bench::median(l), ee = bench::median(e), mm = bench::median(m);
  const double tll = with_torch ? bench::median(tl) : -1, tee = with_torch ? bench::median(te) : -1;
  const double tmm = with_torch ? bench::median(tm) : -1;
  std::printf("Sequence models, forward + backward, float, 2 threads; medians of %d interleaved rounds\n", rounds);
  std::printf("%-58s %10s %14s %12s\n", "workload", "dl ms", "PyTorch ms", "dl speedup");
  std::printf("%-58s %10.2f %14.2f %11.2fx\n", "LSTM 128->256, 2 layers, batch 64, seq 100", ll, tll, tll > 0 ? tll / ll : -1);
  std::printf("%-58s %10.2f %14.2f %11.2fx\n", "TransformerEncoderLayer 256/4 heads/ff 2048, batch 32, seq 128", ee, tee,
              tee > 0 ? tee / ee : -1);
  std::printf("%-58s %10.2f %14.2f %11.2fx\n", "Embedding(1M, 64, sparse) 512x20 lookups + SparseAdam step", mm, tmm,
              tmm > 0 ? tmm / mm : -1);
  return 0;
}
