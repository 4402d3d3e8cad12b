"""A pilot-chosen data path for SMC: each step switches on as many data cases as the particles can absorb.

Switching a case on at once weights the particles by its whole likelihood ``p(y_i | x)``. When the particles
disagree about that value by much more than a nat (the first cases under a broad prior, outliers), one step
collapses the run onto a few particles, and with one particle the lost accuracy cannot come back however many
MCMC moves follow: on the conjugate regression of ``benchmarks/peers.py`` (n = 200, d = 10) even exact
posterior draws after every case leave one-particle SMC 75 nats low (``benchmarks/peer_smc_diagnosis.py``).
Once the posterior has settled the opposite holds: a case moves the particles' weights by far less than a
nat, and a step with MCMC moves after every case costs all N likelihood terms N times over (O(N^2)).

So a pilot with its own keys (``fold_in(key, SMC_PILOT_STREAM)``) walks the data path and chooses each step:
with the per-case log-likelihood terms of its particles (one evaluation of all N terms per step), the
increment of switching on the next ``j`` cases is a cumulative sum, and the pilot takes the longest run of
cases whose increment varies across particles by at most ``target_variance`` (a conditional ESS of about
``exp(-target_variance)``); where one case alone varies by more, it raises that case's weight by the
fraction ``sqrt(target_variance / v)`` that meets the target. The pilot then resamples and moves its particles
as the run will, and goes on. The run follows the rows the pilot chose, frozen, so SMC keeps its lower-bound
guarantee (the path depends on the pilot, never on the run's own particles). A run then costs
``O(N x steps)`` evaluations, with as many steps as the posterior's concentration needs, not ``N``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..contracts.kernel import evals_per_step
from ..errors import BDMCError
from . import schedules
from .prior import prior_draws

SMC_PILOT_STREAM = 0x5BD1E995  # folded into the caller's key: the pilot's randomness is not the run's


@dataclass(frozen=True)
class DataPathPilot:
    """How the pilot chooses the data path.

    Parameters
    ----------
    num_particles : int
        Pilot particles (one run); the variance of each step's increment is taken across them.
    target_variance : float
        Variance of the log-weight increment per step the chosen path aims at (0.1: a conditional ESS of
        about 90% per step for log-normal weights; with one case per step and sub-steps only, 0.5 left the
        regression of the module docstring 1.2 nats low with 64 particles, 0.1 0.5 nats, 0.02 0.4 nats at
        twice the cost).
    max_substeps : int
        No step raises a case's weight by less than ``1 / max_substeps``.
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
    """The pilot's choice: the frozen path, the steps in which each case's weight rises, the variance of each
    case's log-likelihood across the pilot's particles when it was first switched on, and what the pilot
    cost (``healthy`` False: the pilot met a NaN or +inf and left the plain data path)."""

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
        per_step = np.count_nonzero(np.diff(self.path, axis=0), axis=1)
        return {"data_path": "pilot-chosen" if self.healthy else
                "pilot saw a NaN or +inf density: plain data path",
                "path_steps": int(self.path.shape[0] - 1), "substeps_max": int(self.substeps.max()),
                "cases_per_step_max": int(per_step.max()),
                "data_pilot_particles": int(self.pilot.num_particles),
                "data_pilot_target_variance": float(self.pilot.target_variance),
                "data_pilot_seconds": self.seconds, "data_pilot_evals": int(self.n_evals)}


def next_row(terms, lam, remaining, *, target_variance: float, max_substeps: int) -> tuple[np.ndarray, float]:
    """The pilot's next path row from its equally weighted particles' likelihood terms (module docstring).

    Parameters
    ----------
    terms : array (K, N)
        Every particle's log-likelihood term of every case.
    lam : array (N,)
        The current row.
    remaining : array of int
        The cases not yet fully on, in the order they are added (``lam`` of the first may be partial).
    target_variance, max_substeps
        As in :class:`DataPathPilot`; no step raises a case's weight by less than ``1 / max_substeps``.

    Returns
    -------
    (row, variance)
        The next row and the variance across particles of the step's increment.
    """
    terms = np.asarray(terms, float)[:, remaining]
    share = 1.0 - lam[remaining]
    with np.errstate(invalid="ignore", over="ignore"):
        steps = np.cumsum(np.where(share == 0, 0.0, terms * share), axis=1)
        v = np.var(steps, axis=0)
    v = np.where(np.isfinite(v), v, np.inf)
    fits = np.cumprod(v <= target_variance).astype(bool)  # the leading run of blocks within the target
    row = np.array(lam, float)
    if fits[0]:
        j = int(fits.sum())
        row[remaining[:j]] = 1.0
        return row, float(v[j - 1])
    i = remaining[0]
    fraction = min(1.0, max(1.0 / max_substeps, float(np.sqrt(target_variance / v[0]))))
    row[i] = 1.0 if fraction >= 1.0 or share[0] * fraction >= share[0] - 1e-12 else lam[i] + share[0] * fraction
    return row, float(v[0] * fraction**2)


def refine_data_path(key, model, data, kernel, *, num_cases: int, order=None,
                     pilot: DataPathPilot | None = None) -> RefinedPath:
    """Run the pilot and return the frozen data path it chose (module docstring).

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

    The pilot resamples after every step (multinomially), so that its particles are equally weighted when it
    chooses the next step, whatever the run's resampling.
    """
    pilot = DataPathPilot() if pilot is None else pilot
    plain = schedules.data_path(num_cases, order=order)
    order = np.arange(num_cases) if order is None else np.asarray(order, int)
    key_pilot = jax.random.fold_in(key, SMC_PILOT_STREAM)
    latents, key_run = prior_draws(key_pilot, model, pilot.num_particles)
    (terms_of, advance), compile_seconds = _programs(model, kernel, data, latents)
    began = time.perf_counter()
    lam = np.zeros(num_cases)
    rows, variances = [lam], np.full(num_cases, np.nan)
    terms = np.asarray(terms_of(latents, data))
    position, t = 0, 0
    while position < num_cases:
        remaining = order[position:]
        row, variance = next_row(terms, lam, remaining, target_variance=pilot.target_variance,
                                 max_substeps=pilot.max_substeps)
        switched = np.flatnonzero(row != lam)
        fresh = switched[np.isnan(variances[switched])]
        variances[fresh] = np.var(np.asarray(terms, float)[:, fresh], axis=0)
        with np.errstate(invalid="ignore"):
            increments = np.asarray(terms, float) @ np.where(row == lam, 0.0, row - lam)
        if not np.any(np.isfinite(increments)) or np.any(np.isnan(increments)) or np.any(increments == np.inf):
            # The run must meet and report the bug itself, on its own keys: it goes unrefined.
            return RefinedPath(np.ones(num_cases, int), plain, np.full(num_cases, np.nan),
                               time.perf_counter() - began + compile_seconds, compile_seconds, 0, False, pilot)
        latents, terms = advance(jax.random.fold_in(key_run, t), latents, jnp.asarray(increments), data,
                                 jnp.asarray(row))
        terms = np.asarray(terms)
        lam, t = row, t + 1
        rows.append(lam)
        while position < num_cases and lam[order[position]] == 1.0:
            position += 1
    path = np.stack(rows)
    substeps = np.count_nonzero(np.diff(path, axis=0), axis=0)
    n_evals = pilot.num_particles * (1 + t * (1 + evals_per_step(kernel)))
    seconds = time.perf_counter() - began + compile_seconds
    return RefinedPath(substeps, path, variances, seconds, compile_seconds, n_evals, True, pilot)


def _programs(model, kernel, data, latents):
    """The pilot's two compiled functions, built once per (model, kernel, shapes): every particle's likelihood
    terms, and one step (resample by the increments, move at the new row, the new terms)."""
    leaves = jax.tree.leaves((data, latents))
    signature = (model, kernel, jax.tree.structure((data, latents)),
                 tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves))

    def build():
        began = time.perf_counter()

        def terms_of(latents, data):
            return jax.vmap(model.log_likelihood, in_axes=(0, None))(latents, data)

        def advance(key, latents, increments, data, lam):
            k_resample, k_move = jax.random.split(key)
            count = increments.shape[0]
            pick = jax.random.categorical(k_resample, increments, shape=(count,))
            latents = jax.tree.map(lambda a: a[pick], latents)
            moved, _ = jax.vmap(kernel, in_axes=(0, 0, None, None))(jax.random.split(k_move, count), latents,
                                                                   data, lam)
            return moved, terms_of(moved, data)

        lam = jnp.zeros(jax.eval_shape(terms_of, latents, data).shape[1])
        count = jax.tree.leaves(latents)[0].shape[0]
        programs = (jax.jit(terms_of).lower(latents, data).compile(),
                    jax.jit(advance).lower(jax.random.key(0), latents, jnp.zeros(count), data, lam).compile())
        return programs, time.perf_counter() - began

    (programs, seconds), built = _PROGRAMS.get_or_build(signature, build)
    return programs, (seconds if built else 0.0)


_PROGRAMS = CompiledCache("SMC data-path pilot", maxsize=32)
