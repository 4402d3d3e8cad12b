"""A pilot-refined data path for SMC: each data case switched on in as many sub-steps as it needs, then frozen.

Switching a case on at once weights the particles by its whole likelihood ``p(y_i | x)``. When the particles
disagree about that value by much more than a nat (the first cases under a broad prior, outliers), one step
collapses the run onto a few particles, and with one particle the lost accuracy cannot come back however many
MCMC moves follow: on the conjugate regression of ``benchmarks/peers.py`` (n = 200, d = 10) even exact
posterior draws after every case leave one-particle SMC 75 nats low (``benchmarks/peer_smc_diagnosis.py``).

The pilot runs SMC with its own keys (``fold_in(key, SMC_PILOT_STREAM)``) along the plain data path and
records, for each case, the variance ``v_i`` across particles of its log-likelihood when it is switched on.
Raising a case's weight linearly in ``K`` sub-steps (with the moves between them) makes each sub-step's
increment variance about ``v_i / K^2``, so ``K_i = ceil(sqrt(v_i / target_variance))`` keeps every step's
variance near the target: a constant conditional ESS, chosen before the run and frozen, so SMC keeps its
lower-bound guarantee (the path depends on the pilot, never on the run's own particles).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import jax
import numpy as np

from ..errors import BDMCError, NonFiniteLogWeightError
from . import schedules
from .engine import AISRule, anneal
from .prior import prior_draws
from .resampling import AdaptiveResampling

SMC_PILOT_STREAM = 0x5BD1E995  # folded into the caller's key: the pilot's randomness is not the run's


@dataclass(frozen=True)
class DataPathPilot:
    """How the pilot refines the data path.

    Parameters
    ----------
    num_particles : int
        Pilot particles (one run); the variance of each case's log-likelihood is taken across them.
    target_variance : float
        Variance of the log-weight increment per sub-step the refined path aims at (0.1: a conditional ESS of
        about 90% per step for log-normal weights; 0.5 left the regression of the module docstring 1.2 nats
        low with 64 particles, 0.1 0.5 nats, 0.02 0.4 nats at twice the cost).
    max_substeps : int
        Most sub-steps one case may get.
    """

    num_particles: int = 32
    target_variance: float = 0.1
    max_substeps: int = 64

    def __post_init__(self):
        if int(self.num_particles) != self.num_particles or self.num_particles < 2:
            raise BDMCError(f"DataPathPilot.num_particles must be an integer >= 2, got {self.num_particles}")
        if not (self.target_variance > 0 and math.isfinite(self.target_variance)):
            raise BDMCError(f"DataPathPilot.target_variance must be positive, got {self.target_variance}")
        if int(self.max_substeps) != self.max_substeps or self.max_substeps < 1:
            raise BDMCError(f"DataPathPilot.max_substeps must be a positive integer, got {self.max_substeps}")


@dataclass(frozen=True)
class RefinedPath:
    """The pilot's choice: sub-steps per case, the frozen path, and what the pilot cost."""

    substeps: np.ndarray
    path: np.ndarray
    variances: np.ndarray
    seconds: float
    compile_seconds: float
    n_evals: int
    healthy: bool
    pilot: DataPathPilot

    def settings(self) -> dict:
        """What a result's ``settings`` records of the refinement."""
        return {"data_path": "pilot-refined" if self.healthy else
                "pilot saw a NaN or +inf density: plain data path",
                "substeps_total": int(self.substeps.sum()), "substeps_max": int(self.substeps.max()),
                "data_pilot_particles": int(self.pilot.num_particles),
                "data_pilot_target_variance": float(self.pilot.target_variance),
                "data_pilot_seconds": self.seconds, "data_pilot_evals": int(self.n_evals)}


def substeps_for(variances, *, target_variance: float, max_substeps: int) -> np.ndarray:
    """``K_i = ceil(sqrt(v_i / target))`` clipped to ``[1, max_substeps]``; an infinite or NaN ``v_i`` gets the most."""
    v = np.asarray(variances, float)
    k = np.ceil(np.sqrt(np.where(np.isfinite(v), np.maximum(v, 0.0), np.inf) / target_variance))
    return np.clip(np.nan_to_num(k, nan=max_substeps, posinf=max_substeps), 1, max_substeps).astype(int)


def refine_data_path(key, model, data, kernel, *, num_cases: int, order=None, pilot: DataPathPilot | None = None,
                     resampling: str = "systematic", ess_threshold: float = 0.5) -> RefinedPath:
    """Run the pilot and return the frozen data path with per-case sub-steps (module docstring).

    Parameters
    ----------
    key : PRNG key
        The caller's key; the pilot folds in :data:`SMC_PILOT_STREAM`, so the run's randomness is untouched.
    model, data
        The model and its validated data.
    kernel
        The run's kernel (moves included), applied after every step as in the run.
    num_cases : int
        Data cases N.
    order : sequence of int, optional
        The order in which cases are added.
    pilot : DataPathPilot, optional
        Pilot settings (default ``DataPathPilot()``).
    """
    pilot = DataPathPilot() if pilot is None else pilot
    plain = schedules.data_path(num_cases, order=order)
    key_pilot = jax.random.fold_in(key, SMC_PILOT_STREAM)
    init, key_run = prior_draws(key_pilot, model, pilot.num_particles)
    began = time.perf_counter()
    try:
        result = anneal(key_run, model, data, kernel, plain, init, num_particles=pilot.num_particles,
                        resampler=AdaptiveResampling(scheme=resampling, ess_threshold=ess_threshold),
                        rule=AISRule(), record_increments=True, progress=False, description="SMC pilot")
    except NonFiniteLogWeightError:
        # The run must meet and report the bug itself, on its own keys: it goes unrefined.
        ones = np.ones(num_cases, int)
        return RefinedPath(ones, plain, np.full(num_cases, np.nan), time.perf_counter() - began, 0.0, 0,
                           False, pilot)
    # Step t of the plain path switches on exactly the case whose weight changes there.
    cases = np.argmax(np.diff(plain, axis=0), axis=1)
    variances = np.empty(num_cases)
    with np.errstate(invalid="ignore"):
        variances[cases] = np.var(np.asarray(result.increments, float), axis=1)
    substeps = substeps_for(variances, target_variance=pilot.target_variance, max_substeps=pilot.max_substeps)
    path = schedules.data_path(num_cases, steps_per_case=substeps, order=order)
    return RefinedPath(substeps, path, variances, result.seconds + result.compile_seconds, result.compile_seconds,
                       result.n_evals, True, pilot)

