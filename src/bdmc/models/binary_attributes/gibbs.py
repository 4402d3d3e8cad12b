"""Rank-one statistics and the collapsed Gibbs sweep over the bits of Z (Doshi-Velez and Ghahramani, 2009).

The sweep carries ``M^{-1} = (Z^T W Z + r I)^{-1}`` and ``H = Z^T W Y``, removes a row with a rank-one downdate,
redraws its bits from the tempered predictive of that row and adds it back with a rank-one update. The functions
take the model first and reach its prior through ``model.bit_prior``, so the Beta-Bernoulli variant of
:class:`~bdmc.models.BinaryAttributesHyper` reuses them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ...kernels import KernelInfo


class SufficientStats(NamedTuple):
    """What the collapsed sampler carries: ``minv = (Z^T W Z + r I)^{-1}`` (K, K) and ``h = Z^T W Y`` (K, D)."""

    minv: jax.Array
    h: jax.Array


def row_weights(lam, n, dtype):
    """Per-row likelihood weights as an (n,) array of ``dtype``."""
    return jnp.broadcast_to(jnp.asarray(lam, dtype), (n,))


def sufficient_stats(model, z, data, lam) -> SufficientStats:
    """``(Z^T W Z + r I)^{-1}`` and ``Z^T W Y`` from scratch."""
    y = jnp.asarray(data)
    w = row_weights(lam, model.n, y.dtype)
    zw = z.astype(y.dtype) * w[:, None]
    m = zw.T @ z.astype(y.dtype) + model.ratio * jnp.eye(model.k, dtype=y.dtype)
    chol = jnp.linalg.cholesky(m)
    minv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(model.k, dtype=y.dtype))
    return SufficientStats(minv, zw.T @ y)


def remove_row(stats: SufficientStats, z_row, y_row, w) -> SufficientStats:
    """Sherman-Morrison downdate: take a row with weight ``w`` out of the statistics.

    ``(M - w z z^T)^{-1} = M^{-1} + w u u^T / (1 - w z^T u)`` with ``u = M^{-1} z``; the denominator
    equals ``1 / (1 + w z^T M_{-i}^{-1} z) > 0`` because the remaining matrix is at least ``r I``.
    """
    zf = z_row.astype(stats.minv.dtype)
    u = stats.minv @ zf
    minv = stats.minv + w * jnp.outer(u, u) / (1.0 - w * zf @ u)
    return SufficientStats(minv, stats.h - w * jnp.outer(zf, y_row))


def add_row(stats: SufficientStats, z_row, y_row, w) -> SufficientStats:
    """Sherman-Morrison update: put a row with weight ``w`` into the statistics."""
    zf = z_row.astype(stats.minv.dtype)
    u = stats.minv @ zf
    minv = stats.minv - w * jnp.outer(u, u) / (1.0 + w * zf @ u)
    return SufficientStats(minv, stats.h + w * jnp.outer(zf, y_row))


def row_score(model, z_row, minv, mean, y_row, w):
    """Log tempered predictive of row y_i given the other rows, up to terms free of ``z_row``.

    With A's posterior from the other rows having column means ``mean`` (k, dim) and covariance
    ``sigma_n^2 minv``, ``N(y; z A, sigma_n^2)^w`` integrates to ``-D/2 log(1 + w q) -
    w |y - z mean|^2 / (2 sigma_n^2 (1 + w q))`` plus constants, with ``q = z^T minv z`` (the determinant
    lemma and Sherman-Morrison). O(k^2 + k dim) work; exactly 0 when w = 0.
    """
    zf = z_row.astype(minv.dtype)
    q = zf @ minv @ zf
    resid = y_row - zf @ mean
    c = 1.0 + w * q
    score = -0.5 * model.dim * jnp.log(c) - 0.5 * w * jnp.sum(resid**2) / (model.sigma_n**2 * c)
    return jnp.where(w == 0, 0.0, score)


def update_row(model, key, stats, z_row, y_row, w, prior_logit, reverse=False):
    """Remove a row, redraw its K bits in turn (inner scan; last bit first if ``reverse``), add it back."""
    rest = model.remove_row(stats, z_row, y_row, w)
    mean = rest.minv @ rest.h  # posterior mean of A from the other rows

    def one_bit(row, xs):
        bit, k = xs
        logit = model.bit_logit(row, bit, rest.minv, mean, y_row, w, prior_logit)
        on = jnp.log(jax.random.uniform(k, dtype=rest.minv.dtype)) < jax.nn.log_sigmoid(logit)
        return row.at[bit].set(on.astype(row.dtype)), None

    bits = jnp.arange(model.k)
    new_row, _ = jax.lax.scan(one_bit, z_row, (bits, jax.random.split(key, model.k)), unroll=True,
                              reverse=reverse)
    return model.add_row(rest, new_row, y_row, w), new_row


def sweep(model, key, z, data, lam, *, return_stats: bool = False, reverse: bool = False):
    """One collapsed Gibbs sweep over every bit z_ik (rows in a scan, the bits of a row in an inner scan).

    The statistics are recomputed from scratch at the start of every sweep (the latent state is Z alone
    and lam changes between calls), so rounding from the N rank-one downdate/update pairs within a sweep
    never accumulates across sweeps. ``reverse=True`` visits the bits in the opposite order (last row
    and last bit first): the sweep's reverse operator.
    """
    y = jnp.asarray(data)
    w = row_weights(lam, model.n, y.dtype)

    def one_row(carry, xs):
        stats, counts = carry
        k, z_row, y_row, w_i = xs
        counts_rest = counts - z_row
        log_on, log_off = model.bit_prior(counts_rest)
        stats, new_row = update_row(model, k, stats, z_row, y_row, w_i, log_on - log_off, reverse)
        return (stats, counts_rest + new_row), new_row

    init = (model.stats(z, y, w), jnp.sum(z, axis=0))
    (stats, _), z_new = jax.lax.scan(one_row, init, (jax.random.split(key, model.n), z, y, w), reverse=reverse)
    return (z_new, stats) if return_stats else z_new


def sweep_log_transition(model, z_from, z_to, data, lam, *, reverse: bool = False):
    """``log T(z_to | z_from)`` of :func:`sweep` (same visiting order and ``reverse``).

    The sweep is forced through the target: each bit's log conditional of its target value is taken on
    the partially updated matrix (earlier bits at their targets, later ones at their starting values),
    and the terms add up.
    """
    y = jnp.asarray(data)
    w = row_weights(lam, model.n, y.dtype)

    def one_row(carry, xs):
        stats, counts, total = carry
        row_from, row_to, y_row, w_i = xs
        counts_rest = counts - row_from
        log_on, log_off = model.bit_prior(counts_rest)
        rest = model.remove_row(stats, row_from, y_row, w_i)
        mean = rest.minv @ rest.h

        def one_bit(row, bit):
            logit = model.bit_logit(row, bit, rest.minv, mean, y_row, w_i, log_on - log_off)
            target = row_to[bit]
            logp = jnp.where(target == 1, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))
            return row.at[bit].set(target), logp

        _, logps = jax.lax.scan(one_bit, row_from, jnp.arange(model.k), unroll=True, reverse=reverse)
        stats = model.add_row(rest, row_to, y_row, w_i)
        return (stats, counts_rest + row_to, total + jnp.sum(logps)), None

    init = (model.stats(z_from, y, w), jnp.sum(z_from, axis=0), jnp.zeros((), y.dtype))
    (_, _, total), _ = jax.lax.scan(one_row, init, (z_from, z_to, y, w), reverse=reverse)
    return total


@dataclass(frozen=True)
class CollapsedBitSweep:
    """Kernel: one collapsed Gibbs sweep of a binary attributes model (see ``BinaryAttributes.sweep``).

    ``model`` is a :class:`~bdmc.models.BinaryAttributes` (or its Beta-Bernoulli variant inside
    :class:`~bdmc.models.BinaryAttributesHyper`).
    """

    model: Any
    evals_per_step: int = 1
    reverse: bool = False

    def __call__(self, key, latent, data, lam):
        z = self.model.sweep(key, latent["Z"], data, lam, reverse=self.reverse)
        return {**latent, "Z": z}, KernelInfo(jnp.ones((), jnp.result_type(float)))

    def log_transition(self, latent_from, latent_to, data, lam):
        """``log T(latent_to | latent_from)``: the sweep forced to the target, bit log-probabilities summed."""
        return self.model.sweep_log_transition(latent_from["Z"], latent_to["Z"], data, lam, reverse=self.reverse)

    def reversed(self) -> CollapsedBitSweep:
        """The reverse operator: the same bit updates visited in the opposite order."""
        return CollapsedBitSweep(self.model, self.evals_per_step, reverse=not self.reverse)

