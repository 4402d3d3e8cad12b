"""Exact log marginal likelihoods by one-dimensional quadrature: Gaussian models with one non-Gaussian scale."""

from __future__ import annotations

import math

import numpy as np

# SciPy's statistics and quadrature are imported where used: the models that quote these values are imported with
# bdmc, and SciPy's import would be a large part of a fresh process's first call.


def regression_half_normal_scale_log_marginal(y, X, *, prior_sd: float, sigma_scale: float) -> float:
    """log p(y) for ``beta ~ N(0, prior_sd^2 I)``, ``sigma ~ HalfNormal(sigma_scale)``, ``y ~ N(X beta, sigma^2 I)``.

    Given sigma, ``y ~ N(0, sigma^2 I + prior_sd^2 X X^T)``; the one remaining integral, over log sigma, is done
    by adaptive quadrature around its peak (relative error about 1e-10), with the tails added.
    """
    y, X = np.asarray(y, np.float64), np.asarray(X, np.float64)
    n = y.shape[0]
    K = prior_sd**2 * X @ X.T
    eigvals, eigvecs = np.linalg.eigh(K)
    eigvals = np.maximum(eigvals, 0.0)  # K is positive semi-definite: rounding makes its null space slightly negative
    proj = eigvecs.T @ y
    from scipy import stats

    def log_integrand(log_sigma):
        d = eigvals + math.exp(2 * log_sigma)
        log_lik = -0.5 * (n * math.log(2 * math.pi) + np.sum(np.log(d)) + np.sum(proj**2 / d))
        return log_lik + stats.halfnorm.logpdf(math.exp(log_sigma), scale=sigma_scale) + log_sigma

    grid = np.linspace(math.log(sigma_scale) - 15, math.log(sigma_scale) + 6, 2101)
    return _log_integral(log_integrand, grid, half_width=2.0)


def hierarchical_normal_log_marginal(y, sigma, *, mu_sd: float, tau_cauchy_scale: float) -> float:
    """log p(y) for eight schools: ``y_j ~ N(theta_j, sigma_j^2)``, ``theta_j ~ N(mu, tau^2)``, ``mu ~ N(0, mu_sd^2)``,
    ``tau ~ HalfCauchy(tau_cauchy_scale)`` (centred or not: the same joint of y).

    Given tau, ``y ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``; the integral over log tau is done by adaptive
    quadrature, split at its peak.
    """
    y, sigma = np.asarray(y, np.float64), np.asarray(sigma, np.float64)
    n = y.size
    from scipy import stats

    def log_integrand(log_tau):
        tau = math.exp(log_tau)
        d = sigma**2 + tau**2
        # Sherman-Morrison for diag(d) + s 11^T.
        s = mu_sd**2
        inv_d = 1.0 / d
        denom = 1.0 + s * inv_d.sum()
        quad = np.sum(y**2 * inv_d) - s * np.sum(y * inv_d) ** 2 / denom
        logdet = np.sum(np.log(d)) + math.log(denom)
        log_lik = -0.5 * (n * math.log(2 * math.pi) + logdet + quad)
        return log_lik + stats.halfcauchy.logpdf(tau, scale=tau_cauchy_scale) + log_tau

    grid = np.linspace(math.log(tau_cauchy_scale) - 25, math.log(tau_cauchy_scale) + 25, 5001)
    return _log_integral(log_integrand, grid, half_width=3.0)


def _log_integral(log_integrand, grid, *, half_width: float) -> float:
    """``log int exp(log_integrand(u)) du`` over ``grid``'s span: the peak found on the grid, then adaptive
    quadrature on three pieces (the peak's neighbourhood and the two tails), scaled by the peak's value."""
    from scipy import integrate

    values = np.array([log_integrand(g) for g in grid])
    peak, top = grid[np.argmax(values)], values.max()
    f = lambda g: math.exp(log_integrand(g) - top)  # noqa: E731
    pieces = [(grid[0], peak - half_width), (peak - half_width, peak + half_width), (peak + half_width, grid[-1])]
    total = sum(integrate.quad(f, a, b, limit=400, epsabs=0, epsrel=1e-11)[0] for a, b in pieces)
    return float(top + math.log(total))
