"""The per-draw terms of both bounds: draws of ``q`` and ``log p(theta, D) - log q(theta)``, compiled.

Shared by the bounds (:mod:`bdmc.bracketing.bounds`) and by MCSA (:mod:`bdmc.bracketing.optimize`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import jax

from .mean_field import MeanField


@functools.partial(jax.jit, static_argnums=0)
def log_ratios(log_joint: Callable, q: MeanField, thetas: Mapping):
    """``log p(theta_i, D) - log q(theta_i)`` for a batch of draws (leading axis), vmapped and compiled."""
    return jax.vmap(lambda th: log_joint(th) - q.log_prob(th))(thetas)


@functools.partial(jax.jit, static_argnums=2)
def draw(key, q: MeanField, num_draws: int):
    """``num_draws`` independent draws of ``q`` as a dict of ``(num_draws, ...)`` arrays."""
    return jax.vmap(q.sample)(jax.random.split(key, num_draws))


@functools.partial(jax.jit, static_argnames=("log_joint", "num_draws"))
def lower_bound_values(key, q: MeanField, log_joint: Callable, *, num_draws: int):
    """Per-draw terms of Eqs. (8)/(11): ``log p(theta, D) - log q(theta)`` with ``theta ~ q``; their mean is L."""
    return log_ratios(log_joint, q, draw(key, q, num_draws))
