"""Independent Metropolis-Hastings from a pilot's fitted Gaussian or Student-t: PyMC SMC's default kernel, frozen.

PyMC's SMC proposes each particle's move from a Gaussian fitted to the current particles, which makes its
kernel depend on the whole population (a consistent estimator, not a certified bound). Here the proposal at
lam is the pilot's fit of ``f(.; lam)`` (:class:`~bdmc.kernels.GaussianTable`, chosen with its own keys and then
frozen), so each transition is a fixed kernel leaving ``f(.; lam)`` invariant and every AIS bound holds.

A proposal ``x' ~ q_lam`` is accepted with probability ``min(1, f(x') q(x) / (f(x) q(x')))``. Its acceptance is
high where the fit is good and it jumps across the whole distribution at once, whatever the scales of the
coordinates; a Student-t's heavier tails keep ``f / q`` bounded where a Gaussian fit is too narrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jax.scipy.special import gammaln

from ..contracts.kernel import KernelInfo
from ..contracts.model import legal_for_acceptance, proposal_log_density
from ..errors import BDMCError
from .mass import GaussianTable


@dataclass(frozen=True)
class IndependentMH:
    """Independent Metropolis-Hastings proposing from ``proposal`` read at each transition's lam.

    Parameters
    ----------
    model
        The model whose intermediate densities the kernel leaves invariant.
    proposal : GaussianTable
        Means and covariances by lam over the flattened latent (a pilot's fit: ``Pilot(mass=...)`` with this
        kernel, or :func:`bdmc.kernels.mass.table_from_moments`).
    df : float or None
        Degrees of freedom of a multivariate Student-t proposal; None proposes from the Gaussian.
    scale : float
        Factor on the fitted standard deviations (above 1 widens the proposal's reach).
    num_proposals : int
        Proposals (each accepted or rejected in turn) per transition.
    """

    model: Any
    proposal: GaussianTable | None = None
    df: float | None = 5.0
    scale: float = 1.2
    num_proposals: int = 2

    def __post_init__(self):
        if self.df is not None and not self.df > 0:
            raise BDMCError(f"IndependentMH df must be positive or None, got {self.df}")
        if not self.scale > 0 or int(self.num_proposals) < 1:
            raise BDMCError(f"IndependentMH needs scale > 0 and num_proposals >= 1, got {self.scale} and "
                            f"{self.num_proposals}")

    @property
    def evals_per_step(self) -> int:
        return int(self.num_proposals) + 1

    def __call__(self, key, latent, data, lam):
        if self.proposal is None:
            raise BDMCError("IndependentMH needs a proposal table: run it with a pilot (tune='pilot') or pass "
                            "proposal=GaussianTable(...)")
        flat, unravel = ravel_pytree(latent)
        mean = self.proposal.mean(lam).astype(flat.dtype)
        cov = self.proposal.covariance(lam).astype(flat.dtype)
        factor = jnp.sqrt(cov) if cov.ndim == 1 else jnp.linalg.cholesky(cov)
        factor = factor * jnp.asarray(self.scale, flat.dtype)
        target = lambda x: proposal_log_density(self.model, unravel(x), data, lam)  # noqa: E731
        log_q = lambda x: _log_proposal(x, mean, factor, self.df)  # noqa: E731

        def one(carry, k):
            x, value, acc = carry
            k_draw, k_scale, k_accept = jax.random.split(k, 3)
            z = jax.random.normal(k_draw, flat.shape, flat.dtype)
            if self.df is not None:  # a Student-t: a Gaussian over the root of a chi-square / df
                chi2 = 2.0 * jax.random.gamma(k_scale, self.df / 2.0, dtype=flat.dtype)
                z = z / jnp.sqrt(chi2 / self.df)
            new = mean + (factor * z if factor.ndim == 1 else factor @ z)
            new_value = target(new)
            log_ratio = legal_for_acceptance(new_value) - value + log_q(x) - log_q(new)
            log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
            p_accept = jnp.exp(jnp.minimum(log_ratio, 0.0))
            accept = jax.random.uniform(k_accept, (), flat.dtype) < p_accept
            return (jnp.where(accept, new, x), jnp.where(accept, new_value, value), acc + p_accept), None

        start = (flat, target(flat), jnp.zeros((), flat.dtype))
        (x, _, total), _ = jax.lax.scan(one, start, jax.random.split(key, int(self.num_proposals)))
        return unravel(x), KernelInfo(total / int(self.num_proposals))


def _log_proposal(x, mean, factor, df):
    """Log density of the proposal at ``x``, up to a constant that cancels in the acceptance ratio."""
    r = x - mean
    white = r / factor if factor.ndim == 1 else jax.scipy.linalg.solve_triangular(factor, r, lower=True)
    q = jnp.sum(white**2)
    if df is None:
        return -0.5 * q
    d = x.shape[0]
    return gammaln((df + d) / 2) - 0.5 * (df + d) * jnp.log1p(q / df)
