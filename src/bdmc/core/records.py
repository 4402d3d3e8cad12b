"""The engine's named records: the scan's state and per-step output (on the device), and what a run returns.

As BlackJAX's State and Info: every field is read by name, never by position.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np


class Failures(NamedTuple):
    """Per chain, where a run first failed (carried on the device, read on the host once per chunk).

    ``weight_step``: the first transition whose log-weight increment was NaN or +inf (-1: none);
    ``density_step``, ``density_phase``: the first transition with a NaN or +inf density where one must be
    finite, and where (0 weight, 1 refresh, 2 a state the kernel accepted; see ``failures.PHASES``);
    ``density_at``: the latent there. A NaN or +inf density at a proposal is not a failure but a divergence.
    """

    weight_step: jax.Array
    density_step: jax.Array
    density_phase: jax.Array
    density_at: Any


class AnnealState(NamedTuple):
    """The scan's carry: every chain's state (its latent, or on the lean path the kernel's cached state), its
    log-weight, each run's banked log-evidence (SMC's resampling), the failure record and each chain's count
    of divergent transitions."""

    states: Any
    log_weights: jax.Array
    log_evidence: jax.Array
    failures: Failures
    divergences: jax.Array


class StepOutput(NamedTuple):
    """What one transition reports (the scan's per-step output): the chains' mean increment, the mean
    acceptance, the weights' ESS, the fraction of runs resampled, the fraction of chains whose move diverged
    and, when recorded, every increment."""

    mean_increment: jax.Array
    acceptance: jax.Array
    ess: jax.Array
    resampled: jax.Array
    divergent: jax.Array
    increments: jax.Array


class StepInfo(NamedTuple):
    """Per-step diagnostics over all chains, each of shape (T - 1,) (a batched run: (B, T - 1)).

    ``ess`` is the effective sample size of the chains' weights (with particles: the mean over runs of each
    run's particle ESS, before resampling); ``resampled`` is the fraction of runs resampled at the step;
    ``divergent`` the fraction of chains whose move diverged (a proposal of NaN or +inf density, or an energy
    error beyond the kernel's threshold: rejected, so the chain stayed where it was).
    """

    mean_increment: np.ndarray
    acceptance: np.ndarray
    ess: np.ndarray
    resampled: np.ndarray
    divergent: np.ndarray


class AnnealResult(NamedTuple):
    """What one annealing run returns.

    ``log_weights`` has one entry per chain (with particles: the weights since each run's last resampling);
    ``log_evidence`` has one entry per run: the chain's log-weight for AIS (one particle per run), the banked
    evidence plus the log-mean weight for SMC. ``latents`` are the final states (leading axis = chains);
    ``increments`` is (T - 1, chains) when requested, else None; ``divergences`` counts each chain's divergent
    transitions. A batched run puts the data set first on every array: ``log_weights`` (B, chains),
    ``latents`` (B, chains, ...), ``info`` fields (B, T - 1), ``increments`` (B, T - 1, chains),
    ``divergences`` (B, chains). ``seconds`` and ``n_evals`` are the whole call's.
    """

    log_weights: np.ndarray
    log_evidence: np.ndarray
    latents: Any
    info: StepInfo
    increments: np.ndarray | None
    seconds: float
    compile_seconds: float
    n_evals: int
    compiled: bool = True
    divergences: np.ndarray | None = None

    @property
    def num_transitions(self) -> int:
        """Transitions each chain made (T - 1)."""
        return int(np.shape(self.info.acceptance)[-1])

    @property
    def divergence_rate(self) -> float:
        """Divergent transitions as a fraction of all transitions of all chains."""
        counts = np.asarray(self.divergences if self.divergences is not None else 0)
        return float(np.sum(counts) / max(counts.size * self.num_transitions, 1))
