"""A pilot-chosen data path for SMC: each step switches on as many data cases as the particles can absorb.

Switching a case on at once weights the particles by its whole likelihood ``p(y_i | x)``. When the particles
disagree about that value by much more than a nat (the first cases under a broad prior, outliers), one step
collapses the run onto a few particles, and with one particle the lost accuracy cannot come back however many
MCMC moves follow: on the conjugate regression of ``benchmarks/peers.py`` (n = 200, d = 10) even exact
posterior draws after every case leave one-particle SMC 75 nats low (``benchmarks/peer_smc_diagnosis.py``).
Once the posterior has settled the opposite holds: a case moves the particles' weights by far less than a
nat, and a step with MCMC moves after every case costs all N likelihood terms N times over (O(N^2)).

So a pilot with its own keys (``fold_in(pilot_key(seed), SMC_PILOT_STREAM)``) walks the data path and chooses each step:
with the per-case log-likelihood terms of its particles (one evaluation of all N terms per step), the
increment of switching on the next ``j`` cases is a cumulative sum, and the pilot takes the longest run of
cases whose increment varies across particles by at most ``target_variance`` (a conditional ESS of about
``exp(-target_variance)``); where one case alone varies by more, it raises that case's weight by the
fraction ``sqrt(target_variance / v)`` that meets the target. The pilot then resamples and moves its particles
as the run will, and goes on. The run follows the rows the pilot chose, frozen, so SMC keeps its lower-bound
guarantee (the path depends on the pilot, never on the run's own particles). A run then costs
``O(N x steps)`` evaluations, with as many steps as the posterior's concentration needs, not ``N``.

The same walk tunes the kernel as the particles concentrate. A fixed step size that suits the prior is far too
large for a posterior of many cases: on posteriordb's sblrc (100 cases) single runs with the kernel untuned were
a median of thousands of nats off (``benchmarks/results/smc_data_path/``, the "previous" rows). For a kernel with
a step size and an inverse mass (HMC, MALA, NUTS), the pilot moves its particles at step t with the mean and
covariance of its particles resampled by that step's increments (the moments at the step's row) as the inverse
mass, and with a step size that a Robbins-Monro rule steers toward ``target_acceptance``
(after ``warmup`` rounds at the prior). The run reads both, frozen, from tables keyed by the share of data
switched on (the mean of the path's row, which rises strictly along the path), so its kernel at each step is
fixed before it starts and the bounds keep their guarantee.

The walk also measures how far one move takes a particle: the lag-one correlation of its particles before and
after the step's moves, in the slowest coordinate. Where the run's ``num_moves`` would leave a particle more
correlated with where it began than ``moves_target``, the run takes more moves at that step (a third frozen table
by the share of data, :class:`bdmc.kernels.MovesTable`). SHME needs them most: deleting cases widens the
posterior, and only moves widen its particles (resampling cannot). On sblrc, single SHME runs at 256 particles
sat a median 3.1 nats above log p(y) with five moves at every step (``benchmarks/results/smc_data_path/``,
with the rows of the pilot's counts).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..caching import CompiledCache, leaf_types
from ..contracts.kernel import evals_per_step
from ..kernels import MovesTable, repeat
from ..kernels.mass import GaussianTable, table_from_moments
from ..kernels.step_sizes import StepSizeTable
from . import pilot_store, schedules
from .chain_stats import chain_moments, jump_ratios
from .fingerprint import data_fingerprint
from .pilot import frozen_choices, mass_kind, padded, smoothed_table, tunes_step_size
from .pilot_policy import jitter_of
from .prior import prior_draws
from .smc_pilot_options import DataPathPilot

SMC_PILOT_STREAM = 0x5BD1E995  # folded into the key the pilot is given: its randomness is not the run's


@dataclass(frozen=True)
class RefinedPath:
    """The pilot's choice: the frozen path, the steps in which each case's weight rises, the variance of each
    case's log-likelihood across the pilot's particles when it was first switched on, the run's kernel (its
    step sizes and preconditioner frozen in tables, moves included), and what the pilot cost (``healthy``
    False: the pilot met a NaN or +inf and left the plain data path and the kernel as given)."""

    substeps: np.ndarray
    path: np.ndarray
    variances: np.ndarray
    seconds: float
    compile_seconds: float
    n_evals: int
    healthy: bool
    pilot: DataPathPilot
    kernel: object = None
    acceptance: np.ndarray | None = None
    stopped: bool = False
    step_sizes: StepSizeTable | None = None
    preconditioner: GaussianTable | None = None
    moves: np.ndarray | None = None
    reused: bool = False
    loaded: bool = False
    counts: np.ndarray | None = None  # the run's moves at each step (``moves`` when the pilot chose them)

    def settings(self) -> dict:
        """What a result's ``settings`` records of the refinement."""
        per_step = np.count_nonzero(np.diff(self.path, axis=0), axis=1)
        return {"data_path": ("pilot saw a NaN or +inf density: plain data path" if not self.healthy else
                              f"pilot-chosen; its last step switched on every remaining case (max_steps = "
                              f"{self.pilot.max_steps})" if self.stopped else "pilot-chosen"),
                "path_steps": int(self.path.shape[0] - 1), "substeps_max": int(self.substeps.max()),
                "cases_per_step_max": int(per_step.max()),
                "data_pilot_particles": int(self.pilot.num_particles),
                "data_pilot_target_variance": float(self.pilot.target_variance),
                "data_pilot_seconds": self.seconds, "data_pilot_evals": int(self.n_evals),
                "data_pilot_reused": bool(self.reused), "data_pilot_loaded": bool(self.loaded),
                "data_pilot_seed": int(self.pilot.seed),
                "step_sizes": repr(self.step_sizes), "preconditioner": repr(self.preconditioner),
                "data_pilot_acceptance": (float(np.mean(self.acceptance)) if self.acceptance is not None
                                          and self.acceptance.size else None),
                "moves_per_step": (f"{int(self.moves.min())}..{int(self.moves.max())}, mean "
                                   f"{float(np.mean(self.moves)):.3g} (pilot-chosen)" if self.moves is not None
                                   and self.moves.size else None)}



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
        # A particle of zero likelihood dies at any positive weight: the step's size is the survivors' business.
        alive = np.isfinite(steps)
        kept = np.maximum(alive.sum(axis=0), 1)
        centre = np.where(alive, steps, 0.0).sum(axis=0) / kept
        v = np.where(alive, (steps - centre) ** 2, 0.0).sum(axis=0) / kept
    v = np.where(np.isfinite(v) & (alive.sum(axis=0) > 0), v, np.inf)
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
                     pilot: DataPathPilot | None = None, moves: int = 1,
                     run_particles: int | None = None) -> RefinedPath:
    """Run the pilot and return the frozen data path and kernel it chose (module docstring), or the choice an
    earlier pilot made on the same model, data values, kernel, order, moves and settings (``pilot.reuse``; it
    costs this call no time, and its evaluations still count). A pilot that met a NaN or +inf is never reused.

    Parameters
    ----------
    key : PRNG key
        The pilot's key (SMC hands it :func:`bdmc.core.pilot.pilot_key` of ``pilot.seed``); the pilot folds in
        :data:`SMC_PILOT_STREAM`, so the run's randomness is untouched.
    model, data
        The model and its validated data.
    kernel
        The run's kernel, one move; a kernel with a ``step_size`` field is steered and one with an
        ``inverse_mass`` left None is preconditioned (``pilot.steer``, ``pilot.mass``), others are kept.
    num_cases : int
        Data cases N.
    order : sequence of int, optional
        The order in which cases are added.
    pilot : DataPathPilot, optional
        Pilot settings (default ``DataPathPilot()``).
    moves : int
        Applications of the kernel after every step, in the pilot as in the run.
    run_particles : int, optional
        The run's particles, which ``num_particles="auto"`` follows.

    The pilot resamples after every step (multinomially), so that its particles are equally weighted when it
    chooses the next step, whatever the run's resampling.
    """
    pilot = (DataPathPilot() if pilot is None else pilot).for_run(run_particles)
    leaves, treedef = jax.tree.flatten(data)
    options = (int(num_cases), None if order is None else tuple(int(i) for i in order),
               dataclasses.replace(pilot, reuse=True), int(moves))
    frozen = (model, kernel, *options, treedef, leaf_types(leaves),
              data_fingerprint(data))
    try:
        hash(frozen)
    except TypeError:  # an unhashable model or kernel pilots every call
        frozen = None
    if pilot.reuse and frozen is not None and (earlier := _FROZEN.get(frozen)) is not None:
        return earlier
    # A new process making this very call loads the choice its pilot made (bdmc.core.pilot_store).
    stored = (pilot_store.stored_name(key, model, data, kernel, ("data path", *options))
              if frozen is not None and pilot_store.store_dir() is not None else None)
    if pilot.reuse and stored is not None and (loaded := _load(stored, kernel, pilot, int(moves))) is not None:
        refined = loaded
    else:
        refined = _refine(key, model, data, kernel, num_cases=num_cases, order=order, pilot=pilot, moves=moves)
        if stored is not None and refined.healthy:
            pilot_store.save(stored, {name: vars(refined)[name] for name in _STORED}, {})
    if frozen is not None and refined.healthy:
        _FROZEN.put(frozen, dataclasses.replace(refined, seconds=0.0, compile_seconds=0.0, reused=True))
    return refined


_FROZEN = frozen_choices("frozen data-path pilots", maxsize=32)
_STORED = ("substeps", "path", "variances", "n_evals", "acceptance", "stopped", "step_sizes", "preconditioner",
           "moves", "counts")


def _load(name: str, kernel, pilot: DataPathPilot, moves: int) -> RefinedPath | None:
    """A stored choice for this very call, its run kernel rebuilt from the tables as the pilot built it."""
    stored = pilot_store.load(name)
    if stored is None or set(stored[0]) != set(_STORED):
        return None
    fields = stored[0]
    tables = {field: fields[name] for field, name in (("step_size", "step_sizes"), ("inverse_mass", "preconditioner"))
              if fields[name] is not None}
    run_kernel = _run_kernel(kernel, fields["path"], tables, fields["counts"], moves, int(pilot.max_moves))
    return RefinedPath(seconds=0.0, compile_seconds=0.0, healthy=True, pilot=pilot, kernel=run_kernel, reused=True,
                       loaded=True, **fields)


def _run_kernel(kernel, path, tables: dict, counts, moves: int, most: int):
    """The run's kernel from the pilot's frozen choice: its tables (with the kernel's jitter where it is
    preconditioned), then its moves per step."""
    tuned = dataclasses.replace(kernel, **tables, **(jitter_of(kernel) if "inverse_mass" in tables else {})) \
        if tables else kernel
    return _moved(tuned, path, counts, moves, most)


def _refine(key, model, data, kernel, *, num_cases: int, order, pilot: DataPathPilot, moves: int) -> RefinedPath:
    """The pilot itself (:func:`refine_data_path` without the reuse)."""
    plain = schedules.data_path(num_cases, order=order)
    order = np.arange(num_cases) if order is None else np.asarray(order, int)
    moved_kernel = kernel if moves == 1 else repeat(kernel, int(moves))
    key_pilot = jax.random.fold_in(key, SMC_PILOT_STREAM)
    latents, key_run = prior_draws(key_pilot, model, pilot.num_particles, one_off=True)
    flats = jax.vmap(lambda x: ravel_pytree(x)[0])(latents)
    steer = bool(pilot.steer) and tunes_step_size(kernel)
    kind, field = mass_kind(pilot, kernel, int(flats.shape[1]))
    kind = kind if field == "inverse_mass" else "identity"  # a fitted proposal is the AIS pilot's business
    (terms_of, advance), compile_seconds = _programs(model, kernel, data, latents, moves=int(moves), steer=steer,
                                                     kind=kind)
    began = time.perf_counter()
    log_step = _initial_log_step(kernel) if steer else 0.0
    mass = chain_moments(flats, kind == "dense", int(pilot.num_particles)) if kind != "identity" else (None, None)
    lam = np.zeros(num_cases)
    terms = np.asarray(terms_of(latents, data))
    for w in range(int(pilot.warmup) if steer else 0):  # rounds at the prior steer the first step size
        latents, terms, accepted, _, _ = advance(jax.random.fold_in(key_run, _WARMUP_OFFSET + w), latents,
                                                 jnp.zeros(pilot.num_particles), data, jnp.asarray(lam), log_step)
        log_step = _steered(log_step, accepted, pilot)
    terms = np.asarray(terms)
    rows, variances = [lam], np.full(num_cases, np.nan)
    sizes, means, covariances, acceptance, correlations = [math.exp(log_step)], [mass[0]], [mass[1]], [], []
    position, t, stopped = 0, 0, False
    while position < num_cases:
        remaining = order[position:]
        if t + 1 >= pilot.max_steps:
            row, stopped = np.ones(num_cases), True
        else:
            row, _ = next_row(terms, lam, remaining, target_variance=pilot.target_variance,
                              max_substeps=pilot.max_substeps)
        switched = np.flatnonzero(row != lam)
        fresh = switched[np.isnan(variances[switched])]
        variances[fresh] = np.var(np.asarray(terms, float)[:, fresh], axis=0)
        with np.errstate(invalid="ignore"):
            increments = np.asarray(terms, float) @ np.where(row == lam, 0.0, row - lam)
        if not np.any(np.isfinite(increments)) or np.any(np.isnan(increments)) or np.any(increments == np.inf):
            # The run must meet and report the bug itself, on its own keys: it goes unrefined.
            return RefinedPath(np.ones(num_cases, int), plain, np.full(num_cases, np.nan),
                               time.perf_counter() - began + compile_seconds, compile_seconds, 0, False, pilot,
                               moved_kernel)
        latents, terms, accepted, mass, correlation = advance(jax.random.fold_in(key_run, t), latents,
                                                              jnp.asarray(increments), data, jnp.asarray(row),
                                                              log_step)
        correlations.append(float(correlation))
        sizes.append(math.exp(log_step))
        means.append(mass[0])
        covariances.append(mass[1])
        acceptance.append(float(accepted))
        log_step = _steered(log_step, accepted, pilot) if steer else log_step
        terms = np.asarray(terms)
        lam, t = row, t + 1
        rows.append(lam)
        while position < num_cases and lam[order[position]] == 1.0:
            position += 1
    path = np.stack(rows)
    substeps = np.count_nonzero(np.diff(path, axis=0), axis=0)
    rounds = t + (int(pilot.warmup) if steer else 0)
    n_evals = pilot.num_particles * (1 + rounds * (1 + evals_per_step(moved_kernel)))
    tables = _tables(path, sizes, means, covariances, steer=steer, kind=kind)
    counts = moves_per_step(correlations, moves=int(moves), target=pilot.moves_target, most=pilot.max_moves)
    tuned = _run_kernel(kernel, path, tables, counts, int(moves), int(pilot.max_moves))
    seconds = time.perf_counter() - began + compile_seconds
    return RefinedPath(substeps, path, variances, seconds, compile_seconds, n_evals, True, pilot, tuned,
                       np.asarray(acceptance), stopped, tables.get("step_size"), tables.get("inverse_mass"),
                       counts if pilot.moves_target is not None else None, counts=counts)


def moves_per_step(correlations, *, moves: int, target: float | None, most: int) -> np.ndarray:
    """The run's moves at each step of the path: ``moves``, or where the pilot's lag-one correlation of one move
    ``rho`` leaves more than ``target`` after them, ``ceil(log(target) / log(rho))``, at most ``most``.

    The correlation is smoothed by a running maximum over three steps: the pilot measures it on few particles,
    and the steps where the target changes fastest come in runs."""
    rho = np.asarray(correlations, np.float64)
    counts = np.full(rho.shape, int(moves))
    if target is None or rho.size == 0:
        return counts
    padded_rho = np.pad(np.nan_to_num(rho, nan=1.0), 1, mode="edge")
    rho = np.max(np.lib.stride_tricks.sliding_window_view(padded_rho, 3), axis=1)
    with np.errstate(divide="ignore"):
        need = np.where(rho >= 1.0, most, np.ceil(np.log(target) / np.log(np.clip(rho, 1e-300, 1 - 1e-16))))
    return np.clip(np.maximum(need, moves), 1, max(int(most), int(moves))).astype(int)


def _moved(kernel, path, counts, moves: int, most: int):
    """The run's kernel with its moves: ``moves`` at every step, or a frozen table of counts by the share of data
    switched on at each step (padded as the other tables, so similar paths share one compiled run)."""
    if np.all(counts == moves):
        return kernel if moves == 1 else repeat(kernel, moves)
    shares = np.mean(path, axis=1)[1:]  # step t moves at row t
    lams, padded_counts = padded(shares, counts, length=_table_length(len(shares)))
    return MovesTable(kernel, tuple(map(float, lams)), tuple(map(int, padded_counts)), max(most, moves))


def _table_length(entries: int) -> int:
    """Tables padded to the next power of two of entries: data sets whose pilots chose paths of similar length
    share one compiled run."""
    return 1 << int(np.ceil(np.log2(entries)))


_WARMUP_OFFSET = 1 << 30  # the warm-up's keys, apart from the path steps' fold_in(key_run, t)


def _initial_log_step(kernel) -> float:
    size = kernel.step_size
    return float(np.log(np.mean(size.sizes) if isinstance(size, StepSizeTable) else size))


def _steered(log_step: float, accepted, pilot: DataPathPilot) -> float:
    """A Robbins-Monro step on log step size: larger when accepting more than the target, smaller when less."""
    accepted = float(accepted)
    return log_step + ((accepted if math.isfinite(accepted) else 0.0) - float(pilot.target_acceptance))


def _tables(path, sizes, means, covariances, *, steer: bool, kind: str) -> dict:
    """The run kernel's new fields: the pilot's step sizes and moments, frozen in tables keyed by the share of
    data switched on (none for what the pilot did not tune).

    The tables are padded to a power of two of entries, so data sets whose pilots chose paths of similar length
    share one compiled run."""
    shares = np.mean(path, axis=1)  # rises strictly: every step raises some case's weight
    length = _table_length(len(shares))
    tables = {}
    if steer:
        table = smoothed_table(shares, sizes)
        lams, smoothed = padded(table.lams, table.sizes, length=length)
        tables["step_size"] = StepSizeTable(tuple(map(float, lams)), tuple(map(float, smoothed)))
    if kind != "identity":
        lams, m, c = padded(shares, np.stack([np.asarray(x) for x in means]),
                            np.stack([np.asarray(x) for x in covariances]), length=length)
        tables["inverse_mass"] = table_from_moments(lams, m, c)
    return tables


def _programs(model, kernel, data, latents, *, moves: int, steer: bool, kind: str):
    """The pilot's two compiled functions, built once per (model, kernel, tuning, shapes): every particle's
    likelihood terms, and one step (resample by the increments, fit the moments, move at the new row with the
    step size and preconditioner given, the new terms and the moves' mean acceptance)."""
    leaves = jax.tree.leaves((data, latents))
    signature = (model, kernel, moves, steer, kind, jax.tree.structure((data, latents)),
                 leaf_types(leaves))
    count = jax.tree.leaves(latents)[0].shape[0]

    def build():
        began = time.perf_counter()

        def terms_of(latents, data):
            return jax.vmap(model.log_likelihood, in_axes=(0, None))(latents, data)

        def advance(key, latents, increments, data, lam, log_step):
            k_resample, k_move = jax.random.split(key)
            pick = jax.random.categorical(k_resample, increments, shape=(count,))
            latents = jax.tree.map(lambda a: a[pick], latents)
            k, moments = kernel, (None, None)
            if steer:
                k = dataclasses.replace(k, step_size=jnp.exp(log_step))
            if kind != "identity":  # the resampled particles' moments: this step's preconditioner
                moments = chain_moments(jax.vmap(lambda x: ravel_pytree(x)[0])(latents), kind == "dense", count)
                k = dataclasses.replace(k, inverse_mass=moments[1], **jitter_of(kernel))
            k = k if moves == 1 else repeat(k, moves)
            moved, info = jax.vmap(k, in_axes=(0, 0, None, None))(jax.random.split(k_move, count), latents,
                                                                 data, lam)
            accepted = jnp.mean(jnp.where(jnp.isfinite(info.acceptance), info.acceptance, 0.0))
            return moved, terms_of(moved, data), accepted, moments, _slowest_correlation(latents, moved, moves)

        lam = jnp.zeros(jax.eval_shape(terms_of, latents, data).shape[1])
        programs = (jax.jit(terms_of).lower(latents, data).compile(),
                    jax.jit(advance).lower(jax.random.key(0), latents, jnp.zeros(count), data, lam,
                                           jnp.zeros(())).compile())
        return programs, time.perf_counter() - began

    (programs, seconds), built = _PROGRAMS.get_or_build(signature, build)
    return programs, (seconds if built else 0.0)


def _slowest_correlation(before, after, moves: int):
    """One move's lag-one correlation in the slowest coordinate: per coordinate ``1 - E[(x' - x)^2] / (2 var)``
    over the step's ``moves`` moves, to the power ``1 / moves``; coordinates that do not vary are left out."""
    flat = jax.vmap(lambda x: ravel_pytree(x)[0])
    ratio, varies = jump_ratios(flat(before), flat(after)[None])
    rho = jnp.where(varies, jnp.clip(1.0 - ratio, 0.0, 1.0), 0.0)
    return jnp.max(rho) ** (1.0 / moves)


_PROGRAMS = CompiledCache("SMC data-path pilot", maxsize=32)
