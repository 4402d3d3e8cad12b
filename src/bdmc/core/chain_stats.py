"""Statistics of a pilot's chains: their regularized mean and covariance (the preconditioner it fits) and the
lag-one correlation of their moves (the moves per temperature it chooses)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def chain_moments(flats, dense: bool, chains: int):
    """Mean and covariance (diagonal entries, or a matrix) of ``flats`` (n, d), regularized for ``chains`` chains.

    The log variances are shrunk toward their mean by the share of their spread that sampling noise explains
    (an empirical-Bayes estimate: log variance estimates from k chains have variance about 2 / (k - 1)): a
    model whose coordinates share one scale gets an isotropic fit, which noise cannot make worse than the
    identity, and one whose scales differ by orders of magnitude keeps them. A dense fit's correlations are
    shrunk toward zero by 5 / (k + 5) (Stan's regularization of an adapted metric).
    """
    n = flats.shape[0]
    mean = jnp.mean(flats, axis=0)
    centered = flats - mean
    var = jnp.sum(centered**2, axis=0) / (n - 1)
    top = jnp.max(var)
    var = jnp.maximum(var, jnp.where(top > 0, 1e-12 * top, 1.0))  # chains that all sit at one point
    log_var = jnp.log(var)
    centre = jnp.mean(log_var)
    spread = jnp.mean((log_var - centre) ** 2)
    noise = 2.0 / max(chains - 1, 1)
    keep = 1.0 - jnp.clip(noise / jnp.maximum(spread, 1e-300), 0.0, 1.0)
    shrunk = jnp.exp(centre + keep * (log_var - centre))
    if not dense:
        return mean, shrunk
    sd = jnp.sqrt(var)
    corr = (centered.T @ centered) / (n - 1) / jnp.outer(sd, sd)
    corr = (1.0 - 5.0 / (chains + 5.0)) * corr + 5.0 / (chains + 5.0) * jnp.eye(var.shape[0])
    scale = jnp.sqrt(shrunk)
    return mean, corr * jnp.outer(scale, scale)


def move_correlation(before, flats) -> jax.Array:
    """A move's lag-one correlation from its mean squared jump: ``1 - E[(x' - x)^2] / (2 var)`` per coordinate,
    averaged over coordinates and clipped to [0, 1] (0 for exact draws, 1 for chains that never move).

    ``before`` (chains, d) are the chains before a level's moves, ``flats`` (moves, chains, d) after each."""
    ratio, _ = jump_ratios(before, flats)
    return jnp.clip(1.0 - jnp.mean(ratio), 0.0, 1.0)


def jump_ratios(before, flats) -> tuple[jax.Array, jax.Array]:
    """Per coordinate, a move's mean squared jump over twice the chains' variance, ``E[(x' - x)^2] / (2 var)``
    (one minus it is the lag-one correlation), 0 where the coordinate does not vary; and whether it varies.

    ``before`` (chains, d) are the chains before the moves, ``flats`` (moves, chains, d) after each."""
    path = jnp.concatenate([before[None], flats])
    jumps = jnp.mean((path[1:] - path[:-1]) ** 2, axis=(0, 1))
    var = jnp.var(flats.reshape(-1, flats.shape[-1]), axis=0)
    varies = var > 0
    return jnp.where(varies, jumps / (2.0 * jnp.where(varies, var, 1.0)), 0.0), varies
