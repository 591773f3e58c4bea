// Autograd benchmark. (1) forward+backward of y = sigmoid(a*b + c) * d, loss = y.sum() on 16M
// floats with all four inputs trainable, against PyTorch (plain and jemalloc) and a hand-fused
// C++ forward + backward (one pass writing four gradients), interleaved; peak memory of the step.
// (2) per-op overhead on tiny tensors: 1000 chained ops on 16 elements, forward and backward.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <dl/tensor.hpp>

#include "common.hpp"

namespace {

// The hand-written reference: a fused AVX-512 forward pass writing y, then one backward pass
// writing the four gradients (the gradient of loss = sum(y) is 1 everywhere).
void hand_forward_backward(const float* a, const float* b, const float* c, const float* d, float* y, float* ga, float* gb,
                           float* gc, float* gd, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  auto sigmoid = [&](int64_t i) {
    const __m512 t = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), _mm512_loadu_ps(c + i));
    return _mm512_div_ps(one, _mm512_add_ps(one, bench::exp512(_mm512_sub_ps(_mm512_setzero_ps(), t))));
  };
  bench::static_halves(n, 16, [&](int64_t, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(sigmoid(i), _mm512_loadu_ps(d + i)));
  });
  bench::static_halves(n, 16, [&](int64_t, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i += 16) {
      const __m512 s = sigmoid(i);
      const __m512 t = _mm512_mul_ps(_mm512_loadu_ps(d + i), _mm512_mul_ps(s, _mm512_sub_ps(one, s)));
      _mm512_storeu_ps(ga + i, _mm512_mul_ps(t, _mm512_loadu_ps(b + i)));
      _mm512_storeu_ps(gb + i, _mm512_mul_ps(t, _mm512_loadu_ps(a + i)));
      _mm512_storeu_ps(gc + i, t);
      _mm512_storeu_ps(gd + i, s);
    }
  });
}

double rss_mib() {  // current resident set size
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return double(resident) * 4096.0 / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = int64_t(1) << 24;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  dl::Tensor<float> a = dl::randn({n}), b = dl::randn({n}), c = dl::randn({n}), d = dl::randn({n});
  for (auto* t : {&a, &b, &c, &d}) t->requires_grad_();
  const size_t un = static_cast<size_t>(n);
  std::vector<float> hy(un), hga(un), hgb(un), hgc(un), hgd(un);
  const std::string script = std::string(DL_BENCH_DIR) + "/autograd.py";

  auto zero_grads = [&] {
    for (auto* t : {&a, &b, &c, &d}) t->mutable_grad() = dl::Tensor<float>{};
  };
  auto dl_step = [&] {  // as written in the issue: y materialised, then loss = y.sum()
    zero_grads();
    dl::Tensor<float> y = dl::sigmoid(a * b + c) * d;
    y.sum().backward();
  };
  auto dl_step_fused = [&] {  // the loss straight from the expression: y is never stored
    zero_grads();
    dl::sum(dl::sigmoid(a * b + c) * d).backward();
  };

  std::vector<double> t_dl, t_fused, t_hand, t_torch, t_torch_je;
  for (int r = 0; r < rounds; ++r) {
    t_dl.push_back(bench::median_ms(5, dl_step));
    t_fused.push_back(bench::median_ms(5, dl_step_fused));
    t_hand.push_back(bench::median_ms(5, [&] {
      hand_forward_backward(a.data(), b.data(), c.data(), d.data(), hy.data(), hga.data(), hgb.data(), hgc.data(), hgd.data(), n);
    }));
    if (with_torch) {
      t_torch.push_back(bench::run_number(bench::python() + " " + script + " chain " + std::to_string(n) + " 5"));
      t_torch_je.push_back(bench::run_number(bench::python_jemalloc() + " " + script + " chain " + std::to_string(n) + " 5"));
    }
  }
  // Correctness against the hand-written gradients.
  dl_step();
  double err = 0;
  for (int64_t i = 0; i < n; i += 9973) err = std::max(err, double(std::abs(a.grad().data()[i] - hga[size_t(i)])));
  std::printf("max |dl a.grad - hand| = %.2e (sampled)\n", err);

  // Peak memory of one step, counted by the allocator (inputs are 4 x 64 MiB, held throughout).
  zero_grads();
  dl::empty_cache();
  dl::reset_peak_memory_stats();
  const auto before = dl::memory_stats();
  const double rss_before = rss_mib();
  dl_step();
  const auto after = dl::memory_stats();
  const double mib = 1 << 20, tensor_mib = double(n) * 4 / mib;
  const double peak_extra = double(after.peak_allocated_bytes - before.allocated_bytes) / mib;

  const double dl_ms = bench::median(t_dl), fused_ms = bench::median(t_fused), hand_ms = bench::median(t_hand);
  std::printf("forward+backward, y = sigmoid(a*b + c) * d, loss = y.sum(), 16M floats x 4 trainable, 2 threads\n");
  std::printf("  dl (y materialised)        %8.2f ms   dl / hand = %.2f\n", dl_ms, dl_ms / hand_ms);
  std::printf("  dl (loss = sum(expr))      %8.2f ms   dl / hand = %.2f\n", fused_ms, fused_ms / hand_ms);
  std::printf("  hand-fused C++ fwd + bwd   %8.2f ms\n", hand_ms);
  if (with_torch && bench::median(t_torch) > 0) {
    std::printf("  PyTorch                    %8.2f ms   PyTorch / dl = %.1fx\n", bench::median(t_torch), bench::median(t_torch) / dl_ms);
    std::printf("  PyTorch + jemalloc         %8.2f ms   PyTorch / dl = %.1fx\n", bench::median(t_torch_je), bench::median(t_torch_je) / dl_ms);
  }
  std::printf("peak memory of one step beyond the inputs: %.0f MiB = %.1f tensors of 64 MiB (budget: 4 grads + 1 output = 5)\n",
              peak_extra, peak_extra / tensor_mib);
  std::printf("  RSS grew by %.0f MiB during the step (process RSS %.0f MiB)\n", rss_mib() - rss_before, rss_mib());
  if (with_torch) {
    const double torch_rss = bench::run_number(bench::python() + " " + script + " chain_rss " + std::to_string(n));
    if (torch_rss > 0) std::printf("  PyTorch peak RSS growth of one step: %.0f MiB\n", torch_rss);
  }

  // Tiny tensors: per-op cost of recording and backpropagating.
  const int ops = 1000;
  dl::Tensor<float> x = dl::randn({16}).requires_grad_();
  auto fwd = [&] {
    dl::Tensor<float> y = x;
    for (int i = 0; i < ops; ++i) y = y * 1.0001f + 0.001f;
    return y;
  };
  const double tiny_fwd = bench::median_ms(21, [&] { fwd(); });
  const double tiny_fb = bench::median_ms(21, [&] {
    x.mutable_grad() = dl::Tensor<float>{};
    fwd().sum().backward();
  });
  std::printf("tiny tensors: %d chained ops on 16 floats (each op one fused node: y * 1.0001 + 0.001)\n", ops);
  std::printf("  dl       forward %6.2f us/op   forward+backward %6.2f us/op\n", tiny_fwd * 1e3 / ops, tiny_fb * 1e3 / ops);
  if (with_torch) {
    FILE* p = popen((bench::python() + " " + script + " tiny " + std::to_string(ops) + " 21 2>/dev/null").c_str(), "r");
    double tf = -1, tfb = -1;
    if (p && std::fscanf(p, "%lf %lf", &tf, &tfb) == 2)
      std::printf("  PyTorch  forward %6.2f us/op   forward+backward %6.2f us/op   (PyTorch / dl: %.1fx, %.1fx; two PyTorch ops per dl op)\n",
                  tf * 1e3 / ops, tfb * 1e3 / ops, tf / tiny_fwd, tfb / tiny_fb);
    if (p) pclose(p);
  }

  // In-place ops on views: each row of a [rows, 256] non-leaf scaled in place by a trainable vector
  // (every write rewrites the base's history; backward runs one CopySlices per row).
  const int rows = 64;
  dl::Tensor<float> base_in = dl::randn({rows, 256}).requires_grad_(), w = dl::randn({256}).requires_grad_();
  const double rows_fb = bench::median_ms(21, [&] {
    base_in.mutable_grad() = dl::Tensor<float>{};
    w.mutable_grad() = dl::Tensor<float>{};
    dl::Tensor<float> y = base_in * 1.0f;
    for (int i = 0; i < rows; ++i) y[i].mul_(w);
    y.sum().backward();
  });
  std::printf("in-place on views: %d rows of [%d, 256] scaled in place, forward+backward\n", rows, rows);
  std::printf("  dl       %8.3f ms\n", rows_fb);
  if (with_torch) {
    const double t = bench::run_number(bench::python() + " " + script + " rows " + std::to_string(rows) + " 21");
    if (t > 0) std::printf("  PyTorch  %8.3f ms   PyTorch / dl = %.1fx\n", t, t / rows_fb);
  }
}
