"""The Kernel contract: a transition operator that leaves an intermediate distribution invariant.

``kernel(key, latent, data, lam) -> (latent, KernelInfo)`` leaves ``f(.; lam)`` invariant. Kernels are
hashable (frozen dataclasses) because they are static arguments of compiled runs; a kernel registered as a pytree
of numbers (HMC: its step size and inverse mass) passes those numbers as arguments instead
(:func:`split_kernel`), so a pilot's new table reuses the compiled program. Everything a kernel can do
beyond that call is a structural protocol, found with ``supports``, never with ``getattr``:

- :class:`CountsEvaluations`: ``evals_per_step``, likelihood evaluations per transition (cost accounting;
  :func:`evals_per_step` reads it, 1 for a kernel that does not say);
- :class:`CachedTransition`: a chain state that caches the lambda-free parts of the density (the engine's
  lean path);
- :class:`TunableStepSize`: a ``step_size`` field the pilot steers (a number or a table by lambda);
- :class:`Preconditioned`: an ``inverse_mass`` field the pilot fills with its fit of each intermediate
  distribution's covariance; :class:`FittedProposal`: a ``proposal`` field it fills with the fit itself;
  :class:`JitteredSteps`: a ``jitter`` of the step size the pilot sets with a preconditioner;
- :class:`ReversibleTransition`: its own transition density and reverse (Chib-style estimators, CMS);
- :class:`HoldsModel`: the model it was built for;
- :class:`CountedConstrainedMove`, :class:`ConstrainedMoveCost`: nested sampling's constrained moves and
  their cost.

What a transition reports is :class:`KernelInfo`: its acceptance probability, and whether it diverged.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
import numpy as np

from .capabilities import supports

PyTree = Any


class KernelInfo(NamedTuple):
    """Per-transition diagnostics.

    ``acceptance`` is the Metropolis acceptance probability (1 for Gibbs updates); ``divergent`` is whether the
    transition's proposal diverged (None for kernels that cannot diverge, or do not say).
    """

    acceptance: jax.Array
    divergent: Any = None


@runtime_checkable
class Kernel(Protocol):
    """``kernel(key, latent, data, lam) -> (latent, KernelInfo)``, leaving ``f(.; lam)`` invariant."""

    def __call__(self, key, latent: PyTree, data: PyTree, lam) -> tuple[PyTree, KernelInfo]: ...


@runtime_checkable
class CountsEvaluations(Protocol):
    """Says what one transition from a bare latent costs, in likelihood (or gradient) evaluations."""

    evals_per_step: int


@runtime_checkable
class TunableStepSize(Protocol):
    """A kernel with a ``step_size`` (a number, or a table by lambda) that a pilot may choose before a run.

    ``dataclasses.replace(kernel, step_size=...)`` gives the tuned kernel.
    """

    step_size: Any


@runtime_checkable
class Preconditioned(Protocol):
    """A kernel with an ``inverse_mass`` (None, a matrix, or a table by lambda) that a pilot may fit."""

    inverse_mass: Any


@runtime_checkable
class JitteredSteps(Protocol):
    """A kernel whose step size is jittered per transition by a factor in ``1 ± jitter`` (HMC)."""

    jitter: float


@runtime_checkable
class FittedProposal(Protocol):
    """A kernel proposing from a ``proposal`` table of Gaussians by lambda that a pilot fits (independent MH)."""

    proposal: Any


@runtime_checkable
class HoldsModel(Protocol):
    """A kernel built for one model (HMC, NUTS, ...), which a sampler may start its chains from."""

    model: Any


@runtime_checkable
class CountedConstrainedMove(Protocol):
    """A nested-sampling move ``counted(key, latent, data, log_c) -> (latent, evaluations)`` inside the
    likelihood constraint ``log L > log_c``, reporting the density evaluations it actually spent."""

    def counted(self, key, latent: PyTree, data: PyTree, log_c) -> tuple[PyTree, Any]: ...


@runtime_checkable
class ConstrainedMoveCost(Protocol):
    """A nested-sampling move with a fixed cost: ``evals_per_move`` density evaluations per move."""

    evals_per_move: int


def evals_per_step(kernel) -> int:
    """Evaluations of one transition of ``kernel`` from a bare latent: its own count, else 1."""
    return int(kernel.evals_per_step) if supports(kernel, CountsEvaluations) else 1


@runtime_checkable
class ReversibleTransition(Protocol):
    """Evaluates its own transition density and builds its reverse operator (the CMS estimator)."""

    def log_transition(self, latent_from: PyTree, latent_to: PyTree, data: PyTree, lam) -> Any: ...

    def reversed(self) -> Kernel: ...


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


def split_kernel(kernel):
    """``(static part, parameters)`` of a kernel (or of a sampler holding one): a kernel registered as a pytree
    of numbers (HMC's step size or step-size table) passes them as arguments of the compiled run, so a new value
    (a pilot's new table) reuses the compiled program; any other kernel is static as a whole.
    """
    leaves, treedef = jax.tree.flatten(kernel)
    if len(leaves) == 1 and leaves[0] is kernel or not all(isinstance(x, (int, float, np.ndarray, jax.Array))
                                                            for x in leaves):
        return ("static", kernel), ()
    return ("pytree", treedef), tuple(leaves)


def join_kernel(kernel_def, params):
    """The kernel back from :func:`split_kernel`'s parts (inside a compiled function)."""
    kind, part = kernel_def
    return part if kind == "static" else jax.tree.unflatten(part, params)
