"""Per-image AIS for decoder models against exact answers: pPCA closed forms, quadrature, direct loops.

(Named test_generative_ais.py: tests/ has no __init__ files, so a second test_ais.py would clash with
tests/core/test_ais.py.)
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import float32

import bdmc
from bdmc import BDMCError, NonFiniteLogDensityError, bug_alarm
from bdmc.core import schedules
from bdmc.generative import (
    DecoderModel,
    ais_log_likelihood,
    bdmc_gap,
    linear_gaussian,
    linear_gaussian_log_marginal,
    linear_gaussian_posterior,
    reverse_ais_log_likelihood,
    simulate_images,
    tune_sigma,
)
from bdmc.kernels import HMC

D, K, SIGMA, N_IMAGES, CHAINS = 10, 2, 0.3, 4, 16
RNG = np.random.default_rng(0)
# Orthogonal columns: pPCA's exact posterior is then diagonal, so it can serve as an encoder.
W = np.linalg.qr(RNG.normal(size=(D, K)))[0] * np.array([2.0, 1.0])
B = RNG.normal(size=D)
DECODER, PARAMS = linear_gaussian(W, B)
OPTS = dict(sigma=SIGMA, latent_dim=K, num_runs=CHAINS)


@pytest.fixture(scope="module")
def ppca():
    images, latents = simulate_images(jax.random.key(1), DECODER, PARAMS, sigma=SIGMA, latent_dim=K,
                                      num_images=N_IMAGES)
    return images, latents, linear_gaussian_log_marginal(PARAMS, images, sigma=SIGMA)


def _beyond(runs, exact, sign):
    """The mean single-run estimate minus log p(x) has sign ``sign`` beyond 4 standard errors (chains are
    independent: E[log w] < log p(x) < E[-log w_reverse] strictly when the chains are short)."""
    diff = (runs - exact[:, None]).ravel()
    return sign * np.mean(diff) > 4 * np.std(diff, ddof=1) / math.sqrt(diff.size)


def test_ppca_short_chains_bound_the_exact_value_from_both_sides(ppca):
    images, latents, exact = ppca
    fwd = ais_log_likelihood(jax.random.key(2), DECODER, PARAMS, images, num_steps=10, **OPTS)
    rev = reverse_ais_log_likelihood(jax.random.key(3), DECODER, PARAMS, images, latents, num_steps=10, **OPTS)
    assert fwd.log_weights.shape == (N_IMAGES, CHAINS) and fwd.bound == "lower" and rev.bound == "upper"
    assert _beyond(fwd.log_weights, exact, -1) and _beyond(rev.log_weights, exact, +1)
    # Gradient evaluations: one per chain to start, ten per transition, plus the pilot's (reported).
    assert fwd.n_evals > N_IMAGES * CHAINS * (1 + 9 * 10)


@pytest.mark.slow
def test_ppca_bounds_converge_within_a_tenth_of_a_nat(ppca):
    # Long chains: both sides within 0.1 nat of log p(x) on every image (64 chains, T = 10,000: about 10 s).
    images, latents, exact = ppca
    opts = dict(sigma=SIGMA, latent_dim=K, num_runs=64, num_steps=10_000)
    fwd = ais_log_likelihood(jax.random.key(4), DECODER, PARAMS, images, **opts)
    rev = reverse_ais_log_likelihood(jax.random.key(5), DECODER, PARAMS, images, latents, tune=fwd.step_size,
                                     **opts)
    assert not rev.compiled  # forward and reverse share one compiled program
    assert np.max(np.abs(fwd.per_image - exact)) < 0.1 and np.max(np.abs(rev.per_image - exact)) < 0.1
    assert np.all(rev.per_image - fwd.per_image > -0.1)
    assert 0.4 < np.mean(fwd.acceptance) < 0.95


def test_per_image_weights_are_the_images_own(ppca):
    images, _, _ = ppca
    # A weight depends on its own image only: changing the other images leaves image 0's weights unchanged
    # (a joint weight over the batch would change).
    opts = dict(num_steps=20, tune="off", step_size=0.1, **OPTS)
    a = ais_log_likelihood(jax.random.key(6), DECODER, PARAMS, images, **opts)
    other = images.at[1:].set(images[1:] + 1.0)
    b = ais_log_likelihood(jax.random.key(6), DECODER, PARAMS, other, **opts)
    np.testing.assert_array_equal(a.log_weights[0], b.log_weights[0])
    assert np.all(a.log_weights[1:] != b.log_weights[1:])
    # Combination: log-mean-exp over an image's chains, mean over images.
    lme = np.log(np.mean(np.exp(a.log_weights), axis=1))
    np.testing.assert_allclose(a.per_image, lme, rtol=1e-12)
    assert a.mean == pytest.approx(np.mean(lme))


def test_per_image_results_equal_forward_and_reverse_ais_image_by_image(ppca):
    # One batched engine call over images gives image i exactly what bdmc.forward_ais / bdmc.reverse_ais give
    # on that image alone with its key fold_in(key, i) (the documented convention), the same kernel and path;
    # up to rounding, since batched arithmetic may associate differently.
    images, latents, _ = ppca
    images, latents = images[:2], latents[:2]
    path = schedules.sigmoidal(6)
    model = DecoderModel(DECODER, K, D)
    kernel = HMC(model, step_size=0.2, num_integration_steps=10)
    opts = dict(sigma=SIGMA, latent_dim=K, num_runs=3, num_steps=6, tune="off", step_size=0.2)
    fwd = ais_log_likelihood(jax.random.key(7), DECODER, PARAMS, images, **opts)
    rev = reverse_ais_log_likelihood(jax.random.key(8), DECODER, PARAMS, images, latents, **opts)
    for i in range(2):
        data = model.case(images[i], PARAMS, sigma=SIGMA)
        alone = dict(kernel=kernel, schedule=path, num_steps=None, num_runs=3, tune="off", progress=False)
        one = bdmc.forward_ais(jax.random.fold_in(jax.random.key(7), i), model, data, **alone)
        np.testing.assert_allclose(fwd.log_weights[i], one.runs, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fwd.latents[i], one.details.latents, rtol=1e-9, atol=1e-9)
        back = bdmc.reverse_ais(jax.random.fold_in(jax.random.key(8), i), model, data, exact_latent=latents[i],
                                **alone)
        np.testing.assert_allclose(rev.log_weights[i], back.runs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fwd.acceptance.shape, (5,))


def test_a_nan_in_the_decoder_is_named_with_its_image(ppca):
    # The engine's density checks reach the generative runs: the failure names the term, step and image.
    images = np.array(ppca[0])
    bad_params = dict(PARAMS, bias=jnp.asarray(PARAMS["bias"]).at[0].set(jnp.nan))
    with pytest.raises(NonFiniteLogDensityError, match=r"image 0.*log_likelihood case 0 is NaN"):
        ais_log_likelihood(jax.random.key(0), DECODER, bad_params, images[:2], num_steps=5, tune="off",
                           sigma=SIGMA, latent_dim=K, num_runs=2)


def test_in_chain_adaptation_is_refused(ppca):
    with pytest.raises(BDMCError, match="in-chain adaptation is refused"):
        ais_log_likelihood(jax.random.key(0), DECODER, PARAMS, ppca[0], num_steps=10, tune="in-chain", **OPTS)
    with pytest.raises(Exception, match="one row per image"):
        ais_log_likelihood(jax.random.key(0), DECODER, PARAMS, ppca[0].ravel(), num_steps=10, **OPTS)


def _exact_encoder(params, x):
    # pPCA's posterior, diagonal because W's columns are orthogonal: the perfect q(z | x).
    var = 1.0 / (1.0 + jnp.sum(params["weight"] ** 2, axis=0) / SIGMA**2)
    return var * (params["weight"].T @ (x - params["bias"])) / SIGMA**2, 0.5 * jnp.log(var)


def _poor_encoder(params, x):
    mean, log_std = _exact_encoder(params, x)
    return mean + 1.0, log_std + 1.0


def test_ais_from_the_encoder(ppca):
    images, _, exact = ppca
    mean, cov = linear_gaussian_posterior(PARAMS, images[0], sigma=SIGMA)
    assert np.allclose(cov, np.diag(np.diag(cov)))  # the encoder above is exact
    np.testing.assert_allclose(_exact_encoder(PARAMS, images[0])[0], mean, rtol=1e-10)
    opts = dict(num_steps=10, tune="off", step_size=0.5, **OPTS)
    exact_q = ais_log_likelihood(jax.random.key(8), DECODER, PARAMS, images, init=(_exact_encoder, PARAMS), **opts)
    # log p(z) + log p(x | z) - log q(z | x) = log p(x) everywhere: every weight is exact, zero variance.
    np.testing.assert_allclose(exact_q.log_weights, np.broadcast_to(exact[:, None], (N_IMAGES, CHAINS)), atol=1e-9)
    assert exact_q.settings["init"] == "encoder"
    # A poor encoder: still a stochastic lower bound, E[log w] < log p(x) beyond its standard error.
    poor = ais_log_likelihood(jax.random.key(9), DECODER, PARAMS, images, init=(_poor_encoder, PARAMS), **opts)
    diff = (poor.log_weights - exact[:, None]).ravel()
    assert np.mean(diff) + 4 * np.std(diff, ddof=1) / math.sqrt(diff.size) < 0


def test_sigma_sweep_finds_the_generating_sigma_and_compiles_once(ppca):
    images = ppca[0]
    sweep = tune_sigma(jax.random.key(10), DECODER, PARAMS, images, sigmas=[0.15, 0.2, 0.3, 0.45, 0.6],
                       latent_dim=K, num_runs=CHAINS, num_steps=200)
    assert sweep.best == pytest.approx(SIGMA)
    assert [r.compiled for r in sweep.results][1:] == [False] * 4


def _mlp(params, z):
    return jnp.tanh(z @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@pytest.mark.slow
def test_mlp_decoder_sandwich_contains_quadrature():
    params = {"w1": 2.0 * RNG.normal(size=(K, 8)), "b1": RNG.normal(size=8), "w2": RNG.normal(size=(8, D)),
              "b2": RNG.normal(size=D)}
    sigma = 0.5
    images, latents = simulate_images(jax.random.key(11), _mlp, params, sigma=sigma, latent_dim=K, num_images=3)
    model = DecoderModel(_mlp, K, D)
    grid1 = np.linspace(-7.0, 7.0, 561)
    grid = jnp.asarray(np.stack(np.meshgrid(grid1, grid1, indexing="ij"), -1).reshape(-1, K))
    cell = (grid1[1] - grid1[0]) ** 2

    def on_grid(x):  # log p(x) by quadrature over the grid
        def log_joint(z):
            return model.log_prior(z) + model.log_likelihood(z, model.case(x, params, sigma=sigma))[0]

        return float(jax.scipy.special.logsumexp(jax.vmap(log_joint)(grid))) + math.log(cell)

    quad = np.array([on_grid(x) for x in images])
    opts = dict(sigma=sigma, latent_dim=K, num_runs=CHAINS, num_steps=300)
    fwd = ais_log_likelihood(jax.random.key(12), _mlp, params, images, **opts)
    rev = reverse_ais_log_likelihood(jax.random.key(13), _mlp, params, images, latents, tune=fwd.step_size, **opts)
    assert np.all(fwd.per_image - 4 * fwd.per_image_stderr <= quad)
    assert np.all(quad <= rev.per_image + 4 * rev.per_image_stderr)
    assert np.all(rev.per_image - fwd.per_image < 1.0)


def test_bdmc_gap_on_ppca_and_its_alarm_on_a_wrong_sigma(ppca):
    result = bdmc_gap(jax.random.key(14), DECODER, PARAMS, sigma=SIGMA, latent_dim=K, num_images=N_IMAGES,
                      num_steps=200, num_runs=CHAINS)
    assert not result.fired and abs(result.mean_gap) < 0.5
    np.testing.assert_allclose(result.gap, result.reverse.per_image - result.forward.per_image)
    # Negative control: reverse chains started from another image's z (not a posterior sample of this
    # image, as a simulator that mixed up its latents would give) make the "upper bound" cross the lower.
    # Short chains with a fixed step size: how far a long run forgets its wrong start depends on the pilot's
    # step sizes, which change with rounding (measured: at T = 200 one image of four fired with one build of
    # the same program and none with another); at T = 20 three of four fire by a wide margin (p < 1e-5).
    images, latents, _ = ppca
    opts = dict(sigma=SIGMA, latent_dim=K, num_runs=CHAINS, num_steps=20, tune="off")
    fwd = ais_log_likelihood(jax.random.key(15), DECODER, PARAMS, images, **opts)
    rev = reverse_ais_log_likelihood(jax.random.key(16), DECODER, PARAMS, images, jnp.roll(latents, 1, axis=0),
                                     **opts)
    fired = [bug_alarm(fwd.estimate(i), rev.estimate(i), alpha=0.01 / N_IMAGES).fired for i in range(N_IMAGES)]
    assert sum(fired) >= 2, fired


def test_runs_in_float32(ppca):
    images64, _, exact = ppca
    with float32():
        images = jnp.asarray(np.asarray(images64), jnp.float32)
        params = jax.tree.map(lambda a: jnp.asarray(np.asarray(a), jnp.float32), PARAMS)
        fwd = ais_log_likelihood(jax.random.key(17), DECODER, params, images, num_steps=500, tune="off",
                                 step_size=0.15, **OPTS)
    assert fwd.log_weights.dtype == np.float64 and np.all(np.isfinite(fwd.log_weights))  # stored as float64
    assert fwd.settings["step_sizes"] == "0.15"
    # Every image within 4 standard errors of log p(x) (float32 trajectories part from float64's after a few
    # steps, so the comparison is statistical; at T = 500 the lower bound's bias is far below its noise).
    assert np.all(np.abs(fwd.per_image - exact) < 4 * fwd.per_image_stderr)
