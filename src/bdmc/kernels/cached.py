"""The chain-state bookkeeping of kernels on the engine's lean path (the ``CachedTransition`` capability).

Such a kernel keeps, per chain, its latent flattened (``ravel_pytree`` order) with the log prior and the
likelihood terms (one per data case) evaluated there, plus whatever its move needs of them (HMC: their
gradients). Building that state, reading the latent and the terms back, and recovering the latent's structure
are the same for every such kernel; only the evaluation and the move differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.capabilities import CollapsedDensity, supports


class CachedTerms(NamedTuple):
    """A chain's flat position with its log prior and likelihood terms (one per data case)."""

    position: jax.Array
    log_prior: jax.Array
    log_likelihood: jax.Array


@dataclass(frozen=True)
class CachedTermsKernel:
    """Base of kernels whose chain state is a flat position with its log prior and likelihood terms cached.

    A subclass (a frozen dataclass; its fields follow ``model``) defines ``evaluate_state(flat, unravel, data)``,
    the state at the flat position ``flat`` (a :class:`CachedTerms`, or a named tuple with those fields and
    more), and ``step``, its move from and to such states.

    Parameters
    ----------
    model
        The model whose intermediate densities ``f(.; lam)`` the kernel leaves invariant.
    """

    model: Any

    @property
    def caches_terms(self) -> bool:
        """Whether :meth:`init_state` / ``step`` apply: the density is ``log_prior + lam * terms`` (linear in lam),
        not a model's own collapsed density."""
        return not supports(self.model, CollapsedDensity)

    def init_state(self, latent, data):
        """Evaluate the lambda-free parts of the density at ``latent`` (one ``evaluate_state``)."""
        flat, unravel = ravel_pytree(latent)
        return self.evaluate_state(flat, unravel, data)

    def state_latent(self, state, like):
        """The latent of ``state``, in the structure of ``like`` (any latent of the model)."""
        return ravel_pytree(like)[1](state.position)

    def state_terms(self, state):
        """The likelihood terms (one per data case) cached in ``state``."""
        return state.log_likelihood

    def unravel_for(self, like=None):
        """The inverse of flattening a latent shaped like ``like`` (by default the shape of a prior draw)."""
        like = jax.eval_shape(self.model.sample_prior, jax.random.key(0)) if like is None else like
        return ravel_pytree(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), like))[1]
