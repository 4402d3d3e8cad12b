"""The StepPolicy contract: what an engine step does beyond weighting, resampling and moving its chains.

The engine (:func:`bdmc.core.engine.anneal`) runs a policy's steps in its own scan, with its own keys,
weights, resampling, kernel moves and failure record; the policy decides what the plain step takes as given.
At step ``t`` (inside the compiled scan, on all chains at once) the engine calls, in order:

1. ``finished(carry, t)``: True skips the step (an adaptive path that already reached its end);
2. ``lambdas(carry, loglik, lam_from, lam_to, t)``: the step's ``(lam_from, lam_to)`` from the chains' summed
   log-likelihoods ``loglik`` (chains,) and the path's pair (an adaptive tempering picks ``lam_to`` here);
3. the engine weights the chains from ``lam_from`` to ``lam_to`` and resamples them;
4. ``moves`` times: ``kernel(carry, kernel, lam_to)`` is the kernel of the move, and after it
   ``adapt(carry, acceptance)`` (acceptance per chain) the carry the next move sees (a step size steered by
   the acceptance);
5. ``record(carry, loglik, lam_from, lam_to, before, positions, acceptance) -> (carry, record)``: the carry of
   the next step and what the step reports (``before``: the chains' flat positions (chains, d) after the
   resampling, ``positions`` (moves, chains, d) after each move, ``acceptance`` (moves, chains)).

``init(args, positions)`` makes the first carry from the run's ``policy_args`` and the chains' starting flat
positions. The engine stacks each step's record (zeros at skipped steps) in ``AnnealResult.records``.

A policy adapts from the chains it moves, so the weights of a policy's run are not those of a fixed sequence of
kernels: it is for pilots, whose choices are frozen before the run that is weighted
(:func:`bdmc.core.pilot.refuse_in_chain_adaptation` says why a weighted run must not adapt). Policies are
hashable (static arguments of the compiled run) and their carry is a pytree of arrays.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

PyTree = Any


@runtime_checkable
class StepPolicy(Protocol):
    """What the engine calls at each step of a policy's run (on all chains at once)."""

    moves: int

    def init(self, args: PyTree, positions) -> PyTree:
        """The first carry, from the run's ``policy_args`` and the chains' flat positions (chains, d)."""

    def finished(self, carry: PyTree, t) -> Any:
        """Whether step ``t`` is skipped (a scalar bool)."""

    def lambdas(self, carry: PyTree, loglik, lam_from, lam_to, t) -> tuple[Any, Any]:
        """The step's ``(lam_from, lam_to)``, given each chain's summed log-likelihood and the path's pair."""

    def kernel(self, carry: PyTree, kernel, lam) -> Any:
        """The kernel of the step's next move."""

    def adapt(self, carry: PyTree, acceptance) -> PyTree:
        """The carry after a move, from its acceptance per chain."""

    def record(self, carry: PyTree, loglik, lam_from, lam_to, before, positions, acceptance) -> tuple[PyTree, PyTree]:
        """The next step's carry and this step's record."""
