"""Brute-force log marginal likelihoods by enumerating discrete assignments of tiny instances."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..errors import OptionError
from .conjugate import gaussian_mean_log_marginal

MAX_ASSIGNMENTS = 2_000_000


def all_assignments(n: int, k: int) -> np.ndarray:
    """Every assignment of ``n`` items to ``k`` classes, shape (k**n, n)."""
    if k**n > MAX_ASSIGNMENTS:
        raise OptionError(f"{k}**{n} = {k**n} assignments is too many to enumerate (limit {MAX_ASSIGNMENTS})")
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int32)


def mixture_log_marginal_enumerate(y, *, log_weights, sigma_theta, sigma_noise):
    """log p(y) of a finite Gaussian mixture with fixed weights, by enumeration.

    ``z_i ~ Cat(weights)``, ``theta_k ~ N(0, sigma_theta^2 I)``, ``y_i ~ N(theta_{z_i}, sigma_noise^2 I)``.
    Cluster means are integrated analytically; all ``k**n`` assignments are summed.
    """
    y = jnp.asarray(y)
    log_weights = jnp.asarray(log_weights, y.dtype)
    k = log_weights.shape[0]
    z = jnp.asarray(all_assignments(y.shape[0], k))

    def one(zs):
        masks = (zs[None, :] == jnp.arange(k)[:, None]).astype(y.dtype)
        per_cluster = jax.vmap(lambda m: gaussian_mean_log_marginal(y, prior_mean=0.0, prior_std=sigma_theta,
                                                                    noise_std=sigma_noise, mask=m))(masks)
        return jnp.sum(log_weights[zs]) + jnp.sum(per_cluster)

    return logsumexp(jax.lax.map(one, z, batch_size=4096))
