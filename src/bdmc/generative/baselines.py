"""The comparison estimators of Wu et al. (2017): kernel density estimation and the IWAE bound.

- Kernel density estimation (a Parzen window): ``log p(x) ~ log (1/S) sum_s N(x; x_s, h^2 I)`` over samples
  ``x_s`` of the model, the bandwidth ``h`` chosen on validation images. Neither a bound nor consistent in
  high dimensions at feasible ``S``; the paper shows it is off by hundreds of nats.
- The importance weighted bound (Burda et al., 2016) from a VAE's encoder: ``log (1/k) sum_i p(x, z_i) /
  q(z_i | x)``, ``z_i ~ q(. | x)``, under the same Gaussian observation model as AIS, so the two compare. Its
  expectation is a lower bound on ``log p(x)`` that rises with ``k``.

Both work image by image and bound memory by batching images (``batch_size``) through ``lax.map``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import DataError
from .losses import diag_gaussian_log_density, gaussian_log_likelihood, squared_distances, standard_normal_log_density


def _as_rows(values, what: str):
    array = jnp.asarray(values)
    if array.ndim != 2 or not jnp.issubdtype(array.dtype, jnp.floating):
        raise DataError(f"{what} must be a float array of shape (n, pixels), got {array.dtype} {array.shape}")
    return array


def kde_log_likelihood(samples, images, *, bandwidth: float, batch_size: int = 100):
    """Parzen-window log-density of each image, from samples of the model.

    ``log (1/S) sum_s N(x; x_s, h^2 I)``, a log-sum-exp over the ``S`` samples computed in log space.

    Parameters
    ----------
    samples : array (S, D)
        Images drawn from the model (``Trained.sample``).
    images : array (n, D)
        Images to score.
    bandwidth : float
        The kernel's standard deviation ``h`` (positive).
    batch_size : int
        Images scored at once; memory grows as ``batch_size * S``.

    Returns
    -------
    jax.Array (n,)
        Log-density of each image (nats).
    """
    samples, images = _as_rows(samples, "samples"), _as_rows(images, "images")
    if samples.shape[1] != images.shape[1]:
        raise DataError(f"samples have {samples.shape[1]} pixels but images have {images.shape[1]}")
    if not np.isfinite(bandwidth) or bandwidth <= 0:
        raise DataError(f"bandwidth must be positive and finite, got {bandwidth!r}")
    dtype = jnp.result_type(samples.dtype, images.dtype)
    return _kde(samples.astype(dtype), images.astype(dtype), jnp.asarray(bandwidth, dtype), int(batch_size))


@partial(jax.jit, static_argnums=3)
def _kde(samples, images, bandwidth, batch_size):
    num, dim = samples.shape
    center = jnp.mean(samples, axis=0)  # distances by ||x||^2 + ||s||^2 - 2 x.s lose less to rounding when centered
    samples, images = samples - center, images - center
    const = -math.log(num) - 0.5 * dim * jnp.log(2.0 * math.pi * bandwidth**2)

    def one(x):
        d2 = squared_distances(x[None, :], samples)[0]
        return jax.nn.logsumexp(-0.5 * d2 / bandwidth**2) + const

    return jax.lax.map(one, images, batch_size=min(batch_size, images.shape[0]))


@dataclass(frozen=True)
class BandwidthChoice:
    """The bandwidth with the highest mean log-density on validation images, and every candidate's score.

    Attributes
    ----------
    bandwidth : float
    bandwidths : tuple of float
    mean_log_likelihood : tuple of float
        Mean KDE log-density of the validation images, one per candidate bandwidth.
    """

    bandwidth: float
    bandwidths: tuple
    mean_log_likelihood: tuple


def tune_bandwidth(samples, valid_images, *, bandwidths: Sequence[float], batch_size: int = 100) -> BandwidthChoice:
    """Choose the KDE bandwidth that maximizes the mean log-density of validation images.

    Parameters
    ----------
    samples : array (S, D)
        Images drawn from the model.
    valid_images : array (n, D)
        Validation images (never the test images).
    bandwidths : sequence of float
        Candidates.

    Returns
    -------
    BandwidthChoice
    """
    bandwidths = tuple(float(h) for h in bandwidths)
    if not bandwidths:
        raise DataError("tune_bandwidth needs at least one candidate bandwidth")
    scores = tuple(float(jnp.mean(kde_log_likelihood(samples, valid_images, bandwidth=h, batch_size=batch_size)))
                   for h in bandwidths)
    return BandwidthChoice(bandwidths[int(np.nanargmax(scores))], bandwidths, scores)


def iwae_bound(key, decoder: Callable, dec_params, encoder: Callable, enc_params, images, *, sigma: float,
               num_samples: int, batch_size: int = 10):
    """Importance weighted lower bound on ``log p_sigma(x)`` of each image, with the encoder as proposal.

    ``log (1/k) sum_i N(x; f(z_i), sigma^2 I) N(z_i; 0, I) / q(z_i | x)`` with ``z_i ~ q(. | x)`` drawn
    independently for every image. Its expectation is at most ``log p_sigma(x)`` and rises with ``k``; it
    equals ``log p_sigma(x)`` for every draw when ``q`` is the exact posterior.

    Parameters
    ----------
    key : jax.random key
    decoder : callable
        ``decoder(dec_params, z)``: the mean image of one latent ``(k,)``.
    encoder : callable
        ``encoder(enc_params, x) -> (mean, log_std)``: the diagonal Gaussian ``q(z | x)`` of one image.
    images : array (n, D)
    sigma : float
        Standard deviation of the Gaussian observation model (the one AIS uses for this model).
    num_samples : int
        ``k``, importance samples per image.
    batch_size : int
        Images processed at once; memory grows as ``batch_size * num_samples``.

    Returns
    -------
    jax.Array (n,)
        The bound for each image (nats).
    """
    images = _as_rows(images, "images")
    if not np.isfinite(sigma) or sigma <= 0:
        raise DataError(f"sigma must be positive and finite, got {sigma!r}")
    if not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise DataError(f"num_samples must be a positive integer, got {num_samples!r}")
    keys = jax.random.split(key, images.shape[0])
    return _iwae(keys, images, dec_params, enc_params, jnp.log(jnp.asarray(sigma, images.dtype)), decoder=decoder,
                 encoder=encoder, num_samples=int(num_samples), batch_size=min(int(batch_size), images.shape[0]))


@partial(jax.jit, static_argnames=("decoder", "encoder", "num_samples", "batch_size"))
def _iwae(keys, images, dec_params, enc_params, log_sigma, *, decoder, encoder, num_samples, batch_size):
    """Compiled once per (decoder, encoder, k, batch, shapes): parameters and sigma are arguments."""
    def one(inputs):
        k, x = inputs
        mean, log_std = encoder(enc_params, x)
        z = mean + jnp.exp(log_std) * jax.random.normal(k, (num_samples, mean.shape[-1]), mean.dtype)
        recon = jax.vmap(lambda zi: decoder(dec_params, zi))(z)
        log_w = (gaussian_log_likelihood(x, recon, log_sigma) + standard_normal_log_density(z)
                 - diag_gaussian_log_density(z, mean, log_std))
        return jax.nn.logsumexp(log_w) - math.log(num_samples)

    return jax.lax.map(one, (keys, images), batch_size=batch_size)
