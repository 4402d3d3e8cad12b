"""The StepRule contract: how one annealing step weights and refreshes a chain before its kernel moves it.

The engine (:func:`bdmc.core.engine.anneal`) applies, at each step from ``lam_from`` to ``lam_to``: the
rule's log-weight increment at the chain's current state, then its refresh (SMC's proposal of a newly
switched-on data case, the identity for AIS), then the kernel. AIS's rule is ``log f(x; lam_to) -
log f(x; lam_from)`` with no refresh (``core.ais_rule.AISRule``); SMC's rules live in ``core/smc.py``. Rules are
hashable (they are static arguments of the compiled run).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

PyTree = Any


@runtime_checkable
class StepRule(Protocol):
    """What the engine calls at each step, per chain (inside ``vmap``)."""

    def increment(self, model, latent: PyTree, data: PyTree, lam_from, lam_to) -> Any:
        """The chain's log-weight increment at ``latent``."""

    def refresh(self, key, model, latent: PyTree, data: PyTree, lam_from, lam_to) -> PyTree:
        """The chain's state after weighting and before the kernel (the identity for AIS)."""

    def culprit(self, model, latent: PyTree, data: PyTree, lam_from, lam_to) -> tuple | None:
        """On the host after a failed run: ``(term, case, value)`` of the NaN or +inf density behind a failed
        increment at ``latent``, or None if it cannot say."""
