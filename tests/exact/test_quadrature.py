"""The quadrature evidence of a regression with a half-normal noise scale, against Monte Carlo and a closed form."""

import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from bdmc.exact import hierarchical_normal_log_marginal, regression_half_normal_scale_log_marginal


def _problem():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(30), rng.normal(40, 10, 30), rng.integers(0, 2, 30)])
    y = X @ np.array([2.0, 0.1, -1.0]) + rng.normal(0, 3.0, 30)
    return X, y


def test_quadrature_agrees_with_monte_carlo_over_sigma():
    X, y = _problem()
    exact = regression_half_normal_scale_log_marginal(y, X, prior_sd=10.0, sigma_scale=5.0)
    # Given sigma the evidence is Gaussian; average it over 100,000 half-normal draws of sigma.
    sigma = stats.halfnorm.rvs(scale=5.0, size=100_000, random_state=np.random.default_rng(0))
    cov_beta = 100.0 * X @ X.T
    w, V = np.linalg.eigh(cov_beta)
    proj = V.T @ y
    d = np.maximum(w, 0)[None, :] + sigma[:, None] ** 2
    ll = -0.5 * (y.size * math.log(2 * math.pi) + np.log(d).sum(1) + (proj**2 / d).sum(1))
    mc = logsumexp(ll) - math.log(ll.size)
    weights = np.exp(ll - ll.max())
    mc_se = weights.std() / weights.mean() / math.sqrt(ll.size)
    assert abs(exact - mc) < 4 * mc_se + 1e-6, (exact, mc, mc_se)


def test_without_covariates_it_is_the_evidence_of_the_noise_scale_alone():
    # X = 0: y ~ N(0, sigma^2 I), sigma ~ HalfNormal(5), integrated on a fine grid of sigma directly.
    X, y = _problem()
    zero = regression_half_normal_scale_log_marginal(y, 0 * X, prior_sd=10.0, sigma_scale=5.0)
    grid = np.linspace(1e-3, 200, 400_001)
    ll = stats.norm.logpdf(y[:, None], scale=grid[None, :]).sum(0) + stats.halfnorm.logpdf(grid, scale=5.0)
    direct = logsumexp(ll) + math.log(grid[1] - grid[0])
    assert abs(zero - direct) < 1e-6


def test_eight_schools_quadrature_agrees_with_monte_carlo_over_tau():
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    exact = hierarchical_normal_log_marginal(y, sigma, mu_sd=5.0, tau_cauchy_scale=5.0)
    # Given tau and mu, the y_j are independent normals: average over draws of both.
    rng = np.random.default_rng(1)
    tau = stats.halfcauchy.rvs(scale=5.0, size=400_000, random_state=rng)
    mu = rng.normal(0.0, 5.0, size=tau.size)
    ll = stats.norm.logpdf(y[None, :], loc=mu[:, None], scale=np.sqrt(sigma**2 + tau[:, None] ** 2)).sum(1)
    mc = logsumexp(ll) - math.log(ll.size)
    weights = np.exp(ll - ll.max())
    mc_se = weights.std() / weights.mean() / math.sqrt(ll.size)
    assert abs(exact - mc) < 4 * mc_se + 1e-6, (exact, mc, mc_se)
