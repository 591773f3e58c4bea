// dl/ops/gemm.hpp — the CPU matrix-product engine behind matmul, convolution and linear layers:
// a BLIS-style GEMM (packed panels, a register-blocked xsimd micro-kernel, cache blocking, OpenMP
// threads) with a fused epilogue (bias + activation on the hot tile), and the optional CBLAS backend.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../allocator.hpp"
#include "../config.hpp"
#include "../error.hpp"
#include "../expr/simd.hpp"
#include "../parallel.hpp"

#if defined(DL_USE_CBLAS) && DL_USE_CBLAS
#include <cblas.h>
#define DL_HAS_CBLAS 1
#else
#define DL_HAS_CBLAS 0
#endif

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// Which implementation runs the large matrix products (mm, bmm, conv, linear ...).
enum class GemmBackend {
  automatic,  ///< CBLAS for large products when dl was built with one, else the built-in GEMM
  builtin,    ///< always the built-in GEMM
  blas,       ///< CBLAS for every product it can take (throws if dl was built without CBLAS)
};

/// Selects the GEMM backend for the whole process. Results agree either way up to rounding.
/// Default: the built-in GEMM, which is as fast as OpenBLAS here and shares dl's OpenMP threads;
/// `automatic` when dl was configured with -Dblas=openblas explicitly. (OpenBLAS's own thread
/// pool spins after each call and fights dl's threads: an MLP training step took 4.4 ms with it
/// against 0.94 ms with the built-in GEMM on 2 cores.)
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();
/// True when dl was compiled with a CBLAS backend (meson -Dblas=auto finding OpenBLAS, or -Dblas=openblas).
constexpr bool has_cblas() { return DL_HAS_CBLAS; }

namespace detail {

/// A read-only strided matrix view: element (i, j) is data[i * rs + j * cs]. Transposed operands
/// are just swapped strides; broadcast rows or columns have stride 0.
template <class T>
struct MatrixRef {
  const T* data = nullptr;
  int64_t rs = 0;
  int64_t cs = 0;
  T operator()(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
  MatrixRef t() const { return {data, cs, rs}; }
};

/// The activation of an epilogue that does nothing.
struct Identity {
  template <class X>
  DL_HD constexpr X operator()(const X& x) const { return x; }
};

/// What is applied to each output tile of C = alpha * A @ B + beta * C while it is still in cache:
/// C = act(C + bias_scale * bias), with bias any broadcast matrix (a per-column vector for Linear,
/// a per-row vector for convolution channels, or a full matrix for addmm).
template <class T, class Act = Identity>
struct Epilogue {
  MatrixRef<T> bias{};
  T bias_scale = T(1);
  Act act{};

  static constexpr bool has_act = !std::is_same_v<Act, Identity>;
  bool active() const { return bias.data != nullptr || has_act; }
  /// Applies the epilogue to rows [i0, i0 + m) x columns [j0, j0 + n) of C.
  void apply(T* c, int64_t ldc, int64_t i0, int64_t j0, int64_t m, int64_t n) const;
};

/// C (M x N, row stride ldc, unit column stride) = epilogue(alpha * A @ B + beta * C), A: M x K,
/// B: K x N, any strides. beta == 0 never reads C (NaN in C does not propagate). Runs on up to
/// `threads` threads (0: dl::get_num_threads()), serially inside a parallel region.
template <class T, class Ep = Epilogue<T>>
void gemm(int64_t M, int64_t N, int64_t K, T alpha, MatrixRef<T> A, MatrixRef<T> B, T beta, T* C, int64_t ldc,
          const Ep& ep = {}, int threads = 0);

/// The built-in GEMM over custom packing functors, for operands that are not matrices in memory
/// (implicit im2col in convolution). PackA(i0, mr, k0, kc, dst) writes dst[k * mr + i] = A(i0 + i,
/// k0 + k) for i < mr; PackB(j0, nr, k0, kc, dst) writes dst[k * NR + j] = B(k0 + k, j0 + j) for
/// j < nr and zeros up to NR (gemm_nr<T>).
template <class T, class PackA, class PackB, class Ep = Epilogue<T>>
void gemm_packed(int64_t M, int64_t N, int64_t K, T alpha, const PackA& pack_a, const PackB& pack_b, T beta, T* C,
                 int64_t ldc, const Ep& ep = {}, int threads = 0);

/// Panel width (columns of B per micro-kernel call) of the built-in GEMM for element type T.
template <class T>
constexpr int gemm_nr();

}  // namespace detail

// ------------------------------------------------------------------------------ implementation

namespace detail {

inline std::atomic<int>& gemm_backend_slot() {
#if defined(DL_PREFER_CBLAS) && DL_PREFER_CBLAS
  static std::atomic<int> b{int(GemmBackend::automatic)};
#else
  static std::atomic<int> b{int(GemmBackend::builtin)};
#endif
  return b;
}

/// Pins a SIMD value in a register: without it GCC re-loads operands used by several FMAs from
/// memory (folding the load into each FMA), which makes load-heavy kernels load-bound.
template <class V>
DL_INLINE void keep_in_register(V& v) {
#if defined(__GNUC__) && defined(__x86_64__)
  asm("" : "+v"(v.data));
#else
  (void)v;
#endif
}

/// Blocking parameters of the built-in GEMM. The micro-kernel holds an MR x NR tile of C in
/// registers (NR = two SIMD vectors, MR rows broadcast from A): 12 x 32 floats = 24 zmm registers
/// with AVX-512 (32 registers), 6 x 16 with AVX2 (16 registers). KC keeps an MR x KC panel of A in
/// L1, KC x NC of B in L2 per thread; MC x KC of A (shared by the threads) lives in L3.
template <class T>
struct GemmConfig {
  using B = xsimd::batch<T>;
  static constexpr int W = int(B::size);
#if defined(__AVX512F__) || defined(__aarch64__)
  static constexpr int kRegisters = 32;
#else
  static constexpr int kRegisters = 16;
#endif
  static constexpr int NV = 2;
  static constexpr int NR = NV * W;
  static constexpr int MR = kRegisters >= 32 ? 12 : 6;
  static constexpr int64_t KC = sizeof(T) == 4 ? 256 : 192;
  static constexpr int64_t NC = (int64_t(512) << 10) / (KC * int64_t(sizeof(T))) / NR * NR;
  static constexpr int64_t MC = 4092 / MR * MR;
  /// Products smaller than this (multiply-adds) per thread run on fewer threads.
  static constexpr int64_t kMinWorkPerThread = int64_t(1) << 18;
};

template <class T>
constexpr int gemm_nr() { return GemmConfig<T>::NR; }

/// The micro-kernel: C[0:mr, 0:nr] = alpha * Ap @ Bp + beta * C over kc steps, where Ap holds
/// MR_ values per k (one panel of A) and Bp NR values per k: a packed panel (b + k * NR), or with
/// kRows a row of memory read in place (b + off[k]), for operands whose rows are already
/// contiguous (wide-row convolution). Columns past nr are computed and never stored.
template <class T, int MR_, bool kRows>
void micro_kernel(int64_t kc, const T* __restrict a, const T* __restrict b, const int64_t* __restrict off, T* c,
                  int64_t ldc, T alpha, T beta, int nr) {
  using Cfg = GemmConfig<T>;
  using B = typename Cfg::B;
  constexpr int W = Cfg::W, NV = Cfg::NV, NR = Cfg::NR;
  B acc[MR_][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR_; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = B(T(0));
  for (int64_t k = 0; k < kc; ++k) {
    B bv[NV];
    const T* bk = kRows ? b + off[k] : b;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = kRows ? B::load_unaligned(bk + v * W) : B::load_aligned(bk + v * W);
#pragma GCC unroll 16
    for (int i = 0; i < MR_; ++i) {
      const B ai(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = xsimd::fma(ai, bv[v], acc[i][v]);
    }
    a += MR_;
    if constexpr (!kRows) b += NR;
  }
  const B va(alpha);
  if (nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR_; ++i) {
      T* p = c + i * ldc;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        B r = acc[i][v] * va;
        if (beta != T(0)) r = xsimd::fma(B(beta), B::load_unaligned(p + v * W), r);
        r.store_unaligned(p + v * W);
      }
    }
  } else {  // a partial panel: through a small buffer, so no write goes past column nr
    alignas(64) T tile[MR_ * NR];
#pragma GCC unroll 16
    for (int i = 0; i < MR_; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) (acc[i][v] * va).store_aligned(tile + i * NR + v * W);
    for (int i = 0; i < MR_; ++i) {
      T* p = c + i * ldc;
      if (beta == T(0))
        for (int j = 0; j < nr; ++j) p[j] = tile[i * NR + j];
      else
        for (int j = 0; j < nr; ++j) p[j] = tile[i * NR + j] + beta * p[j];
    }
  }
}

template <class T>
using MicroKernel = void (*)(int64_t, const T*, const T*, const int64_t*, T*, int64_t, T, T, int);

/// kernels[mr] handles a panel of mr rows (1 <= mr <= MR): edge panels run a smaller kernel
/// instead of multiplying zero padding.
template <class T, bool kRows>
const MicroKernel<T>* micro_kernels() {
  static constexpr auto table = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<MicroKernel<T>, sizeof...(I) + 1>{nullptr, &micro_kernel<T, I + 1, kRows>...};
  }(std::make_integer_sequence<int, GemmConfig<T>::MR>{});
  return table.data();
}

/// A PackB functor whose operand rows are contiguous in memory says so with `direct_rows`: the
/// driver then skips packing B and the kernel reads row k at rows.base + j0 + rows.off[k].
template <class P>
concept direct_rows_packer = requires(const P& p) {
  p.base;
  p.off;
  requires P::direct_rows;
};

template <class T, class Act>
void Epilogue<T, Act>::apply(T* c, int64_t ldc, int64_t i0, int64_t j0, int64_t m, int64_t n) const {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  const B scale(bias_scale);
  for (int64_t i = 0; i < m; ++i) {
    T* p = c + (i0 + i) * ldc + j0;
    const T* brow = bias.data ? bias.data + (i0 + i) * bias.rs + j0 * bias.cs : nullptr;
    int64_t j = 0;
    if (!brow || bias.cs == 0 || bias.cs == 1) {
      const B bconst(brow && bias.cs == 0 ? bias_scale * brow[0] : T(0));
      for (; j + W <= n; j += W) {
        B v = B::load_unaligned(p + j);
        if (brow) v = bias.cs == 1 ? xsimd::fma(scale, B::load_unaligned(brow + j), v) : v + bconst;
        if constexpr (has_act) v = act(v);
        v.store_unaligned(p + j);
      }
    }
    for (; j < n; ++j) {
      T v = p[j];
      if (brow) v += bias_scale * brow[j * bias.cs];
      if constexpr (has_act) v = act(v);
      p[j] = v;
    }
  }
}

/// Packs an MR-row panel of a strided matrix: dst[k * mr + i] = A(i0 + i, k0 + k).
template <class T>
void pack_a_panel(const MatrixRef<T>& A, int64_t i0, int mr, int64_t k0, int64_t kc, T* __restrict dst) {
  const T* src = A.data + i0 * A.rs + k0 * A.cs;
  if (A.rs == 1) {  // column-major A (a transposed view): each k is mr contiguous values
    for (int64_t k = 0; k < kc; ++k, dst += mr) {
      const T* s = src + k * A.cs;
      for (int i = 0; i < mr; ++i) dst[i] = s[i];
    }
  } else if (A.cs == 1) {  // row-major A: a transpose, done in blocks of 8 k so each row is read in runs
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8, dst += 8 * mr)
      for (int i = 0; i < mr; ++i) {
        const T* s = src + i * A.rs + k;
#pragma GCC unroll 8
        for (int kk = 0; kk < 8; ++kk) dst[kk * mr + i] = s[kk];
      }
    for (; k < kc; ++k, dst += mr)
      for (int i = 0; i < mr; ++i) dst[i] = src[i * A.rs + k];
  } else {
    for (int64_t k = 0; k < kc; ++k, dst += mr)
      for (int i = 0; i < mr; ++i) dst[i] = src[i * A.rs + k * A.cs];
  }
}

/// Packs an NR-column panel of a strided matrix: dst[k * NR + j] = B(k0 + k, j0 + j), zero padded.
template <class T>
void pack_b_panel(const MatrixRef<T>& Bm, int64_t j0, int nr, int64_t k0, int64_t kc, T* __restrict dst) {
  using Cfg = GemmConfig<T>;
  using V = typename Cfg::B;
  constexpr int NR = Cfg::NR, W = Cfg::W;
  const T* src = Bm.data + k0 * Bm.rs + j0 * Bm.cs;
  if (Bm.cs == 1 && nr == NR) {  // row-major B: each k is NR contiguous values
    for (int64_t k = 0; k < kc; ++k, dst += NR) {
      const T* s = src + k * Bm.rs;
#pragma GCC unroll 4
      for (int v = 0; v < NR / W; ++v) V::load_unaligned(s + v * W).store_aligned(dst + v * W);
    }
    return;
  }
  if (nr < NR)
    for (int64_t k = 0; k < kc; ++k) std::fill(dst + k * NR + nr, dst + (k + 1) * NR, T(0));
  if (Bm.rs == 1) {  // column-major B (e.g. W.t() in Linear): a transpose, in blocks of 8 k
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8)
      for (int j = 0; j < nr; ++j) {
        const T* s = src + j * Bm.cs + k;
#pragma GCC unroll 8
        for (int kk = 0; kk < 8; ++kk) dst[(k + kk) * NR + j] = s[kk];
      }
    for (; k < kc; ++k)
      for (int j = 0; j < nr; ++j) dst[k * NR + j] = src[j * Bm.cs + k];
  } else {
    for (int64_t k = 0; k < kc; ++k)
      for (int j = 0; j < nr; ++j) dst[k * NR + j] = src[k * Bm.rs + j * Bm.cs];
  }
}

/// A matrix packed once into the A-panel layout of the built-in GEMM (the panel of rows i0..i0+mr
/// holds K * mr values, k-major), for operands multiplied many times (convolution weights, once
/// per image): the driver reads its panels in place (`panel`) instead of packing A.
template <class T>
class PrepackedA {
 public:
  static constexpr bool direct_panels = true;
  PrepackedA(MatrixRef<T> A, int64_t M, int64_t K) : K_(K), data_(size_t(M * K)) {
    constexpr int MR = GemmConfig<T>::MR;
    for (int64_t i0 = 0; i0 < M; i0 += MR) pack_a_panel(A, i0, int(std::min<int64_t>(MR, M - i0)), 0, K, data_.data() + i0 * K);
  }
  /// The packed rows [i0, i0 + mr) from depth k0 on.
  const T* panel(int64_t i0, int mr, int64_t k0) const { return data_.data() + i0 * K_ + k0 * mr; }

 private:
  int64_t K_;
  std::vector<T> data_;
};

/// A PackA functor that holds its panels packed already (PrepackedA).
template <class P>
concept direct_panels_packer = requires { requires P::direct_panels; };

/// Scratch memory from the caching allocator, returned on scope exit (steady state: no page faults).
class ScratchBuffer {
 public:
  explicit ScratchBuffer(size_t bytes) : p_(bytes ? CpuAllocator::instance().allocate(bytes, &size_) : nullptr) {}
  ~ScratchBuffer() {
    if (p_) CpuAllocator::instance().deallocate(p_, size_);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  size_t size_ = 0;
  void* p_;
};

/// [begin, end) of part `idx` when n items are split into `parts` nearly equal parts.
inline std::pair<int64_t, int64_t> split_range(int64_t n, int parts, int idx) {
  return {n * idx / parts, n * (idx + 1) / parts};
}

/// Threads for a product of M x N x K multiply-adds.
template <class T>
int gemm_thread_count(int64_t M, int64_t N, int64_t K, int threads) {
  using Cfg = GemmConfig<T>;
#if !defined(_OPENMP)
  return 1;  // serial build: parallel_for runs serially too
#endif
  if (in_parallel_region()) return 1;
  int nt = threads > 0 ? threads : get_num_threads();
  const int64_t work = M * N * std::max<int64_t>(K, 1);
  const int64_t tiles = ((M + Cfg::MR - 1) / Cfg::MR) * ((N + Cfg::NR - 1) / Cfg::NR);
  nt = int(std::min<int64_t>({int64_t(nt), std::max<int64_t>(1, work / Cfg::kMinWorkPerThread), tiles}));
  return std::max(nt, 1);
}

/// C = beta * C, then the epilogue: the whole product when K == 0.
template <class T, class Ep>
void scale_and_epilogue(int64_t M, int64_t N, T beta, T* C, int64_t ldc, const Ep& ep) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
  if (ep.active()) ep.apply(C, ldc, 0, 0, M, N);
}

template <class T, class PackA, class PackB, class Ep>
void gemm_packed(int64_t M, int64_t N, int64_t K, T alpha, const PackA& pack_a, const PackB& pack_b, T beta, T* C,
                 int64_t ldc, const Ep& ep, int threads) {
  using Cfg = GemmConfig<T>;
  constexpr int MR = Cfg::MR, NR = Cfg::NR;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scale_and_epilogue(M, N, beta, C, ldc, ep);

  const int nt = gemm_thread_count<T>(M, N, K, threads);
  const int64_t mp = (M + MR - 1) / MR, np = (N + NR - 1) / NR;
  // Thread grid tm x tn: split N when it has enough panels (each thread keeps its own B block in
  // its L2), else M. Choose the grid with the smallest per-thread tile count.
  int tn = 1;
  for (int cand = nt, best = INT32_MAX; cand >= 1; --cand) {
    if (nt % cand) continue;
    const int64_t cost = ((mp + nt / cand - 1) / (nt / cand)) * ((np + cand - 1) / cand);
    if (cost < best) best = int(cost), tn = cand;
  }
  const int tm = nt / tn;

  // Blocks: MC rows of A (shared), KC deep, NCB = tn * NC columns of B per pass.
  const int64_t n_ic = (M + Cfg::MC - 1) / Cfg::MC;
  const int64_t MC = ((M + n_ic - 1) / n_ic + MR - 1) / MR * MR;
  const int64_t n_pc = (K + Cfg::KC - 1) / Cfg::KC;
  const int64_t KC = ((K + n_pc - 1) / n_pc + 7) / 8 * 8;
  const int64_t n_jc = (N + tn * Cfg::NC - 1) / (tn * Cfg::NC);
  const int64_t NCB = ((N + n_jc - 1) / n_jc + NR - 1) / NR * NR;

  // A is double buffered: a thread may pack the next A block while another still multiplies
  // with the current one, so one barrier per block suffices.
  const size_t a_elems = size_t(MC * KC) + 64 / sizeof(T);
  ScratchBuffer abuf(direct_panels_packer<PackA> ? 0 : 2 * a_elems * sizeof(T)), bbuf(direct_rows_packer<PackB> ? 0 : size_t(NCB * KC) * sizeof(T) + 64);
  T* const bp = bbuf.as<T>();
  constexpr bool direct_a = direct_panels_packer<PackA>;
  constexpr bool direct_b = direct_rows_packer<PackB>;
  const MicroKernel<T>* kernels = micro_kernels<T, direct_b>();

  auto body = [&](int tid, auto&& barrier) {
    const int ti = tid / tn, tj = tid % tn;
    int64_t block = 0;
    for (int64_t ic = 0; ic < M; ic += MC) {
      const int64_t mc = std::min(MC, M - ic), mpb = (mc + MR - 1) / MR;
      for (int64_t pc = 0; pc < K; pc += KC, ++block) {
        const int64_t kc = std::min(KC, K - pc);
        const bool first = pc == 0, last = pc + kc == K;
        T* const ap = abuf.as<T>() + (block & 1) * a_elems;
        if constexpr (!direct_a) {  // this thread's share of the A block
          const auto [p0, p1] = split_range(mpb, nt, tid);
          for (int64_t p = p0; p < p1; ++p)
            pack_a(ic + p * MR, int(std::min<int64_t>(MR, mc - p * MR)), pc, kc, ap + p * MR * kc);
        }
        for (int64_t jc = 0; jc < N; jc += NCB) {
          const int64_t ncb = std::min(NCB, N - jc), npb = (ncb + NR - 1) / NR;
          const auto [b0, b1] = split_range(npb, tn, tj);
          // The B panels of this thread's column group, shared by its tm row threads. With
          // tm == 1 they are private: the next pass may overwrite them without waiting (panels
          // sit at a fixed stride of KC, so a shorter last block never shifts into a neighbour's).
          if (tm > 1 && jc > 0 && !direct_b) barrier();
          if constexpr (!direct_b) {
            const auto [q0, q1] = split_range(b1 - b0, tm, ti);
            for (int64_t p = b0 + q0; p < b0 + q1; ++p)
              pack_b(jc + p * NR, int(std::min<int64_t>(NR, ncb - p * NR)), pc, kc, bp + p * NR * KC);
          }
          if ((tm > 1 && !direct_b) || (jc == 0 && !direct_a)) barrier();
          const auto [a0, a1] = split_range(mpb, tm, ti);
          auto tile = [&](int64_t ir, int64_t jr) {
            const int mr = int(std::min<int64_t>(MR, mc - ir * MR));
            const int nr = int(std::min<int64_t>(NR, ncb - jr * NR));
            const T* a;
            if constexpr (direct_a) a = pack_a.panel(ic + ir * MR, mr, pc);
            else a = ap + ir * MR * kc;
            T* c = C + (ic + ir * MR) * ldc + jc + jr * NR;
            if constexpr (direct_b)
              kernels[mr](kc, a, pack_b.base + jc + jr * NR, pack_b.off + pc, c, ldc, alpha, first ? beta : T(1), nr);
            else
              kernels[mr](kc, a, bp + jr * NR * KC, nullptr, c, ldc, alpha, first ? beta : T(1), nr);
            if (last && ep.active()) ep.apply(C, ldc, ic + ir * MR, jc + jr * NR, mr, nr);
          };
          if constexpr (direct_b) {
            // B read in place is not packed for the cache: keep each B panel in L1 while all the
            // A panels pass over it.
            for (int64_t jr = b0; jr < b1; ++jr)
              for (int64_t ir = a0; ir < a1; ++ir) tile(ir, jr);
          } else {
            // Packed A panels stay in L1 while the B block streams from L2.
            for (int64_t ir = a0; ir < a1; ++ir)
              for (int64_t jr = b0; jr < b1; ++jr) tile(ir, jr);
          }
        }
        // B of the next block must not overwrite panels another row thread still reads.
        if (tm > 1 && !direct_b) barrier();
      }
    }
  };

  if (nt == 1) {
    body(0, [] {});
    return;
  }
#if defined(_OPENMP)
  // Every member of the team takes part (the barriers wait for nt); when the team is busy with
  // another thread's job, the product runs serially.
  struct Ctx {
    decltype(body)& run;
    TeamBarrier barrier;
  } ctx{body, TeamBarrier(nt)};
  const auto member = [](void* p, int tid) {
    auto& c = *static_cast<Ctx*>(p);
    c.run(tid, [&c] { c.barrier.arrive_and_wait(); });
  };
  if (!ThreadTeam::instance().run(nt, member, &ctx)) gemm_packed<T>(M, N, K, alpha, pack_a, pack_b, beta, C, ldc, ep, 1);
#else
  body(0, [] {});  // without OpenMP gemm_thread_count is 1
#endif
}

#if DL_HAS_CBLAS
/// CBLAS's view of a strided operand: (transposed?, leading dimension), or false when neither
/// dimension has unit stride.
inline bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool* trans, int64_t* ld) {
  if (cols == 1) cs = 1;  // strides of size-1 dims do not matter
  if (rows == 1) rs = std::max<int64_t>(cols, 1);
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return *trans = false, *ld = rs, true;
  if (rows == 1 && cs == 1) return *trans = false, *ld = std::max<int64_t>(cols, 1), true;
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) return *trans = true, *ld = cs, true;
  if (cols == 1 && rs == 1) return *trans = true, *ld = std::max<int64_t>(rows, 1), true;
  return false;
}

template <class T>
void cblas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* c, int64_t ldc) {
  const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, TA, TB, int(M), int(N), int(K), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, TA, TB, int(M), int(N), int(K), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
#endif

/// Whether this product goes to CBLAS: large enough to amortise the call (small products are
/// faster in the built-in kernel, which also fuses the epilogue), and not inside a parallel region.
inline bool use_cblas(int64_t M, int64_t N, int64_t K) {
  const auto b = GemmBackend(gemm_backend_slot().load(std::memory_order_relaxed));
  if (!DL_HAS_CBLAS || b == GemmBackend::builtin || in_parallel_region()) return false;
  if (b == GemmBackend::blas) return true;
  return M * N * K >= int64_t(1) << 21 && std::min({M, N, K}) >= 16;
}

template <class T, class Ep>
void gemm(int64_t M, int64_t N, int64_t K, T alpha, MatrixRef<T> A, MatrixRef<T> B, T beta, T* C, int64_t ldc,
          const Ep& ep, int threads) {
  static_assert(full_float<T>, "this op's CPU kernel takes float and double tensors; float16/bfloat16 inputs: convert with .to_float() (matmul, mm, bmm, linear do this themselves)");
  if (M <= 0 || N <= 0) return;
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("dl::gemm");
  if (dl_profile_scope_) {
    dl_profile_scope_.input(Shape{M, K});
    dl_profile_scope_.input(Shape{K, N});
  }
#if DL_HAS_CBLAS
  bool ta = false, tb = false;
  int64_t lda = 0, ldb = 0;
  if (K > 0 && use_cblas(M, N, K) && blas_layout(M, K, A.rs, A.cs, &ta, &lda) &&
      blas_layout(K, N, B.rs, B.cs, &tb, &ldb) && std::max({lda, ldb, ldc, M, N, K}) < INT32_MAX) {
    const int nt = threads > 0 ? threads : get_num_threads();
    static thread_local int blas_threads = -1;
    if (blas_threads != nt) openblas_set_num_threads(blas_threads = nt);
    // A bias is written into C first, so BLAS adds the product to it (beta = 1).
    if (ep.bias.data && beta == T(0)) {
      parallel_for(0, M, std::max<int64_t>(1, 4096 / N), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = ep.bias_scale * ep.bias(i, j);
      });
      cblas_gemm(ta, tb, M, N, K, alpha, A.data, lda, B.data, ldb, T(1), C, ldc);
      if constexpr (Ep::has_act) {
        Epilogue<T, decltype(ep.act)> act_only{{}, T(1), ep.act};
        parallel_for(0, M, std::max<int64_t>(1, 4096 / N), [&](int64_t i0, int64_t i1) {
          act_only.apply(C, ldc, i0, 0, i1 - i0, N);
        });
      }
      return;
    }
    cblas_gemm(ta, tb, M, N, K, alpha, A.data, lda, B.data, ldb, beta, C, ldc);
    if (ep.active())
      parallel_for(0, M, std::max<int64_t>(1, 4096 / N), [&](int64_t i0, int64_t i1) {
        ep.apply(C, ldc, i0, 0, i1 - i0, N);
      });
    return;
  }
#endif
  using Cfg = GemmConfig<T>;
  if (2 * N < Cfg::NR && M >= 2 * Cfg::NR && K > 0 && beta == T(0)) {
    // A thin product (a classifier's 10 outputs): most lanes of an NR-wide panel would be idle.
    // C^T = B^T A^T fills them; the epilogue is elementwise, so it applies to C^T (bias transposed).
    ScratchBuffer tbuf(size_t(N * M) * sizeof(T));
    T* ct = tbuf.as<T>();
    Ep ep_t = ep;
    ep_t.bias = ep.bias.t();
    const MatrixRef<T> At = B.t(), Bt = A.t();
    gemm_packed<T>(
        N, M, K, alpha, [&At](int64_t i0, int mr, int64_t k0, int64_t kc, T* dst) { pack_a_panel(At, i0, mr, k0, kc, dst); },
        [&Bt](int64_t j0, int nr, int64_t k0, int64_t kc, T* dst) { pack_b_panel(Bt, j0, nr, k0, kc, dst); }, T(0), ct, M,
        ep_t, threads);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = ct[j * M + i];
    return;
  }
  gemm_packed<T>(
      M, N, K, alpha,
      [&A](int64_t i0, int mr, int64_t k0, int64_t kc, T* dst) { pack_a_panel(A, i0, mr, k0, kc, dst); },
      [&B](int64_t j0, int nr, int64_t k0, int64_t kc, T* dst) { pack_b_panel(B, j0, nr, k0, kc, dst); }, beta, C,
      ldc, ep, threads);
}

}  // namespace detail

inline void set_gemm_backend(GemmBackend backend) {
  DL_CHECK(backend != GemmBackend::blas || has_cblas(),
           "set_gemm_backend(blas): dl was built without a CBLAS backend (configure with meson -Dblas=openblas)");
  detail::gemm_backend_slot().store(int(backend), std::memory_order_relaxed);
}

inline GemmBackend gemm_backend() { return GemmBackend(detail::gemm_backend_slot().load(std::memory_order_relaxed)); }

}  // namespace dl

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, void dl::detail::gemm<float, dl::detail::Epilogue<float>>(int64_t, int64_t, int64_t, float,
                                                                                 dl::detail::MatrixRef<float>,
                                                                                 dl::detail::MatrixRef<float>, float, float*,
                                                                                 int64_t, const dl::detail::Epilogue<float>&, int))
DL_EXTERN_TEMPLATE(ops, void dl::detail::gemm<float, dl::detail::Epilogue<float, dl::expr::Relu>>(
                            int64_t, int64_t, int64_t, float, dl::detail::MatrixRef<float>, dl::detail::MatrixRef<float>, float,
                            float*, int64_t, const dl::detail::Epilogue<float, dl::expr::Relu>&, int))
