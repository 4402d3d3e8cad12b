"""The decoder model: its densities against direct formulas, simulation moments, the pPCA closed forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc import BDMCError, DataError
from bdmc.generative import (
    DecoderData,
    DecoderModel,
    EncoderData,
    EncoderStartModel,
    linear_gaussian,
    linear_gaussian_log_marginal,
    linear_gaussian_posterior,
    simulate_images,
)

D, K, SIGMA = 6, 2, 0.4
RNG = np.random.default_rng(0)
W, B = RNG.normal(size=(D, K)), RNG.normal(size=D)
DECODER, PARAMS = linear_gaussian(W, B)


def mlp(params, z):
    return jnp.tanh(z @ params["w1"] + params["b1"]) @ params["w2"]


MLP_PARAMS = {"w1": RNG.normal(size=(K, 5)), "b1": RNG.normal(size=5), "w2": RNG.normal(size=(5, D))}


def test_log_prior_and_log_likelihood_match_direct_formulas():
    model = DecoderModel(mlp, K, D)
    z, x = RNG.normal(size=K), RNG.normal(size=D)
    data = model.case(x, MLP_PARAMS, sigma=SIGMA)
    mean = np.tanh(z @ MLP_PARAMS["w1"] + MLP_PARAMS["b1"]) @ MLP_PARAMS["w2"]
    want_lik = np.sum(-0.5 * ((x - mean) / SIGMA) ** 2 - math.log(SIGMA) - 0.5 * math.log(2 * math.pi))
    want_prior = np.sum(-0.5 * z**2 - 0.5 * math.log(2 * math.pi))
    lik = model.log_likelihood(jnp.asarray(z), data)
    assert lik.shape == (1,)
    np.testing.assert_allclose(float(lik[0]), want_lik, rtol=1e-12)
    np.testing.assert_allclose(float(model.log_prior(jnp.asarray(z))), want_prior, rtol=1e-12)


def test_simulated_images_have_the_models_moments():
    # x = W z + b + sigma eps: mean b, covariance W W^T + sigma^2 I. 4000 draws: the sample mean's error
    # per pixel has sd sqrt(diag C / n); the covariance's entries sd about sqrt((C_ii C_jj + C_ij^2) / n).
    n = 4000
    images, latents = simulate_images(jax.random.key(3), DECODER, PARAMS, sigma=SIGMA, latent_dim=K, num_images=n)
    images, latents = np.asarray(images), np.asarray(latents)
    cov = W @ W.T + SIGMA**2 * np.eye(D)
    z_mean = (images.mean(0) - B) / np.sqrt(np.diag(cov) / n)
    sd = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    z_cov = (np.cov(images.T) - cov) / sd
    assert np.max(np.abs(z_mean)) < 4.5 and np.max(np.abs(z_cov)) < 4.5
    # Residuals given the latent are N(0, sigma^2 I): the latents are the ones that generated the images.
    resid = images - latents @ W.T - B
    assert abs(resid.std() / SIGMA - 1) < 4.5 / math.sqrt(2 * resid.size)
    assert np.max(np.abs(latents.mean(0))) < 4.5 / math.sqrt(n)


def test_model_obeys_the_contract_through_bdmc_simulate():
    model = DecoderModel(DECODER, K, D).simulating(PARAMS, sigma=SIGMA)
    data, z = bdmc.simulate(jax.random.key(1), model)
    assert isinstance(data, DecoderData) and data.image.shape == (D,) and z.shape == (K,)
    assert data.params is PARAMS and float(data.log_sigma) == pytest.approx(math.log(SIGMA))
    with pytest.raises(BDMCError, match="simulating"):
        DecoderModel(DECODER, K, D).sample_data(jax.random.key(0), z)
    with pytest.raises(DataError, match="shape"):
        model.check_data(model.case(np.zeros(D + 1), PARAMS, sigma=SIGMA))
    with pytest.raises(BDMCError, match="sigma"):
        model.case(np.zeros(D), PARAMS, sigma=-1.0)


def test_params_and_sigma_are_arguments_not_part_of_the_model():
    # Two sigmas and two parameter sets use one model (one compiled program): the model compares equal.
    a, b = DecoderModel(DECODER, K, D), DecoderModel(DECODER, K, D)
    assert a == b and hash(a) == hash(b)
    fn = jax.jit(lambda z, d: a.log_likelihood(z, d))
    z = jnp.asarray(RNG.normal(size=K))
    for sigma in (0.2, 0.9):
        d = a.case(np.ones(D), PARAMS, sigma=sigma)
        np.testing.assert_allclose(fn(z, d), a.log_likelihood(z, d), rtol=1e-12)
    assert fn._cache_size() == 1


def test_ppca_closed_forms_against_numerical_integration():
    # log p(x) by the closed form against a grid sum of p(z) p(x | z) (k = 2, a fine grid over +-7 sd).
    x = np.asarray(simulate_images(jax.random.key(2), DECODER, PARAMS, sigma=SIGMA, latent_dim=K,
                                   num_images=1)[0][0])
    model = DecoderModel(DECODER, K, D)
    data = model.case(x, PARAMS, sigma=SIGMA)
    mean, cov = linear_gaussian_posterior(PARAMS, x, sigma=SIGMA)
    sd = np.sqrt(np.diag(cov))
    axes = [np.linspace(m - 9 * s, m + 9 * s, 301) for m, s in zip(mean, sd, strict=False)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, K)
    logf = jax.vmap(lambda z: model.log_prior(z) + model.log_likelihood(z, data)[0])(jnp.asarray(grid))
    cell = np.prod([a[1] - a[0] for a in axes])
    by_grid = float(jax.scipy.special.logsumexp(logf) + math.log(cell))
    assert linear_gaussian_log_marginal(PARAMS, x[None], sigma=SIGMA)[0] == pytest.approx(by_grid, abs=1e-8)
    # The posterior's mean and covariance against the grid's moments.
    weights = np.exp(np.asarray(logf) - np.max(logf))
    weights /= weights.sum()
    np.testing.assert_allclose(weights @ grid, mean, atol=1e-8)
    np.testing.assert_allclose((grid - mean).T @ ((grid - mean) * weights[:, None]), cov, atol=1e-8)


def test_encoder_start_model_is_the_geometric_path_from_q():
    # In whitened u (z = m + s u): log_prior(u) + beta * term(u) = (1 - beta) log q(z) + beta log p(x, z)
    # + sum log s, the density over z of the geometric path carried to u.
    model = EncoderStartModel(mlp, K, D)
    x, u = RNG.normal(size=D), RNG.normal(size=K)
    m, log_s = RNG.normal(size=K), 0.3 * RNG.normal(size=K)
    case = DecoderModel(mlp, K, D).case(x, MLP_PARAMS, sigma=SIGMA)
    data = EncoderData(case, jnp.asarray(m), jnp.asarray(log_s))
    z = m + np.exp(log_s) * u
    log_q = np.sum(-0.5 * u**2 - log_s - 0.5 * math.log(2 * math.pi))
    joint = float(DecoderModel(mlp, K, D).log_prior(jnp.asarray(z)) +
                  DecoderModel(mlp, K, D).log_likelihood(jnp.asarray(z), case)[0])
    for beta in (0.0, 0.37, 1.0):
        got = float(model.log_prior(jnp.asarray(u)) + beta * model.log_likelihood(jnp.asarray(u), data)[0])
        want = (1 - beta) * log_q + beta * joint + np.sum(log_s)
        assert got == pytest.approx(want, abs=1e-10)
    with pytest.raises(BDMCError, match="simulate"):
        model.sample_data(jax.random.key(0), jnp.asarray(u))
