"""Rate-distortion curves from one forward AIS run against pPCA's closed form (Huang et al. 2020)."""

import jax
import numpy as np
import pytest

from bdmc import BDMCError
from bdmc.generative import ais_log_likelihood, linear_gaussian, simulate_images
from bdmc.generative.rate_distortion import linear_gaussian_rate_distortion, rate_distortion

D, K, SIGMA, N_IMAGES = 10, 2, 0.3, 3
RNG = np.random.default_rng(0)
W = np.linalg.qr(RNG.normal(size=(D, K)))[0] * np.array([2.0, 1.0])
B = RNG.normal(size=D)
DECODER, PARAMS = linear_gaussian(W, B)


@pytest.fixture(scope="module")
def curve():
    images, _ = simulate_images(jax.random.key(1), DECODER, PARAMS, sigma=SIGMA, latent_dim=K, num_images=N_IMAGES)
    est = ais_log_likelihood(jax.random.key(2), DECODER, PARAMS, images, sigma=SIGMA, latent_dim=K, num_runs=256,
                             num_steps=1000, rate_distortion=True)
    exact = [linear_gaussian_rate_distortion(PARAMS, x, sigma=SIGMA, betas=est.rate_distortion.beta)
             for x in np.asarray(images)]
    return est, np.mean([r for r, _ in exact], axis=0), np.mean([d for _, d in exact], axis=0)


def test_one_runs_curve_matches_the_closed_form(curve):
    est, rate, distortion = curve
    rd = est.rate_distortion
    assert rd.beta[0] == 0.0 and rd.rate[0] == 0.0 and rd.beta[-1] > 0.99
    # Along the whole curve near pPCA's exact rate and distortion: Monte Carlo error of 3 images x 256 chains
    # (measured: at most 0.11 nats of rate, 8% of the distortion; with 32 chains 0.38 nats of rate).
    np.testing.assert_allclose(rd.rate, rate, atol=0.25)
    np.testing.assert_allclose(rd.distortion, distortion, rtol=0.15, atol=0.5)
    # The trade-off: rate rises and distortion falls as beta grows (on the exact curve, and so on the estimate).
    assert np.all(np.diff(rate) >= -1e-12) and rd.rate[-1] > 1.0 and rd.distortion[-1] < rd.distortion[0]
    # The squared error per pixel is the distortion without the Gaussian normalizer.
    norm = 0.5 * D * np.log(2 * np.pi * SIGMA**2)
    np.testing.assert_allclose(rd.mse, (rd.distortion - norm) * 2 * SIGMA**2 / D)
    assert list(rd.to_frame().columns) == ["beta", "rate", "distortion", "mse"]


def perfect_increments(betas, *, x, s, chains, seed, shift=0):
    """Increments of AIS with perfect transitions on a 1-D Gaussian: the chain's state at beta_i an exact draw of
    q_beta_i = N(mu, v), v = 1 / (1 + beta / s^2), mu = v beta x / s^2 (``shift=1``: of the next beta's q)."""
    rng = np.random.default_rng(seed)
    b = betas[np.minimum(np.arange(betas.size - 1) + shift, betas.size - 1)]
    v = 1.0 / (1.0 + b / s**2)
    z = v * b * x / s**2 + np.sqrt(v) * rng.normal(size=(chains, b.size))
    loglik = -0.5 * (x - z) ** 2 / s**2 - 0.5 * np.log(2 * np.pi * s**2)
    return (np.diff(betas) * loglik).T[None]


def test_the_increments_read_as_the_curve_and_an_off_by_one_reading_is_caught():
    """With exact draws at every beta the curve is the closed form to a few hundredths of a nat of rate and a
    tenth of a nat of distortion; states of the next beta's distribution (an off-by-one pairing of increments and
    states) miss the distortion by three times that (negative control)."""
    x, s = 2.0, 0.5
    betas = np.r_[0.0, np.geomspace(1e-3, 1.0, 60)]
    params = {"weight": np.ones((1, 1)), "bias": np.zeros(1)}
    good = rate_distortion(betas, perfect_increments(betas, x=x, s=s, chains=20000, seed=0), sigma=s, num_pixels=1)
    rate, distortion = linear_gaussian_rate_distortion(params, [x], sigma=s, betas=good.beta)
    assert np.max(np.abs(good.rate - rate)) < 0.05 and np.max(np.abs(good.distortion - distortion)) < 0.15
    shifted = rate_distortion(betas, perfect_increments(betas, x=x, s=s, chains=20000, seed=0, shift=1), sigma=s,
                              num_pixels=1)
    assert np.max(np.abs(shifted.distortion - distortion)) > 0.3  # measured 0.35; the right reading 0.10


def test_bad_paths_are_refused():
    with pytest.raises(BDMCError, match="forward path increasing from beta = 0"):
        rate_distortion(np.array([1.0, 0.5, 0.0]), np.zeros((1, 2, 3)), sigma=1.0, num_pixels=2)
    with pytest.raises(BDMCError, match="increments must be"):
        rate_distortion(np.array([0.0, 1.0]), np.zeros((1, 3, 3)), sigma=1.0, num_pixels=2)
