// dl/optim/lbfgs.hpp — L-BFGS (PyTorch's torch.optim.LBFGS): a quasi-Newton method with a limited
// history of curvature pairs, a fixed step or a strong-Wolfe line search. It re-evaluates the loss,
// so step takes a closure:
//   optim::LBFGS lbfgs(net.parameters(), {.lr = 1, .line_search_fn = "strong_wolfe"});
//   auto loss = lbfgs.step([&] { lbfgs.zero_grad(); auto l = criterion(net(x), y); l.backward(); return l; });
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../ops/sparse.hpp"
#include "../tensor.hpp"
#include "optimizer.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

#define DL_LBFGS_FIELDS(X)                              \
  X(double, lr, 1.0)                                    \
  X(int64_t, max_iter, 20)                              \
  X(std::optional<int64_t>, max_eval, std::nullopt)     \
  X(double, tolerance_grad, 1e-7)                       \
  X(double, tolerance_change, 1e-9)                     \
  X(int64_t, history_size, 100)                         \
  X(std::string, line_search_fn, "")
DL_OPTIM_OPTIONS(LBFGS, DL_LBFGS_FIELDS)

/// The numbers PyTorch keeps in the state of the first parameter.
template <scalar_type T>
struct LBFGSState {
  int64_t func_evals = 0, n_iter = 0;
  double t = 0, H_diag = 1, prev_loss = 0;
  template <class F>
  void for_each(F&& f) { f("func_evals", func_evals), f("n_iter", n_iter), f("t", t), f("H_diag", H_diag), f("prev_loss", prev_loss); }
  template <class F>
  void for_each(F&& f) const {
    f("func_evals", func_evals), f("n_iter", n_iter), f("t", t), f("H_diag", H_diag), f("prev_loss", prev_loss);
  }
};

template <scalar_type T = float>
class LBFGS : public OptimizerBase<LBFGS<T>, T, LBFGSOptions, LBFGSGroupOptions, LBFGSState<T>> {
  using Base = OptimizerBase<LBFGS<T>, T, LBFGSOptions, LBFGSGroupOptions, LBFGSState<T>>;

 public:
  using typename Base::GroupSpec;
  explicit LBFGS(std::vector<Tensor<T>> params, const LBFGSOptions& o = {}) : Base(std::move(params), o) {}
  static void validate(const LBFGSOptions& o);
  std::string name() const override { return "LBFGS"; }
  /// Up to max_iter iterations, each evaluating closure (which zeroes the gradients, computes the
  /// loss, calls backward and returns the loss) once, or more in the line search. Returns the
  /// first evaluation's loss.
  template <class F>
    requires std::is_invocable_v<F&>
  auto step(F&& closure);
  /// LBFGS needs a closure.
  void step() override { throw Error("LBFGS requires a closure: call step([&] { ...; return loss; })"); }
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& sd) override;

 private:
  using Vec = std::vector<T>;
  Vec d_, prev_flat_grad_;
  std::deque<Vec> old_dirs_, old_stps_;
  std::deque<double> ro_;

  Vec flat_grad() const;
  void add_grad(double t, const Vec& d);
  Vec params_flat() const;
  void set_params(const Vec& x);
  template <class F>
  std::pair<double, Vec> directional_evaluate(F& closure, const Vec& x, double t, const Vec& d);
  template <class F>
  std::tuple<double, Vec, double, int64_t> strong_wolfe(F& closure, const Vec& x, double t, const Vec& d, double f, Vec g, double gtd);
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class T>
double dot(const std::vector<T>& a, const std::vector<T>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}
template <class T>
double abs_max(const std::vector<T>& a) {
  double m = 0;
  for (T v : a) m = std::max(m, std::abs(double(v)));
  return m;
}

/// The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to the bounds.
inline double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                                std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2;
}

}  // namespace detail

template <scalar_type T>
void LBFGS<T>::validate(const LBFGSOptions& o) {
  DL_CHECK(o.lr >= 0, "Invalid learning rate: ", dl::detail::py_number(o.lr));
  DL_CHECK(o.max_iter > 0, "LBFGS: max_iter must be positive, got ", o.max_iter);
  DL_CHECK(o.history_size > 0, "LBFGS: history_size must be positive, got ", o.history_size);
  DL_CHECK(o.line_search_fn.empty() || o.line_search_fn == "strong_wolfe", "only 'strong_wolfe' is supported (line_search_fn '",
           o.line_search_fn, "')");
}

template <scalar_type T>
typename LBFGS<T>::Vec LBFGS<T>::flat_grad() const {
  Vec out;
  for (const auto& p : this->param_groups()[0].params) {
    const Tensor<T> g = p.grad_is_sparse() ? p.sparse_grad().to_dense() : p.grad();  // PyTorch's _gather_flat_grad
    if (!g.defined()) {
      out.insert(out.end(), size_t(p.numel()), T(0));
    } else {
      const Tensor<T> c = g.contiguous();
      out.insert(out.end(), c.data(), c.data() + c.numel());
    }
  }
  return out;
}

template <scalar_type T>
typename LBFGS<T>::Vec LBFGS<T>::params_flat() const {
  Vec out;
  for (const auto& p : this->param_groups()[0].params) {
    const Tensor<T> c = p.detach().contiguous();
    out.insert(out.end(), c.data(), c.data() + c.numel());
  }
  return out;
}

template <scalar_type T>
void LBFGS<T>::add_grad(double t, const Vec& d) {
  NoGradGuard no_grad;
  size_t offset = 0;
  for (auto& p : this->param_groups()[0].params) {
    Tensor<T> step = empty<T>(p.shape());
    for (int64_t i = 0; i < p.numel(); ++i) step.data()[i] = T(T(t) * d[offset + size_t(i)]);
    p.detach().add_(step);
    offset += size_t(p.numel());
  }
}

template <scalar_type T>
void LBFGS<T>::set_params(const Vec& x) {
  NoGradGuard no_grad;
  size_t offset = 0;
  for (auto& p : this->param_groups()[0].params) {
    Tensor<T> v = empty<T>(p.shape());
    std::copy(x.begin() + std::ptrdiff_t(offset), x.begin() + std::ptrdiff_t(offset + size_t(p.numel())), v.data());
    p.detach().copy_(v);
    offset += size_t(p.numel());
  }
}

template <scalar_type T>
template <class F>
std::pair<double, typename LBFGS<T>::Vec> LBFGS<T>::directional_evaluate(F& closure, const Vec& x, double t, const Vec& d) {
  add_grad(t, d);
  double loss;
  {
    autograd::EnableGradGuard grad_mode;
    loss = double(closure().item());
  }
  Vec g = flat_grad();
  set_params(x);
  return {loss, std::move(g)};
}

template <scalar_type T>
template <class F>
std::tuple<double, typename LBFGS<T>::Vec, double, int64_t> LBFGS<T>::strong_wolfe(F& closure, const Vec& x, double t, const Vec& d,
                                                                                   double f, Vec g, double gtd) {
  constexpr double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;
  constexpr int64_t max_ls = 25;
  const double d_norm = detail::abs_max(d);
  auto [f_new, g_new] = directional_evaluate(closure, x, t, d);
  int64_t evals = 1;
  double gtd_new = detail::dot(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Vec g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Vec> bracket_g;
  // Bracketing: find an interval that contains a point satisfying the strong Wolfe conditions.
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new}, bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new}, bracket_gtd = {gtd_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new}, bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10, tmp = t;
    t = detail::cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair{min_step, max_step});
    t_prev = tmp, f_prev = f_new, g_prev = g_new, gtd_prev = gtd_new;
    std::tie(f_new, g_new) = directional_evaluate(closure, x, t, d);
    ++evals;
    gtd_new = detail::dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) bracket = {0, t}, bracket_f = {f, f_new}, bracket_g = {g, g_new}, bracket_gtd = {gtd, gtd_new};
  // Zoom: shrink the bracket until a point satisfies the conditions.
  bool insuf_progress = false;
  size_t low = bracket_f[0] <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = detail::cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double bmax = std::max(bracket[0], bracket[1]), bmin = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = directional_evaluate(closure, x, t, d);
    ++evals;
    gtd_new = detail::dot(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t, bracket_f[high] = f_new, bracket_g[high] = g_new, bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low], bracket_f[high] = bracket_f[low], bracket_g[high] = bracket_g[low],
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t, bracket_f[low] = f_new, bracket_g[low] = g_new, bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

template <scalar_type T>
template <class F>
  requires std::is_invocable_v<F&>
auto LBFGS<T>::step(F&& closure) {
  DL_CHECK(this->param_groups().size() == 1, "LBFGS doesn't support per-parameter options (parameter groups)");
  const LBFGSOptions& o = this->param_groups()[0].options;
  const int64_t max_eval = o.max_eval.value_or(o.max_iter * 5 / 4);
  auto& st = this->state(this->param_groups()[0].params[0]);
  auto evaluate = [&] {
    autograd::EnableGradGuard grad_mode;
    return closure();
  };
  auto orig_loss = evaluate();
  double loss = double(orig_loss.item());
  int64_t current_evals = 1;
  st.func_evals += 1;
  Vec g = flat_grad();
  if (detail::abs_max(g) <= o.tolerance_grad) return orig_loss;
  double t = st.t;
  int64_t n_iter = 0;
  while (n_iter < o.max_iter) {
    ++n_iter;
    ++st.n_iter;
    if (st.n_iter == 1) {
      d_.resize(g.size());
      for (size_t i = 0; i < g.size(); ++i) d_[i] = -g[i];
      old_dirs_.clear(), old_stps_.clear(), ro_.clear();
      st.H_diag = 1;
    } else {
      // The curvature pair of the last step; kept when it is positive (the update stays positive definite).
      Vec y(g.size()), s(g.size());
      for (size_t i = 0; i < g.size(); ++i) y[i] = g[i] - prev_flat_grad_[i], s[i] = T(d_[i] * T(t));
      const double ys = detail::dot(y, s);
      if (ys > 1e-10) {
        if (int64_t(old_dirs_.size()) == o.history_size) old_dirs_.pop_front(), old_stps_.pop_front(), ro_.pop_front();
        st.H_diag = ys / detail::dot(y, y);
        old_dirs_.push_back(std::move(y)), old_stps_.push_back(std::move(s)), ro_.push_back(1 / ys);
      }
      // Two-loop recursion: d = -H g.
      const size_t n = old_dirs_.size();
      std::vector<double> al(n);
      Vec q(g.size());
      for (size_t i = 0; i < g.size(); ++i) q[i] = -g[i];
      for (size_t i = n; i-- > 0;) {
        al[i] = detail::dot(old_stps_[i], q) * ro_[i];
        for (size_t k = 0; k < q.size(); ++k) q[k] = T(q[k] - T(al[i]) * old_dirs_[i][k]);
      }
      for (size_t k = 0; k < q.size(); ++k) d_[k] = T(q[k] * T(st.H_diag));
      for (size_t i = 0; i < n; ++i) {
        const double be = detail::dot(old_dirs_[i], d_) * ro_[i];
        for (size_t k = 0; k < d_.size(); ++k) d_[k] = T(d_[k] + T(al[i] - be) * old_stps_[i][k]);
      }
    }
    prev_flat_grad_ = g;
    st.prev_loss = loss;
    if (st.n_iter == 1) {
      double sum = 0;
      for (T v : g) sum += std::abs(double(v));
      t = std::min(1.0, 1.0 / sum) * o.lr;
    } else {
      t = o.lr;
    }
    const double gtd = detail::dot(g, d_);
    if (gtd > -o.tolerance_change) break;  // not a descent direction
    int64_t ls_evals = 0;
    bool opt_cond = false;
    if (!o.line_search_fn.empty()) {
      const Vec x = params_flat();
      std::tie(loss, g, t, ls_evals) = strong_wolfe(closure, x, t, d_, loss, g, gtd);
      add_grad(t, d_);
      opt_cond = detail::abs_max(g) <= o.tolerance_grad;
    } else {
      add_grad(t, d_);
      if (n_iter != o.max_iter) {
        loss = double(evaluate().item());
        g = flat_grad();
        opt_cond = detail::abs_max(g) <= o.tolerance_grad;
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    st.func_evals += ls_evals;
    if (n_iter == o.max_iter || current_evals >= max_eval || opt_cond) break;
    if (detail::abs_max(d_) * std::abs(t) <= o.tolerance_change) break;
    if (std::abs(loss - st.prev_loss) < o.tolerance_change) break;
  }
  st.t = t;
  return orig_loss;
}

template <scalar_type T>
StateDict LBFGS<T>::state_dict() const {
  StateDict sd = Base::state_dict();
  auto vec = [](const Vec& v) {
    Tensor<T> t = empty<T>({int64_t(v.size())});
    std::copy(v.begin(), v.end(), t.data());
    return t;
  };
  if (!d_.empty()) sd.insert("state.0.d", vec(d_));
  if (!prev_flat_grad_.empty()) sd.insert("state.0.prev_flat_grad", vec(prev_flat_grad_));
  for (size_t i = 0; i < old_dirs_.size(); ++i) {
    sd.insert("state.0.old_dirs." + std::to_string(i), vec(old_dirs_[i]));
    sd.insert("state.0.old_stps." + std::to_string(i), vec(old_stps_[i]));
  }
  if (!ro_.empty()) sd.insert("state.0.ro", tensor<double>(std::vector<double>(ro_.begin(), ro_.end())));
  return sd;
}

template <scalar_type T>
void LBFGS<T>::load_state_dict(const StateDict& sd) {
  auto vec = [&](const std::string& k) {
    const Tensor<T> t = detail::as_floating<T>(sd.at(k), k);
    return Vec(t.data(), t.data() + t.numel());
  };
  Vec d, prev;
  std::deque<Vec> dirs, stps;
  std::deque<double> ro;
  if (sd.contains("state.0.d")) d = vec("state.0.d");
  if (sd.contains("state.0.prev_flat_grad")) prev = vec("state.0.prev_flat_grad");
  for (size_t i = 0; sd.contains("state.0.old_dirs." + std::to_string(i)); ++i) {
    dirs.push_back(vec("state.0.old_dirs." + std::to_string(i)));
    stps.push_back(vec("state.0.old_stps." + std::to_string(i)));
  }
  if (sd.contains("state.0.ro")) {
    const Tensor<double> r = detail::as_floating<double>(sd.at("state.0.ro"), "state.0.ro");
    ro.assign(r.data(), r.data() + r.numel());
  }
  DL_CHECK(ro.size() == dirs.size(), "LBFGS state dict: ", dirs.size(), " curvature pairs but ", ro.size(), " values of ro");
  Base::load_state_dict(sd);
  d_ = std::move(d), prev_flat_grad_ = std::move(prev), old_dirs_ = std::move(dirs), old_stps_ = std::move(stps), ro_ = std::move(ro);
}

}  // namespace dl::optim

// Compiled mode: the float instantiations libdl_kernels holds (DL_OPTIMIZER_INSTANCES, optimizer.hpp). LBFGS
// declares its class by hand (its step takes a closure), with the names DL_OPTIMIZER_CLASS would give it.
DL_OPTIMIZER_INSTANCES(LBFGS, LBFGSState)
