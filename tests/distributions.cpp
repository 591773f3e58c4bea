// tests/distributions.cpp — dl::distributions and the special functions of dl/expr/special.hpp:
// values against PyTorch 1.13 (tests/gen_distributions_reference.py), gradients by finite
// differences, sampling checked statistically with fixed seeds, validation messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <dl/autograd/gradcheck.hpp>
#include <dl/distributions.hpp>

#include "refbin.hpp"

namespace D = dl::distributions;
using dl::Tensor;

namespace {

const refbin::File ref("distributions_ref.bin");

Tensor<double> vec(std::initializer_list<double> v) { return dl::tensor<double>(v); }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "no error";
}

/// Kolmogorov-Smirnov statistic of samples against a cdf; fails beyond the 0.1% critical value.
template <class Cdf>
void check_ks(std::vector<double> xs, Cdf cdf) {
  std::sort(xs.begin(), xs.end());
  const double n = double(xs.size());
  double d = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double f = cdf(xs[i]);
    d = std::max({d, std::abs(f - double(i) / n), std::abs(double(i + 1) / n - f)});
  }
  CHECK_MESSAGE(d < 1.95 / std::sqrt(n), "KS statistic " << d << " for n = " << n);
}

/// Pearson chi-square of counts against expected probabilities (categories with expected count
/// >= 5), compared with a generous bound (mean + 5 standard deviations of chi2(k-1)).
void check_chi2(const std::vector<double>& counts, const std::vector<double>& probs, double n) {
  double chi2 = 0;
  int k = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = probs[i] * n;
    if (e < 5) continue;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
    ++k;
  }
  const double df = k - 1;
  CHECK_MESSAGE(chi2 < df + 5 * std::sqrt(2 * df), "chi2 " << chi2 << " with " << df << " degrees of freedom");
}

std::vector<double> values(const Tensor<double>& t) {
  const Tensor<double> c = t.contiguous();
  return std::vector<double>(c.data(), c.data() + c.numel());
}

}  // namespace

TEST_CASE("special functions against PyTorch, with gradients") {
  const Tensor<double> x = vec({0.1, 0.5, 1.0, 2.5, 7.0, 12.0, -0.5, -2.3});
  ref.check(Tensor<double>(dl::lgamma(x)), "special/lgamma", 1e-12);
  ref.check(Tensor<double>(dl::digamma(x)), "special/digamma", 1e-12);
  ref.check(Tensor<double>(dl::polygamma(1, x)), "special/polygamma1", 1e-10);
  ref.check(Tensor<double>(dl::polygamma(2, x)), "special/polygamma2", 1e-10);
  for (std::string name : {"lgamma", "digamma", "polygamma1", "polygamma2"}) {
    Tensor<double> xg = x.clone().requires_grad_();
    Tensor<double> y;
    if (name == "lgamma") y = dl::lgamma(xg);
    else if (name == "digamma") y = dl::digamma(xg);
    else y = dl::polygamma(name == "polygamma1" ? 1 : 2, xg);
    refbin::backward_weighted(y);
    ref.check(xg.grad(), "special/" + name + "/gx", 1e-9);
  }
  const Tensor<double> u = vec({-0.99, -0.5, 0.0, 0.3, 0.9, 0.999999});
  ref.check(Tensor<double>(dl::erfinv(u)), "special/erfinv", 1e-10);  // erf is flat near 1
  ref.check(Tensor<double>(dl::xlogy(vec({0.0, 1.0, 2.0, 0.0}), vec({0.5, 2.0, 0.1, 0.0}))), "special/xlogy", 1e-14);
  // Finite differences (first and second order: the derivative rules are ops themselves).
  const Tensor<double> p = vec({0.7, 1.9, 4.2}).requires_grad_();
  CHECK(dl::autograd::gradcheck([](auto& in) { return dl::lgamma(in[0]) * dl::digamma(in[0]); }, {p}));
  CHECK(dl::autograd::gradgradcheck([](auto& in) { return dl::lgamma(in[0]); }, {p}));
  CHECK(dl::autograd::gradcheck([](auto& in) { return dl::erfinv(in[0] * 0.2); }, {p}));
  CHECK(dl::autograd::gradcheck([](auto& in) { return dl::xlogy(in[0], in[1]); }, {p, vec({0.3, 2.0, 5.0}).requires_grad_()}));
  // Float inputs take the same kernels.
  ref.check(Tensor<float>(dl::digamma(x.to<float>())), "special/digamma", 1e-6);
  CHECK(error_of([&] { (void)dl::polygamma(-1, x); }) == "polygamma(n, x) does not support negative n.");
  CHECK(std::isinf(Tensor<double>(dl::digamma(vec({0.0}))).item()));
  CHECK(std::isnan(Tensor<double>(dl::digamma(vec({-1.0}))).item()));
}

TEST_CASE("continuous distributions: log_prob, moments, entropy, cdf, icdf") {
  const Tensor<double> q = vec({0.1, 0.35, 0.5, 0.8, 0.95}).unsqueeze(-1).expand({5, 3}).contiguous();
  auto check_all = [&](const D::Distribution<double>& d, const std::string& name, const Tensor<double>& v, bool cdf, bool icdf) {
    ref.check(d.log_prob(v), name + "/log_prob", 1e-10);
    ref.check(d.mean(), name + "/mean", 1e-12);
    ref.check(d.variance(), name + "/variance", 1e-12);
    ref.check(d.stddev(), name + "/stddev", 1e-12);
    ref.check(d.entropy(), name + "/entropy", 1e-10);
    if (cdf) ref.check(d.cdf(v), name + "/cdf", 1e-12);
    if (icdf) ref.check(d.icdf(q), name + "/icdf", 1e-10);
  };
  check_all(D::Normal(vec({0.5, -1.0, 2.0}), vec({1.0, 0.3, 2.5})), "normal", vec({0.2, -1.5, 4.0}), true, true);
  check_all(D::Uniform(vec({-1.0, 0.0, 2.0}), vec({1.0, 0.5, 5.0})), "uniform", vec({0.2, 0.25, 4.0}), true, true);
  check_all(D::Exponential(vec({0.5, 1.0, 3.0})), "exponential", vec({0.2, 1.5, 0.1}), true, true);
  check_all(D::Laplace(vec({0.5, -1.0, 2.0}), vec({1.0, 0.3, 2.5})), "laplace", vec({0.2, -1.5, 4.0}), true, true);
  const D::Gamma gamma(vec({0.5, 2.0, 7.5}), vec({1.0, 0.3, 2.5}));
  check_all(gamma, "gamma", vec({0.2, 1.5, 4.0}), false, false);
  ref.check(gamma.mode(), "gamma/mode", 1e-12);
  check_all(D::Beta(vec({0.5, 2.0, 7.5}), vec({1.5, 0.3, 2.5})), "beta", vec({0.2, 0.5, 0.9}), false, false);
  // float parameters give the same values
  const D::Normal<float> nf(dl::tensor<float>({0.5f, -1.0f, 2.0f}), dl::tensor<float>({1.0f, 0.3f, 2.5f}));
  ref.check(nf.log_prob(dl::tensor<float>({0.2f, -1.5f, 4.0f})), "normal/log_prob");
  CHECK(nf.batch_shape() == dl::Shape{3});
  CHECK(nf.event_shape() == dl::Shape{});
  CHECK(nf.expand({2, 3}).batch_shape() == dl::Shape{2, 3});
  CHECK(nf.repr() == "Normal(loc: torch.Size([3]), scale: torch.Size([3]))");
}

TEST_CASE("discrete distributions against PyTorch") {
  const D::Bernoulli bern(vec({0.1, 0.5, 0.9}));
  ref.check(bern.log_prob(vec({0, 1, 1})), "bernoulli/log_prob", 1e-12);
  ref.check(bern.entropy(), "bernoulli/entropy", 1e-12);
  ref.check(bern.variance(), "bernoulli/variance", 1e-12);
  CHECK(std::isnan(bern.mode().contiguous().data()[1]));
  const D::Bernoulli<double> bl({.logits = vec({-2.0, 0.0, 3.0})});
  ref.check(bl.log_prob(vec({1, 0, 1})), "bernoulli_logits/log_prob", 1e-12);
  ref.check(bl.mean(), "bernoulli_logits/mean", 1e-12);

  const Tensor<double> cp = dl::tensor<double>({{0.1, 0.2, 0.7}, {0.5, 0.25, 0.25}});
  const D::Categorical cat(cp);
  ref.check(cat.log_prob(dl::tensor<int64_t>({{2, 0}, {1, 1}})), "categorical/log_prob", 1e-12);
  ref.check(cat.entropy(), "categorical/entropy", 1e-12);
  CHECK(cat.batch_shape() == dl::Shape{2});
  CHECK(cat.mode().contiguous().data()[0] == 2);
  const D::Categorical<double> cl({.logits = dl::tensor<double>({{1.0, -2.0, 0.5, 0.0}})});
  ref.check(cl.log_prob(dl::tensor<int64_t>({0, 1, 2, 3})), "categorical_logits/log_prob", 1e-12);
  ref.check(cl.entropy(), "categorical_logits/entropy", 1e-12);
  ref.check(cl.probs(), "categorical_logits/probs", 1e-12);

  const D::Binomial binom(10, vec({0.1, 0.5, 0.85}));
  ref.check(binom.log_prob(vec({0, 5, 9})), "binomial/log_prob", 1e-10);
  ref.check(binom.entropy(), "binomial/entropy", 1e-10);
  ref.check(binom.mean(), "binomial/mean", 1e-12);
  ref.check(binom.variance(), "binomial/variance", 1e-12);
  ref.check(binom.mode(), "binomial/mode", 0);
  const D::Binomial<double> bnl(vec({3, 7, 12}), {.logits = vec({-1.0, 0.0, 2.0})});
  ref.check(bnl.log_prob(vec({1, 7, 0})), "binomial_logits/log_prob", 1e-10);

  const D::Multinomial mult(6, dl::tensor<double>({{0.2, 0.3, 0.5}, {0.6, 0.1, 0.3}}));
  ref.check(mult.log_prob(dl::tensor<double>({{1, 2, 3}, {6, 0, 0}})), "multinomial/log_prob", 1e-10);
  ref.check(mult.mean(), "multinomial/mean", 1e-12);
  ref.check(mult.variance(), "multinomial/variance", 1e-12);
  ref.check(mult.entropy(), "multinomial/entropy", 1e-10);
  CHECK(mult.event_shape() == dl::Shape{3});
  {  // entropy = -sum P(x) log P(x) over every count vector, and its gradient
    const D::Multinomial<double> m3(3, vec({0.2, 0.5, 0.3}));
    double h = 0;
    for (int a = 0; a <= 3; ++a)
      for (int b = 0; a + b <= 3; ++b) {
        const double lp = m3.log_prob(vec({double(a), double(b), double(3 - a - b)})).item();
        h -= std::exp(lp) * lp;
      }
    CHECK(m3.entropy().item() == doctest::Approx(h).epsilon(1e-12));
    const Tensor<double> w = vec({0.2, 0.5, 0.3}).requires_grad_();
    CHECK(dl::autograd::gradcheck([](auto& in) { return D::Multinomial<double>(4, Tensor<double>(in[0] / in[0].sum())).entropy(); }, {w}));
    CHECK(D::Multinomial<double>(2, vec({0.0, 1.0})).entropy().item() == doctest::Approx(0.0));  // certain outcome
  }
}

TEST_CASE("MultivariateNormal and Independent") {
  const Tensor<double> cov = dl::tensor<double>({{2.0, 0.3, 0.1}, {0.3, 1.0, -0.2}, {0.1, -0.2, 0.5}});
  const Tensor<double> loc = vec({0.5, -1.0, 2.0});
  const Tensor<double> val = dl::tensor<double>({{0.0, 0.0, 0.0}, {1.0, -2.0, 2.5}});
  const D::MultivariateNormal mvn(loc, cov);
  ref.check(mvn.log_prob(val), "mvn/log_prob", 1e-10);
  ref.check(mvn.entropy(), "mvn/entropy", 1e-10);
  ref.check(mvn.variance(), "mvn/variance", 1e-10);
  ref.check(mvn.scale_tril(), "mvn/scale_tril", 1e-10);
  const D::MultivariateNormal<double> mp(loc, {.precision_matrix = cov});
  ref.check(mp.log_prob(val), "mvn_precision/log_prob", 1e-10);
  ref.check(mp.scale_tril(), "mvn_precision/scale_tril", 1e-10);
  const Tensor<double> L = dl::tensor<double>({{1.5, 0.0, 0.0}, {0.2, 0.7, 0.0}, {-0.3, 0.4, 1.1}});
  const D::MultivariateNormal<double> mt(dl::zeros<double>({3}), {.scale_tril = L});
  ref.check(mt.log_prob(val), "mvn_tril/log_prob", 1e-10);
  ref.check(D::kl_divergence(mvn, mt), "kl/mvn_mvn", 1e-10);
  // log_prob is differentiable in the covariance through the tensor-op Cholesky.
  CHECK(dl::autograd::gradcheck(
      [&](auto& in) {
        const auto sym = (in[0] + in[0].transpose(0, 1)) * 0.5;
        return D::MultivariateNormal<double>(in[1], Tensor<double>(sym)).log_prob(val);
      },
      {cov.clone().requires_grad_(), loc.clone().requires_grad_()}));

  const D::Independent ind(D::Normal(dl::tensor<double>({{0.0, 1.0}, {2.0, -1.0}}), dl::tensor<double>({{1.0, 2.0}, {0.5, 1.5}})), 1);
  CHECK(ind.batch_shape() == dl::Shape{2});
  CHECK(ind.event_shape() == dl::Shape{2});
  ref.check(ind.log_prob(dl::tensor<double>({{0.5, 0.5}, {1.0, 1.0}})), "independent/log_prob", 1e-12);
  ref.check(ind.entropy(), "independent/entropy", 1e-12);
  const D::Independent ind2(D::Normal(dl::tensor<double>({{1.0, 1.0}, {0.0, 0.0}}), dl::tensor<double>({{2.0, 1.0}, {1.0, 1.0}})), 1);
  ref.check(D::kl_divergence(ind, ind2), "kl/independent", 1e-12);
  CHECK(ind.repr() == "Independent(Normal(loc: torch.Size([2, 2]), scale: torch.Size([2, 2])), 1)");
}

TEST_CASE("kl_divergence against PyTorch") {
  const D::Normal normal(vec({0.5, -1.0, 2.0}), vec({1.0, 0.3, 2.5})), n2(vec({0.0, 1.0, -1.0}), vec({2.0, 0.5, 1.0}));
  const D::Laplace lap(vec({0.5, -1.0, 2.0}), vec({1.0, 0.3, 2.5})), l2(vec({0.0, 1.0, -1.0}), vec({2.0, 0.5, 1.0}));
  const D::Exponential expo(vec({0.5, 1.0, 3.0})), e2(vec({2.0, 0.5, 1.0}));
  const D::Gamma gam(vec({0.5, 2.0, 7.5}), vec({1.0, 0.3, 2.5})), g2(vec({1.5, 3.0, 0.7}), vec({2.0, 0.5, 1.0}));
  const D::Beta beta(vec({0.5, 2.0, 7.5}), vec({1.5, 0.3, 2.5})), b2(vec({1.5, 3.0, 0.7}), vec({2.0, 0.5, 1.0}));
  const D::Uniform uni(vec({-1.0, 0.0, 2.0}), vec({1.0, 0.5, 5.0})), u2(vec({-2.0, -1.0, 1.0}), vec({2.0, 1.0, 6.0}));
  const D::Bernoulli bern(vec({0.1, 0.5, 0.9}));
  const D::Bernoulli<double> bl({.logits = vec({-2.0, 0.0, 3.0})});
  auto kl_check = [](const Tensor<double>& got, const std::string& key) {
    const auto& r = ref.get(key);
    const Tensor<double> g = got.contiguous();
    REQUIRE(g.numel() == int64_t(r.values.size()));
    for (size_t i = 0; i < r.values.size(); ++i) {
      if (std::isinf(r.values[i])) CHECK(g.data()[i] == r.values[i]);
      else CHECK(g.data()[i] == doctest::Approx(r.values[i]).epsilon(1e-10));
    }
  };
  kl_check(D::kl_divergence(normal, n2), "kl/normal_normal");
  kl_check(D::kl_divergence(lap, l2), "kl/laplace_laplace");
  kl_check(D::kl_divergence(expo, e2), "kl/exponential_exponential");
  kl_check(D::kl_divergence(gam, g2), "kl/gamma_gamma");
  kl_check(D::kl_divergence(beta, b2), "kl/beta_beta");
  kl_check(D::kl_divergence(uni, u2), "kl/uniform_uniform");
  kl_check(D::kl_divergence(bern, bl), "kl/bernoulli_bernoulli");
  kl_check(D::kl_divergence(D::Binomial(10, vec({0.1, 0.5, 0.85})), D::Binomial(10, vec({0.3, 0.3, 0.3}))), "kl/binomial_binomial");
  // PyTorch has no closed form either when q has more trials than p (NotImplementedError there).
  CHECK(error_of([&] { (void)D::kl_divergence(D::Binomial(10, vec({0.1})), D::Binomial(12, vec({0.3}))); }) ==
        "KL between Binomials where q.total_count > p.total_count is not implemented");
  kl_check(D::kl_divergence(D::Categorical(dl::tensor<double>({{0.1, 0.2, 0.7}, {0.5, 0.25, 0.25}})),
                            D::Categorical(dl::tensor<double>({{0.3, 0.3, 0.4}, {0.2, 0.2, 0.6}}))),
           "kl/categorical_categorical");
  kl_check(D::kl_divergence(lap, n2), "kl/laplace_normal");
  kl_check(D::kl_divergence(normal, l2), "kl/normal_laplace");
  kl_check(D::kl_divergence(expo, g2), "kl/exponential_gamma");
  kl_check(D::kl_divergence(gam, e2), "kl/gamma_exponential");
  kl_check(D::kl_divergence(expo, n2), "kl/exponential_normal");
  kl_check(D::kl_divergence(gam, n2), "kl/gamma_normal");
  kl_check(D::kl_divergence(beta, n2), "kl/beta_normal");
  kl_check(D::kl_divergence(uni, n2), "kl/uniform_normal");
  // Through base-class references (run-time dispatch), and an unregistered pair.
  const D::Distribution<double>& pb = lap;
  const D::Distribution<double>& qb = n2;
  kl_check(D::kl_divergence(pb, qb), "kl/laplace_normal");
  CHECK(std::isinf(D::kl_divergence(normal, expo).contiguous().data()[0]));
  CHECK(error_of([&] { (void)D::kl_divergence(static_cast<const D::Distribution<double>&>(bern), qb); }) ==
        "kl_divergence: no KL divergence is registered for Bernoulli and Normal (PyTorch raises NotImplementedError)");
}

TEST_CASE("rsample gradients") {
  // Reparameterised draws with a fixed generator state are deterministic functions of the parameters.
  auto fixed = [](auto make) {
    return [make](auto& in) {
      dl::Generator g(7);
      return make(in).rsample({4}, &g);
    };
  };
  const Tensor<double> a = vec({0.3, -1.0}).requires_grad_(), b = vec({1.5, 0.7}).requires_grad_();
  CHECK(dl::autograd::gradcheck(fixed([](auto& in) { return D::Normal<double>(in[0], in[1]); }), {a, b}));
  CHECK(dl::autograd::gradcheck(fixed([](auto& in) { return D::Laplace<double>(in[0], in[1]); }), {a, b}));
  CHECK(dl::autograd::gradcheck(fixed([](auto& in) { return D::Uniform<double>(in[0], Tensor<double>(in[0] + in[1])); }), {a, b}));
  CHECK(dl::autograd::gradcheck(fixed([](auto& in) { return D::Exponential<double>(in[0]); }), {b}));
  CHECK(dl::autograd::gradcheck(
      fixed([](auto& in) { return D::MultivariateNormal<double>(in[0], {.scale_tril = Tensor<double>(dl::where(dl::tensor<bool>({{true, false}, {true, true}}), in[1], 0.0))}); }),
      {a, dl::tensor<double>({{1.2, 0.0}, {0.4, 0.9}}).requires_grad_()}));
  // Gamma: the implicit gradient dx/dalpha against PyTorch's _standard_gamma_grad at fixed points,
  // and the rate gradient by finite differences.
  const std::vector<double> ga{0.3, 1.0, 2.5, 10.0, 0.8, 50.0}, gx{0.05, 0.7, 3.0, 8.0, 1.5, 47.0};
  const auto& r = ref.get("gamma_grad").values;
  for (size_t i = 0; i < ga.size(); ++i)
    CHECK(D::detail::standard_gamma_grad(gx[i], ga[i]) == doctest::Approx(r[i]).epsilon(1e-4));
  CHECK(dl::autograd::gradcheck(fixed([](auto& in) { return D::Gamma<double>(2.5, in[0]); }), {b}));
  // ...and the whole pathwise derivative: d E[x] / d alpha = 1 / rate (mean of many draws).
  Tensor<double> alpha = vec({2.0}).requires_grad_();
  dl::Generator g(11);
  Tensor<double> m = D::Gamma<double>(alpha, 2.0).rsample({20000}, &g).mean();
  m.backward();
  CHECK(alpha.grad().item() == doctest::Approx(0.5).epsilon(0.03));
  Tensor<double> c1 = vec({2.0}).requires_grad_();
  Tensor<double> bm = D::Beta<double>(c1, 3.0).rsample({20000}, &g).mean();
  bm.backward();
  CHECK(c1.grad().item() == doctest::Approx(3.0 / 25).epsilon(0.05));  // d/dc1 c1/(c1+c0)
}

TEST_CASE("sampling is statistically right") {
  dl::Generator g(1234);
  const int n = 20000;
  {
    const D::Normal<double> d(0.5, 2.0);
    const Tensor<double> s = d.sample({n}, &g);
    CHECK(s.shape() == dl::Shape{n});
    check_ks(values(s), [](double x) { return 0.5 * (1 + std::erf((x - 0.5) / (2.0 * std::sqrt(2.0)))); });
  }
  check_ks(values(D::Exponential<double>(1.5).sample({n}, &g)), [](double x) { return 1 - std::exp(-1.5 * x); });
  check_ks(values(D::Uniform<double>(-1, 3).sample({n}, &g)), [](double x) { return (x + 1) / 4; });
  check_ks(values(D::Laplace<double>(1, 0.5).sample({n}, &g)), [](double x) {
    return x < 1 ? 0.5 * std::exp((x - 1) / 0.5) : 1 - 0.5 * std::exp(-(x - 1) / 0.5);
  });
  for (double a : {0.4, 3.0}) {
    check_ks(values(D::Gamma<double>(a, 1.0).sample({n}, &g)), [a](double x) { return D::detail::gammainc(a, x); });
  }
  {  // Beta(2, 3): moments within 5 standard errors
    const std::vector<double> s = values(D::Beta<double>(2.0, 3.0).sample({n}, &g));
    double mean = 0;
    for (double v : s) mean += v / n;
    CHECK(std::abs(mean - 0.4) < 5 * std::sqrt(0.04 / n));
  }
  {  // Categorical: chi-square
    const D::Categorical<double> cat(vec({0.1, 0.2, 0.3, 0.4}));
    const Tensor<int64_t> s = cat.sample({n}, &g);
    std::vector<double> counts(4);
    for (int64_t i = 0; i < n; ++i) counts[size_t(s.data()[i])] += 1;
    check_chi2(counts, {0.1, 0.2, 0.3, 0.4}, n);
    CHECK(cat.sample({2, 3}, &g).shape() == dl::Shape{2, 3});
  }
  for (double p : {0.3, 0.9}) {  // Binomial(20, p) and Poisson(rate): chi-square over the support
    const std::vector<double> s = values(D::Binomial<double>(20, p).sample({n}, &g));
    std::vector<double> counts(21), probs(21);
    for (double v : s) counts[size_t(v)] += 1;
    for (int k = 0; k <= 20; ++k) probs[size_t(k)] = std::exp(std::lgamma(21) - std::lgamma(k + 1) - std::lgamma(21 - k) + k * std::log(p) + (20 - k) * std::log1p(-p));
    check_chi2(counts, probs, n);
  }
  for (double rate : {0.7, 30.0}) {
    const std::vector<double> s = values(dl::poisson(dl::full<double>({n}, rate), &g));
    std::vector<double> counts(200), probs(200);
    for (double v : s) counts[size_t(std::min(v, 199.0))] += 1;
    for (int k = 0; k < 200; ++k) probs[size_t(k)] = std::exp(k * std::log(rate) - rate - std::lgamma(k + 1));
    check_chi2(counts, probs, n);
  }
  {  // Bernoulli and dl::bernoulli
    const std::vector<double> s = values(D::Bernoulli<double>(0.3).sample({n}, &g));
    double ones = 0;
    for (double v : s) ones += v;
    check_chi2({n - ones, ones}, {0.7, 0.3}, n);
  }
  {  // Multinomial counts sum to total_count; their means match
    const Tensor<double> s = D::Multinomial<double>(5, vec({0.2, 0.8})).sample({4000}, &g);
    CHECK(s.shape() == dl::Shape{4000, 2});
    const std::vector<double> v = values(s);
    double first = 0;
    for (size_t i = 0; i < v.size(); i += 2) {
      CHECK(v[i] + v[i + 1] == 5);
      first += v[i];
    }
    CHECK(std::abs(first / 4000 - 1.0) < 5 * std::sqrt(0.8 / 4000));
  }
  {  // dl::multinomial with and without replacement
    const Tensor<int64_t> w = dl::multinomial(dl::tensor<double>({{1.0, 0.0, 3.0}, {2.0, 2.0, 0.0}}), 2, false, &g);
    CHECK(w.shape() == dl::Shape{2, 2});
    for (int64_t r = 0; r < 2; ++r) CHECK(w.data()[r * 2] != w.data()[r * 2 + 1]);
    CHECK(w.data()[0] != 1);
    const Tensor<int64_t> s = dl::multinomial(vec({1.0, 3.0}), n, true, &g);
    double ones = 0;
    for (int64_t i = 0; i < n; ++i) ones += double(s.data()[i]);
    check_chi2({n - ones, ones}, {0.25, 0.75}, n);
  }
  // The same seed gives the same draws.
  dl::Generator g1(5), g2(5);
  CHECK(dl::equal(D::Gamma<float>(1.5f, 1.0f).sample({100}, &g1), D::Gamma<float>(1.5f, 1.0f).sample({100}, &g2)));
}

TEST_CASE("validation messages as PyTorch's") {
  CHECK(error_of([] { D::Normal<float> d(dl::tensor<float>({0.f, 1.f}), dl::tensor<float>({1.f, -1.f})); }) ==
        "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: torch.Size([2]), scale: torch.Size([2])) "
        "to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\ntensor([ 1., -1.])");
  CHECK(error_of([] { D::Normal<float> d(0.0, -1.0); }) ==
        "Expected parameter scale (Tensor of shape ()) of distribution Normal(loc: 0.0, scale: -1.0) to satisfy the "
        "constraint GreaterThan(lower_bound=0.0), but found invalid values:\n-1.0");
  CHECK(error_of([] { D::Beta<float> d(dl::tensor<float>({1.f, -1.f}), dl::tensor<float>({1.f, 1.f})); }) ==
        "Expected parameter concentration (Tensor of shape (2, 2)) of distribution Dirichlet(concentration: torch.Size([2, 2])) "
        "to satisfy the constraint IndependentConstraint(GreaterThan(lower_bound=0.0), 1), but found invalid values:\n"
        "tensor([[ 1.,  1.],\n        [-1.,  1.]])");
  CHECK(error_of([] { D::Exponential<float>(dl::tensor<float>({1.f, 2.f, 3.f})).log_prob(dl::tensor<float>({1.f, -1.f, 2.f})); }) ==
        "Expected value argument (Tensor of shape (3,)) to be within the support (GreaterThanEq(lower_bound=0.0)) of the "
        "distribution Exponential(rate: torch.Size([3])), but found invalid values:\ntensor([ 1., -1.,  2.])");
  CHECK(error_of([] { D::Categorical<float> d({.logits = dl::scalar_tensor<float>(1.f)}); }) ==
        "`logits` parameter must be at least one-dimensional.");
  CHECK(error_of([] { D::Categorical<float> d({.probs = dl::ones({2}), .logits = dl::ones({2})}); }) ==
        "Either `probs` or `logits` must be specified, but not both.");
  CHECK(error_of([] { D::Categorical<float>(dl::tensor<float>({0.5f, 0.5f})).log_prob(dl::tensor<int64_t>({2})); }) ==
        "Expected value argument (Tensor of shape (1,)) to be within the support (IntegerInterval(lower_bound=0, "
        "upper_bound=1)) of the distribution Categorical(probs: torch.Size([2])), but found invalid values:\ntensor([2])");
  CHECK(error_of([] { D::Bernoulli<float> d(dl::tensor<float>({0.5f, 1.5f})); }) ==
        "Expected parameter probs (Tensor of shape (2,)) of distribution Bernoulli(probs: torch.Size([2])) to satisfy the "
        "constraint Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\ntensor([0.5000, 1.5000])");
  CHECK(error_of([] { D::Binomial<float>(10, dl::tensor<float>({0.5f, 0.5f})).log_prob(dl::tensor<float>({11.f, 2.f})); }) ==
        "Expected value argument (Tensor of shape (2,)) to be within the support (IntegerInterval(lower_bound=0, "
        "upper_bound=tensor([10., 10.]))) of the distribution Binomial(total_count: torch.Size([2]), probs: "
        "torch.Size([2])), but found invalid values:\ntensor([11.,  2.])");
  CHECK(error_of([] { D::Uniform<float> d(dl::tensor<float>({0.f, 1.f}), dl::tensor<float>({1.f, 1.f})); }) ==
        "Uniform is not defined when low>= high");
  CHECK(error_of([] { D::Uniform<float>(0.0, 1.0).log_prob(dl::tensor<float>({2.f})); }) ==
        "Expected value argument (Tensor of shape (1,)) to be within the support (Interval(lower_bound=0.0, "
        "upper_bound=1.0)) of the distribution Uniform(low: 0.0, high: 1.0), but found invalid values:\ntensor([2.])");
  CHECK(error_of([] { D::Gamma<float> d(dl::tensor<float>({1.f}), dl::tensor<float>({0.f})); }) ==
        "Expected parameter rate (Tensor of shape (1,)) of distribution Gamma(concentration: tensor([1.]), rate: "
        "tensor([0.])) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\ntensor([0.])");
  CHECK(error_of([] { D::MultivariateNormal<float> d(dl::zeros({2}), dl::tensor<float>({{1.f, 2.f}, {2.f, 1.f}})); }) ==
        "Expected parameter covariance_matrix (Tensor of shape (2, 2)) of distribution MultivariateNormal(loc: "
        "torch.Size([2]), covariance_matrix: torch.Size([2, 2])) to satisfy the constraint PositiveDefinite(), but found "
        "invalid values:\ntensor([[1., 2.],\n        [2., 1.]])");
  CHECK(error_of([] { D::MultivariateNormal<float> d(dl::zeros({2}), D::MvnMatrix<float>{}); }) ==
        "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.");
  CHECK(error_of([] { D::Normal<float>(dl::zeros({3}), 1.0).log_prob(dl::zeros({2})); }) ==
        "Value is not broadcastable with batch_shape+event_shape: torch.Size([2]) vs torch.Size([3]).");
  CHECK(error_of([] { D::Independent d(D::Normal<float>(dl::zeros({2}), 1.0), 2); }) ==
        "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 2 vs 1");
  CHECK(error_of([] { D::Bernoulli<float>(0.5).rsample(); }) == "Bernoulli.rsample is not implemented (as in PyTorch)");
  CHECK(error_of([] { (void)dl::multinomial(dl::tensor<float>({0.5f, 0.5f}), 3); }) ==
        "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  CHECK(error_of([] { (void)dl::multinomial(dl::tensor<float>({0.5f, -0.5f}), 1); }) ==
        "probability tensor contains either `inf`, `nan` or element < 0");
  CHECK(error_of([] { (void)dl::multinomial(dl::tensor<float>({0.f, 0.f}), 1); }) ==
        "invalid multinomial distribution (sum of probabilities <= 0)");
  CHECK(error_of([] { (void)dl::multinomial(dl::tensor<float>({0.5f, 0.5f}), 0); }) == "cannot sample n_sample <= 0 samples");
  CHECK(error_of([] { (void)dl::multinomial(dl::ones({2, 2, 2}), 1); }) == "prob_dist must be 1 or 2 dim");
  CHECK(error_of([] { (void)dl::poisson(dl::tensor<float>({1.f, -1.f})); }) == "invalid Poisson rate, expected rate to be non-negative");
  CHECK(error_of([] { (void)dl::bernoulli(dl::tensor<float>({0.5f, 1.5f})); }).find("Expected p_in >= 0 && p_in <= 1") != std::string::npos);
  // Validation off: no error, as PyTorch's validate_args=False.
  CHECK(error_of([] { D::Normal<float> d(0.0, -1.0, false); }) == "no error");
}
