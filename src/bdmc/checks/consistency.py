"""Unit-test conditional distributions against the joint: p(x|u) / p(x'|u) = p(x, u) / p(x', u)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import jit_static
from ..contracts.model import log_density


@dataclass(frozen=True)
class ConsistencyResult:
    """Worst violation of the conditional-vs-joint identity over the random triples tried.

    ``violations`` holds ``|[log p(x|u) - log p(x'|u)] - [log f(x, u) - log f(x', u)]|`` per triple;
    ``passed`` is ``worst <= tol``.
    """

    name: str
    violations: np.ndarray
    tol: float

    @property
    def worst(self) -> float:
        return float(np.max(self.violations))

    @property
    def passed(self) -> bool:
        return bool(self.worst <= self.tol)


@jit_static(static=("model", "conditional", "sample_latent"))
def _violations(keys, data, lam, *, model, conditional, sample_latent):
    """Compiled once per (model, conditional, sampler, shapes): lam and data are traced."""

    def one(k):
        k0, k1, k2 = jax.random.split(k, 3)
        u = sample_latent(k0)
        x = conditional.update(k1, u, data, lam)
        x2 = conditional.update(k2, u, data, lam)
        lhs = conditional.log_prob(x, data, lam) - conditional.log_prob(x2, data, lam)
        rhs = log_density(model, x, data, lam) - log_density(model, x2, data, lam)
        return jnp.abs(lhs - rhs)

    return jax.vmap(one)(keys)


@jit_static(static=("model", "conditional", "sample_latent"))
def _largest_log_density(keys, data, lam, *, model, conditional, sample_latent):
    """The largest ``|log density|`` :func:`_violations` compares, at the same triples (its rounding scale)."""

    def one(k):
        k0, k1, k2 = jax.random.split(k, 3)
        u = sample_latent(k0)
        x = conditional.update(k1, u, data, lam)
        x2 = conditional.update(k2, u, data, lam)
        terms = jnp.stack([conditional.log_prob(x, data, lam), conditional.log_prob(x2, data, lam),
                           log_density(model, x, data, lam), log_density(model, x2, data, lam)])
        return jnp.max(jnp.where(jnp.isfinite(terms), jnp.abs(terms), 0.0))

    return jnp.max(jax.vmap(one)(keys))


def conditional_consistency(
    key,
    model,
    conditional,
    data,
    *,
    lam=1.0,
    num_triples: int = 64,
    sample_latent: Callable | None = None,
    tol: float | None = None,
) -> ConsistencyResult:
    """Check a conditional distribution against the joint on random triples (BDMC paper, Appendix B.1).

    For each triple, ``u`` is a latent from ``sample_latent(key)`` (default: the model's prior) and ``x``,
    ``x'`` are two independent redraws of the conditional's block from ``conditional.update``. The identity
    ``log p(x|u) - log p(x'|u) = log f(x, u) - log f(x', u)`` must hold exactly, whatever the triple; a
    wrong conditional (a variance 10% off, a missing term) violates it by far more than rounding.

    Parameters
    ----------
    key : PRNG key
    model : Model
        Supplies ``log f(.; lam)`` (its ``log_density`` if collapsed, else prior plus weighted likelihood).
    conditional : bdmc.kernels.Conditional
        The conditional under test (``update`` and ``log_prob``).
    data : pytree
    lam : float or array
        Scalar or per-data-case weights of the intermediate distribution.
    num_triples : int
    sample_latent : callable, optional
        ``sample_latent(key) -> latent`` for the conditioning values ``u``.
    tol : float, optional
        Largest violation (nats) accepted as rounding error. Default: 1e-6 in float64; in float32, whose
        rounding of a log density of size 50 is already about 6e-6 nats, ``64 * eps`` times the largest
        ``|log density|`` compared when that is larger.
    """
    sample_latent = model.sample_prior if sample_latent is None else sample_latent
    lam = jnp.asarray(lam, jnp.result_type(float))
    violations = np.asarray(_violations(jax.random.split(key, num_triples), data, lam, model=model,
                                        conditional=conditional, sample_latent=sample_latent))
    violations = np.where(np.isnan(violations), np.inf, violations)
    if tol is None:
        tol, eps = 1e-6, float(jnp.finfo(jnp.result_type(float)).eps)
        if eps > 1e-12:  # float64 rounds log densities below 7e7 nats by less than 1e-6: nothing to add
            size = _largest_log_density(jax.random.split(key, num_triples), data, lam, model=model,
                                        conditional=conditional, sample_latent=sample_latent)
            tol = max(tol, 64 * eps * float(size))
    return ConsistencyResult(name=conditional.name, violations=violations, tol=tol)
