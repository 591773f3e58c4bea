// dl/cuda/random.hpp — random fills drawn on the GPU (nvcc only): the same Philox counters, words
// and conversions as the CPU code (dl/random.hpp, dl/creation.hpp, dl/ops/dropout.hpp), so a seed
// gives the same tensor on both; one thread per Philox block. <dl/cuda.hpp> installs it as
// DeviceBackend::philox.
#pragma once

#if !defined(__CUDACC__)
#error "dl/cuda/random.hpp holds CUDA kernels: include it only in translation units compiled by nvcc"
#endif

#include "../random.hpp"
#include "kernels.hpp"

namespace dl::cuda::detail {

using ::dl::detail::Philox;
using ::dl::detail::RandomKind;

struct PhiloxFill {
  uint64_t seed, first;
  int64_t n;
  double a, b;
  int64_t i;
  uint64_t c;
};

template <class T>
__device__ void normal_pair(T* p, int64_t i, int64_t n, double u1, double u2, double mean, double std) {
  // Box-Muller in double, as fill_normal.
  const double r = ::sqrt(-2.0 * ::log(1.0 - u1)), th = 2.0 * 3.14159265358979323846 * u2;
  p[2 * i] = T(mean + std * r * ::cos(th));
  if (2 * i + 1 < n) p[2 * i + 1] = T(mean + std * r * ::sin(th));
}

template <RandomKind K, class T>
__global__ void __launch_bounds__(kThreads) philox_kernel(PhiloxFill f, uint64_t blocks, T* p) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t blk = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; blk < blocks; blk += stride) {
    if constexpr (K == RandomKind::KeepMask) {
      // Element 64 g + 16 w + l reads word w of block 16 g + l (keep_mask_group).
      const auto w = Philox::generate(f.seed, f.first + blk);
      const int64_t g = int64_t(blk / 16), l = int64_t(blk % 16);
      for (int k = 0; k < 4; ++k) {
        const int64_t e = 64 * g + 16 * k + l;
        if (e < f.n) p[e] = w[size_t(k)] < uint32_t(f.c) ? T(f.a) : T(0);
      }
    } else {
      const auto w = Philox::generate(f.seed, f.first + blk);
      const int64_t b = int64_t(blk);
      if constexpr (K == RandomKind::Uniform) {
        const double range = f.b - f.a;
        if constexpr (std::is_same_v<T, float>) {
          for (int k = 0; k < 4; ++k)
            if (b * 4 + k < f.n) p[b * 4 + k] = float(f.a + range * ::dl::detail::uniform_float(w[size_t(k)]));
        } else {
          for (int k = 0; k < 2; ++k)
            if (b * 2 + k < f.n) p[b * 2 + k] = T(f.a + range * ::dl::detail::uniform_double(w[size_t(2 * k)], w[size_t(2 * k + 1)]));
        }
      } else if constexpr (K == RandomKind::Normal) {
        const int64_t pairs = (f.n + 1) / 2;
        if constexpr (std::is_same_v<T, float>) {
          for (int k = 0; k < 2; ++k)
            if (b * 2 + k < pairs)
              normal_pair(p, b * 2 + k, f.n, ::dl::detail::uniform_float(w[size_t(2 * k)]),
                          ::dl::detail::uniform_float(w[size_t(2 * k + 1)]), f.a, f.b);
        } else {
          if (b < pairs)
            normal_pair(p, b, f.n, ::dl::detail::uniform_double(w[0], w[1]), ::dl::detail::uniform_double(w[2], w[3]), f.a, f.b);
        }
      } else {  // Int: low + r % range, r from two words
        for (int k = 0; k < 2; ++k)
          if (b * 2 + k < f.n) {
            const uint64_t r = (uint64_t(w[size_t(2 * k)]) << 32) | w[size_t(2 * k + 1)];
            p[b * 2 + k] = T(f.i + int64_t(r % f.c));
          }
      }
    }
  }
}

inline void philox_fill_device(int kind, ScalarType dtype, int device, uint64_t seed, uint64_t first, int64_t n, double a,
                               double b, int64_t i, uint64_t c, void* out) {
  if (n <= 0) return;
  const DeviceGuard guard(device);
  const cudaStream_t s = current_stream(device).handle();
  const auto k = RandomKind(kind);
  const uint64_t blocks = ::dl::detail::philox_blocks(k, dtype == ScalarType::Float, n);
  const PhiloxFill f{seed, first, n, a, b, i, c};
  const unsigned grid = grid_for(int64_t(blocks));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(out);
    switch (k) {
      case RandomKind::Uniform:
      case RandomKind::Normal:
        if constexpr (floating_scalar<T>) {
          if (k == RandomKind::Uniform) philox_kernel<RandomKind::Uniform, T><<<grid, kThreads, 0, s>>>(f, blocks, p);
          else philox_kernel<RandomKind::Normal, T><<<grid, kThreads, 0, s>>>(f, blocks, p);
        }
        break;
      case RandomKind::Int:
        if constexpr (!std::is_same_v<T, bool>) philox_kernel<RandomKind::Int, T><<<grid, kThreads, 0, s>>>(f, blocks, p);
        break;
      case RandomKind::KeepMask:
        philox_kernel<RandomKind::KeepMask, T><<<grid, kThreads, 0, s>>>(f, blocks, p);
        break;
    }
  };
  with_dtype(dtype, run);
  check_launch("a random fill (Philox)");
}

inline bool install_random_hook() {
  ::dl::detail::cuda_backend().philox = &philox_fill_device;
  return true;
}
inline const bool random_hook_installed = install_random_hook();

}  // namespace dl::cuda::detail
