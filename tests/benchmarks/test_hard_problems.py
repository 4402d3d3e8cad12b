"""The hard targets' ground truth is right: exact log Z against independent integrals, the densities against the
target they stand for, and the exact posterior draws against the posterior's own moments."""

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness.hard_problems import EGGBOX_SIDE, PHASE_HALF_WIDTH, eggbox_problem, manywell_problem, phase_problem  # noqa: E402


@pytest.fixture(scope="module")
def eggbox():
    return eggbox_problem()


@pytest.fixture(scope="module")
def manywell():
    return manywell_problem()


def test_eggbox_log_z_is_the_published_value_and_its_densities_are_the_target(eggbox):
    assert eggbox.exact == pytest.approx(235.856, abs=5e-4)  # Feroz et al. (2009)
    # prior x likelihood in the latent u, times the Jacobian back to x, is L(x) / (10 pi)^2 at any point.
    u = jnp.array([0.3, -1.2])
    x = EGGBOX_SIDE * jax.nn.sigmoid(u)
    log_jacobian = jnp.sum(jnp.log(EGGBOX_SIDE * jax.nn.sigmoid(u) * jax.nn.sigmoid(-u)))
    joint = eggbox.log_prior(u) + eggbox.log_lik(u, eggbox.data)[0] - log_jacobian
    want = (2 + math.cos(float(x[0]) / 2) * math.cos(float(x[1]) / 2)) ** 5 - 2 * math.log(EGGBOX_SIDE)
    assert float(joint) == pytest.approx(want, rel=1e-12)
    # The nested samplers' parameters map back to the same likelihood.
    z = np.array([4.0, 20.0])
    assert float(eggbox.log_lik(eggbox.z_to_x(jnp.asarray(z)), eggbox.data)[0]) == pytest.approx(
        (2 + math.cos(2.0) * math.cos(10.0)) ** 5, rel=1e-10)


def test_eggbox_exact_draws_share_the_modes_as_the_posterior_does(eggbox):
    u = eggbox.info["exact_draws"](0, 40_000)
    x = EGGBOX_SIDE * (1 / (1 + np.exp(-u)))
    # Every draw sits near a peak, where cos(x/2) cos(y/2) is 1 (the posterior's mass within ~0.3 of one).
    c = np.cos(x[:, 0] / 2) * np.cos(x[:, 1] / 2)
    assert np.quantile(c, 0.01) > 0.95
    # The posterior's mass by quadrant of the box equals its draws' fractions (binomial 4-sigma).
    grid = np.linspace(0, EGGBOX_SIDE, 2001)
    X, Y = np.meshgrid(grid, grid, indexing="ij")
    w = np.exp((2 + np.cos(X / 2) * np.cos(Y / 2)) ** 5 - 243.0)
    left = integrate.simpson(integrate.simpson(np.where(X < EGGBOX_SIDE / 2, w, 0), x=grid, axis=1), x=grid)
    total = integrate.simpson(integrate.simpson(w, x=grid, axis=1), x=grid)
    p = left / total
    assert abs(np.mean(x[:, 0] < EGGBOX_SIDE / 2) - p) < 4 * math.sqrt(p * (1 - p) / len(x))


def test_manywell_log_z_and_exact_draws(manywell):
    # An independent integral of one copy (trapezoid on a fine grid) gives the same log Z.
    a = np.linspace(-8, 8, 400_001)
    z1 = np.trapezoid(np.exp(-(a**4 - 6 * a**2 - 0.5 * a)), a)
    assert manywell.exact == pytest.approx(16 * (math.log(z1) + 0.5 * math.log(2 * math.pi)), abs=1e-8)
    # prior x likelihood is exp(-E) at any point.
    x = jnp.linspace(-2.0, 2.0, 32)
    energy = float(jnp.sum(x[0::2] ** 4 - 6 * x[0::2] ** 2 - 0.5 * x[0::2] + 0.5 * x[1::2] ** 2))
    assert float(manywell.log_prior(x) + manywell.log_lik(x, manywell.data)[0]) == pytest.approx(-energy, rel=1e-12)
    # Exact draws: the well coordinate's mean and the share in the right-hand well match quadrature; the other
    # coordinate is standard normal.
    draws = manywell.info["exact_draws"](1, 20_000)
    density = np.exp(-(a**4 - 6 * a**2 - 0.5 * a)) / z1
    mean = np.trapezoid(a * density, a)
    right = np.trapezoid(np.where(a > 0, density, 0), a)
    wells = draws[:, 0::2].ravel()
    assert abs(wells.mean() - mean) < 4 * wells.std() / math.sqrt(wells.size)
    assert abs(np.mean(wells > 0) - right) < 4 * math.sqrt(right * (1 - right) / wells.size)
    assert stats.kstest(draws[:, 1::2].ravel(), "norm").pvalue > 1e-4


def test_phase_transition_log_z_density_and_exact_draws():
    phase = phase_problem()
    # An independent integral: each component is h times a one-dimensional integral over [-5, 5], to the 10th.
    def one_dimension(sigma):
        return integrate.quad(lambda t: math.exp(-t * t / (2 * sigma * sigma)), -5, 5, epsabs=0, epsrel=1e-13,
                              points=[0.0])[0]

    parts = [math.log(h) + 10 * math.log(one_dimension(s)) for s, h in [(1.0, 1.0), (0.1, 9e10)]]
    exact = float(np.logaddexp(*parts) - 10 * math.log(10.0))
    assert phase.exact == pytest.approx(exact, abs=1e-9)
    assert phase.exact == pytest.approx(-11.5339, abs=1e-4)  # the example's analytic value (box cut negligible)
    # prior x likelihood in u, less the log Jacobian to x, is log L(x) - log V at a point in the box.
    u = jnp.linspace(-1.5, 2.0, 10)
    x = 2 * PHASE_HALF_WIDTH * jax.nn.sigmoid(u) - PHASE_HALF_WIDTH
    log_jacobian = jnp.sum(jnp.log(2 * PHASE_HALF_WIDTH * jax.nn.sigmoid(u) * jax.nn.sigmoid(-u)))
    joint = phase.log_prior(u) + phase.log_lik(u, phase.data)[0] - log_jacobian
    sq = float(jnp.sum(x**2))
    want = math.log(math.exp(-sq / 2) + 9e10 * math.exp(-sq / 0.02)) - 10 * math.log(10.0)
    assert float(joint) == pytest.approx(want, rel=1e-10)
    z = np.full(10, 0.05)
    assert float(phase.log_lik(phase.z_to_x(jnp.asarray(z)), phase.data)[0]) == pytest.approx(
        math.log(math.exp(-0.0125) + 9e10 * math.exp(-0.0125 / 0.01)), rel=1e-10)
    # Exact draws: the spike holds 90% of them, and |x|^2 / sigma^2 is chi-square with 10 degrees of freedom in
    # each component (the box cuts the background's tail by under 1e-5).
    u = phase.info["exact_draws"](2, 20_000)
    x = 2 * PHASE_HALF_WIDTH / (1 + np.exp(-u)) - PHASE_HALF_WIDTH
    r2 = np.sum(x**2, axis=1)
    spike = r2 < 1.0
    share = phase.info["spike_share"]
    assert share == pytest.approx(0.9, abs=1e-5)
    assert abs(spike.mean() - share) < 4 * math.sqrt(share * (1 - share) / len(x))
    assert stats.kstest(r2[spike] / 0.01, stats.chi2(10).cdf).pvalue > 1e-4
    assert stats.kstest(r2[~spike], stats.chi2(10).cdf).pvalue > 1e-4
