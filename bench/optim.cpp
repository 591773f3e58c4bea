// Optimizer-step benchmark: one Adam step (and one SGD-with-momentum step) over the parameters of
// an MLP 784-256-128-10 plus a Linear(1000, 865) (1.1M parameters in 8 tensors), in dl (the fused
// multi-tensor step: one pass per parameter, one parallel region per group), in a hand-written
// one-pass loop (the floor: each element read and written once), and in PyTorch (its default
// foreach implementation, 2 threads), interleaved round by round; medians and ratios.
//   build/bench/bench_optim [rounds] [--no-torch]
#include <cmath>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <cstdio>
#include <string>
#include <vector>

#include <dl/optim.hpp>

#include "common.hpp"

namespace {

std::vector<dl::Shape> shapes() {
  return {{256, 784}, {256}, {128, 256}, {128}, {10, 128}, {10}, {865, 1000}, {865}};
}


/// The hand-written floor: Adam (PyTorch's formula) as one AVX-512 loop per tensor (each element
/// read and written once), all tensors in one parallel job (each thread takes half of every tensor,
/// no barrier between tensors), compiled -O3 -march=native.
struct HandAdam {
  std::vector<float*> p, g, m, v;
  std::vector<int64_t> n;
  int step = 0;
  void run(float lr, float b1, float b2, float eps) {
    ++step;
    const float bc1 = 1 - std::pow(b1, float(step)), bc2 = 1 - std::pow(b2, float(step));
    const float step_size = lr / bc1, inv_bc2_sqrt = 1 / std::sqrt(bc2);
    bench::static_halves(2, 1, [&](int64_t half, int64_t, int64_t) {
      for (size_t t = 0; t < p.size(); ++t) {
        float *pp = p[t], *mm = m[t], *vv = v[t];
        const float* gg = g[t];
#if defined(__AVX512F__)
        const int64_t blocks = n[t] / 16, vec_end = blocks * 16, mid = blocks / 2;
        const __m512 w1 = _mm512_set1_ps(1 - b1), vb2 = _mm512_set1_ps(b2), w2 = _mm512_set1_ps(1 - b2);
        const __m512 ib = _mm512_set1_ps(inv_bc2_sqrt), ve = _mm512_set1_ps(eps), ss = _mm512_set1_ps(step_size);
        for (int64_t b = half == 0 ? 0 : mid; b < (half == 0 ? mid : blocks); ++b) {
          const int64_t i = b * 16;
          const __m512 gi = _mm512_loadu_ps(gg + i);
          __m512 mi = _mm512_loadu_ps(mm + i), vi = _mm512_loadu_ps(vv + i);
          mi = _mm512_fmadd_ps(_mm512_sub_ps(gi, mi), w1, mi);
          vi = _mm512_fmadd_ps(_mm512_mul_ps(gi, gi), w2, _mm512_mul_ps(vi, vb2));
          const __m512 den = _mm512_fmadd_ps(_mm512_sqrt_ps(vi), ib, ve);
          _mm512_storeu_ps(pp + i, _mm512_fnmadd_ps(_mm512_div_ps(mi, den), ss, _mm512_loadu_ps(pp + i)));
          _mm512_storeu_ps(mm + i, mi);
          _mm512_storeu_ps(vv + i, vi);
        }
#else
        const int64_t vec_end = 0;
#endif
        if (half != 1) continue;  // the tail, by one thread
        for (int64_t i = vec_end; i < n[t]; ++i) {
          const float gi = gg[i];
          mm[i] += (gi - mm[i]) * (1 - b1);
          vv[i] = vv[i] * b2 + gi * gi * (1 - b2);
          pp[i] -= mm[i] / (std::sqrt(vv[i]) * inv_bc2_sqrt + eps) * step_size;
        }
      }
    });
  }
};

std::vector<double> torch_times(const std::string& python, int rounds) {
  const std::string cmd = python + " " + std::string(DL_BENCH_DIR) + "/optim.py " + std::to_string(rounds) + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  std::vector<double> adam, sgd;
  double a = 0, b = 0;
  while (f && std::fscanf(f, "%lf %lf", &a, &b) == 2) adam.push_back(a), sgd.push_back(b);
  if (f) pclose(f);
  if (adam.empty()) return {-1, -1};
  return {bench::median(adam), bench::median(sgd)};
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  std::vector<dl::Tensor<float>> params;
  int64_t total = 0;
  for (const auto& s : shapes()) {
    params.push_back(dl::randn(s).requires_grad_());
    params.back().mutable_grad() = dl::randn(s);
    total += params.back().numel();
  }
  dl::optim::Adam adam(params, {.lr = 1e-4});
  std::vector<dl::Tensor<float>> sgd_params;
  for (const auto& p : params) {
    sgd_params.push_back(p.detach().clone().requires_grad_());
    sgd_params.back().mutable_grad() = p.grad();
  }
  dl::optim::SGD sgd(sgd_params, {.lr = 1e-4, .momentum = 0.9});
  HandAdam hand;
  std::vector<dl::Tensor<float>> keep;
  for (const auto& p : params) {
    keep.push_back(p.detach().clone());
    keep.push_back(dl::zeros(p.shape()));
    keep.push_back(dl::zeros(p.shape()));
    hand.p.push_back(keep[keep.size() - 3].data());
    hand.m.push_back(keep[keep.size() - 2].data());
    hand.v.push_back(keep.back().data());
    hand.g.push_back(p.grad().data());
    hand.n.push_back(p.numel());
  }
  std::printf("Optimizer step over %lld parameters (MLP 784-256-128-10 + Linear(1000, 865), 8 tensors), float, 2 threads;\n"
              "medians of %d interleaved rounds (ms per step)\n",
              static_cast<long long>(total), rounds);
  std::vector<double> d_adam, d_sgd, h_adam, t_adam, t_sgd;
  for (int r = 0; r < rounds; ++r) {
    d_adam.push_back(bench::per_call_ms([&] { adam.step(); }, 20, 21));
    h_adam.push_back(bench::per_call_ms([&] { hand.run(1e-4f, 0.9f, 0.999f, 1e-8f); }, 20, 21));
    d_sgd.push_back(bench::per_call_ms([&] { sgd.step(); }, 20, 21));
    if (with_torch) {
      const auto t = torch_times(bench::python(), 1);
      t_adam.push_back(t[0]);
      t_sgd.push_back(t[1]);
    }
  }
  const double da = bench::median(d_adam), ha = bench::median(h_adam), ds = bench::median(d_sgd);
  const double ta = with_torch ? bench::median(t_adam) : -1, ts = with_torch ? bench::median(t_sgd) : -1;
  std::printf("%-22s %10s %12s %10s %16s %16s\n", "step", "dl", "hand loop", "PyTorch", "dl / hand loop", "PyTorch / dl");
  std::printf("%-22s %10.3f %12.3f %10.3f %16.2f %16.2f\n", "Adam", da, ha, ta, da / ha, ta > 0 ? ta / da : -1.0);
  std::printf("%-22s %10.3f %12s %10.3f %16s %16.2f\n", "SGD momentum 0.9", ds, "-", ts, "-", ts > 0 ? ts / ds : -1.0);
  return 0;
}
