"""The Kernel contract: a transition operator that leaves an intermediate distribution invariant.

``kernel(key, latent, data, lam) -> (latent, KernelInfo)`` leaves ``f(.; lam)`` invariant. Kernels are
hashable (frozen dataclasses) because they are static arguments of compiled runs. A kernel may declare
``evals_per_step`` (likelihood evaluations per transition, for cost accounting) and, for estimators that
need its transition density (Chib-style, CMS), the :class:`ReversibleTransition` capability.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

PyTree = Any


class KernelInfo(NamedTuple):
    """Per-transition diagnostics: the Metropolis acceptance probability (1 for Gibbs updates)."""

    acceptance: jax.Array


@runtime_checkable
class Kernel(Protocol):
    """``kernel(key, latent, data, lam) -> (latent, KernelInfo)``, leaving ``f(.; lam)`` invariant."""

    def __call__(self, key, latent: PyTree, data: PyTree, lam) -> tuple[PyTree, KernelInfo]: ...


@runtime_checkable
class ReversibleTransition(Protocol):
    """Evaluates its own transition density and builds its reverse operator (the CMS estimator)."""

    def log_transition(self, latent_from: PyTree, latent_to: PyTree, data: PyTree, lam) -> Any: ...

    def reversed(self) -> "Kernel": ...


@runtime_checkable
class CachedTransition(Protocol):
    """A kernel whose chain state caches the lambda-free parts of the density (log prior, likelihood terms
    and what the kernel needs of them), so a new lam costs nothing and the AIS weight increment is read from
    the state. Applies to scalar lam on models whose density is ``log_prior + lam * sum(log_likelihood)``
    (``caches_terms``); the engine uses it there and calls the kernel plainly elsewhere.

    ``state_terms(state)`` returns the likelihood terms (one per data case) at the state's latent.
    """

    caches_terms: bool
    evals_per_cached_step: int

    def init_state(self, latent: PyTree, data: PyTree) -> Any: ...

    def step(self, key, state: Any, data: PyTree, lam, *, like: PyTree = None) -> tuple[Any, KernelInfo]: ...

    def state_latent(self, state: Any, like: PyTree) -> PyTree: ...

    def state_terms(self, state: Any) -> jax.Array: ...
