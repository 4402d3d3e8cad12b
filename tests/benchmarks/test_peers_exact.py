"""The exact log Z of benchmarks/peers.py, checked against routes that share none of its algebra."""

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import peer_problems  # noqa: E402

pytestmark = pytest.mark.float64


def sequential_log_z(y, design, prior_sd, noise_sd):
    """log p(y) as the sum of one-step predictive densities, updating the Gaussian posterior case by case."""
    mean, cov, total = np.zeros(design.shape[1]), prior_sd**2 * np.eye(design.shape[1]), 0.0
    for x_i, y_i in zip(design, y, strict=False):
        s = x_i @ cov @ x_i + noise_sd**2
        total += stats.norm(x_i @ mean, math.sqrt(s)).logpdf(y_i)
        gain = cov @ x_i / s
        mean, cov = mean + gain * (y_i - x_i @ mean), cov - np.outer(gain, x_i @ cov)
    return total


@pytest.mark.parametrize("name", ["regression", "correlated"])
def test_linear_gaussian_matches_sequential_predictives(name):
    problem = peer_problems.get_problem(name)
    builder = {"regression": lambda: np.random.default_rng(1).standard_normal((200, 10)),
               "correlated": peer_problems.correlated_design}[name]
    design = builder()
    ref = sequential_log_z(problem.data, design, problem.info["prior_sd"], problem.info["noise_sd"])
    assert problem.exact == pytest.approx(ref, abs=1e-8)


def test_linear_gaussian_matches_quadrature_in_one_dimension():
    design, y = np.array([[0.7], [-1.3], [2.0]]), np.array([0.4, -1.1, 2.5])
    integrand = lambda x: math.exp(stats.norm(0, 1.5).logpdf(x) + stats.norm(design[:, 0] * x, 0.8).logpdf(y).sum())
    value, _ = integrate.quad(integrand, -20, 20, epsabs=0, epsrel=1e-12, points=[0.0, 1.0])
    assert peer_problems.linear_gaussian_log_z(y, design, 1.5, 0.8) == pytest.approx(math.log(value), abs=1e-9)


def test_correlated_posterior_has_condition_100():
    design = peer_problems.correlated_design()
    eig = np.linalg.eigvalsh(np.eye(20) + design.T @ design)
    assert eig.max() / eig.min() == pytest.approx(100.0, rel=1e-9)


def test_schools_matches_prior_monte_carlo():
    """Average of prod_j N(y_j; mu, sigma_j^2 + tau^2) over prior draws of (mu, tau): theta integrated per school."""
    rng = np.random.default_rng(0)
    m = 200_000
    mu = peer_problems.MU_SD * rng.standard_normal(m)
    tau = peer_problems.TAU_SCALE * np.abs(rng.standard_cauchy(m))
    sd = np.sqrt(peer_problems.SCHOOLS_SIGMA**2 + tau[:, None] ** 2)
    log_l = stats.norm(mu[:, None], sd).logpdf(peer_problems.SCHOOLS_Y).sum(axis=1)
    w = np.exp(log_l - log_l.max())
    estimate = log_l.max() + math.log(w.mean())
    stderr = w.std() / w.mean() / math.sqrt(m)
    exact = peer_problems.schools_log_z()
    assert abs(estimate - exact) < 4 * stderr + 1e-3, (estimate, exact, stderr)


def test_schools_log_joint_matches_scipy_densities():
    """The JAX density in (mu, log tau, eta) against SciPy's densities plus the log-tau Jacobian."""
    problem = peer_problems.get_problem("schools")
    x = np.array([1.3, math.log(4.2), *np.linspace(-1.0, 1.0, 8)])
    mu, tau, eta = x[0], math.exp(x[1]), x[2:]
    ref = (stats.norm(0, 5).logpdf(mu) + stats.halfcauchy(scale=5).logpdf(tau) + math.log(tau)
           + stats.norm().logpdf(eta).sum()
           + stats.norm(mu + tau * eta, peer_problems.SCHOOLS_SIGMA).logpdf(peer_problems.SCHOOLS_Y).sum())
    assert float(problem.log_joint(jnp.asarray(x))) == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("name", ["regression", "schools"])
def test_prior_transform_and_sampler_agree(name):
    """The nested samplers' prior (unit cube) and the JAX prior sampler draw the same distribution of x."""
    problem = peer_problems.get_problem(name)
    u = np.random.default_rng(1).uniform(size=(20_000, problem.dim))
    from_cube = np.asarray(problem.z_to_x(jnp.asarray(problem.prior_transform(u))))
    draws = np.asarray(jax.vmap(problem.sample_prior)(jax.random.split(jax.random.key(0), 20_000)))
    for k in range(problem.dim):
        assert stats.ks_2samp(from_cube[:, k], draws[:, k]).pvalue > 1e-4
