"""The ground truth of ``benchmarks/smc_data_path.py``: the regression's exact latent is the one that drew its
data, and the exact posterior draw of the Bayesian linear regression with a half-normal scale follows its
posterior (its log-scale density integrates to the quadrature's log p(y); its draws match the posterior's
moments computed by quadrature)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import smc_data_path  # noqa: E402

from bdmc.exact import regression_half_normal_scale_log_marginal  # noqa: E402


def test_the_regression_latent_draws_its_data_and_its_posterior_draws_are_the_conjugate_posterior():
    model, data, exact, draw = smc_data_path.regression()
    latent = smc_data_path.generating_latent()
    import peer_problems

    info = peer_problems.get_problem("regression").info
    rng = np.random.default_rng(info["data_seed"])
    beta = rng.standard_normal(info["dim"])
    noise = rng.standard_normal(info["n"])
    np.testing.assert_array_equal(np.asarray(latent["x"]), beta)
    np.testing.assert_allclose(np.asarray(data), info["design_matrix"] @ beta + noise, rtol=0, atol=1e-12)
    # The posterior draws: the gradient of the log joint at their mean is zero, and their spread is the
    # inverse Hessian's (Gaussian posterior).
    import jax

    draws = np.stack([np.asarray(draw(seed)["x"]) for seed in range(4000)])
    problem = peer_problems.get_problem("regression")
    grad = jax.grad(problem.log_joint)(jax.numpy.asarray(draws.mean(0)))
    hessian = jax.hessian(problem.log_joint)(jax.numpy.asarray(draws.mean(0)))
    np.testing.assert_allclose(np.cov(draws.T), np.linalg.inv(-np.asarray(hessian)), atol=4e-4)
    assert np.max(np.abs(np.linalg.solve(-np.asarray(hessian), np.asarray(grad)))) < 4 * np.sqrt(
        np.max(np.diag(np.cov(draws.T))) / 4000)


def _problem(seed=0, n=12, d=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * [1.0, 30.0][:d]
    y = X @ rng.normal(0, 2, d) + 3.0 * rng.standard_normal(n)
    return X, y


# -m slow: 3,000 draws of the benchmark's own ground truth (NumPy); the quadrature it rests on keeps its default
# test in tests/exact/test_quadrature.py.
@pytest.mark.slow
def test_the_blr_posterior_draw_follows_the_posterior():
    X, y = _problem()
    log_z = regression_half_normal_scale_log_marginal(y, X, prior_sd=10.0, sigma_scale=10.0)
    n, d = X.shape

    def joint(sigma):  # p(y, sigma) / p(y), beta integrated out: y ~ N(0, sigma^2 I + 100 X X^T)
        cov = sigma**2 * np.eye(n) + 100.0 * X @ X.T
        sign, logdet = np.linalg.slogdet(cov)
        log_lik = -0.5 * (n * math.log(2 * math.pi) + logdet + y @ np.linalg.solve(cov, y))
        return math.exp(log_lik - log_z) * stats.halfnorm.pdf(sigma, scale=10.0)

    total = integrate.quad(joint, 0.01, 200, points=[1, 3, 10], limit=200)[0]
    assert abs(total - 1) < 1e-6  # the quadrature's log p(y) normalises the posterior of sigma
    mean_sigma = integrate.quad(lambda s: s * joint(s), 0.01, 200, points=[1, 3, 10], limit=200)[0]
    rng = np.random.default_rng(1)
    draws = [smc_data_path.blr_posterior_draw(rng, X, y, prior_sd=10.0, sigma_scale=10.0, points=4001)
             for _ in range(3000)]
    sigmas = np.array([s for _, s in draws])
    se = sigmas.std() / math.sqrt(len(sigmas))
    assert abs(sigmas.mean() - mean_sigma) < 4 * se, (sigmas.mean(), mean_sigma, se)
    # Given sigma, beta's posterior mean is linear in y; averaged over the draws it matches the posterior mean
    # computed by quadrature over sigma.
    def beta_mean(sigma):
        cov = np.linalg.inv(X.T @ X / sigma**2 + np.eye(d) / 100.0)
        return cov @ X.T @ y / sigma**2

    exact_beta = np.array([integrate.quad(lambda s, j=j: beta_mean(s)[j] * joint(s), 0.01, 200, points=[1, 3, 10],
                                          limit=200)[0] for j in range(d)])
    betas = np.array([b for b, _ in draws])
    se_beta = betas.std(axis=0) / math.sqrt(len(betas))
    assert np.all(np.abs(betas.mean(axis=0) - exact_beta) < 4 * se_beta), (betas.mean(0), exact_beta, se_beta)
