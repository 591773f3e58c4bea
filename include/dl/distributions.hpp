// dl/distributions.hpp — dl::distributions (torch.distributions): Bernoulli, Beta, Binomial,
// Categorical, Exponential, Gamma, Independent, Laplace, Multinomial, MultivariateNormal, Normal,
// Uniform, kl_divergence; and dl::bernoulli, dl::multinomial, dl::poisson.
#pragma once

#include "distributions/kl.hpp"
#include "distributions/multinomial.hpp"
#include "distributions/sampling.hpp"
