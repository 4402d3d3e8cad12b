"""Pilot-tuned, then frozen: a short pilot run chooses the schedule and a step-size table by lambda.

AIS stays unbiased for any schedule and any kernels chosen before the run, so the pilot uses its own keys
(``fold_in(key, PILOT_STREAM)``; an estimator hands it :func:`pilot_key`, from ``Pilot.seed``, never the
caller's key) and the real run uses its choice frozen. Every
bound and the alarm keep their guarantees. What the pilot must not do is what BlackJAX's and the generative
models' published code do: adapt a chain's step size from that chain's own acceptance history during the
run it weights. :func:`refuse_in_chain_adaptation` says why; ``tests/core/test_pilot.py`` shows the bias.

The pilot anneals ``num_chains`` chains from the prior along a fixed geometric grid of lambdas. At each
level it records the variance across chains of the summed log-likelihood ``v(lam)``, takes one transition
and nudges the step size toward ``target_acceptance`` (a Robbins-Monro step on log step size). From it:

* the **schedule** spaces the T distributions at equal thermodynamic length: the increment of step t has
  variance about ``(lam_t - lam_{t-1})^2 v(lam)``, and for a fixed T the sum of these is smallest when every
  step has the same ``(lam_t - lam_{t-1}) sqrt(v(lam))`` (Gelman and Meng 1998; Grosse et al. 2013);
* the **step-size table** is the pilot's step sizes, smoothed, by lambda (:class:`StepSizeTable`);
* the **preconditioner** is its chains' mean and covariance at each level (:class:`GaussianTable`; diagonal,
  or dense up to ``DENSE_MAX_DIM`` coordinates), which HMC, NUTS and MALA use as their inverse mass matrix
  and :class:`~bdmc.kernels.IndependentMH` proposes from. Each level's moves already use the previous level's
  fit, so the step sizes are tuned for the preconditioned kernel. A kernel given its own ``inverse_mass`` keeps
  it.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.flatten_util import ravel_pytree

from ..caching import CompiledCache, cached, leaf_types
from ..contracts.capabilities import supports
from ..contracts.kernel import (
    CachedTransition,
    FittedProposal,
    Preconditioned,
    TunableStepSize,
    evals_per_step,
)
from ..errors import BDMCError
from ..kernels.mass import GaussianTable, table_from_moments
from ..kernels.step_sizes import StepSizeTable
from . import pilot_store, schedules
from .chain_stats import chain_moments
from .fingerprint import data_fingerprint
from .pilot_policy import jitter_of, run_pilot
from .prior import timed_prior_draws
from .prior_check import PRIOR_CHECK_DRAWS, check_prior

PILOT_STREAM = 0x9E3779B9  # folded into the key the pilot is given: its randomness is not the run's
MASS_KINDS = ("auto", "diagonal", "dense", "identity")
DENSE_MAX_DIM = 16  # mass="auto": a dense fit up to this many coordinates (benchmarks/preconditioning.py)
MOVES_TARGET_CORRELATION = 0.2  # num_moves="auto": moves until a particle keeps at most this of where it began
MAX_MOVES = 10


@dataclass(frozen=True)
class Pilot:
    """How a pilot run tunes a run: its size and the acceptance rate it targets.

    Parameters
    ----------
    num_steps : int
        Levels of the pilot's own lambda grid (0, then geometric from ``min_lam`` to 1).
    num_chains : int
        Pilot chains (the variance at each level is taken across them).
    target_acceptance : float
        Mean acceptance the step size is steered to. Higher than the 0.65 that is optimal for sampling one
        distribution: a few stuck chains spoil single-run AIS estimates more than short steps slow them.
    min_lam : float
        Smallest positive lambda of the pilot grid.
    warmup : int
        Levels at lambda = 0 (the prior) before the grid, steering the first step size.
    moves_per_level : int
        Transitions per level, each followed by a step-size update.
    mass : {"auto", "diagonal", "dense", "identity"}
        The preconditioner fitted for kernels that take one (an ``inverse_mass`` or a ``proposal`` left None):
        the chains' covariance at each level, diagonal or dense; "auto" is dense up to ``DENSE_MAX_DIM``
        coordinates (and half the pilot's chains), diagonal above; "identity" fits none.
    reuse : bool
        Reuse the frozen choice of an earlier pilot on the same model, data (by value), kernel, number of
        distributions and pilot settings, instead of running a new one (``tune=Pilot(reuse=False)`` forces a
        new pilot; :func:`bdmc.clear_caches` forgets them all). The pilot draws on its own keys, never the run's,
        so a reused choice is as independent of the run as a new one: no guarantee changes. A new process making
        a call with the same model, data and options (whatever its key) loads the choice its pilot made from
        disk (:mod:`bdmc.core.pilot_store`; ``BDMC_PILOT_CACHE=0`` turns that off). The result's settings say
        which it was (``pilot_reused``, ``pilot_loaded``).
    seed : int
        The pilot's own seed (:func:`pilot_key`). An estimator's pilot draws on it, not on the caller's key, so
        its choice is a function of the model, data and options alone: a call's numbers never depend on which
        calls came before it or on what a disk cache holds. Another seed gives another pilot (to see how much
        the pilot's own randomness moves an estimate).
    """

    num_steps: int = 32
    num_chains: int = 16
    target_acceptance: float = 0.9
    min_lam: float = 1e-6
    warmup: int = 8
    moves_per_level: int = 3
    mass: str = "auto"
    reuse: bool = True
    seed: int = 0

    def __post_init__(self):
        if int(self.num_steps) < 4 or int(self.num_chains) < 2:
            raise BDMCError(f"a pilot needs num_steps >= 4 and num_chains >= 2, got {self.num_steps} and "
                            f"{self.num_chains}")
        if not 0 < self.target_acceptance < 1:
            raise BDMCError(f"target_acceptance must lie in (0, 1), got {self.target_acceptance}")
        if not 0 < self.min_lam < 1:
            raise BDMCError(f"min_lam must lie in (0, 1), got {self.min_lam}")
        if self.mass not in MASS_KINDS:
            raise BDMCError(f"Pilot mass must be one of {MASS_KINDS}, got {self.mass!r}")
        if isinstance(self.seed, bool) or int(self.seed) != self.seed or self.seed < 0:
            raise BDMCError(f"Pilot seed must be a non-negative integer, got {self.seed!r}")

    def grid(self) -> np.ndarray:
        return np.concatenate([[0.0], np.geomspace(self.min_lam, 1.0, int(self.num_steps) - 1)])


@dataclass(frozen=True)
class Tuned:
    """A pilot's frozen choice: the path, the kernel (with its step-size table) and what it cost."""

    path: np.ndarray
    kernel: Any
    seconds: float
    compile_seconds: float
    n_evals: int
    variances: np.ndarray
    acceptance: np.ndarray
    pilot: Pilot
    healthy: bool = True
    grid: np.ndarray | None = None
    correlations: np.ndarray | None = None
    reused: bool = False
    loaded: bool = False

    def reuse(self) -> Tuned:
        """This frozen choice, handed to a later run: it costs that run no time. Its evaluations still count in
        the run's ``n_evals`` (the evaluations behind the estimate), so a stored row's numbers do not depend on
        what the process ran before."""
        return dataclasses.replace(self, seconds=0.0, compile_seconds=0.0, reused=True)

    def moves_for(self, *, target: float = MOVES_TARGET_CORRELATION, most: int = MAX_MOVES) -> int:
        """Moves per temperature that bring a particle's correlation with where it started below ``target``:
        ``ceil(log(target) / log(rho))`` for the pilot's median lag-one correlation ``rho`` over its levels
        (:func:`bdmc.core.chain_stats.move_correlation`), between 1 and ``most``. A resampled population needs
        its duplicates to part; how far one move takes them is the kernel's mixing, which the pilot measured."""
        if self.correlations is None or not self.healthy or len(self.correlations) == 0:
            return 1
        rho = float(np.median(self.correlations))
        if not np.isfinite(rho) or rho <= target:
            return 1
        if rho >= 1.0:
            return int(most)
        return int(min(most, max(1, np.ceil(np.log(target) / np.log(rho)))))

    def settings(self) -> dict:
        """What the run records of its pilot (computed once per choice: the tables' reprs cost a warm call)."""
        return dict(self._settings)

    @functools.cached_property
    def _settings(self) -> dict:
        table = self.kernel.step_size if supports(self.kernel, TunableStepSize) else None
        return {"tuned": "pilot" if self.healthy else "pilot saw a NaN or +inf density: run untuned",
                "pilot_steps": int(self.pilot.num_steps),
                "pilot_chains": int(self.pilot.num_chains), "pilot_reused": bool(self.reused),
                "pilot_loaded": bool(self.loaded), "pilot_seed": int(self.pilot.seed),
                "pilot_seconds": self.seconds,
                "pilot_compile_seconds": self.compile_seconds, "pilot_evals": int(self.n_evals),
                "step_sizes": repr(table) if isinstance(table, StepSizeTable) else table,
                "pilot_move_correlation": (float(np.median(self.correlations)) if self.correlations is not None
                                           and len(self.correlations) else None),
                "preconditioner": repr(fitted_table(self.kernel))}


@cached(maxsize=64)
def pilot_key(seed: int):
    """The key an estimator's pilot is given (it folds :data:`PILOT_STREAM` in): ``jax.random.key(seed)``, made
    once per seed."""
    return jax.random.key(int(seed))


def tunes_step_size(kernel) -> bool:
    """Whether the pilot can steer ``kernel``'s step size: a dataclass kernel with a ``step_size`` field
    (:class:`~bdmc.contracts.kernel.TunableStepSize`), which ``dataclasses.replace`` sets."""
    return (supports(kernel, TunableStepSize) and dataclasses.is_dataclass(kernel)
            and "step_size" in {f.name for f in dataclasses.fields(kernel)})


def fitted_table(kernel) -> GaussianTable | None:
    """The pilot's Gaussian table a kernel holds (as its inverse mass or its proposal), if any."""
    if supports(kernel, FittedProposal) and isinstance(kernel.proposal, GaussianTable):
        return kernel.proposal
    if supports(kernel, Preconditioned) and isinstance(kernel.inverse_mass, GaussianTable):
        return kernel.inverse_mass
    return None


def mass_kind(pilot: Pilot, kernel, dim: int) -> tuple[str, str | None]:
    """``(kind, field)``: the fit the pilot makes for ``kernel`` ("identity" when none) and the field it fills."""
    field = None
    if dataclasses.is_dataclass(kernel):
        names = {f.name for f in dataclasses.fields(kernel)}
        if supports(kernel, FittedProposal) and "proposal" in names and kernel.proposal is None:
            field = "proposal"
        elif supports(kernel, Preconditioned) and "inverse_mass" in names and kernel.inverse_mass is None:
            field = "inverse_mass"
    if field is None or pilot.mass == "identity":
        return ("diagonal" if field == "proposal" else "identity"), field
    if pilot.mass == "auto":  # a dense fit needs a few chains per coordinate
        return ("dense" if dim <= min(DENSE_MAX_DIM, int(pilot.num_chains) // 2) else "diagonal"), field
    return pilot.mass, field


def tune(key, model, data, kernel, num_steps: int, *, pilot: Pilot | None = None,
         prior_check: int = PRIOR_CHECK_DRAWS) -> Tuned:
    """Run a pilot (or reuse an earlier one's frozen choice) and return the path of ``num_steps`` distributions
    and the tuned kernel.

    Parameters
    ----------
    key : PRNG key
        The pilot's key (estimators hand it :func:`pilot_key`); the pilot folds in its own stream, so the run's
        randomness is untouched.
    model, data
        The model and its validated data.
    kernel
        The run's kernel; one with a ``step_size`` field gets a :class:`StepSizeTable`, others are kept.
    num_steps : int
        Distributions T of the tuned path.
    pilot : Pilot, optional
        Pilot settings (default ``Pilot()``).
    prior_check : int
        Exact prior draws checked for a NaN or +inf density term before the pilot compiles
        (:mod:`bdmc.core.prior_check`; the run checks again, on its own keys, with the compiled program).

    A healthy pilot's choice is kept (bounded, :func:`bdmc.clear_caches` forgets) and handed to later calls
    with equal model, data values, kernel, ``num_steps``, pilot settings and ``prior_check`` when
    ``pilot.reuse`` (:meth:`Tuned.reuse`); a new pilot (``reuse=False``) replaces the one kept. A model or kernel
    that cannot be hashed gets a new pilot every call.
    """
    pilot = Pilot() if pilot is None else pilot
    frozen = _frozen_key(model, data, kernel, num_steps, pilot, prior_check)
    if pilot.reuse and frozen is not None and (earlier := _FROZEN.get(frozen)) is not None:
        return earlier
    stored = (pilot_store.stored_name(key, model, data, kernel, (int(num_steps), dataclasses.replace(
                  pilot, reuse=True), int(prior_check)))
              if pilot_store.store_dir() is not None else None)
    if pilot.reuse and stored is not None and (loaded := _load(stored, kernel, pilot)) is not None:
        tuned = loaded
    else:
        tuned = _new_pilot(key, model, data, kernel, num_steps, pilot, prior_check)
        if stored is not None and tuned.healthy:
            _save(stored, tuned, kernel)
    if frozen is not None and tuned.healthy:  # a pilot that met a NaN or +inf is never handed on
        _FROZEN.put(frozen, tuned.reuse())  # kept as later calls get it (its settings computed once)
    return tuned


_STORED = ("path", "n_evals", "variances", "acceptance", "healthy", "grid", "correlations")


def _save(name: str, tuned: Tuned, kernel) -> None:
    """Keep a new pilot's choice on disk (:mod:`bdmc.core.pilot_store`): its arrays, and the kernel's fields it
    set (a dataclass ``replace`` keeps every other field the very object the caller gave)."""
    if not (dataclasses.is_dataclass(kernel) and type(tuned.kernel) is type(kernel)):
        return
    given, chosen = vars(kernel), vars(tuned.kernel)
    changed = {f.name: chosen[f.name] for f in dataclasses.fields(kernel) if chosen[f.name] is not given[f.name]}
    pilot_store.save(name, {f: vars(tuned)[f] for f in _STORED}, changed)


def _load(name: str, kernel, pilot: Pilot) -> Tuned | None:
    """A stored choice for this very call, as a new pilot would give it (no seconds: it ran in another
    process), or None."""
    stored = pilot_store.load(name)
    if stored is None:
        return None
    fields, changed = stored
    try:
        tuned_kernel = dataclasses.replace(kernel, **changed) if changed else kernel
        return Tuned(kernel=tuned_kernel, seconds=0.0, compile_seconds=0.0, pilot=pilot, reused=True, loaded=True,
                     **fields)
    except (TypeError, ValueError):  # a file from other code: run the pilot
        return None


_FROZEN_CACHES: list[CompiledCache] = []


def frozen_choices(name: str, *, maxsize: int) -> CompiledCache:
    """A bounded cache of pilots' frozen choices, one that :func:`forget_frozen_pilots` empties."""
    cache = CompiledCache(name, maxsize=maxsize)
    _FROZEN_CACHES.append(cache)
    return cache


_FROZEN = frozen_choices("frozen pilots", maxsize=64)


def forget_frozen_pilots() -> None:
    """Forget the frozen pilots kept in memory (the AIS and tempered SMC pilot's, SMC's data-path pilot's), and
    nothing else (compiled programs stay): each model's next call runs its pilot, or loads the one its very call
    stored on disk, as in a new process."""
    for cache in _FROZEN_CACHES:
        cache.clear()


def _frozen_key(model, data, kernel, num_steps, pilot: Pilot, prior_check) -> tuple | None:
    """What a pilot's choice depends on, hashable, or None when the model or kernel cannot be hashed (a kernel
    holding arrays, say): such a call runs a new pilot."""
    leaves, treedef = jax.tree.flatten(data)
    key = (model, kernel, int(num_steps), dataclasses.replace(pilot, reuse=True), int(prior_check), treedef,
           leaf_types(leaves), data_fingerprint(data))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _new_pilot(key, model, data, kernel, num_steps: int, pilot: Pilot, prior_check: int) -> Tuned:
    """The pilot itself (:func:`tune` without the reuse)."""
    # What the pilot tunes (step size, preconditioner, jitter) follows from the kernel and the model's shape.
    steer = tunes_step_size(kernel)
    kind, field = mass_kind(pilot, kernel, _dimension(model))
    jitter = jitter_of(kernel) if field == "inverse_mass" else {}
    # A density NaN or +inf on prior mass is the run's error anyway: find it before compiling the pilot (the
    # run's own check then reuses the compiled program).
    checked = check_prior(key, model, data, np.array([0.0, 1.0]), num_draws=int(prior_check), batch_axes=None,
                          axes_signature=None, batch_label="", description="the check before the pilot")
    latents, key_pilot, drawn = timed_prior_draws(jax.random.fold_in(key, PILOT_STREAM), model,
                                                  int(pilot.num_chains), one_off=True)
    # The step size the pilot starts from: the kernel's own (a table's mean).
    step0 = float(np.mean(kernel.step_size.sizes)) if steer and isinstance(kernel.step_size, StepSizeTable) \
        else (float(kernel.step_size) if steer else 0.0)
    began = time.perf_counter()
    result = run_pilot(key_pilot, latents, model, data, kernel, pilot, steer, (kind, field), step0)
    # A NaN or +inf density in the pilot is a bug the run must report, not one a tuned run may steer around
    # (step sizes shrunk to nothing would keep the chains away from it): the run goes untuned.
    if result is None or np.any(result.records[5]):
        return _untuned(pilot, kernel, int(num_steps), time.perf_counter() - began, drawn + checked)
    compile_seconds = result.compile_seconds + drawn + checked
    seconds = result.seconds
    warm = int(pilot.warmup)
    lams, active, variances, sizes, acceptance, _, means, covariances, rhos = (
        np.asarray(x)[warm:] for x in result.records)
    # The first level's variance pools the warm-up's draws at lam = 0, where the path's first steps are decided.
    variances = variances.copy()
    variances[0] = float(np.mean(np.asarray(result.records[2][: warm + 1])))
    # The table's lam = 0 entry is the last warm-up level's fit (the prior draws' when there is no warm-up).
    if warm:
        means = np.concatenate([np.asarray(result.records[6][warm - 1 : warm]), means])
        covariances = np.concatenate([np.asarray(result.records[7][warm - 1 : warm]), covariances])
    else:
        flats = jax.vmap(lambda x: ravel_pytree(x)[0])(latents)
        mean0, cov0 = chain_moments(flats, kind == "dense", int(pilot.num_chains))
        means = np.concatenate([np.asarray(mean0)[None], means])
        covariances = np.concatenate([np.asarray(cov0)[None], covariances])
    # The levels the pilot visited: its fixed grid, or the lambdas an adaptive pilot chose until it reached 1.
    m = int(active.sum())
    grid = np.concatenate([[0.0], lams[:m]])
    variances, sizes, acceptance, rhos = variances[:m], sizes[:m], acceptance[:m], rhos[:m]
    means, covariances = means[: m + 1], covariances[: m + 1]
    path = thermodynamic_path(grid, variances, int(num_steps))
    # The tables are data of the compiled run; padded to the pilot's most levels, every call's tables have one
    # shape whatever levels its pilot visited, so a new seed never compiles the run again.
    most = len(lams)
    if steer:
        table = smoothed_table(grid[1:], sizes)
        lams_, sizes_ = padded(table.lams, table.sizes, length=most)
        kernel = dataclasses.replace(kernel, step_size=StepSizeTable(tuple(map(float, lams_)),
                                                                     tuple(map(float, sizes_))))
    if field is not None and kind != "identity":
        fitted = table_from_moments(*padded(grid, means, covariances, length=most + 1))
        kernel = dataclasses.replace(kernel, **{field: fitted}, **jitter)
    return Tuned(path=path, kernel=kernel, seconds=seconds + compile_seconds, compile_seconds=compile_seconds,
                 n_evals=_pilot_evals(pilot, kernel, m), variances=variances, acceptance=acceptance, pilot=pilot,
                 grid=grid, correlations=rhos)


def _pilot_evals(pilot: Pilot, kernel, visited: int) -> int:
    """Density evaluations of a pilot that visited ``visited`` levels past its warm-up."""
    levels = visited + pilot.warmup
    if supports(kernel, CachedTransition) and bool(kernel.caches_terms):
        return pilot.num_chains * (1 + levels * pilot.moves_per_level * int(kernel.evals_per_cached_step))
    # each level also evaluates the likelihood for its variance
    return pilot.num_chains * levels * (1 + pilot.moves_per_level * evals_per_step(kernel))


def _untuned(pilot: Pilot, kernel, num_steps: int, seconds: float, compile_seconds: float) -> Tuned:
    """The choice of a pilot that met a NaN or +inf density: the sigmoidal path and the kernel as given."""
    return Tuned(path=schedules.sigmoidal(num_steps), kernel=kernel, seconds=seconds + compile_seconds,
                 compile_seconds=compile_seconds, n_evals=0, variances=np.zeros(0), acceptance=np.zeros(0),
                 pilot=pilot, healthy=False, grid=np.zeros(1), correlations=None)


def thermodynamic_path(grid, variances, num_steps: int, *, weight: float = 0.5) -> np.ndarray:
    """``num_steps`` lambdas from 0 to 1, spaced by equal thermodynamic length ``int sqrt(v(lam)) dlam`` mixed
    with the sigmoidal schedule.

    ``variances[i]`` is v at ``grid[i]`` (``len(grid) - 1`` levels: the last grid point is not visited);
    ``sqrt(v)`` is interpolated linearly between grid points. The path's points are spent ``weight`` by
    thermodynamic length and the rest as the sigmoidal schedule spends them (the inverse of the mixture of
    the two cumulative distributions): a pilot's few chains underestimate the variance of a heavy-tailed
    likelihood under the prior, and the sigmoidal share keeps small first steps. Non-finite or zero
    variances (a pilot that failed, a likelihood constant in the latent) give the sigmoidal schedule.
    """
    grid = np.asarray(grid, np.float64)
    sd = np.sqrt(np.asarray(variances, np.float64))
    if sd.shape[0] != grid.shape[0] - 1 or not np.all(np.isfinite(sd)) or not np.any(sd > 0):
        return schedules.sigmoidal(num_steps)
    sd = np.append(sd, sd[-1])
    sd = np.maximum(sd, 1e-12 * sd.max())
    # Dense evaluation of both cumulative distributions of the path's points, then one inverse.
    sigmoid = schedules.sigmoidal(int(num_steps))
    fine = np.unique(np.concatenate([grid, np.linspace(0.0, 1.0, 4097), sigmoid]))
    sd_fine = np.interp(fine, grid, sd)
    length = np.concatenate([[0.0], np.cumsum(np.diff(fine) * 0.5 * (sd_fine[1:] + sd_fine[:-1]))])
    sigmoid_cdf = np.interp(fine, sigmoid, np.linspace(0.0, 1.0, int(num_steps)))
    cdf = weight * length / length[-1] + (1.0 - weight) * sigmoid_cdf
    path = np.interp(np.linspace(0.0, 1.0, int(num_steps)), cdf, fine)
    path[0], path[-1] = 0.0, 1.0
    return schedules.validate(np.maximum.accumulate(np.clip(path, 0.0, 1.0)))


def padded(lams, *columns, length: int, spacing: float = 1e-9) -> tuple[np.ndarray, ...]:
    """``lams`` and its columns (arrays with one entry per lam) extended to ``length`` entries: the lams past
    the last rise by ``spacing`` (a table's lams must increase; no run reads a lam above 1, and a table holds
    its last entry beyond its last lam), each column repeats its last entry."""
    lams = np.asarray(lams, np.float64)
    extra = max(int(length) - lams.shape[0], 0)
    lams = np.concatenate([lams, lams[-1] + spacing * np.arange(1, extra + 1)])
    return (lams, *(np.concatenate([np.asarray(c), np.repeat(np.asarray(c)[-1:], extra, axis=0)]) for c in columns))


def smoothed_table(lams, sizes, *, width: int = 5) -> StepSizeTable:
    """The pilot's step sizes as a table, smoothed by a running median of log step size."""
    log_sizes = np.log(np.asarray(sizes, np.float64))
    padded = np.pad(log_sizes, width // 2, mode="edge")
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(padded, width), axis=1)
    return StepSizeTable(tuple(float(x) for x in lams), tuple(float(x) for x in np.exp(smooth)))


def refuse_in_chain_adaptation(what: str) -> None:
    """Raise: adapting a chain's kernel from its own history breaks the AIS guarantee."""
    raise BDMCError(
        f"{what}: in-chain adaptation is refused. A step size that a chain adapts from its own acceptance "
        "history makes its transitions depend on its past, so they no longer leave each intermediate "
        "distribution invariant as a fixed kernel, and the AIS weights lose their unbiasedness: the lower and "
        "upper bounds, and the bug alarm, would no longer hold. Use tune='pilot' (the default for gradient "
        "kernels): a pilot run with its own keys chooses the schedule and a step size for each lambda, frozen "
        "for the real run."
    )


def _dimension(model) -> int:
    """Coordinates of the model's flattened latent (traced once per model: a trace costs milliseconds a call)."""
    def count():
        shapes = jax.eval_shape(model.sample_prior, jax.random.key(0))
        return int(sum(np.prod(s.shape, dtype=int) for s in jax.tree.leaves(shapes)))
    return _DIMENSIONS.get_or_build(model, count)[0]


_DIMENSIONS = CompiledCache("latent dimensions", maxsize=64)
