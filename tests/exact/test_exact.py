"""The ground truth itself, checked against independent computations (scipy densities, direct sums)."""

import itertools

import jax
import numpy as np
import scipy.stats as st
from scipy.special import logsumexp

from bdmc import exact, simulate
from bdmc.models import FiniteMixture, GaussianMean, LinearRegression


def test_gaussian_mean_closed_form_matches_multivariate_normal(key):
    m = GaussianMean(n=7, dim=3, prior_mean=0.3, prior_std=1.7, noise_std=0.6)
    data, _ = simulate(key, m)
    cov = m.noise_std**2 * np.eye(m.n) + m.prior_std**2 * np.ones((m.n, m.n))
    prior_predictive = st.multivariate_normal(np.full(m.n, m.prior_mean), cov)
    ref = sum(prior_predictive.logpdf(np.asarray(data)[:, d]) for d in range(m.dim))
    np.testing.assert_allclose(float(m.exact_log_marginal(data)), ref, rtol=1e-12)


def test_linear_regression_closed_form_matches_multivariate_t(key):
    # Integrating beta then s2 ~ IG(h0, k0) gives y ~ t_{2 h0}(0, (k0 / h0) C), C = I + tau X X^T.
    m = LinearRegression(n=12, degree=2, tau=0.5, h0=2.5, k0=1.5)
    data, _ = simulate(key, m)
    X = np.asarray(m.design)
    C = np.eye(m.n) + m.tau * X @ X.T
    ref = st.multivariate_t(loc=np.zeros(m.n), shape=m.k0 / m.h0 * C, df=2 * m.h0).logpdf(np.asarray(data))
    np.testing.assert_allclose(float(m.exact_log_marginal(data)), ref, rtol=1e-10)


def test_mixture_enumeration_matches_direct_sum(key):
    m = FiniteMixture(n=4, k=2, dim=2, sigma_theta=1.5, sigma_noise=0.7)
    data, _ = simulate(key, m)
    y = np.asarray(data)
    terms = []
    for z in itertools.product(range(m.k), repeat=m.n):
        z = np.array(z)
        same = (z[:, None] == z[None, :]).astype(float)
        cov = m.sigma_noise**2 * np.eye(m.n) + m.sigma_theta**2 * same
        lp = m.n * np.log(1 / m.k)
        lp += sum(st.multivariate_normal(np.zeros(m.n), cov).logpdf(y[:, d]) for d in range(m.dim))
        terms.append(lp)
    np.testing.assert_allclose(float(m.exact_log_marginal(data)), logsumexp(terms), rtol=1e-10)


def test_enumeration_refuses_huge_instances():
    import pytest

    with pytest.raises(ValueError, match="too many"):
        exact.enumeration.all_assignments(30, 3)


def test_log_prior_is_normalized():
    # Integrate the prior of the scalar-latent pieces numerically: the Jacobian of log s2 must be included.
    m = LinearRegression(n=3, degree=0, h0=2.0, k0=3.0, tau=0.7)
    grid = np.linspace(-12, 12, 4001)
    b = np.linspace(-30, 30, 1201)
    B, L = np.meshgrid(b, grid, indexing="ij")
    lp = jax.vmap(jax.vmap(lambda bb, ll: m.log_prior({"beta": bb[None], "log_s2": ll})))(B, L)
    total = np.trapezoid(np.trapezoid(np.exp(np.asarray(lp)), grid, axis=1), b)
    np.testing.assert_allclose(total, 1.0, atol=2e-3)
