"""Reference values for tests/distributions.cpp: log_prob, entropy, moments, cdf/icdf and
kl_divergence of torch.distributions, special functions and their gradients, and the standard
gamma's reparameterisation gradient. Run with Debian's PyTorch: /usr/bin/python3."""
import torch
from torch.distributions import (Bernoulli, Beta, Binomial, Categorical, Exponential, Gamma, Independent,
                                 Laplace, Multinomial, MultivariateNormal, Normal, Uniform, kl_divergence)

from refbin import Writer

torch.set_default_dtype(torch.float64)
w = Writer("distributions_ref.bin")
pos = lambda *v: torch.tensor(v)

# Special functions on fixed points, with gradients.
x = torch.tensor([0.1, 0.5, 1.0, 2.5, 7.0, 12.0, -0.5, -2.3], requires_grad=True)
for name, f in [("lgamma", torch.lgamma), ("digamma", torch.digamma),
                ("polygamma1", lambda t: torch.polygamma(1, t)), ("polygamma2", lambda t: torch.polygamma(2, t))]:
    y = f(x)
    w.put(f"special/{name}", y)
    w.grads(f"special/{name}", y, [x], ["x"])
u = torch.tensor([-0.99, -0.5, 0.0, 0.3, 0.9, 0.999999], requires_grad=True)
w.put("special/erfinv", torch.erfinv(u))
w.grads("special/erfinv", torch.erfinv(u), [u], ["x"])
xa, xb = torch.tensor([0.0, 1.0, 2.0, 0.0]), torch.tensor([0.5, 2.0, 0.1, 0.0])
w.put("special/xlogy", torch.xlogy(xa, xb))

# Standard gamma reparameterisation gradient dx/dalpha at fixed (x, alpha).
ga = torch.tensor([0.3, 1.0, 2.5, 10.0, 0.8, 50.0])
gx = torch.tensor([0.05, 0.7, 3.0, 8.0, 1.5, 47.0])
w.put("gamma_grad", torch._standard_gamma_grad(ga, gx))

def record(name, d, value, cdf=True, icdf=False, rs=False):
    w.put(f"{name}/log_prob", d.log_prob(value))
    for m in ["mean", "variance", "stddev"]:
        w.put(f"{name}/{m}", getattr(d, m))
    try:
        w.put(f"{name}/entropy", d.entropy())
    except NotImplementedError:
        pass
    if cdf:
        w.put(f"{name}/cdf", d.cdf(value))
    if icdf:
        w.put(f"{name}/icdf", d.icdf(torch.tensor([0.1, 0.35, 0.5, 0.8, 0.95]).unsqueeze(-1).expand(5, *d.batch_shape)))

normal = Normal(pos(0.5, -1.0, 2.0), pos(1.0, 0.3, 2.5))
record("normal", normal, pos(0.2, -1.5, 4.0), icdf=True)
uniform = Uniform(pos(-1.0, 0.0, 2.0), pos(1.0, 0.5, 5.0))
record("uniform", uniform, pos(0.2, 0.25, 4.0), icdf=True)
expo = Exponential(pos(0.5, 1.0, 3.0))
record("exponential", expo, pos(0.2, 1.5, 0.1), icdf=True)
lap = Laplace(pos(0.5, -1.0, 2.0), pos(1.0, 0.3, 2.5))
record("laplace", lap, pos(0.2, -1.5, 4.0), icdf=True)
gam = Gamma(pos(0.5, 2.0, 7.5), pos(1.0, 0.3, 2.5))
record("gamma", gam, pos(0.2, 1.5, 4.0), cdf=False)
w.put("gamma/mode", gam.mode)
beta = Beta(pos(0.5, 2.0, 7.5), pos(1.5, 0.3, 2.5))
record("beta", beta, pos(0.2, 0.5, 0.9), cdf=False)
bern = Bernoulli(pos(0.1, 0.5, 0.9))
record("bernoulli", bern, pos(0.0, 1.0, 1.0), cdf=False)
bern_l = Bernoulli(logits=pos(-2.0, 0.0, 3.0))
record("bernoulli_logits", bern_l, pos(1.0, 0.0, 1.0), cdf=False)
cat_p = torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
cat = Categorical(cat_p)
w.put("categorical/log_prob", cat.log_prob(torch.tensor([[2, 0], [1, 1]])))
w.put("categorical/entropy", cat.entropy())
cat_l = Categorical(logits=torch.tensor([[1.0, -2.0, 0.5, 0.0]]))
w.put("categorical_logits/log_prob", cat_l.log_prob(torch.tensor([0, 1, 2, 3])))
w.put("categorical_logits/entropy", cat_l.entropy())
w.put("categorical_logits/probs", cat_l.probs)
binom = Binomial(10, pos(0.1, 0.5, 0.85))
record("binomial", binom, pos(0.0, 5.0, 9.0), cdf=False)
w.put("binomial/mode", binom.mode)
binom_l = Binomial(pos(3.0, 7.0, 12.0), logits=pos(-1.0, 0.0, 2.0))
w.put("binomial_logits/log_prob", binom_l.log_prob(pos(1.0, 7.0, 0.0)))
mult = Multinomial(6, torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
w.put("multinomial/log_prob", mult.log_prob(torch.tensor([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]])))
w.put("multinomial/mean", mult.mean)
w.put("multinomial/variance", mult.variance)
w.put("multinomial/entropy", mult.entropy())

cov = torch.tensor([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
loc = pos(0.5, -1.0, 2.0)
mvn = MultivariateNormal(loc, cov)
val = torch.tensor([[0.0, 0.0, 0.0], [1.0, -2.0, 2.5]])
w.put("mvn/log_prob", mvn.log_prob(val))
w.put("mvn/entropy", mvn.entropy())
w.put("mvn/variance", mvn.variance)
w.put("mvn/scale_tril", mvn.scale_tril)
mvn_p = MultivariateNormal(loc, precision_matrix=cov)
w.put("mvn_precision/log_prob", mvn_p.log_prob(val))
w.put("mvn_precision/scale_tril", mvn_p.scale_tril)
L = torch.tensor([[1.5, 0.0, 0.0], [0.2, 0.7, 0.0], [-0.3, 0.4, 1.1]])
mvn_t = MultivariateNormal(torch.zeros(3), scale_tril=L)
w.put("mvn_tril/log_prob", mvn_t.log_prob(val))
w.put("kl/mvn_mvn", kl_divergence(mvn, mvn_t))

ind = Independent(Normal(torch.tensor([[0.0, 1.0], [2.0, -1.0]]), torch.tensor([[1.0, 2.0], [0.5, 1.5]])), 1)
w.put("independent/log_prob", ind.log_prob(torch.tensor([[0.5, 0.5], [1.0, 1.0]])))
w.put("independent/entropy", ind.entropy())
ind2 = Independent(Normal(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), torch.tensor([[2.0, 1.0], [1.0, 1.0]])), 1)
w.put("kl/independent", kl_divergence(ind, ind2))

n2 = Normal(pos(0.0, 1.0, -1.0), pos(2.0, 0.5, 1.0))
l2 = Laplace(pos(0.0, 1.0, -1.0), pos(2.0, 0.5, 1.0))
e2 = Exponential(pos(2.0, 0.5, 1.0))
g2 = Gamma(pos(1.5, 3.0, 0.7), pos(2.0, 0.5, 1.0))
b2 = Beta(pos(1.5, 3.0, 0.7), pos(2.0, 0.5, 1.0))
u2 = Uniform(pos(-2.0, -1.0, 1.0), pos(2.0, 1.0, 6.0))
pairs = {
    "normal_normal": (normal, n2), "laplace_laplace": (lap, l2), "exponential_exponential": (expo, e2),
    "gamma_gamma": (gam, g2), "beta_beta": (beta, b2), "uniform_uniform": (uniform, u2),
    "bernoulli_bernoulli": (bern, bern_l), "binomial_binomial": (binom, Binomial(10, pos(0.3, 0.3, 0.3))),
    "categorical_categorical": (cat, Categorical(torch.tensor([[0.3, 0.3, 0.4], [0.2, 0.2, 0.6]]))),
    "laplace_normal": (lap, n2), "normal_laplace": (normal, l2), "exponential_gamma": (expo, g2),
    "gamma_exponential": (gam, e2), "exponential_normal": (expo, n2), "gamma_normal": (gam, n2),
    "beta_normal": (beta, n2), "uniform_normal": (uniform, n2),
}
for k, (p, q) in pairs.items():
    w.put(f"kl/{k}", kl_divergence(p, q))

# rsample gradients of the location-scale families with fixed noise are checked by finite
# differences in C++; Gamma's through gamma_grad above.
w.save()
