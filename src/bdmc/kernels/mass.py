"""Preconditioning by lambda: a pilot's frozen fit of the intermediate distributions' location and scale.

Along an annealing path the target shrinks from the prior to the posterior, by orders of magnitude when a
model is written in natural units, and its coordinates' scales differ as much from one another. A kernel
with one isotropic step cannot move them all. A pilot run (:mod:`bdmc.core.pilot`) records its chains' mean
and covariance at each level of its lambda grid; :class:`GaussianTable` holds them, frozen, read at the lam
of each transition (never at a chain's history, so every AIS bound stays valid):

- HMC, NUTS and MALA read the covariance as their inverse mass matrix (diagonal or dense);
- :class:`bdmc.kernels.IndependentMH` proposes from the fitted Gaussian (or Student-t) itself.

Between grid points the table interpolates linearly in ``log(lam + eps)``: a convex combination of covariance
matrices is a covariance matrix, and a diagonal's entries interpolate in log scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError
from .lookup import count_at_most


@dataclass(frozen=True)
class GaussianTable:
    """Means and covariances by lam: the pilot's Gaussian fit of each intermediate distribution.

    Parameters
    ----------
    lams : tuple of float
        Increasing lambdas in [0, 1].
    means : tuple
        One mean per lam, over the flattened latent (``ravel_pytree`` order): shape (L, d).
    covariances : tuple
        One covariance per lam: diagonal entries (L, d) or full matrices (L, d, d).

    Tuples keep the table hashable. A per-case lam (the SMC data path) reads the table at the mean weight.
    """

    lams: tuple
    means: tuple
    covariances: tuple

    def __post_init__(self):
        lams, means, covs = (np.asarray(x, float) for x in (self.lams, self.means, self.covariances))
        if lams.ndim != 1 or lams.size < 1 or np.any(np.diff(lams) <= 0):
            raise BDMCError(f"a Gaussian table needs increasing 1-D lams, got {lams.tolist()}")
        if means.shape[:1] != lams.shape or means.ndim != 2:
            raise BDMCError(f"a Gaussian table needs means of shape (L, d) = ({lams.size}, d), got {means.shape}")
        d = means.shape[1]
        if covs.shape not in ((lams.size, d), (lams.size, d, d)):
            raise BDMCError(f"a Gaussian table needs covariances of shape ({lams.size}, {d}) or "
                            f"({lams.size}, {d}, {d}), got {covs.shape}")
        if not (np.all(np.isfinite(means)) and np.all(np.isfinite(covs))):
            raise BDMCError("a Gaussian table's means and covariances must be finite")
        variances = covs if covs.ndim == 2 else np.diagonal(covs, axis1=1, axis2=2)
        if np.any(variances <= 0):
            raise BDMCError("a Gaussian table's variances must be positive")
        # The arrays a compiled run takes, kept: making them from the tuples again costs every call with this
        # table 0.15 ms at 125 points of 5 coordinates (not a field: equality and hashing are the tuples').
        for array in (lams, means, covs):
            array.setflags(write=False)
        object.__setattr__(self, "_arrays", (lams, means, covs))

    def __reduce__(self):
        # Pickled as its tuples and rebuilt through the constructor (its checks, its arrays made again).
        return type(self), (self.lams, self.means, self.covariances)

    def weights(self, lam):
        """``(i, w)``: lam lies between grid points i and i + 1, at fraction w (clipped to the ends), measured
        in ``log(lam + eps)``: the intermediate distributions change with the log of lam once the likelihood
        dominates, and pilots space their levels about geometrically (``eps`` is a tenth of the first positive
        grid point, so lam = 0 stays a grid point)."""
        lams = jnp.asarray(self.lams, jnp.result_type(float))
        lam = jnp.clip(jnp.mean(jnp.asarray(lam, lams.dtype)), lams[0], lams[-1])
        positive = jnp.where(lams > 0, lams, jnp.inf)
        eps = 0.1 * jnp.where(jnp.isfinite(jnp.min(positive)), jnp.min(positive), 1.0)
        axis, at = jnp.log(lams + eps), jnp.log(lam + eps)
        i = jnp.clip(count_at_most(axis, at) - 1, 0, max(lams.shape[0] - 2, 0))
        span = axis[jnp.minimum(i + 1, lams.shape[0] - 1)] - axis[i]
        w = jnp.where(span > 0, (at - axis[i]) / jnp.where(span > 0, span, 1.0), 0.0)
        return i, jnp.clip(w, 0.0, 1.0)

    def mean(self, lam):
        i, w = self.weights(lam)
        means = jnp.asarray(self.means, jnp.result_type(float))
        return (1 - w) * means[i] + w * means[jnp.minimum(i + 1, means.shape[0] - 1)]

    def covariance(self, lam):
        """The covariance at lam: diagonal entries (d,) or a matrix (d, d)."""
        i, w = self.weights(lam)
        covs = jnp.asarray(self.covariances, jnp.result_type(float))
        j = jnp.minimum(i + 1, covs.shape[0] - 1)
        if covs.ndim == 2:  # diagonal: interpolate in log scale (scales span orders of magnitude)
            return jnp.exp((1 - w) * jnp.log(covs[i]) + w * jnp.log(covs[j]))
        return (1 - w) * covs[i] + w * covs[j]

    def __repr__(self):
        d = np.shape(self.means)[-1]
        kind = "dense" if np.ndim(self.covariances) == 3 else "diagonal"
        points = sum(lam <= 1.0 for lam in self.lams)  # a pilot pads its tables past lam = 1 to one shape
        return f"GaussianTable({points} points, {d} coordinates, {kind})"


def _flatten(table):
    # The arrays made when the table was; traced leaves (a table rebuilt inside a compiled run) as they are.
    arrays = table.__dict__.get("_arrays")
    if arrays is not None:
        return arrays, None
    return tuple(x if isinstance(x, jax.Array) else np.asarray(x, np.float64)
                 for x in (table.lams, table.means, table.covariances)), None


def _unflatten(_, leaves):
    # Inside a compiled run the leaves are traced arrays: build without the host-side checks.
    table = object.__new__(GaussianTable)
    for name, leaf in zip(("lams", "means", "covariances"), leaves, strict=False):
        object.__setattr__(table, name, leaf)
    return table


jax.tree_util.register_pytree_node(GaussianTable, _flatten, _unflatten)


def inverse_mass_at(inverse_mass, lam, flat):
    """The inverse mass matrix a kernel uses at ``lam``: the identity (None), a fixed one, or a table's
    covariance at lam; diagonal (d,) or dense (d, d)."""
    if inverse_mass is None:
        return jnp.ones_like(flat)
    if isinstance(inverse_mass, GaussianTable):
        return inverse_mass.covariance(lam).astype(flat.dtype)
    return jnp.asarray(inverse_mass, flat.dtype)


def table_from_moments(lams, means, covariances) -> GaussianTable:
    """A :class:`GaussianTable` from arrays (the pilot's), as hashable tuples."""
    def tup(a):  # through Python lists: element by element through NumPy costs a new pilot milliseconds
        return _nested(np.asarray(a, np.float64).tolist())

    return GaussianTable(tup(lams), tup(means), tup(covariances))


def _nested(values: list) -> tuple:
    return tuple(_nested(v) for v in values) if values and isinstance(values[0], list) else tuple(values)
