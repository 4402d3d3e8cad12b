"""The per-draw terms of both bounds: draws of ``q`` and ``log p(theta, D) - log q(theta)``, compiled.

Shared by the bounds (:mod:`bdmc.bracketing.bounds`) and by MCSA (:mod:`bdmc.bracketing.optimize`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import jax

from ..caching import jit_static
from .mean_field import MeanField


def log_ratios(log_joint: Callable, q: MeanField, thetas: Mapping):
    """``log p(theta_i, D) - log q(theta_i)`` for a batch of draws (leading axis), vmapped and compiled."""
    return _log_ratios(q, thetas, log_joint=log_joint)


# ``log_joint`` (a model's closure) is static: its programs live in bdmc's caches, not in JAX's for good.
@jit_static(static=("log_joint",))
def _log_ratios(q: MeanField, thetas: Mapping, *, log_joint: Callable):
    return jax.vmap(lambda th: log_joint(th) - q.log_prob(th))(thetas)


@functools.partial(jax.jit, static_argnums=2)
def draw(key, q: MeanField, num_draws: int):
    """``num_draws`` independent draws of ``q`` as a dict of ``(num_draws, ...)`` arrays."""
    return jax.vmap(q.sample)(jax.random.split(key, num_draws))


def lower_bound_values(key, q: MeanField, log_joint: Callable, *, num_draws: int):
    """Per-draw terms of Eqs. (8)/(11): ``log p(theta, D) - log q(theta)`` with ``theta ~ q``; their mean is L."""
    return _lower_bound_values(key, q, log_joint=log_joint, num_draws=num_draws)


@jit_static(static=("log_joint", "num_draws"))
def _lower_bound_values(key, q: MeanField, *, log_joint: Callable, num_draws: int):
    return log_ratios(log_joint, q, draw(key, q, num_draws))
