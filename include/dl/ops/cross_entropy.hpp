// dl/ops/cross_entropy.hpp — the fused class-index losses. Cross entropy reads each row of logits
// once (log-softmax, the NLL term, label smoothing, class weights and ignore_index together) and
// its backward writes (softmax - smoothed one-hot) * weight * g / denominator in one pass; NLL reads
// one element per row. Rows are the (N, d1..dk) positions: SIMD along contiguous classes for
// [N, C], across positions for [N, C, d1..dk].
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_backward.hpp"
#include "softmax.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// How per-position losses are combined: kept, averaged over the summed target weights, summed.
enum class ClassReduction : uint8_t { none, mean, sum };

struct ClassLossParams {
  int64_t ignore_index = -100;
  double label_smoothing = 0;  ///< cross entropy only, in [0, 1]
  ClassReduction reduction = ClassReduction::mean;
};

/// Cross entropy (Softmax = true: x holds logits) or NLL (Softmax = false: x holds
/// log-probabilities) of x [N, C, d1..dk] or [C] against class indices `target` [N, d1..dk] or []
/// (shapes checked by the caller); weight [C] or undefined. A target outside [0, C) that is not
/// ignore_index throws "Target 12 is out of bounds.". Returns the target-shaped losses (none) or a
/// 0-d tensor, recorded for autograd with respect to x. Under create_graph the backward is a
/// differentiable composition (softmax and products), so double backward works.
template <bool Softmax, class T>
Tensor<T> class_loss_op(const Tensor<T>& x, const Tensor<int64_t>& target, const Tensor<T>& weight, const ClassLossParams& p);

// ------------------------------------------------------------------------------ implementation

/// x seen as [O, C, I] (class dim 1, or 0 for a 1-d input) and the constants of the loss.
template <class T>
struct ClassLoss {
  int64_t O = 1, C = 1, I = 1;
  const T* w = nullptr;  ///< class weights or null
  T keep = 1;            ///< 1 - label_smoothing
  T eps_c = 0;           ///< label_smoothing / C
  T wsum = 0;            ///< sum of the class weights (C without weights)
  int64_t ignore = -100;

  int64_t positions() const { return O * I; }
  T weight(int64_t c) const { return w ? w[c] : T(1); }
  /// The target at position p, checked; -1 when ignored.
  int64_t target(const int64_t* t, int64_t pos) const {
    const int64_t c = t[pos];
    if (c == ignore) return -1;
    DL_CHECK(c >= 0 && c < C, "Target ", c, " is out of bounds.");
    return c;
  }
};

template <class T>
ClassLoss<T> class_loss_setup(const Tensor<T>& x, const Tensor<T>& w, const ClassLossParams& p) {
  ClassLoss<T> L;
  const int cd = x.dim() == 1 ? 0 : 1;
  const RowGeometry g = row_geometry(x.shape(), cd);
  L.O = g.outer;
  L.C = g.rows;
  L.I = g.inner;
  L.w = w.defined() ? w.data() : nullptr;
  L.keep = T(1 - p.label_smoothing);
  L.eps_c = L.C ? T(p.label_smoothing / double(L.C)) : T(0);
  L.ignore = p.ignore_index;
  double s = 0;
  for (int64_t c = 0; c < L.C; ++c) s += double(L.weight(c));
  L.wsum = T(s);
  return L;
}

/// log-sum-exp of a contiguous row of C logits; with `smooth`, also sum_c w_c x_c into sx.
template <class T>
DL_INLINE T logsumexp_row(const T* __restrict x, int64_t C, const T* __restrict w, bool smooth, T& sx) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const int64_t full = C / W * W, rest = C - full;
  B bm(kNegInf<T>);
  for (int64_t j = 0; j < full; j += W) bm = xsimd::max(bm, B::load_unaligned(x + j));
  if (rest) bm = xsimd::max(bm, partial_batch<T>(rest, kNegInf<T>, [&](int64_t l) { return x[full + l]; }));
  const T m = hmax(bm);
  const B vm(m);
  B bs(T(0)), bx(T(0));
  for (int64_t j = 0; j < full; j += W) {
    const B v = B::load_unaligned(x + j);
    bs += xsimd::exp(v - vm);
    if (smooth) bx = w ? xsimd::fma(v, B::load_unaligned(w + j), bx) : bx + v;
  }
  if (rest) {
    const B e = xsimd::exp(partial_batch<T>(rest, kNegInf<T>, [&](int64_t l) { return x[full + l]; }) - vm);
    bs += xsimd::select(first_lanes<T>(rest), e, B(T(0)));
    if (smooth) {
      const B v = partial_batch<T>(rest, T(0), [&](int64_t l) { return x[full + l]; });
      bx = w ? xsimd::fma(v, partial_batch<T>(rest, T(0), [&](int64_t l) { return w[full + l]; }), bx) : bx + v;
    }
  }
  sx = xsimd::hadd(bx);
  return m + std::log(xsimd::hadd(bs));
}

/// The loss at one position from its log-sum-exp, the target logit and sum_c w_c x_c.
template <class T>
DL_INLINE T ce_value(const ClassLoss<T>& L, int64_t t, T lse, T xt, T sx) {
  const T nll = -L.weight(t) * (xt - lse);
  return L.eps_c != T(0) ? L.keep * nll + L.eps_c * (lse * L.wsum - sx) : nll;
}

/// Forward of the W rows [o0, o0 + W), one per lane.
template <class T>
DL_INLINE void ce_forward_lanes(const ClassLoss<T>& L, const T* x, const int64_t* t, int64_t o0, T* loss, T* lse) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const int64_t C = L.C;
  const T* base = x + o0 * C;
  const auto idx = lane_rows<T>(C);
  B m(kNegInf<T>);
  for (int64_t c = 0; c < C; ++c) m = xsimd::max(m, gather_lanes<T>(base + c, idx));
  B s(T(0)), sx(T(0));
  for (int64_t c = 0; c < C; ++c) {
    const B v = gather_lanes<T>(base + c, idx);
    s += xsimd::exp(v - m);
    if (L.eps_c != T(0)) sx = xsimd::fma(v, B(L.weight(c)), sx);
  }
  const B l = m + xsimd::log(s);
  l.store_unaligned(lse + o0);
  alignas(64) T lb[W], sxb[W];
  l.store_aligned(lb);
  sx.store_aligned(sxb);
  for (int64_t k = 0; k < W; ++k) {
    const int64_t c = L.target(t, o0 + k);
    loss[o0 + k] = c < 0 ? T(0) : ce_value(L, c, lb[k], base[k * C + c], sxb[k]);
  }
}

/// Forward: per-position losses into `loss`, log-sum-exps into `lse` (cross entropy only).
template <bool Softmax, class T>
void class_loss_forward(const ClassLoss<T>& L, const T* x, const int64_t* t, T* loss, T* lse) {
  const int64_t O = L.O, C = L.C, I = L.I;
  const bool smooth = L.eps_c != T(0);
  if constexpr (!Softmax) {
    parallel_for(0, O * I, 4096, [&](int64_t b, int64_t e) {
      for (int64_t pos = b; pos < e; ++pos) {
        const int64_t c = L.target(t, pos);
        const int64_t o = pos / I, i = pos % I;
        loss[pos] = c < 0 ? T(0) : -L.weight(c) * x[(o * C + c) * I + i];
      }
    });
    return;
  }
  if (I == 1) {
    for_row_blocks<T>(O, C, [&](int64_t o0, bool lanes) {
      if (lanes) return ce_forward_lanes(L, x, t, o0, loss, lse);
      const T* row = x + o0 * C;
      T sx = 0;
      lse[o0] = logsumexp_row(row, C, L.w, smooth, sx);
      const int64_t c = L.target(t, o0);
      loss[o0] = c < 0 ? T(0) : ce_value(L, c, lse[o0], row[c], sx);
    });
    return;
  }
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const int64_t nb = (I + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, O * nb, std::max<int64_t>(1, 16384 / std::max<int64_t>(C * std::min(I, kColumnBlock), 1)), [&](int64_t b, int64_t e) {
    alignas(64) T mx[kColumnBlock], sm[kColumnBlock], sx[kColumnBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nb, i0 = (w % nb) * kColumnBlock, n = std::min(I, i0 + kColumnBlock) - i0;
      const T* base = x + o * C * I + i0;
      std::fill(mx, mx + n, kNegInf<T>);
      std::fill(sm, sm + n, T(0));
      std::fill(sx, sx + n, T(0));
      for (int64_t c = 0; c < C; ++c) {
        const T* row = base + c * I;
        int64_t j = 0;
        for (; j + W <= n; j += W) xsimd::max(B::load_aligned(mx + j), B::load_unaligned(row + j)).store_aligned(mx + j);
        for (; j < n; ++j) mx[j] = std::max(mx[j], row[j]);
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* row = base + c * I;
        const T wc = L.weight(c);
        int64_t j = 0;
        for (; j + W <= n; j += W) {
          const B v = B::load_unaligned(row + j);
          (B::load_aligned(sm + j) + xsimd::exp(v - B::load_aligned(mx + j))).store_aligned(sm + j);
          if (smooth) xsimd::fma(v, B(wc), B::load_aligned(sx + j)).store_aligned(sx + j);
        }
        for (; j < n; ++j) {
          sm[j] += std::exp(row[j] - mx[j]);
          if (smooth) sx[j] += wc * row[j];
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t pos = o * I + i0 + j;
        lse[pos] = mx[j] + std::log(sm[j]);
        const int64_t c = L.target(t, pos);
        loss[pos] = c < 0 ? T(0) : ce_value(L, c, lse[pos], base[c * I + j], sx[j]);
      }
    }
  });
}

/// The gradient scale of each position: g (none) or g / total weight (mean) or g (sum).
template <class T>
struct GradScale {
  const T* per = nullptr;  ///< none: the output gradient per position
  T all = 0;               ///< otherwise: one scale for every position
  T at(int64_t pos) const { return per ? per[pos] : all; }
};

/// Backward of the W rows [o0, o0 + W), one per lane (gathered loads, scattered stores).
template <class T>
DL_INLINE void ce_backward_lanes(const ClassLoss<T>& L, const T* x, const T* lse, const int64_t* t, const GradScale<T>& s, int64_t o0,
                                 T* gx) {
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const int64_t C = L.C;
  alignas(64) T ca[W], cb[W], valid[W];
  int64_t tc[W];
  for (int64_t k = 0; k < W; ++k) {
    const int64_t c = tc[k] = L.target(t, o0 + k);
    const T so = c < 0 ? T(0) : s.at(o0 + k);
    ca[k] = c < 0 ? T(0) : so * (L.keep * L.weight(c) + L.eps_c * L.wsum);
    cb[k] = so * L.eps_c;
    valid[k] = c < 0 ? T(0) : T(1);
  }
  const B va = B::load_aligned(ca), vb = B::load_aligned(cb), vl = B::load_unaligned(lse + o0);
  const auto keep = B::load_aligned(valid) != B(T(0));
  const auto idx = lane_rows<T>(C);
  const T* base = x + o0 * C;
  T* gbase = gx + o0 * C;
  for (int64_t c = 0; c < C; ++c) {
    B g = xsimd::exp(gather_lanes<T>(base + c, idx) - vl) * va;
    if (L.eps_c != T(0)) g = xsimd::fnma(vb, B(L.weight(c)), g);
    scatter_lanes<T>(gbase + c, idx, xsimd::select(keep, g, B(T(0))));
  }
  for (int64_t k = 0; k < W; ++k)
    if (tc[k] >= 0) gbase[k * C + tc[k]] -= s.at(o0 + k) * L.keep * L.weight(tc[k]);
}

/// Backward without a graph: the input gradient in one pass.
template <bool Softmax, class T>
void class_loss_backward(const ClassLoss<T>& L, const T* x, const T* lse, const int64_t* t, GradScale<T> s, T* gx) {
  const int64_t O = L.O, C = L.C, I = L.I;
  if constexpr (!Softmax) {
    parallel_for(0, O * C * I, 1 << 16, [&](int64_t b, int64_t e) { std::fill(gx + b, gx + e, T(0)); });
    parallel_for(0, O * I, 4096, [&](int64_t b, int64_t e) {
      for (int64_t pos = b; pos < e; ++pos) {
        const int64_t c = L.target(t, pos);
        if (c >= 0) gx[(pos / I * C + c) * I + pos % I] = -L.weight(c) * s.at(pos);
      }
    });
    return;
  }
  using B = expr::batch<T>;
  constexpr int64_t W = B::size;
  const bool smooth = L.eps_c != T(0);
  if (I == 1) {
    for_row_blocks<T>(O, C, [&](int64_t o, bool lanes) {
      if (lanes) return ce_backward_lanes(L, x, lse, t, s, o, gx);
      const T* row = x + o * C;
      T* g = gx + o * C;
      const int64_t c = L.target(t, o);
      if (c < 0) {
        std::fill(g, g + C, T(0));
        return;
      }
      const T so = s.at(o), wt = L.weight(c);
      const B va(so * (L.keep * wt + L.eps_c * L.wsum)), vb(so * L.eps_c), vl(lse[o]);
      const int64_t full = C / W * W, rest = C - full;
      for (int64_t j = 0; j < full; j += W) {
        B v = xsimd::exp(B::load_unaligned(row + j) - vl) * va;
        if (smooth) v = L.w ? xsimd::fnma(vb, B::load_unaligned(L.w + j), v) : v - vb;
        v.store_unaligned(g + j);
      }
      if (rest) {
        B v = xsimd::exp(partial_batch<T>(rest, T(0), [&](int64_t l) { return row[full + l]; }) - vl) * va;
        if (smooth) v = L.w ? xsimd::fnma(vb, partial_batch<T>(rest, T(0), [&](int64_t l) { return L.w[full + l]; }), v) : v - vb;
        store_partial(g + full, rest, v);
      }
      g[c] -= so * L.keep * wt;
    });
    return;
  }
  const int64_t nb = (I + kColumnBlock - 1) / kColumnBlock;
  parallel_for(0, O * nb, std::max<int64_t>(1, 16384 / std::max<int64_t>(C * std::min(I, kColumnBlock), 1)), [&](int64_t b, int64_t e) {
    alignas(64) T ca[kColumnBlock], cb[kColumnBlock], cl[kColumnBlock];
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nb, i0 = (w % nb) * kColumnBlock, n = std::min(I, i0 + kColumnBlock) - i0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t pos = o * I + i0 + j, c = L.target(t, pos);
        const T so = c < 0 ? T(0) : s.at(pos);
        ca[j] = c < 0 ? T(0) : so * (L.keep * L.weight(c) + L.eps_c * L.wsum);
        cb[j] = so * L.eps_c;
        cl[j] = lse[pos];
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* row = x + (o * C + c) * I + i0;
        T* g = gx + (o * C + c) * I + i0;
        const B wc(L.weight(c));
        int64_t j = 0;
        for (; j + W <= n; j += W) {
          const B v = xsimd::exp(B::load_unaligned(row + j) - B::load_aligned(cl + j)) * B::load_aligned(ca + j);
          xsimd::fnma(B::load_aligned(cb + j), wc, v).store_unaligned(g + j);
        }
        for (; j < n; ++j) g[j] = std::exp(row[j] - cl[j]) * ca[j] - cb[j] * L.weight(c);
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t pos = o * I + i0 + j, c = L.target(t, pos);
        if (c >= 0) gx[(o * C + c) * I + i0 + j] -= s.at(pos) * L.keep * L.weight(c);
      }
    }
  });
}

/// Backward under create_graph: (softmax(x) * A - B) * S for cross entropy, B * S for NLL, with
/// A, B constants of the targets and weights and S the output gradient (recorded, differentiable).
template <bool Softmax, class T>
Tensor<T> class_loss_grad_graph(const ClassLoss<T>& L, const Tensor<T>& x, const int64_t* t, const Tensor<T>& g, T scale,
                                ClassReduction r) {
  const int64_t O = L.O, C = L.C, I = L.I;
  Tensor<T> A, Bm;
  {
    NoGradGuard no_grad;
    A = zeros<T>({O, 1, I});
    Bm = zeros<T>({O, C, I});
    T* a = A.data();
    T* bm = Bm.data();
    for (int64_t pos = 0; pos < O * I; ++pos) {
      const int64_t c = L.target(t, pos);
      if (c < 0) continue;
      const int64_t o = pos / I, i = pos % I;
      if constexpr (Softmax) {
        a[pos] = L.keep * L.weight(c) + L.eps_c * L.wsum;
        for (int64_t k = 0; k < C; ++k) bm[(o * C + k) * I + i] = L.eps_c * L.weight(k);
        bm[(o * C + c) * I + i] += L.keep * L.weight(c);
      } else {
        bm[(o * C + c) * I + i] = -L.weight(c);
      }
    }
  }
  const Tensor<T> S = r == ClassReduction::none ? g.reshape({O, 1, I}) : Tensor<T>(g.reshape({1, 1, 1}) * scale);
  Tensor<T> gx;
  if constexpr (Softmax) gx = (softmax_op<false>(x.reshape({O, C, I}), 1, "cross_entropy") * A - Bm) * S;
  else gx = Bm * S;
  return gx.reshape(x.shape());
}

template <bool Softmax, class T>
Tensor<T> class_loss_op(const Tensor<T>& input, const Tensor<int64_t>& target, const Tensor<T>& weight_, const ClassLossParams& p) {
  const Tensor<T> x = input.contiguous();
  const Tensor<int64_t> t = target.contiguous();
  const Tensor<T> weight = weight_.defined() ? weight_.contiguous() : weight_;
  const ClassLoss<T> L = class_loss_setup(x, weight, p);
  const int64_t P = L.positions();
  Tensor<T> loss = empty<T>({P});
  Tensor<T> lse = Softmax ? empty<T>({P}) : Tensor<T>();
  class_loss_forward<Softmax>(L, x.data(), t.data(), loss.data(), Softmax ? lse.data() : nullptr);

  Tensor<T> out;
  T scale = 1;
  if (p.reduction == ClassReduction::none) {
    out = loss.reshape(t.shape());
  } else {
    // Fixed blocks: the sum does not depend on the thread count.
    constexpr int64_t kBlock = 2048;
    const int64_t nblk = (P + kBlock - 1) / kBlock;
    std::vector<double> part(size_t(2 * nblk), 0.0);
    const T* lp = loss.data();
    const int64_t* tp = t.data();
    const bool mean = p.reduction == ClassReduction::mean;
    parallel_for(0, nblk, 4, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        double s = 0, w = 0;
        for (int64_t pos = k * kBlock; pos < std::min(P, (k + 1) * kBlock); ++pos) {
          s += double(lp[pos]);
          if (mean && tp[pos] != L.ignore) w += double(L.weight(tp[pos]));
        }
        part[size_t(2 * k)] = s;
        part[size_t(2 * k + 1)] = w;
      }
    });
    double total = 0, total_weight = 0;
    for (int64_t k = 0; k < nblk; ++k) {
      total += part[size_t(2 * k)];
      total_weight += part[size_t(2 * k + 1)];
    }
    if (mean) {
      total /= total_weight;  // NaN when every target is ignored, as PyTorch
      scale = total_weight != 0 ? T(1 / total_weight) : T(0);
    }
    out = full<T>({}, T(total));
  }
  if (!autograd::any_requires_grad(x)) return out;
  const ClassReduction r = p.reduction;
  return record_kernel(out, Softmax ? "CrossEntropyLossBackward" : "NllLossBackward", {x, lse, weight}, {t.impl()},
      [L, t, scale, r](const Tensor<T>& g, const std::vector<Tensor<T>>& saved, const std::vector<bool>&) {
        ClassLoss<T> Ls = L;
        Ls.w = saved[2].defined() ? saved[2].data() : nullptr;
        if (is_grad_enabled()) return std::vector<TensorImplPtr>{class_loss_grad_graph<Softmax>(Ls, saved[0], t.data(), g, scale, r).impl()};
        const Tensor<T> gc = g.contiguous();
        GradScale<T> s;
        if (r == ClassReduction::none) s.per = gc.data();
        else s.all = gc.item() * scale;
        Tensor<T> gx = empty<T>(saved[0].shape());
        class_loss_backward<Softmax>(Ls, saved[0].data(), Softmax ? saved[1].data() : nullptr, t.data(), s, gx.data());
        return std::vector<TensorImplPtr>{gx.impl()};
      }, x);
}

}  // namespace dl::detail

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::class_loss_op<true, float>(const dl::Tensor<float>&, const dl::Tensor<int64_t>&, const dl::Tensor<float>&,
                                                                   const dl::detail::ClassLossParams&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::class_loss_op<false, float>(const dl::Tensor<float>&, const dl::Tensor<int64_t>&, const dl::Tensor<float>&,
                                                                    const dl::detail::ClassLossParams&))
