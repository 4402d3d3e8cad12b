"""The collapsed Gibbs sweep over the assignments of a clustering model, its transition density and kernel.

Both clustering models share the sweep: it is parameterized by ``site_logits``, the normalized log conditional
of one row's assignment given statistics that exclude the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from ...contracts.capabilities import supports
from ...errors import BDMCError
from ...kernels import KernelInfo
from .statistics import cluster_stats


def _shift(stats, onehot, sign, l, y, q):
    """Add (sign = 1) or remove (sign = -1) one row of weight ``l`` in the cluster marked by ``onehot``."""
    C, W, S, Q = stats
    return C + sign * onehot, W + sign * l * onehot, S + (sign * l * onehot)[:, None] * y, Q + sign * l * onehot * q


def collapsed_gibbs_sweep(key, z, data, lam, num_clusters, site_logits, *, reverse=False):
    """Resample z_1, ..., z_n in turn (one ``lax.scan``), updating cluster statistics row by row.

    ``site_logits((C, W, S, Q), y, l)`` returns the normalized log conditional of a row's assignment given
    statistics that exclude the row. Each site is visited once, so its old value comes from the initial z;
    one-hot updates (no scatters) and Gumbel noise drawn up front keep the vmapped sweep cheap to compile.
    A sweep costs O(n k dim). ``reverse=True`` visits z_n, ..., z_1: the reverse operator of the sweep.
    """
    q = jnp.sum(data**2, axis=1)

    def site(stats, xs):
        old, y, l, qi, gumbel = xs
        stats = _shift(stats, jax.nn.one_hot(old, num_clusters, dtype=y.dtype), -1.0, l, y, qi)
        new = jnp.argmax(site_logits(stats, y, l) + gumbel).astype(jnp.int32)  # Gumbel-max draw
        return _shift(stats, jax.nn.one_hot(new, num_clusters, dtype=y.dtype), 1.0, l, y, qi), new

    gumbel = jax.random.gumbel(key, (z.shape[0], num_clusters), data.dtype)
    return jax.lax.scan(site, cluster_stats(z, data, lam, num_clusters), (z, data, lam, q, gumbel),
                        reverse=reverse)[1]


def collapsed_gibbs_log_transition(z_from, z_to, data, lam, num_clusters, site_logits, *, reverse=False):
    """``log T(z_to | z_from)`` of :func:`collapsed_gibbs_sweep` (same site order and ``reverse``).

    The sweep is forced through the target: each site is removed with its starting value, scored under the
    statistics of the partially updated state, and put back with its target value; the site
    log-probabilities add up (one ``lax.scan``).
    """
    q = jnp.sum(data**2, axis=1)

    def site(carry, xs):
        stats, total = carry
        old, new, y, l, qi = xs
        stats = _shift(stats, jax.nn.one_hot(old, num_clusters, dtype=y.dtype), -1.0, l, y, qi)
        new_hot = jax.nn.one_hot(new, num_clusters, dtype=y.dtype)
        total = total + jnp.sum(new_hot * site_logits(stats, y, l))
        return (_shift(stats, new_hot, 1.0, l, y, qi), total), None

    init = (cluster_stats(z_from, data, lam, num_clusters), jnp.zeros((), data.dtype))
    return jax.lax.scan(site, init, (z_from, z_to, data, lam, q), reverse=reverse)[0][1]


@runtime_checkable
class SweepTransitionDensity(Protocol):
    """A clustering model whose sweep has a transition density (:class:`ClusteringHyper`'s has none)."""

    def sweep_log_transition(self, latent_from, latent_to, data, lam, *, reverse=False) -> Any: ...


@dataclass(frozen=True)
class CollapsedGibbs:
    """The collapsed Gibbs sweep of a clustering model as a kernel ``(key, latent, data, lam)``.

    ``model`` is a :class:`~bdmc.models.Clustering` or a :class:`~bdmc.models.ClusteringHyper` (any object with
    ``sweep`` and ``k``).
    """

    model: Any
    reverse: bool = False

    @property
    def evals_per_step(self) -> int:
        """Every site scores its row under all k clusters: k full-data likelihood evaluations per sweep."""
        return int(self.model.k)

    def __call__(self, key, latent, data, lam):
        if self.reverse:
            latent = self.model.sweep(key, latent, data, lam, reverse=True)
        else:  # models without a reverse sweep (ClusteringHyper) keep working forward
            latent = self.model.sweep(key, latent, data, lam)
        return latent, KernelInfo(jnp.ones((), jnp.result_type(float)))

    def log_transition(self, latent_from, latent_to, data, lam):
        """``log T(latent_to | latent_from)``: the sweep forced to the target, site log-probabilities summed."""
        self._require_transition_density()
        return self.model.sweep_log_transition(latent_from, latent_to, data, lam, reverse=self.reverse)

    def reversed(self) -> CollapsedGibbs:
        """The reverse operator: the same site updates visited in the opposite order."""
        self._require_transition_density()
        return CollapsedGibbs(self.model, reverse=not self.reverse)

    def _require_transition_density(self):
        if not supports(self.model, SweepTransitionDensity):
            raise BDMCError(
                f"CollapsedGibbs of {type(self.model).__name__} has no transition density: the model lacks "
                "`sweep_log_transition`, which `log_transition` and `reversed` need"
            )
