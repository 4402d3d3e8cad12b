"""Likelihood weighting and the harmonic mean estimator against exact log-ML."""

import jax
import numpy as np
import pytest
from helpers import dtype_tol, simulate_float64

import bdmc
from bdmc import BDMCError
from bdmc.estimators import harmonic_mean, likelihood_weighting
from bdmc.models import FiniteMixture, GaussianMean


def _problem(model, seed=1):
    data, latent = simulate_float64(jax.random.key(seed), model)  # the same data set in float32 runs
    return data, latent, float(model.exact_log_marginal(data))


# The mixture with -m slow: likelihood weighting reads only the prior draws and the likelihood, whatever the model.
@pytest.mark.parametrize("model", [pytest.param(GaussianMean(n=3, dim=1), id="gaussian"),
                                   pytest.param(FiniteMixture(n=6, k=3), id="mixture", marks=pytest.mark.slow)])
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
    est = harmonic_mean(key, model, data, exact_latent=latent, num_samples=100, num_runs=2000)
    assert abs(est.value - exact) < 4 * est.stderr and est.stderr < 0.01
    assert est.bound == "upper"


def test_harmonic_mean_far_above_when_the_posterior_is_narrow(key):
    model = GaussianMean(n=50, dim=25)
    data, latent, exact = _problem(model)
    est = harmonic_mean(key, model, data, exact_latent=latent, num_samples=1000, num_runs=16)
    assert est.mean_single > exact + 10


def test_bad_knobs_are_named(key):
    model = GaussianMean(n=3, dim=1)
    data, latent, _ = _problem(model)
    with pytest.raises(BDMCError, match="num_proposals"):
        likelihood_weighting(key, model, data, num_proposals=0)
    with pytest.raises(BDMCError, match="num_samples"):
        harmonic_mean(key, model, data, exact_latent=latent, num_samples=2.5)


# ------------------------------------------------------------------------------------------- nested sampling

from dataclasses import dataclass  # noqa: E402

from bdmc.estimators.nested import nested_sampling  # noqa: E402


# The mixture with -m slow: nested sampling reads only the prior draws and the likelihood, whatever the model.
@pytest.mark.parametrize("model", [pytest.param(GaussianMean(n=5, dim=2), id="gaussian"),
                                   pytest.param(FiniteMixture(n=6, k=3), id="mixture", marks=pytest.mark.slow)])
def test_nested_sampling_with_geometric_volumes_is_unbiased_in_log_space(model, key):
    # With enough constrained moves the particles are (nearly) exact constrained-prior draws, and with volumes
    # exp(-t/K) the mean log estimate matches log Z.
    data, _, exact = _problem(model)
    est = nested_sampling(key, model, data, num_moves=30, num_runs=256)
    assert abs(est.value - exact) < 4 * est.stderr, (est.value - exact, est.stderr)
    assert est.settings["volumes"] == "geometric"
    assert est.bound is None and est.settings["capped_runs"] == 0


def test_nested_sampling_with_the_papers_volumes_overestimates(key):
    # Eq. 47 plugs in the expected volume (K/(K+1))^t, whose log exceeds the expected log volume -t/K: with
    # K = 2 the log estimate runs high, as the BDMC paper observed ("overestimated ... too often").
    model = FiniteMixture(n=6, k=3)
    data, _, exact = _problem(model)
    est = nested_sampling(key, model, data, num_moves=30, num_runs=256, volumes="arithmetic")
    assert est.value - exact > 4 * est.stderr


@dataclass(frozen=True)
class IgnoresConstraint:
    """A broken constrained-prior kernel: any prior draw is accepted, below the threshold too."""

    model: object
    evals_per_move: int = 1

    def __call__(self, key, latent, data, log_c):
        return self.model.sample_prior(key)


def test_nested_sampling_with_a_kernel_that_ignores_the_constraint_is_caught(key):
    model = GaussianMean(n=5, dim=2)
    data, _, exact = _problem(model)
    est = nested_sampling(key, model, data, num_moves=1, num_runs=256, volumes="geometric",
                          kernel=IgnoresConstraint(model))
    assert abs(est.value - exact) > 4 * est.stderr + 1.0


# ---------------------------------------------------------------------------------------------------- BIC

from bdmc.estimators import bic  # noqa: E402
from bdmc.models import BinaryAttributes, Clustering, LinearRegression, LowRank  # noqa: E402


def test_bic_maximum_matches_the_closed_form_least_squares_fit(key):
    model = LinearRegression()
    data, _, _ = _problem(model)
    X, y = np.asarray(model.design), np.asarray(data)
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    n = y.size
    max_loglik = -0.5 * n * np.log(2 * np.pi * np.sum((y - X @ beta) ** 2) / n) - 0.5 * n
    est = bic(key, model, data, num_restarts=4)
    np.testing.assert_allclose(est.value, max_loglik - 0.5 * (X.shape[1] + 1) * np.log(n), rtol=dtype_tol(floor=1e-9))
    assert est.bound is None and est.settings["num_params"] == X.shape[1] + 1


@pytest.mark.parametrize("model", [Clustering(n=6, dim=2, k=2), LowRank(n=6, d=2, k=1),
                                   BinaryAttributes(n=4, dim=2, k=2)], ids=["clustering", "low-rank", "binary"])
def test_bic_likelihood_sums_out_the_local_latents(model, key):
    # p(y | theta) with local latents summed out, against brute force: Monte Carlo over the latents' prior
    # would be noisy, so compare with the model's own collapsed machinery at a random parameter value.
    data, _ = bdmc.simulate(jax.random.key(1), model)
    theta = model.bic_sample_params(key)
    value = float(model.bic_log_likelihood(theta, data))
    if isinstance(model, LowRank):
        from scipy.stats import multivariate_normal

        cov = model.sigma_u**2 * np.asarray(theta).T @ np.asarray(theta) + model.sigma_n**2 * np.eye(model.d)
        ref = multivariate_normal(np.zeros(model.d), cov).logpdf(np.asarray(data)).sum()
    else:
        import itertools

        from scipy.special import logsumexp
        from scipy.stats import norm

        y, th = np.asarray(data), np.asarray(theta)
        if isinstance(model, Clustering):
            w = np.exp(np.asarray(model.log_weights))
            means, logp = th, np.log(w)
        else:
            rows = np.array(list(itertools.product([0, 1], repeat=model.k)), float)
            means = rows @ th
            logp = rows @ np.log(model.pi * np.ones(model.k)) + (1 - rows) @ np.log(1 - model.pi * np.ones(model.k))
        noise = model.sigma_noise if isinstance(model, Clustering) else model.sigma_n
        comp = norm(means[None, :, :], noise).logpdf(y[:, None, :]).sum(-1)
        ref = logsumexp(logp[None, :] + comp, axis=1).sum()
    np.testing.assert_allclose(value, ref, rtol=dtype_tol())


# ------------------------------------------------------------------------------------------ variational Bayes

import math  # noqa: E402

from bdmc.estimators import variational_bayes  # noqa: E402


def test_vb_is_a_lower_bound_and_the_symmetry_correction_adds_log_k_factorial(key):
    model = Clustering(n=6, dim=2, k=3)
    data, _, exact = _problem(model)
    plain = variational_bayes(key, model, data, num_restarts=20)
    sym = variational_bayes(key, model, data, num_restarts=20, symmetric=True)
    assert plain.value < exact
    np.testing.assert_allclose(sym.value - plain.value, math.lgamma(model.k + 1), rtol=1e-12)
    assert plain.settings["method"] == "vb" and sym.settings["method"] == "vb+sym"


def test_vb_coordinate_ascent_never_decreases_the_bound_and_ends_at_a_local_maximum(key):
    model = Clustering(n=20, dim=3, k=3)
    data, _ = bdmc.simulate(jax.random.key(1), model)
    params = model.vb_init(key, data)
    bounds = [float(model.vb_bound(params, data))]
    for _ in range(200):
        params = model.vb_update(params, data)
        bounds.append(float(model.vb_bound(params, data)))
    rounding = dtype_tol(abs(bounds[0]), floor=1e-9 * abs(bounds[0]))  # float32 rounds the bound at ~1e-7 of it
    assert np.all(np.diff(bounds) > -rounding), np.min(np.diff(bounds))
    r, m, v = params
    for k_perturb in jax.random.split(key, 5):  # any small move of the converged q(theta) lowers the bound
        moved = (r, m + 1e-3 * jax.random.normal(k_perturb, m.shape), v * 1.01)
        assert float(model.vb_bound(moved, data)) < bounds[-1]


def test_vb_improves_with_restarts_at_paper_size(key):
    # Restart keys are prefix-stable, so 10 restarts include the single one: the max cannot decrease, and on
    # the paper's clustering model the random restarts find better optima.
    model = Clustering()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    for k in (key, jax.random.key(2)):
        one = variational_bayes(k, model, data, num_restarts=1)
        ten = variational_bayes(k, model, data, num_restarts=10)
        assert ten.value >= one.value - 1e-9 * abs(one.value)
    assert ten.value > one.value + 1.0  # with key 2 the first restart is a poor local optimum
