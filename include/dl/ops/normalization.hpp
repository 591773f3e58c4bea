// dl/ops/normalization.hpp — the statistics kernels of the normalization layers: per-channel
// moments of [N, C, S] data and the two per-channel sums of batch_norm's backward, each in one
// pass over memory, and per-row moments (layer_norm, group_norm, instance_norm). Sums are combined
// in double, in an order fixed by the sizes only, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../xsimd.hpp"

#include "../parallel.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// Mean and biased variance of each channel c of x viewed as contiguous [N, C, S], over the
/// N * S elements x[n, c, :]. @pre N * S > 0
template <class T>
void channel_moments(const T* x, int64_t N, int64_t C, int64_t S, double* mean, double* var);

/// Per-channel sums of batch_norm's backward over contiguous [N, C, S] data:
/// sum_g[c] = sum of g[n, c, s], dot[c] = sum of g[n, c, s] * (x[n, c, s] - mean[c]).
template <class T>
void channel_grad_sums(const T* g, const T* x, int64_t N, int64_t C, int64_t S, const double* mean, double* sum_g,
                       double* dot);

/// Mean and biased variance of each row of x viewed as contiguous [R, K]. @pre K > 0
template <class T>
void row_moments(const T* x, int64_t R, int64_t K, double* mean, double* var);

/// Per-row sums of group_norm's backward over contiguous rows [R, S] of g and x, whose means are
/// shared by groups of `rows_per_mean` consecutive rows: sum_g[r] = sum of g[r, :],
/// dot[r] = sum of g[r, :] * (x[r, :] - mean[r / rows_per_mean]).
template <class T>
void row_grad_sums(const T* g, const T* x, int64_t R, int64_t S, const double* mean, int64_t rows_per_mean, double* sum_g,
                   double* dot);

/// layer_norm's backward over contiguous rows [R, K] of g and x with per-row mean and rstd and
/// per-column weight w (null: ones): gx = rstd (g w - s1 / K - (x - mean) rstd^2 s2 / K) with
/// s1 = sum g w and s2 = sum g w (x - mean) over the row; gw = sum over rows of g (x - mean) rstd
/// and gb = sum over rows of g. Each of gx, gw, gb may be null. One pass over g and x from memory.
template <class T>
void layer_norm_backward(const T* g, const T* x, const T* w, int64_t R, int64_t K, const double* mean, const double* rstd,
                         T* gx, double* gw, double* gb);

// ------------------------------------------------------------------------------ implementation

namespace norm_kernels {

/// Elements per work item: the unit of parallel work and of partial sums.
inline constexpr int64_t kItem = 32768;
/// Channels with at least this many contiguous elements per row are reduced row by row (each row
/// read once from memory, its second pass served from L1); shorter ones column-wise.
inline constexpr int64_t kRowPathMin = 64;

/// count, mean and sum of squared deviations of a set of values (Chan et al.'s combination).
struct Moments {
  double n = 0, mean = 0, m2 = 0;
  void add(double nb, double mean_b, double m2_b) {
    const double total = n + nb;
    if (total == 0) return;
    const double delta = mean_b - mean;
    mean += delta * (nb / total);
    m2 += m2_b + delta * delta * (n * nb / total);
    n = total;
  }
};

template <class T>
T hsum(const xsimd::batch<T>& v) {
  return xsimd::hadd(v);
}

/// sum of p[0, n).
template <class T>
T sum(const T* p, int64_t n) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  int64_t i = 0;
  T s = 0;
  if (n >= W) {
    B a0(T(0)), a1(T(0)), a2(T(0)), a3(T(0));
    for (; i + 4 * W <= n; i += 4 * W) {
      a0 += B::load_unaligned(p + i);
      a1 += B::load_unaligned(p + i + W);
      a2 += B::load_unaligned(p + i + 2 * W);
      a3 += B::load_unaligned(p + i + 3 * W);
    }
    for (; i + W <= n; i += W) a0 += B::load_unaligned(p + i);
    s = hsum((a0 + a1) + (a2 + a3));
  }
  for (; i < n; ++i) s += p[i];
  return s;
}

/// (sum of d, sum of d^2) with d = p[i] - m over [0, n).
template <class T>
void deviations(const T* p, int64_t n, T m, T& sd, T& sq) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  int64_t i = 0;
  sd = sq = 0;
  if (n >= W) {
    const B mb(m);
    B d0(T(0)), d1(T(0)), q0(T(0)), q1(T(0));
    for (; i + 2 * W <= n; i += 2 * W) {
      const B a = B::load_unaligned(p + i) - mb, b = B::load_unaligned(p + i + W) - mb;
      d0 += a;
      d1 += b;
      q0 = xsimd::fma(a, a, q0);
      q1 = xsimd::fma(b, b, q1);
    }
    for (; i + W <= n; i += W) {
      const B a = B::load_unaligned(p + i) - mb;
      d0 += a;
      q0 = xsimd::fma(a, a, q0);
    }
    sd = hsum(d0 + d1);
    sq = hsum(q0 + q1);
  }
  for (; i < n; ++i) {
    const T d = p[i] - m;
    sd += d;
    sq += d * d;
  }
}

/// (sum of g, sum of g * (x - m)) over [0, n).
template <class T>
void grad_dot(const T* g, const T* x, int64_t n, T m, T& sg, T& sd) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  int64_t i = 0;
  sg = sd = 0;
  if (n >= W) {
    const B mb(m);
    B g0(T(0)), g1(T(0)), d0(T(0)), d1(T(0));
    for (; i + 2 * W <= n; i += 2 * W) {
      const B ga = B::load_unaligned(g + i), gb = B::load_unaligned(g + i + W);
      g0 += ga;
      g1 += gb;
      d0 = xsimd::fma(ga, B::load_unaligned(x + i) - mb, d0);
      d1 = xsimd::fma(gb, B::load_unaligned(x + i + W) - mb, d1);
    }
    for (; i + W <= n; i += W) {
      const B ga = B::load_unaligned(g + i);
      g0 += ga;
      d0 = xsimd::fma(ga, B::load_unaligned(x + i) - mb, d0);
    }
    sg = hsum(g0 + g1);
    sd = hsum(d0 + d1);
  }
  for (; i < n; ++i) {
    sg += g[i];
    sd += g[i] * (x[i] - m);
  }
}

/// Moments of one contiguous row: its mean first, then the deviations from it (in cache).
template <class T>
Moments row(const T* p, int64_t n) {
  const double m = double(sum(p, n)) / double(n);
  T sd, sq;
  deviations(p, n, T(m), sd, sq);
  // Deviations were taken from m rounded to T; correct for the rounding (exactly in real numbers).
  const double d = double(sd) / double(n);
  return {double(n), double(T(m)) + d, std::max(0.0, double(sq) - double(sd) * d)};
}

/// Work items of the row path: (channel, block of rows), rows per block fixed by the sizes.
inline int64_t rows_per_item(int64_t S) { return std::max<int64_t>(1, kItem / std::max<int64_t>(S, 1)); }

}  // namespace norm_kernels

template <class T>
void channel_moments(const T* x, int64_t N, int64_t C, int64_t S, double* mean, double* var) {
  namespace k = norm_kernels;
  if (C == 0) return;
  if (S >= k::kRowPathMin) {
    const int64_t rpi = k::rows_per_item(S), nb = (N + rpi - 1) / rpi;
    std::vector<k::Moments> part(size_t(C * nb));
    parallel_for(0, C * nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const int64_t c = w / nb, n0 = (w % nb) * rpi, n1 = std::min(N, n0 + rpi);
        k::Moments acc;
        for (int64_t n = n0; n < n1; ++n) {
          const k::Moments r = k::row(x + (n * C + c) * S, S);
          acc.add(r.n, r.mean, r.m2);
        }
        part[size_t(w)] = acc;
      }
    });
    for (int64_t c = 0; c < C; ++c) {
      k::Moments acc;
      for (int64_t blk = 0; blk < nb; ++blk) {
        const k::Moments& p = part[size_t(c * nb + blk)];
        acc.add(p.n, p.mean, p.m2);
      }
      mean[c] = acc.mean;
      var[c] = acc.m2 / acc.n;
    }
    return;
  }
  // Column path (short rows, e.g. [N, C]): per position sums of values shifted by the channel's
  // first element, accumulated in double over blocks of rows.
  const int64_t P = C * S, rpi = std::max<int64_t>(1, k::kItem / P), nb = (N + rpi - 1) / rpi;
  std::vector<double> shift(static_cast<size_t>(P)), s1(size_t(nb * P)), s2(size_t(nb * P));
  for (int64_t p = 0; p < P; ++p) shift[size_t(p)] = double(x[p - p % S]);
  parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      double* a1 = s1.data() + blk * P;
      double* a2 = s2.data() + blk * P;
      const double* k0 = shift.data();
      for (int64_t n = blk * rpi; n < std::min(N, (blk + 1) * rpi); ++n) {
        const T* r = x + n * P;
        for (int64_t p = 0; p < P; ++p) {
          const double d = double(r[p]) - k0[p];
          a1[p] += d;
          a2[p] += d * d;
        }
      }
    }
  });
  const double count = double(N * S);
  for (int64_t c = 0; c < C; ++c) {
    double t1 = 0, t2 = 0;
    for (int64_t blk = 0; blk < nb; ++blk)
      for (int64_t s = 0; s < S; ++s) {
        t1 += s1[size_t(blk * P + c * S + s)];
        t2 += s2[size_t(blk * P + c * S + s)];
      }
    const double m = t1 / count;
    mean[c] = shift[size_t(c * S)] + m;
    var[c] = std::max(0.0, t2 / count - m * m);
  }
}

template <class T>
void channel_grad_sums(const T* g, const T* x, int64_t N, int64_t C, int64_t S, const double* mean, double* sum_g,
                       double* dot) {
  namespace k = norm_kernels;
  if (C == 0) return;
  if (S >= k::kRowPathMin) {
    const int64_t rpi = k::rows_per_item(S), nb = (N + rpi - 1) / rpi;
    std::vector<double> pg(size_t(C * nb)), pd(size_t(C * nb));
    parallel_for(0, C * nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const int64_t c = w / nb, n0 = (w % nb) * rpi, n1 = std::min(N, n0 + rpi);
        const T m = T(mean[c]);
        double ag = 0, ad = 0;
        for (int64_t n = n0; n < n1; ++n) {
          T sg, sd;
          k::grad_dot(g + (n * C + c) * S, x + (n * C + c) * S, S, m, sg, sd);
          ag += double(sg);
          ad += double(sd);
        }
        pg[size_t(w)] = ag;
        pd[size_t(w)] = ad;
      }
    });
    for (int64_t c = 0; c < C; ++c) {
      double ag = 0, ad = 0;
      for (int64_t blk = 0; blk < nb; ++blk) {
        ag += pg[size_t(c * nb + blk)];
        ad += pd[size_t(c * nb + blk)];
      }
      // The rows used mean rounded to T: add back sum_g * (T(mean) - mean).
      sum_g[c] = ag;
      dot[c] = ad + ag * (double(T(mean[c])) - mean[c]);
    }
    return;
  }
  const int64_t P = C * S, rpi = std::max<int64_t>(1, k::kItem / P), nb = (N + rpi - 1) / rpi;
  std::vector<double> m_at(static_cast<size_t>(P)), s1(size_t(nb * P)), s2(size_t(nb * P));
  for (int64_t p = 0; p < P; ++p) m_at[size_t(p)] = mean[p / S];
  parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      double* a1 = s1.data() + blk * P;
      double* a2 = s2.data() + blk * P;
      const double* m0 = m_at.data();
      for (int64_t n = blk * rpi; n < std::min(N, (blk + 1) * rpi); ++n) {
        const T* gr = g + n * P;
        const T* xr = x + n * P;
        for (int64_t p = 0; p < P; ++p) {
          const double gv = double(gr[p]);
          a1[p] += gv;
          a2[p] += gv * (double(xr[p]) - m0[p]);
        }
      }
    }
  });
  for (int64_t c = 0; c < C; ++c) {
    double t1 = 0, t2 = 0;
    for (int64_t blk = 0; blk < nb; ++blk)
      for (int64_t s = 0; s < S; ++s) {
        t1 += s1[size_t(blk * P + c * S + s)];
        t2 += s2[size_t(blk * P + c * S + s)];
      }
    sum_g[c] = t1;
    dot[c] = t2;
  }
}

template <class T>
void row_moments(const T* x, int64_t R, int64_t K, double* mean, double* var) {
  namespace k = norm_kernels;
  parallel_for(0, R, std::max<int64_t>(1, 16384 / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const k::Moments m = k::row(x + r * K, K);
      mean[r] = m.mean;
      var[r] = m.m2 / m.n;
    }
  });
}

template <class T>
void row_grad_sums(const T* g, const T* x, int64_t R, int64_t S, const double* mean, int64_t rows_per_mean, double* sum_g,
                   double* dot) {
  parallel_for(0, R, std::max<int64_t>(1, 16384 / std::max<int64_t>(S, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const double m = mean[r / rows_per_mean];
      T sg, sd;
      norm_kernels::grad_dot(g + r * S, x + r * S, S, T(m), sg, sd);
      sum_g[r] = double(sg);
      dot[r] = double(sd) + double(sg) * (double(T(m)) - m);  // the rows used m rounded to T
    }
  });
}

template <class T>
void layer_norm_backward(const T* g, const T* x, const T* w, int64_t R, int64_t K, const double* mean, const double* rstd,
                         T* gx, double* gw, double* gb) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  std::vector<T> ones;
  if (!w) {
    ones.assign(size_t(K), T(1));
    w = ones.data();
  }
  const bool affine = gw || gb;
  // Rows in blocks fixed by the sizes; each block sums its rows' weight and bias gradients into
  // its own buffer, and the buffers are added in block order.
  const int64_t rpb = std::max<int64_t>(1, norm_kernels::kItem / std::max<int64_t>(K, 1)), nb = (R + rpb - 1) / rpb;
  std::vector<T> part(affine ? size_t(nb * 2 * K) : 0);
  parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      T* pw = affine ? part.data() + blk * 2 * K : nullptr;
      T* pb = affine ? pw + K : nullptr;
      if (affine) std::fill(pw, pw + 2 * K, T(0));
      for (int64_t r = blk * rpb; r < std::min(R, (blk + 1) * rpb); ++r) {
        const T* gr = g + r * K;
        const T* xr = x + r * K;
        const T m = T(mean[r]), rs = T(rstd[r]);
        const B mb(m), rsb(rs);
        if (gx) {
          // s1 = sum g w, s2 = sum g w (x - m)
          int64_t k = 0;
          B a1(T(0)), a2(T(0));
          for (; k + W <= K; k += W) {
            const B gw_ = B::load_unaligned(gr + k) * B::load_unaligned(w + k);
            a1 += gw_;
            a2 = xsimd::fma(gw_, B::load_unaligned(xr + k) - mb, a2);
          }
          double s1 = double(norm_kernels::hsum(a1)), s2 = double(norm_kernels::hsum(a2));
          for (; k < K; ++k) {
            s1 += double(gr[k] * w[k]);
            s2 += double(gr[k] * w[k] * (xr[k] - m));
          }
          s2 -= s1 * (mean[r] - double(m));  // deviations were taken from m rounded to T
          const double rd = rstd[r];
          const T cb = T(-rd * rd * rd * s2 / double(K));
          const T cc = T(-rd * s1 / double(K) - double(cb) * (mean[r] - double(m)));
          const B cbb(cb), ccb(cc);
          T* o = gx + r * K;
          k = 0;
          for (; k + W <= K; k += W) {
            const B gw_ = B::load_unaligned(gr + k) * B::load_unaligned(w + k);
            xsimd::fma(gw_, rsb, xsimd::fma(B::load_unaligned(xr + k) - mb, cbb, ccb)).store_unaligned(o + k);
          }
          for (; k < K; ++k) o[k] = gr[k] * w[k] * rs + ((xr[k] - m) * cb + cc);
        }
        if (affine) {
          int64_t k = 0;
          for (; k + W <= K; k += W) {
            const B gv = B::load_unaligned(gr + k);
            xsimd::fma(gv, (B::load_unaligned(xr + k) - mb) * rsb, B::load_unaligned(pw + k)).store_unaligned(pw + k);
            (B::load_unaligned(pb + k) + gv).store_unaligned(pb + k);
          }
          for (; k < K; ++k) {
            pw[k] += gr[k] * ((xr[k] - m) * rs);
            pb[k] += gr[k];
          }
        }
      }
    }
  });
  if (!affine) return;
  for (int64_t k = 0; k < K; ++k) {
    double sw = 0, sb = 0;
    for (int64_t blk = 0; blk < nb; ++blk) {
      sw += double(part[size_t(blk * 2 * K + k)]);
      sb += double(part[size_t(blk * 2 * K + K + k)]);
    }
    if (gw) gw[k] = sw;
    if (gb) gb[k] = sb;
  }
}

}  // namespace dl::detail
