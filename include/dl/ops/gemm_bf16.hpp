#pragma once
// dl/ops/gemm_bf16.hpp — bfloat16 matrix products on the CPU's bfloat16 dot-product instruction
// (AVX512-BF16's vdpbf16ps: each float lane adds a[2i] * b[2i] + a[2i + 1] * b[2i + 1], the
// products exact), detected at run time so one binary serves CPUs with and without it (AMD Zen 4/5,
// Intel Cooper Lake, Sapphire Rapids and later have it). Accumulation is in float and the result is
// rounded to bfloat16 once, as PyTorch's oneDNN kernels do; like them, the instruction treats
// subnormal inputs as zero and flushes subnormal sums (below 1.2e-38).
//
// Layout: K is taken in pairs. A packed A panel holds, for each pair p, MR 32-bit words (row i's
// elements 2p and 2p + 1); a packed B panel holds, for each pair, 32 words (column j's elements
// 2p and 2p + 1) — two zmm registers. The micro-kernel keeps an mr x 32 tile of C in 2 * mr float
// registers and broadcasts one word of A per row.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "../half.hpp"
#include "../parallel.hpp"
#include "gemm.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DL_BF16_DOT_CODE 1
#define DL_BF16_DOT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#else
#define DL_BF16_DOT_CODE 0
#define DL_BF16_DOT_TARGET
#endif

namespace dl::detail {

/// The choice set_bf16_dot makes: -1 automatic, 0 off, 1 on (tests run both paths).
inline std::atomic<int>& bf16_dot_switch() {
  static std::atomic<int> mode{-1};
  return mode;
}

inline bool cpu_has_bf16_dot() {
#if DL_BF16_DOT_CODE
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

#if DL_BF16_DOT_CODE
/// Seconds for `n` rounds of 12 independent vdpbf16ps (dot = true) or float FMAs on this core.
DL_BF16_DOT_TARGET inline double time_dot_or_fma(bool dot, int64_t n) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512i x = _mm512_set1_epi32(0x3f803f80);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < n; ++k) {
    __asm__ volatile("" : "+v"(x));  // one live input: the loop is not folded away
    if (dot) {
#pragma GCC unroll 12
      for (auto& a : acc) a = _mm512_dpbf16_ps(a, (__m512bh)x, (__m512bh)x);
    } else {
#pragma GCC unroll 12
      for (auto& a : acc) a = _mm512_fmadd_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(x), a);
    }
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
#endif

/// Whether the dot-product instruction multiplies faster than float FMAs on this CPU, measured once
/// (about 0.5 ms): it does twice the work per instruction, but CPUs issue it at different rates —
/// on the Intel Xeon (Sapphire Rapids) these machines run on, one every 2 cycles against two FMAs
/// per cycle (86 against 176 GFLOP/s per core), so widening to float's GEMM is faster there. The
/// environment variable DL_BF16_DOT=1 / =0 overrides the measurement.
inline bool bf16_dot_pays() {
#if DL_BF16_DOT_CODE
  static const bool pays = [] {
    if (!cpu_has_bf16_dot()) return false;
    if (const char* e = std::getenv("DL_BF16_DOT"); e && *e) return e[0] != '0';
    double dot = 1e30, fma = 1e30;
    for (int r = 0; r < 3; ++r) {
      dot = std::min(dot, time_dot_or_fma(true, 4096));
      fma = std::min(fma, time_dot_or_fma(false, 4096));
    }
    // Per instruction: 32 multiply-adds against 16; the widening path also converts its operands,
    // so the dot product is taken from a rate 1.25 times float's.
    return 32.0 / dot > 1.25 * 16.0 / fma;
  }();
  return pays;
#else
  return false;
#endif
}

/// Whether bfloat16 CPU products run on the dot-product instruction: the CPU has it and it was
/// switched on, or it pays (bf16_dot_pays) and was not switched off.
inline bool bf16_dot_enabled() {
  if (!cpu_has_bf16_dot()) return false;
  const int mode = bf16_dot_switch().load(std::memory_order_relaxed);
  return mode < 0 ? bf16_dot_pays() : mode == 1;
}

struct Bf16GemmConfig {
  static constexpr int MR = 12;         // rows of C per micro-kernel (24 accumulators of 32 zmm)
  static constexpr int NR = 32;         // columns of C per micro-kernel (two zmm of floats)
  static constexpr int64_t KCP = 256;   // k pairs per block: an A panel of 12 KB stays in L1
  static constexpr int64_t NC = 512;    // columns per block: a B block of 512 KB stays in L2
};

/// The 32-bit word of a pair (lo = element 2p, hi = element 2p + 1) of bfloat16 bit patterns.
inline uint32_t bf16_pair(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

/// dst[p * MR + i] = (A(i0 + i, k0 + 2p), A(i0 + i, k0 + 2p + 1)) for i < mr, p < kcp; elements
/// past K are zero.
inline void pack_a_bf16(const MatrixRef<BFloat16>& A, int64_t K, int64_t i0, int mr, int64_t k0, int64_t kcp,
                        uint32_t* __restrict dst) {
  constexpr int MR = Bf16GemmConfig::MR;
  const BFloat16* src = A.data + i0 * A.rs;
  for (int i = 0; i < mr; ++i) {
    const BFloat16* row = src + i * A.rs;
    for (int64_t p = 0; p < kcp; ++p) {
      const int64_t k = k0 + 2 * p;
      const uint16_t lo = row[k * A.cs].bits(), hi = k + 1 < K ? row[(k + 1) * A.cs].bits() : uint16_t(0);
      dst[p * MR + i] = bf16_pair(lo, hi);
    }
  }
}

/// dst[p * NR + j] = (B(k0 + 2p, j0 + j), B(k0 + 2p + 1, j0 + j)), zero for j >= nr and past K.
inline void pack_b_bf16(const MatrixRef<BFloat16>& B, int64_t K, int64_t j0, int nr, int64_t k0, int64_t kcp,
                        uint32_t* __restrict dst) {
  constexpr int NR = Bf16GemmConfig::NR;
  for (int64_t p = 0; p < kcp; ++p) {
    const int64_t k = k0 + 2 * p;
    const BFloat16* r0 = B.data + k * B.rs + j0 * B.cs;
    uint32_t* d = dst + p * NR;
    if (k + 1 < K) {
      const BFloat16* r1 = r0 + B.rs;
      for (int j = 0; j < nr; ++j) d[j] = bf16_pair(r0[j * B.cs].bits(), r1[j * B.cs].bits());
    } else {
      for (int j = 0; j < nr; ++j) d[j] = bf16_pair(r0[j * B.cs].bits(), 0);
    }
    for (int j = nr; j < NR; ++j) d[j] = 0;
  }
}

#if DL_BF16_DOT_CODE
/// C[0:MR_, 0:nr] (+)= Ap @ Bp over kcp pairs: `accumulate` adds to C (a later K block).
template <int MR_>
DL_BF16_DOT_TARGET void bf16_micro_kernel(int64_t kcp, const uint32_t* __restrict a, const uint32_t* __restrict b,
                                          float* c, int64_t ldc, bool accumulate, int nr) {
  constexpr int MR = Bf16GemmConfig::MR;
  __m512 acc[MR_][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR_; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kcp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR_; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(int(a[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += MR;
    b += 32;
  }
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xffff) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
#pragma GCC unroll 12
  for (int i = 0; i < MR_; ++i) {
    float* p = c + i * ldc;
    __m512 r0 = acc[i][0], r1 = acc[i][1];
    if (accumulate) {
      r0 = _mm512_add_ps(r0, _mm512_maskz_loadu_ps(m0, p));
      r1 = _mm512_add_ps(r1, _mm512_maskz_loadu_ps(m1, p + 16));
    }
    _mm512_mask_storeu_ps(p, m0, r0);
    _mm512_mask_storeu_ps(p + 16, m1, r1);
  }
}

using Bf16MicroKernel = void (*)(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool, int);

/// kernels[mr] for a panel of mr rows (1 <= mr <= MR). A template, as gemm_bf16: a program that
/// multiplies no bfloat16 never instantiates the kernels.
template <int MR = Bf16GemmConfig::MR>
const Bf16MicroKernel* bf16_micro_kernels() {
  static constexpr auto table = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<Bf16MicroKernel, sizeof...(I) + 1>{nullptr, &bf16_micro_kernel<I + 1>...};
  }(std::make_integer_sequence<int, MR>{});
  return table.data();
}
#endif

/// d[i, j] = round(s[i, j] + bias[j]) for an mr x nr tile of float sums (row stride lds) into
/// bfloat16 (row stride ldd); bias may be null. Rounded in SIMD lanes (a scalar rounding loop was a
/// quarter of a 256 x 256 product).
template <class T>
void round_tile(const float* s, int64_t lds, int mr, int nr, const T* bias, T* d, int64_t ldd) {
  for (int i = 0; i < mr; ++i, s += lds, d += ldd) {
    int j = 0;
#if !defined(__CUDACC__)  // nvcc's host pass has no SIMD lanes (expr/simd.hpp): the scalar loop
    using V = xsimd::batch<float>;
    constexpr int W = int(V::size);
    for (; j + W <= nr; j += W) {
      V v = V::load_unaligned(s + j);
      if (bias) v += expr::widen_lanes<T>(bias + j);
      expr::narrow_lanes<T>(d + j, v);
    }
#endif
    for (; j < nr; ++j) d[j] = T(s[j] + (bias ? float(bias[j]) : 0.0f));
  }
}

/// out (M x N bfloat16, row stride ldo, unit column stride) = round(A @ B + bias) with A: M x K and
/// B: K x N bfloat16 of any strides, accumulated in float; `bias` (N values, one per column, added
/// in float before the rounding, as PyTorch's addmm) may be null. @pre cpu_has_bf16_dot(). Runs on dl's
/// threads (serially inside a parallel region). A template (T is BFloat16) rather than an inline
/// function: g++ instantiates every template an inline function's body names, in every translation
/// unit that includes the header, whether or not it is called (+150 MB and +20% compile time for the
/// CNN sample in compiled mode when this was an inline function).
template <class T>
  requires std::same_as<T, BFloat16>
void gemm_bf16(int64_t M, int64_t N, int64_t K, MatrixRef<T> A, MatrixRef<T> B, T* out, int64_t ldo,
               const T* bias = nullptr) {
#if DL_BF16_DOT_CODE
  using Cfg = Bf16GemmConfig;
  constexpr int MR = Cfg::MR, NR = Cfg::NR;
  DL_CHECK(cpu_has_bf16_dot(), "internal: gemm_bf16 on a CPU without AVX512-BF16");
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) out[i * ldo + j] = bias ? bias[j] : BFloat16(0.0f);
    return;
  }
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("dl::gemm_bf16");
  const int64_t KP = (K + 1) / 2, mp = (M + MR - 1) / MR;
  const int64_t n_pc = (KP + Cfg::KCP - 1) / Cfg::KCP;
  const int64_t KCP = (KP + n_pc - 1) / n_pc;  // equal blocks
  const int64_t NCB = std::min<int64_t>(Cfg::NC, (N + NR - 1) / NR * NR);
  ScratchBuffer cbuf(size_t(M * N) * sizeof(float)), bbuf(size_t(NCB * KCP) * sizeof(uint32_t) + 64),
      abuf(size_t(mp * MR * KCP) * sizeof(uint32_t) + 64);
  float* const C = cbuf.as<float>();
  uint32_t* const bp = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(bbuf.as<char>()) + 63) & ~uintptr_t(63));
  uint32_t* const ap = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(abuf.as<char>()) + 63) & ~uintptr_t(63));
  const Bf16MicroKernel* kernels = bf16_micro_kernels();
  for (int64_t jc = 0; jc < N; jc += NCB) {
    const int64_t ncb = std::min(NCB, N - jc), npan = (ncb + NR - 1) / NR;
    for (int64_t pc = 0; pc < KP; pc += KCP) {
      const int64_t kcp = std::min(KCP, KP - pc);
      const bool accumulate = pc > 0, last = pc + kcp == KP;
      // Every B panel and every A panel of the block, packed once in one job (a tile's chunk used
      // to pack its row panel again: 4 times per row panel at 256 x 256).
      parallel_for(0, npan + mp, 1, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          if (q < npan) {
            pack_b_bf16(B, K, jc + q * NR, int(std::min<int64_t>(NR, ncb - q * NR)), 2 * pc, kcp, bp + q * NR * KCP);
          } else {
            const int64_t ir = q - npan;
            pack_a_bf16(A, K, ir * MR, int(std::min<int64_t>(MR, M - ir * MR)), 2 * pc, kcp, ap + ir * MR * KCP);
          }
        }
      });
      const int64_t tile_work = int64_t(MR) * NR * 2 * kcp;
      parallel_for(0, mp * npan, std::max<int64_t>(1, (int64_t(1) << 18) / tile_work), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t ir = t / npan, q = t % npan;
          const int mr = int(std::min<int64_t>(MR, M - ir * MR)), nr = int(std::min<int64_t>(NR, ncb - q * NR));
          float* c = C + ir * MR * N + jc + q * NR;
          kernels[mr](kcp, ap + ir * MR * KCP, bp + q * NR * KCP, c, N, accumulate, nr);
          if (last) round_tile(c, N, mr, nr, bias ? bias + jc + q * NR : nullptr, out + ir * MR * ldo + jc + q * NR, ldo);
        }
      });
    }
  }
#else
  (void)M, (void)N, (void)K, (void)A, (void)B, (void)out, (void)ldo, (void)bias;
  DL_CHECK(false, "internal: gemm_bf16 without AVX512-BF16 code");
#endif
}

}  // namespace dl::detail

namespace dl {

/// How bfloat16 matrix products (mm, bmm, matmul, linear) on the CPU multiply: `automatic` (the
/// default) uses the CPU's bfloat16 dot-product instruction (AVX512-BF16) where it has one and it
/// is faster than widening to float (measured once per process; DL_BF16_DOT=1 / =0 in the
/// environment decides instead), `on` wherever the CPU has it, `off` always widens to float. The
/// results agree to bfloat16 rounding.
enum class Bf16Dot { automatic, on, off };

/// Sets the bfloat16 product path for the whole process.
inline void set_bf16_dot(Bf16Dot mode) {
  detail::bf16_dot_switch().store(mode == Bf16Dot::automatic ? -1 : mode == Bf16Dot::on ? 1 : 0, std::memory_order_relaxed);
}

/// Whether bfloat16 products on the CPU run on the dot-product instruction now.
inline bool bf16_dot_enabled() { return detail::bf16_dot_enabled(); }

}  // namespace dl
