"""Exact conditional updates: the building block of Gibbs kernels, testable against the joint density."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ..contracts.kernel import KernelInfo
from ..errors import BDMCError


@dataclass(frozen=True)
class Conditional:
    """One conditional distribution of ``f(.; lam)``: a block of the latent given the rest.

    Attributes
    ----------
    name : str
        What it updates (for reports).
    update : callable
        ``update(key, latent, data, lam) -> latent``: redraws the block from its conditional, leaving
        every other part of the latent unchanged.
    log_prob : callable
        ``log_prob(latent, data, lam) -> scalar``: the normalized log conditional density (or mass) of the
        block's current value given the rest. ``bdmc.checks.conditional_consistency`` tests it against the
        joint ``log f``.
    assign : callable, optional
        ``assign(latent, source) -> latent``: ``latent`` with this block's value copied from ``source``.
        Needed to evaluate the transition density of a sweep (:meth:`GibbsSweep.log_transition`).
    """

    name: str
    update: Callable
    log_prob: Callable
    assign: Callable | None = None

    def __post_init__(self):
        # A bound method compares its model by identity: two equal models' kernels would differ, and every call
        # on a new (equal) model object would compile its programs again and keep them.
        for field in ("update", "log_prob", "assign"):
            object.__setattr__(self, field, _as_value(getattr(self, field)))


@dataclass(frozen=True)
class Method:
    """A model's method as a value: equal when the models are equal and the function is the same."""

    owner: Any
    function: Callable

    def __call__(self, *args, **kwargs):
        return self.function(self.owner, *args, **kwargs)


def _as_value(function):
    return Method(function.__self__, function.__func__) if isinstance(function, types.MethodType) else function


@dataclass(frozen=True)
class CopyBlock:
    """An ``assign`` hook for a block stored under dictionary keys: ``CopyBlock(("theta",))(latent, source)``.

    A value object (compares and hashes by its keys), so kernels built from it stay equal across calls and
    compiled functions keyed on them are reused.
    """

    keys: tuple

    def __call__(self, latent, source):
        return {**latent, **{k: source[k] for k in self.keys}}


@dataclass(frozen=True)
class GibbsSweep:
    """Apply a tuple of conditional updates in order: a Gibbs kernel leaving ``f(.; lam)`` invariant.

    When every conditional has ``assign``, the sweep also exposes its transition density
    (:meth:`log_transition`) and its reverse operator (:meth:`reversed`), which Chib-style estimators need.
    """

    conditionals: tuple
    evals_per_step: int = 1

    def __call__(self, key, latent, data, lam):
        for k, cond in zip(jax.random.split(key, len(self.conditionals)), self.conditionals, strict=False):
            latent = cond.update(k, latent, data, lam)
        return latent, KernelInfo(jnp.ones((), jnp.result_type(float)))

    def log_transition(self, latent_from, latent_to, data, lam):
        """``log T(latent_to | latent_from)`` of one sweep under ``f(.; lam)``.

        Block i moves to its target value drawn from its conditional given the blocks already moved (at
        their targets) and the blocks still to come (at their starting values), so the density is
        ``sum_i log p(to_i | to_<i, from_>i)``: each conditional is evaluated on the partially updated state.
        """
        missing = [c.name for c in self.conditionals if c.assign is None]
        if missing:
            raise BDMCError(
                f"GibbsSweep.log_transition needs an `assign` hook on every Conditional; missing on {missing}"
            )
        latent, total = latent_from, jnp.zeros((), jnp.result_type(float))
        for cond in self.conditionals:
            latent = cond.assign(latent, latent_to)
            total = total + cond.log_prob(latent, data, lam)
        return total

    def reversed(self) -> GibbsSweep:
        """The reverse operator: the same exact conditional draws in the opposite order.

        Each block update ``K_i`` is reversible with respect to ``f``, so the reverse of
        ``K_n o ... o K_1`` is ``K_1 o ... o K_n``.
        """
        return GibbsSweep(tuple(self.conditionals[::-1]), evals_per_step=self.evals_per_step)
