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
