"""Kernel density estimation and the IWAE bound against direct computations and closed forms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from bdmc.errors import DataError
from bdmc.generative.baselines import iwae_bound, kde_log_likelihood, tune_bandwidth


@pytest.mark.float64  # tolerances at float64 rounding
def test_kde_matches_a_direct_double_loop():
    rng = np.random.default_rng(0)
    samples, images, h = rng.uniform(size=(40, 6)), rng.uniform(size=(9, 6)), 0.35
    expected = [logsumexp([-0.5 * np.sum((x - s) ** 2) / h**2 - 3 * np.log(2 * np.pi * h**2) for s in samples])
                - np.log(len(samples)) for x in images]
    for batch_size in (1, 4, 100):  # batching bounds memory and changes nothing
        got = kde_log_likelihood(samples, images, bandwidth=h, batch_size=batch_size)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=0, atol=1e-10)


def test_kde_refuses_bad_inputs():
    with pytest.raises(DataError, match="bandwidth"):
        kde_log_likelihood(np.zeros((3, 2)), np.zeros((1, 2)), bandwidth=0.0)
    with pytest.raises(DataError, match="pixels"):
        kde_log_likelihood(np.zeros((3, 2)), np.zeros((1, 3)), bandwidth=1.0)


def test_tune_bandwidth_recovers_the_mixture_width():
    # Samples at the centres of a Gaussian mixture of width 0.5: the KDE with bandwidth h is then the mixture of
    # width h, and the expected log-density of data from the width-0.5 mixture peaks at h = 0.5 exactly.
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=4.0, size=(5, 10))
    samples = np.repeat(centres, 20, axis=0)
    valid = centres[rng.integers(5, size=300)] + 0.5 * rng.normal(size=(300, 10))
    choice = tune_bandwidth(samples, valid, bandwidths=(0.25, 0.4, 0.5, 0.63, 1.0))
    assert choice.bandwidth == 0.5
    assert choice.mean_log_likelihood[2] == max(choice.mean_log_likelihood)
    # The runner-up candidates are clearly worse (not a near tie decided by noise).
    assert choice.mean_log_likelihood[2] - max(choice.mean_log_likelihood[1], choice.mean_log_likelihood[3]) > 0.1


# ------------------------------------------------------------------------------------------------ IWAE on pPCA

D, K, SIGMA = 6, 2, 0.5


@pytest.fixture(scope="module")
def ppca():
    """x = W z + b + sigma eps with orthogonal columns of W, so the exact posterior is a diagonal Gaussian."""
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.normal(size=(D, K)))
    w = q * np.array([1.5, 0.7])
    b = rng.normal(size=D)
    images = rng.multivariate_normal(b, w @ w.T + SIGMA**2 * np.eye(D), size=5)
    log_p = multivariate_normal(b, w @ w.T + SIGMA**2 * np.eye(D)).logpdf(images)
    return {"w": jnp.asarray(w), "b": jnp.asarray(b)}, images, log_p


def linear_decoder(params, z):
    return params["w"] @ z + params["b"]


def exact_encoder(params, x):
    """The exact posterior N(C W^T (x - b) / sigma^2, C), C = (I + W^T W / sigma^2)^{-1} diagonal here."""
    precision = 1.0 + jnp.sum(params["w"] ** 2, axis=0) / SIGMA**2
    mean = (params["w"].T @ (x - params["b"])) / SIGMA**2 / precision
    return mean + params["shift"], -0.5 * jnp.log(precision) + params["log_widen"]


@pytest.mark.float64  # tolerances at float64 rounding
def test_iwae_with_the_exact_posterior_is_log_p_for_every_draw_and_k(ppca):
    params, images, log_p = ppca
    assert np.allclose(params["w"].T @ params["w"], np.diag(np.diag(params["w"].T @ params["w"])))
    enc = {**params, "shift": jnp.zeros(K), "log_widen": jnp.zeros(K)}
    for k, batch_size in ((1, 10), (7, 2)):
        got = iwae_bound(jax.random.key(k), linear_decoder, params, exact_encoder, enc, images, sigma=SIGMA,
                         num_samples=k, batch_size=batch_size)
        np.testing.assert_allclose(np.asarray(got), log_p, rtol=0, atol=1e-8)


def test_iwae_with_a_poor_encoder_is_below_log_p_and_rises_with_k(ppca):
    params, images, log_p = ppca
    enc = {**params, "shift": jnp.array([0.6, -0.4]), "log_widen": jnp.log(jnp.array([1.6, 0.7]))}
    reps = 2000
    x, truth = np.repeat(images[:1], reps, axis=0), log_p[0]
    means, ses = [], []
    for k in (1, 10, 100):
        values = np.asarray(iwae_bound(jax.random.key(10 + k), linear_decoder, params, exact_encoder, enc, x,
                                       sigma=SIGMA, num_samples=k, batch_size=500))
        means.append(values.mean())
        ses.append(values.std(ddof=1) / np.sqrt(reps))
    means, ses = np.array(means), np.array(ses)
    assert np.all(means + 4 * ses < truth), (means, ses, truth)
    gaps = np.diff(means)
    assert np.all(gaps > 4 * np.hypot(ses[1:], ses[:-1])), (means, ses)
    # Negative control: evaluated with the wrong sigma, the "bound" no longer tracks log p(x).
    wrong = np.asarray(iwae_bound(jax.random.key(0), linear_decoder, params, exact_encoder,
                                  {**enc, "shift": jnp.zeros(K), "log_widen": jnp.zeros(K)}, images,
                                  sigma=1.1 * SIGMA, num_samples=10))
    assert np.max(np.abs(wrong - log_p)) > 0.05


def test_iwae_with_one_sample_and_the_vae_elbo_estimate_the_same_number_on_an_mlp():
    # For k = 1 the IWAE bound is the ELBO (its KL term sampled, not in closed form), so on a nonlinear decoder
    # the two independent implementations must agree in expectation, and k = 20 must sit above both.
    from bdmc.generative.losses import vae_elbo
    from bdmc.generative.networks import decode, encode, encoder_sizes, init_mlp

    sizes = (2, 8, 6)
    dec = init_mlp(jax.random.key(0), sizes)
    enc = init_mlp(jax.random.key(1), encoder_sizes(sizes, outputs=4))
    x = np.repeat(np.random.default_rng(3).uniform(size=(1, 6)), 2000, axis=0)
    iwae = {k: np.asarray(iwae_bound(jax.random.key(k), decode, dec, encode, enc, x, sigma=0.3, num_samples=k,
                                     batch_size=1000)) for k in (1, 20)}
    elbo = np.asarray(jax.jit(jax.vmap(lambda key, xi: vae_elbo(key, decode, dec, encode, enc, xi,
                                                                  log_sigma=np.log(0.3))))(
        jax.random.split(jax.random.key(2), len(x)), x))
    se = np.hypot(iwae[1].std(), elbo.std()) / np.sqrt(len(x))
    assert abs(iwae[1].mean() - elbo.mean()) < 4 * se
    assert iwae[20].mean() - iwae[1].mean() > 4 * se


def test_iwae_refuses_bad_settings(ppca):
    params, images, _ = ppca
    enc = {**params, "shift": jnp.zeros(K), "log_widen": jnp.zeros(K)}
    with pytest.raises(DataError, match="sigma"):
        iwae_bound(jax.random.key(0), linear_decoder, params, exact_encoder, enc, images, sigma=-1.0, num_samples=2)
    with pytest.raises(DataError, match="num_samples"):
        iwae_bound(jax.random.key(0), linear_decoder, params, exact_encoder, enc, images, sigma=1.0, num_samples=0)


@pytest.mark.slow
def test_on_real_mnist_a_trained_vae_beats_its_start_and_iwae_rises_with_k():
    """The small10 decoder (784 pixels) end to end: data, training, and the bounds on held-out digits."""
    from bdmc.generative.data import load_mnist
    from bdmc.generative.losses import vae_elbo
    from bdmc.generative.networks import decode, encode
    from bdmc.generative.train import train_vae

    mnist = load_mnist()
    start = train_vae(jax.random.key(0), mnist.train, architecture="small10", epochs=1, learning_rate=1e-12)
    vae = train_vae(jax.random.key(0), mnist.train, architecture="small10", epochs=5)
    test = mnist.test

    def bound(model, k, seed):
        return np.asarray(iwae_bound(jax.random.key(seed), decode, model.decoder_params, encode,
                                     model.encoder_params, test, sigma=vae.sigma, num_samples=k))

    one, fifty = bound(vae, 1, 1), bound(vae, 50, 2)
    elbo = np.asarray(jax.vmap(lambda key, x: vae_elbo(key, decode, vae.decoder_params, encode, vae.encoder_params,
                                                       x, log_sigma=np.log(vae.sigma)))(
        jax.random.split(jax.random.key(3), len(test)), jnp.asarray(test)))
    se = lambda v: v.std(ddof=1) / np.sqrt(v.size)  # noqa: E731
    assert abs(one.mean() - elbo.mean()) < 4 * np.hypot(se(one), se(elbo))
    diff = fifty - one  # same images: a paired difference
    assert diff.mean() > 4 * se(diff)
    assert one.mean() > bound(start, 1, 1).mean() + 100.0  # 5 epochs gain far more than 100 nats per image
