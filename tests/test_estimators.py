"""Likelihood weighting and the harmonic mean estimator against exact log-ML."""

import jax
import numpy as np
import pytest

import bdmc
from bdmc import BDMCError
from bdmc.estimators import harmonic_mean, likelihood_weighting
from bdmc.models import FiniteMixture, GaussianMean


def _problem(model, seed=1):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    return data, latent, float(model.exact_log_marginal(data))


@pytest.mark.parametrize("model", [GaussianMean(n=3, dim=1), FiniteMixture(n=6, k=3)], ids=["gaussian", "mixture"])
def test_likelihood_weighting_is_unbiased_for_z(model, key):
    data, _, exact = _problem(model)
    est = likelihood_weighting(key, model, data, num_proposals=10_000, num_runs=64, batch_size=3000)
    assert abs(est.value - exact) < 4 * est.stderr and est.stderr < 0.1
    assert est.bound == "lower" and est.n_evals == 640_000


def test_likelihood_weighting_far_below_when_the_posterior_is_narrow(key):
    # The BDMC paper's finding: LW vastly underestimates once the posterior is much narrower than the prior.
    model = GaussianMean(n=50, dim=25)
    data, _, exact = _problem(model)
    est = likelihood_weighting(key, model, data, num_proposals=1000, num_runs=16)
    assert est.mean_single < exact - 10


def test_harmonic_mean_is_unbiased_for_one_over_z_with_finite_variance(key):
    # Noise much wider than the prior keeps 1/p(y|mu) square-integrable under the posterior, so the
    # delta-method standard error is trustworthy; the Gibbs kernel draws mu exactly from the posterior.
    model = GaussianMean(n=2, dim=1, noise_std=3.0)
    data, latent, exact = _problem(model)
    est = harmonic_mean(key, model, data, latent, num_samples=100, num_runs=2000)
    assert abs(est.value - exact) < 4 * est.stderr and est.stderr < 0.01
    assert est.bound == "upper"


def test_harmonic_mean_far_above_when_the_posterior_is_narrow(key):
    model = GaussianMean(n=50, dim=25)
    data, latent, exact = _problem(model)
    est = harmonic_mean(key, model, data, latent, num_samples=1000, num_runs=16)
    assert est.mean_single > exact + 10


def test_bad_knobs_are_named(key):
    model = GaussianMean(n=3, dim=1)
    data, latent, _ = _problem(model)
    with pytest.raises(BDMCError, match="num_proposals"):
        likelihood_weighting(key, model, data, num_proposals=0)
    with pytest.raises(BDMCError, match="num_samples"):
        harmonic_mean(key, model, data, latent, num_samples=2.5)
