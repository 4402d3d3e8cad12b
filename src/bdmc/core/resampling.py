"""Adaptive resampling of particle groups, with the evidence bookkeeping that keeps log Z unbiased.

Chains are laid out as ``num_runs`` independent groups of ``num_particles`` particles (group-major). Within a
group, when the effective sample size of the current weights falls below ``ess_threshold * num_particles``,
particles are resampled in proportion to their weights and the weights' mean is banked into the group's
running log-evidence before the weights are reset:

    log_z <- log_z + logsumexp(logw) - log K;   logw <- 0.

The estimate at the end is ``log_z + logsumexp(logw) - log K``. Because the bank uses the *accumulated*
weights (not the last increment), it stays correct when resampling is adaptive and the weights arriving at a
resampling step are not uniform. In reverse (SHME), the engine's log-weights estimate log 1/Z, so the same
rule resamples in proportion to 1/w in the paper's notation (BDMC paper, Alg. 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import blackjax.smc.resampling as bj_resampling
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from ..errors import OptionError

SCHEMES = {"systematic": bj_resampling.systematic, "stratified": bj_resampling.stratified,
           "multinomial": bj_resampling.multinomial}


def group_ess(logw):
    """Effective sample size of each group's normalized weights, ``logw`` of shape (runs, particles)."""
    return jnp.exp(2 * logsumexp(logw, axis=1) - logsumexp(2 * logw, axis=1))


def weights_ess(logw):
    """Effective sample size of the normalized weights, exp(2 lse(w) - lse(2w)); 0 if all weights vanish."""
    ess = jnp.exp(2 * logsumexp(logw) - logsumexp(2 * logw))
    return jnp.where(jnp.isfinite(ess), ess, 0.0)


@dataclass(frozen=True)
class AdaptiveResampling:
    """Resample a group when its ESS drops below ``ess_threshold * num_particles`` (1.0: every step).

    Parameters
    ----------
    scheme : {"systematic", "stratified", "multinomial"}
        BlackJAX resampling scheme.
    ess_threshold : float
        Fraction of the particle count below which a group is resampled; 0 never resamples.
    """

    scheme: str = "systematic"
    ess_threshold: float = 0.5

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise OptionError(f"unknown resampling scheme {self.scheme!r}; choose one of {sorted(SCHEMES)}")
        if not 0.0 <= self.ess_threshold <= 1.0:
            raise OptionError(f"ess_threshold must lie in [0, 1], got {self.ess_threshold}")

    def __call__(self, key, latents, logw, log_z, num_particles: int, *, group_keys=None):
        """Return ``(latents, logw, log_z, resampled)``; ``resampled`` flags each group that was resampled.

        Group ``r`` resamples on ``split(key, runs)[r]``, or on ``group_keys[r]`` when given (a step policy's
        convention, :mod:`bdmc.core.engine`)."""
        runs = log_z.shape[0]
        lw = logw.reshape(runs, num_particles)
        ess = group_ess(lw)
        do = ess < self.ess_threshold * num_particles
        if self.ess_threshold >= 1.0:
            do = jnp.ones_like(do)
        resample = SCHEMES[self.scheme]

        def pick(k, w):
            total = logsumexp(w)
            # A group whose weights all vanished keeps its particles (its evidence is already -inf).
            probs = jnp.where(jnp.isfinite(total), jnp.exp(w - total), 1.0 / num_particles)
            return resample(k, probs, num_particles)

        keys = jax.random.split(key, runs) if group_keys is None else group_keys
        idx = jax.vmap(pick)(keys, self.selection_log_weights(lw))  # (runs, K)
        idx = jnp.where(do[:, None], idx, jnp.arange(num_particles)[None, :])
        flat = (idx + num_particles * jnp.arange(runs)[:, None]).reshape(-1)
        latents = jax.tree.map(lambda x: x[flat], latents)
        banked = self.bank(lw)
        log_z = jnp.where(do, log_z + banked, log_z)
        lw = jnp.where(do[:, None], 0.0, lw)
        return latents, lw.reshape(-1), log_z, do

    @staticmethod
    def selection_log_weights(lw):
        """Log-probabilities (unnormalized) with which particles are picked: their weights."""
        return lw

    @staticmethod
    def bank(lw):
        """The evidence a resampling step moves from the weights into ``log_z``: log of their mean."""
        return logsumexp(lw, axis=1) - math.log(lw.shape[1])


def final_log_evidence(logw, log_z, num_particles: int):
    """Each group's estimate: banked evidence plus the log-mean of the weights since its last resampling."""
    lw = logw.reshape(log_z.shape[0], num_particles)
    return log_z + logsumexp(lw, axis=1) - math.log(num_particles)
