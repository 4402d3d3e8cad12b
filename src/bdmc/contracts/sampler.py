"""The Sampler contract: a posterior sampler that simulation-based calibration and the audit can run.

``sampler.draws(key, data, *, num_draws)`` returns latents (the model's pytree with a leading axis of
``num_draws``) drawn from ``p(x | data)``; ``traceable`` says whether that call is pure JAX (SBC then compiles
all its replications as one program) and ``settings()`` returns the sampler's options, JSON-ready. What a
sampler provides beyond that is a structural protocol, found with ``supports``, never ``getattr``:

- :class:`BatchesReplications`: ``batch``, how SBC runs a traceable sampler's replications (``"map"`` for
  one whose cost varies by data set, as NUTS's trees do; ``"vmap"`` otherwise, the default);
- :class:`Thinned`: ``thin``, the transitions between kept draws (the audit records it, and picks it from a
  pilot for a dataclass sampler: ``dataclasses.replace(sampler, thin=...)``);
- :class:`DiagnosedDraws`: ``diagnosed_draws``, the draws with the chain's divergences (a NUTS reports them).

The samplers themselves live above: bdmc's in :mod:`bdmc.checks.samplers`, each PPL's own NUTS in
:mod:`bdmc.ppl.samplers`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

PyTree = Any


@runtime_checkable
class Sampler(Protocol):
    """``draws(key, data, *, num_draws) -> latents`` (leading axis ``num_draws``) from ``p(x | data)``.

    ``traceable`` says whether ``draws`` is pure JAX (then SBC vmaps it over replications in one program).
    ``settings()`` returns the sampler's options as a JSON-ready dict (recorded in SBC's result).
    """

    traceable: bool

    def draws(self, key, data: PyTree, *, num_draws: int) -> PyTree: ...

    def settings(self) -> dict: ...


@runtime_checkable
class BatchesReplications(Protocol):
    """Says how SBC runs its replications in one program: ``"map"`` (one after another: a sampler whose cost
    varies by data set, which a vmapped batch would run for as long as the slowest) or ``"vmap"``."""

    batch: str


@runtime_checkable
class Thinned(Protocol):
    """Keeps every ``thin``-th transition of its chain."""

    thin: int


@runtime_checkable
class DiagnosedDraws(Protocol):
    """Reports its chain's divergences with its draws: ``(draws, {"divergences": int, "transitions": int})``."""

    def diagnosed_draws(self, key, data: PyTree, *, num_draws: int) -> tuple[PyTree, dict]: ...


def replication_batch(sampler) -> str:
    """How SBC runs ``sampler``'s replications: its own ``batch``, else ``"vmap"``."""
    return sampler.batch if isinstance(sampler, BatchesReplications) else "vmap"
