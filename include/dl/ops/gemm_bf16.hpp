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
#include <cstring>
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

#if DL_BF16_DOT_CODE
/// 16 words (lo[j], hi[j]) of two runs of n <= 16 contiguous bfloat16 values (hi may be null: zero
/// upper halves); words past n are zero.
DL_BF16_DOT_TARGET inline __m512i bf16_pairs16(const BFloat16* lo, const BFloat16* hi, int n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  const __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo));
  if (!hi) return l;
  return _mm512_or_si512(l, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi)), 16));
}

/// The word of K pair p of a run of K bfloat16 values with unit stride: elements 2p and 2p + 1
/// (zero past K). One 32-bit load where both are in range.
inline uint32_t bf16_word(const BFloat16* row, int64_t k, int64_t K) {
  if (k + 1 < K) {
    uint32_t w;
    std::memcpy(&w, row + k, sizeof w);
    return w;
  }
  return bf16_pair(row[k].bits(), 0);
}

/// dst[p * MR + i] = (A(i0 + i, k0 + 2p), A(i0 + i, k0 + 2p + 1)) for i < mr, p < kcp; elements
/// past K are zero. A row-major A (packed only when gemm_bf16 cannot read it in place: odd K, rows
/// 4 KB apart) is gathered a pair per row; a column-major one interleaves two columns in SIMD
/// lanes; any other strides element by element.
DL_BF16_DOT_TARGET inline void pack_a_bf16(const MatrixRef<BFloat16>& A, int64_t K, int64_t i0, int mr, int64_t k0,
                                           int64_t kcp, uint32_t* __restrict dst) {
  constexpr int MR = Bf16GemmConfig::MR;
  const BFloat16* src = A.data + i0 * A.rs;
  if (A.cs == 1 && A.rs < (int64_t(1) << 28)) {
    // One gather of the mr rows' words per pair; the last pair may hold a single element.
    const __mmask16 m = __mmask16((1u << mr) - 1);
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(int32_t(A.rs * int64_t(sizeof(BFloat16)))));
    const int64_t full = std::clamp<int64_t>((K - k0) / 2, 0, kcp);
    for (int64_t p = 0; p < full; ++p)
      _mm512_mask_storeu_epi32(dst + p * MR, __mmask16((1u << MR) - 1),
                               _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, rows, src + k0 + 2 * p, 1));
    for (int64_t p = full; p < kcp; ++p)
      for (int i = 0; i < mr; ++i) dst[p * MR + i] = bf16_word(src + i * A.rs, k0 + 2 * p, K);
  } else if (A.rs == 1) {
    const __mmask16 m = __mmask16((1u << MR) - 1);
    for (int64_t p = 0; p < kcp; ++p) {
      const int64_t k = k0 + 2 * p;
      const BFloat16* c0 = src + k * A.cs;
      _mm512_mask_storeu_epi32(dst + p * MR, m, bf16_pairs16(c0, k + 1 < K ? c0 + A.cs : nullptr, mr));
    }
  } else {
    for (int i = 0; i < mr; ++i) {
      const BFloat16* row = src + i * A.rs;
      for (int64_t p = 0; p < kcp; ++p) {
        const int64_t k = k0 + 2 * p;
        const uint16_t lo = row[k * A.cs].bits(), hi = k + 1 < K ? row[(k + 1) * A.cs].bits() : uint16_t(0);
        dst[p * MR + i] = bf16_pair(lo, hi);
      }
    }
  }
}

/// dst[p * NR + j] = (B(k0 + 2p, j0 + j), B(k0 + 2p + 1, j0 + j)), zero for j >= nr and past K.
/// A row-major B interleaves two rows in SIMD lanes; a column-major one is copied word by word.
DL_BF16_DOT_TARGET inline void pack_b_bf16(const MatrixRef<BFloat16>& B, int64_t K, int64_t j0, int nr, int64_t k0,
                                           int64_t kcp, uint32_t* __restrict dst) {
  constexpr int NR = Bf16GemmConfig::NR;
  static_assert(NR == 32, "pack_b_bf16 writes a panel as two 16-lane words");
  if (B.cs == 1) {
    for (int64_t p = 0; p < kcp; ++p) {
      const int64_t k = k0 + 2 * p;
      const BFloat16* r0 = B.data + k * B.rs + j0;
      const BFloat16* r1 = k + 1 < K ? r0 + B.rs : nullptr;
      _mm512_store_si512(dst + p * NR, bf16_pairs16(r0, r1, std::min(nr, 16)));
      _mm512_store_si512(dst + p * NR + 16, nr > 16 ? bf16_pairs16(r0 + 16, r1 ? r1 + 16 : nullptr, nr - 16)
                                                    : _mm512_setzero_si512());
    }
  } else if (B.rs == 1) {
    for (int j = 0; j < nr; ++j) {
      const BFloat16* col = B.data + (j0 + j) * B.cs;
      for (int64_t p = 0; p < kcp; ++p) dst[p * NR + j] = bf16_word(col, k0 + 2 * p, K);
    }
    for (int64_t p = 0; p < kcp; ++p)
      for (int j = nr; j < NR; ++j) dst[p * NR + j] = 0;
  } else {
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
}
#endif

#if DL_BF16_DOT_CODE
/// The bfloat16 bit patterns (in 32-bit lanes) of 16 floats: round to nearest even, NaN kept quiet
/// — the rounding of BFloat16(float) and expr::bfloat16_lanes. Spelled again in intrinsics because
/// this code runs under DL_BF16_DOT_TARGET in builds without -mavx512f, where xsimd's batch (and so
/// expr's helper) is narrower than a zmm register.
DL_BF16_DOT_TARGET inline __m512i bf16_round16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
}

/// Where a micro-kernel's tile goes: float sums into c (row stride ldc), or, for the last K block,
/// rounded to bfloat16 into out (row stride ldo) after adding bias (nr values; may be null).
struct Bf16TileOut {
  float* c;
  int64_t ldc;
  BFloat16* out;  // null: store the float sums
  int64_t ldo;
  const BFloat16* bias;
};

/// The tile's C[0:MR_, 0:nr] (+)= A @ Bp over kcp pairs: `accumulate` adds the float sums already
/// in c (an earlier K block). A is a packed panel (Direct = false; lda unused) or, Direct, the
/// rows of a row-major A read in place: row i's pair p is the word a[i * lda + p] (lda = the row
/// stride in words), which spares packing A — a tenth of a 256 x 256 product.
template <int MR_, bool Direct>
DL_BF16_DOT_TARGET void bf16_micro_kernel(int64_t kcp, const uint32_t* __restrict a, int64_t lda,
                                          const uint32_t* __restrict b, const Bf16TileOut& t, bool accumulate, int nr) {
  constexpr int MR = Bf16GemmConfig::MR;
  __m512 acc[MR_][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR_; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  // Direct: rows 3g + r at base[g] + r * lda (four base pointers and one stride in registers).
  const uint32_t* base[(MR_ + 2) / 3];
  if constexpr (Direct)
    for (int g = 0; g < (MR_ + 2) / 3; ++g) base[g] = a + 3 * g * lda;
  for (int64_t p = 0; p < kcp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR_; ++i) {
      uint32_t w;
      if constexpr (Direct)
        std::memcpy(&w, base[i / 3] + (i % 3) * lda + p, sizeof w);  // (a pair of bfloat16 in A's rows)
      else
        w = a[i];
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(int(w));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    if constexpr (!Direct) a += MR;
    b += 32;
  }
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xffff) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (t.out && t.bias) {
    bias0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m0, t.bias)), 16));
    bias1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m1, t.bias + 16)), 16));
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR_; ++i) {
    float* p = t.c + i * t.ldc;
    __m512 r0 = acc[i][0], r1 = acc[i][1];
    if (accumulate) {
      r0 = _mm512_add_ps(r0, _mm512_maskz_loadu_ps(m0, p));
      r1 = _mm512_add_ps(r1, _mm512_maskz_loadu_ps(m1, p + 16));
    }
    if (t.out) {
      BFloat16* o = t.out + i * t.ldo;
      _mm512_mask_cvtepi32_storeu_epi16(o, m0, bf16_round16(t.bias ? _mm512_add_ps(r0, bias0) : r0));
      _mm512_mask_cvtepi32_storeu_epi16(o + 16, m1, bf16_round16(t.bias ? _mm512_add_ps(r1, bias1) : r1));
    } else {
      _mm512_mask_storeu_ps(p, m0, r0);
      _mm512_mask_storeu_ps(p + 16, m1, r1);
    }
  }
}

using Bf16MicroKernel = void (*)(int64_t, const uint32_t*, int64_t, const uint32_t*, const Bf16TileOut&, bool, int);

/// kernels[mr] for a panel of mr rows (1 <= mr <= MR). A template, as gemm_bf16: a program that
/// multiplies no bfloat16 never instantiates the kernels.
template <bool Direct, int MR = Bf16GemmConfig::MR>
const Bf16MicroKernel* bf16_micro_kernels() {
  static constexpr auto table = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<Bf16MicroKernel, sizeof...(I) + 1>{nullptr, &bf16_micro_kernel<I + 1, Direct>...};
  }(std::make_integer_sequence<int, MR>{});
  return table.data();
}
#endif

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
  // A row-major A with whole pairs is read in place by the micro-kernel (no A panels), unless its
  // rows are a multiple of 4 KB apart: then 12 rows' lines share one L1 set (8 ways) and packing wins.
  const bool direct = A.cs == 1 && K % 2 == 0 && A.rs % 2 == 0 && reinterpret_cast<uintptr_t>(A.data) % 4 == 0 &&
                      (A.rs * int64_t(sizeof(T))) % 4096 != 0;
  // Float sums between K blocks only where there are several.
  ScratchBuffer cbuf(n_pc > 1 ? size_t(M * N) * sizeof(float) : 0), bbuf(size_t(NCB * KCP) * sizeof(uint32_t) + 64),
      abuf(direct ? 0 : size_t(mp * MR * KCP) * sizeof(uint32_t) + 64);
  float* const C = n_pc > 1 ? cbuf.as<float>() : nullptr;
  uint32_t* const bp = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(bbuf.as<char>()) + 63) & ~uintptr_t(63));
  uint32_t* const ap = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(abuf.as<char>()) + 63) & ~uintptr_t(63));
  const Bf16MicroKernel* kernels = direct ? bf16_micro_kernels<true>() : bf16_micro_kernels<false>();
  for (int64_t jc = 0; jc < N; jc += NCB) {
    const int64_t ncb = std::min(NCB, N - jc), npan = (ncb + NR - 1) / NR;
    for (int64_t pc = 0; pc < KP; pc += KCP) {
      const int64_t kcp = std::min(KCP, KP - pc);
      const bool accumulate = pc > 0, last = pc + kcp == KP;
      // Every B panel and every A panel of the block, packed once in one job (a tile's chunk used
      // to pack its row panel again: 4 times per row panel at 256 x 256).
      parallel_for(0, npan + (direct ? 0 : mp), 1, [&](int64_t q0, int64_t q1) {
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
          const int64_t j = jc + q * NR;
          const Bf16TileOut to{C ? C + ir * MR * N + j : nullptr, N, last ? out + ir * MR * ldo + j : nullptr, ldo,
                               bias ? bias + j : nullptr};
          const uint32_t* a = direct ? reinterpret_cast<const uint32_t*>(A.data + ir * MR * A.rs + 2 * pc) : ap + ir * MR * KCP;
          kernels[mr](kcp, a, A.rs / 2, bp + q * NR * KCP, to, accumulate, nr);
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
