// GPU benchmark (issue 12): dl's side of bench/cuda.py, which runs the same workloads in PyTorch
// (eager and torch.compile) on the same GPU and prints the table with ratios. Prints one
// "name value unit" line per figure (medians over repetitions, timed with CUDA events).
//   bench_cuda            (or: python3 bench/cuda.py build/bench/bench_cuda)
#include <dl/dl.hpp>
#include <dl/cuda.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

/// Median milliseconds of f over `reps` runs (after one warm-up), timed with events on the
/// current stream.
template <class F>
double median_ms(F&& f, int reps) {
  f();
  dl::cuda::synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    dl::cuda::Event a(true), b(true);
    a.record();
    f();
    b.record();
    b.synchronize();
    t.push_back(a.elapsed_time(b));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* name, double v, const char* unit) { std::printf("%s %.4g %s\n", name, v, unit); }

}  // namespace

int main(int argc, char** argv) {
  if (!dl::cuda::is_available()) {
    std::puts("no CUDA device");
    return 77;
  }
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const dl::Device gpu("cuda:0");
  std::printf("# %s\n", dl::cuda::get_device_name().c_str());
  const int64_t big = quick ? int64_t(1) << 24 : int64_t(1) << 28;

  // Device-to-device copy: dl's generated copy kernel (clone) and cudaMemcpy, counting reads and writes.
  {
    auto x = dl::randn({big}, gpu);
    dl::Tensor<float> y = dl::empty({big}, gpu);
    const double bytes = 2.0 * double(big) * sizeof(float);
    const double ms_kernel = median_ms([&] { y.copy_(x); }, 20);
    const double ms_memcpy = median_ms([&] {
      DL_CUDA_CHECK(cudaMemcpyAsync(y.data_ptr(), x.data_ptr(), size_t(big) * 4, cudaMemcpyDeviceToDevice,
                                    dl::cuda::current_stream().handle()));
    }, 20);
    report("copy_kernel_TBps", bytes / ms_kernel / 1e9, "TB/s");
    report("copy_memcpy_TBps", bytes / ms_memcpy / 1e9, "TB/s");
  }

  // The fused forward sigmoid(a * b + c) * d: 4 reads, 1 write.
  for (int64_t n : {big, int64_t(1) << 24}) {
    auto a = dl::randn({n}, gpu), b = dl::randn({n}, gpu), c = dl::randn({n}, gpu), d = dl::randn({n}, gpu);
    dl::Tensor<float> y;
    const double ms = median_ms([&] { y = dl::sigmoid(a * b + c) * d; }, 20);
    const std::string name = "fused_forward_2^" + std::to_string(63 - __builtin_clzll(uint64_t(n))) + "_ms";
    report(name.c_str(), ms, "ms");
    report((name + "_bandwidth_TBps").c_str(), 5.0 * double(n) * 4 / ms / 1e9, "TB/s");
  }

  // Forward + backward with the 4 inputs trainable: one kernel forward, one fused backward kernel.
  for (int64_t n : {big, int64_t(1) << 24}) {
    auto a = dl::randn({n}, gpu).requires_grad_(), b = dl::randn({n}, gpu).requires_grad_();
    auto c = dl::randn({n}, gpu).requires_grad_(), d = dl::randn({n}, gpu).requires_grad_();
    const auto g = dl::ones({n}, gpu);
    const double ms = median_ms([&] {
      for (auto* t : {&a, &b, &c, &d}) t->mutable_grad() = dl::Tensor<float>{};
      dl::Tensor<float> y = dl::sigmoid(a * b + c) * d;
      y.backward(g);
    }, 10);
    const std::string name = "forward_backward_2^" + std::to_string(63 - __builtin_clzll(uint64_t(n))) + "_ms";
    report(name.c_str(), ms, "ms");
  }

  // A chain of tiny ops: per-op host overhead (launch, allocation, graph-free bookkeeping).
  {
    auto x = dl::randn({16}, gpu);
    constexpr int kOps = 1000;
    for (int w = 0; w < 100; ++w) x = x * 1.0001f;
    dl::cuda::synchronize();
    std::vector<double> per_op;
    for (int r = 0; r < 7; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kOps; ++i) x = x * 1.0001f;
      dl::cuda::synchronize();
      per_op.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kOps);
    }
    std::sort(per_op.begin(), per_op.end());
    report("tiny_op_us", per_op[per_op.size() / 2], "us");
  }

  // Reductions: a sum over 2^28 floats and row sums of a [2^14, 2^14] matrix.
  {
    auto x = dl::randn({big}, gpu);
    const double ms = median_ms([&] { (void)x.sum(); }, 20);
    report("sum_all_TBps", double(big) * 4 / ms / 1e9, "TB/s");
    const int64_t side = quick ? 4096 : 16384;
    auto m = dl::randn({side, side}, gpu);
    const double ms_rows = median_ms([&] { (void)m.sum(1); }, 20);
    report("sum_rows_TBps", double(side) * side * 4 / ms_rows / 1e9, "TB/s");
  }

  // Indexing: gather of 1024 columns per row, index_select of half the rows, argmax per row.
  {
    const int64_t rows = quick ? 4096 : 16384;
    auto m = dl::randn({rows, 4096}, gpu);
    auto idx = dl::randint(0, 4096, {rows, 1024}, gpu), sel = dl::randint(0, rows, {rows / 2}, gpu);
    report("gather_ms", median_ms([&] { (void)m.gather(1, idx); }, 20), "ms");
    report("index_select_rows_ms", median_ms([&] { (void)m.index_select(0, sel); }, 20), "ms");
    report("argmax_rows_ms", median_ms([&] { (void)dl::argmax(m, 1); }, 20), "ms");
  }

  // GEMM 8192^3: dl's matmul (cuBLAS through dl) and cuBLAS called directly, FP32 and TF32.
  {
    const int64_t n = quick ? 2048 : 8192;
    auto a = dl::randn({n, n}, gpu), b = dl::randn({n, n}, gpu);
    dl::Tensor<float> c = dl::empty({n, n}, gpu);
    const double flops = 2.0 * double(n) * n * n;
    for (bool tf32 : {false, true}) {
      dl::backends::cuda::matmul::allow_tf32 = tf32;
      const double ms_dl = median_ms([&] { c = dl::mm(a, b); }, 10);
      cublasHandle_t h = dl::cuda::detail::cublas_handle(0);
      DL_CUBLAS_CHECK(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      const float one = 1, zero = 0;
      const double ms_blas = median_ms([&] {
        DL_CUBLAS_CHECK(cublasSetStream(h, dl::cuda::current_stream().handle()));
        DL_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(n), int(n), &one, b.data_ptr(), int(n),
                                    a.data_ptr(), int(n), &zero, c.data_ptr(), int(n)));
      }, 10);
      report(tf32 ? "gemm_tf32_TFLOPs" : "gemm_fp32_TFLOPs", flops / ms_dl / 1e9, "TFLOP/s");
      report(tf32 ? "gemm_tf32_cublas_TFLOPs" : "gemm_fp32_cublas_TFLOPs", flops / ms_blas / 1e9, "TFLOP/s");
    }
    dl::backends::cuda::matmul::allow_tf32 = false;
  }
  report("raw_cudaMalloc_calls", double(dl::cuda::memory_stats().num_raw_mallocs), "calls");
  return 0;
}
