"""Exact conditional updates: the building block of Gibbs kernels, testable against the joint density."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp

from ._base import KernelInfo


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
    """

    name: str
    update: Callable
    log_prob: Callable


@dataclass(frozen=True)
class GibbsSweep:
    """Apply a tuple of conditional updates in order: a Gibbs kernel leaving ``f(.; lam)`` invariant."""

    conditionals: tuple
    evals_per_step: int = 1

    def __call__(self, key, latent, data, lam):
        for k, cond in zip(jax.random.split(key, len(self.conditionals)), self.conditionals):
            latent = cond.update(k, latent, data, lam)
        return latent, KernelInfo(jnp.ones((), jnp.result_type(float)))
