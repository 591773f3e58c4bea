// Cross-entropy benchmark: forward, and forward + backward, of F::cross_entropy on class indices
// (the fused kernel: one pass over the logits each way) against PyTorch's F.cross_entropy with 2
// threads, interleaved round by round (plain and jemalloc-backed PyTorch); medians and ratios.
// Workloads: a small classifier batch [128, 10], an ImageNet-sized head [256, 1000] (with and
// without label smoothing) and a segmentation map [8, 21, 32, 32].
//   build/bench/bench_cross_entropy [rounds] [--no-torch]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <dl/nn/functional/loss.hpp>

#include "common.hpp"

namespace F = dl::nn::functional;

namespace {

struct Workload {
  int64_t n, c, spatial;
  double smoothing;
};


/// Runs the PyTorch twin for `rounds` rounds; returns its (forward, forward+backward) medians.
std::vector<double> torch_times(const std::string& python, const Workload& w, int rounds) {
  const std::string cmd = python + " " + std::string(DL_BENCH_DIR) + "/cross_entropy.py " + std::to_string(w.n) + " " +
                          std::to_string(w.c) + " " + std::to_string(w.spatial) + " " + std::to_string(w.smoothing) + " " +
                          std::to_string(rounds) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::vector<double> fwd, both;
  double a = 0, b = 0;
  while (p && std::fscanf(p, "%lf %lf", &a, &b) == 2) {
    fwd.push_back(a);
    both.push_back(b);
  }
  if (p) pclose(p);
  if (fwd.empty()) return {-1, -1};
  return {bench::median(fwd), bench::median(both)};
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool with_torch = !(argc > 2 && std::string(argv[2]) == "--no-torch");
  dl::set_num_threads(2);
  dl::manual_seed(0);
  const std::vector<Workload> workloads{{128, 10, 0, 0.0}, {256, 1000, 0, 0.0}, {256, 1000, 0, 0.1}, {8, 21, 32, 0.0}};
  std::printf("F::cross_entropy on class indices, mean reduction, float, 2 threads; medians of %d interleaved rounds (us per call)\n",
              rounds);
  std::printf("%-26s %10s %10s %10s %8s %8s | %10s %10s %10s %8s %8s\n", "logits", "dl fwd", "torch", "torch+je", "ratio", "ratio_je",
              "dl f+b", "torch", "torch+je", "ratio", "ratio_je");
  for (const Workload& w : workloads) {
    const dl::Shape shape = w.spatial ? dl::Shape{w.n, w.c, w.spatial, w.spatial} : dl::Shape{w.n, w.c};
    dl::Tensor<float> x = dl::randn(shape);
    x.requires_grad_();
    const dl::Tensor<int64_t> t = dl::randint(0, w.c, w.spatial ? dl::Shape{w.n, w.spatial, w.spatial} : dl::Shape{w.n});
    const int64_t calls = std::max<int64_t>(1, 200000 / x.numel());
    auto fwd = [&] {
      dl::NoGradGuard no_grad;
      (void)F::cross_entropy(x, t, {.label_smoothing = w.smoothing});
    };
    auto fwd_bwd = [&] {
      x.mutable_grad() = dl::Tensor<float>{};
      F::cross_entropy(x, t, {.label_smoothing = w.smoothing}).backward();
    };
    std::vector<double> d_f, d_fb, t_f, t_fb, j_f, j_fb;
    for (int r = 0; r < rounds; ++r) {
      d_f.push_back(1e3 * bench::per_call_ms(fwd, calls));
      d_fb.push_back(1e3 * bench::per_call_ms(fwd_bwd, calls));
      if (with_torch) {
        const auto pt = torch_times(bench::python(), w, 1), je = torch_times(bench::python_jemalloc(), w, 1);
        t_f.push_back(pt[0]);
        t_fb.push_back(pt[1]);
        j_f.push_back(je[0]);
        j_fb.push_back(je[1]);
      }
    }
    char name[64];
    std::snprintf(name, sizeof name, "[%lld, %lld%s]%s", (long long)w.n, (long long)w.c,
                  w.spatial ? (", " + std::to_string(w.spatial) + ", " + std::to_string(w.spatial)).c_str() : "",
                  w.smoothing > 0 ? " ls=0.1" : "");
    const double df = bench::median(d_f), dfb = bench::median(d_fb);
    const double tf = with_torch ? bench::median(t_f) : -1, tfb = with_torch ? bench::median(t_fb) : -1;
    const double jf = with_torch ? bench::median(j_f) : -1, jfb = with_torch ? bench::median(j_fb) : -1;
    std::printf("%-26s %10.2f %10.2f %10.2f %7.2fx %7.2fx | %10.2f %10.2f %10.2f %7.2fx %7.2fx\n", name, df, tf, jf, tf / df, jf / df,
                dfb, tfb, jfb, tfb / dfb, jfb / dfb);
  }
  std::printf("ratio = PyTorch time / dl time (above 1: dl is faster); torch+je: PyTorch with jemalloc\n");
}
