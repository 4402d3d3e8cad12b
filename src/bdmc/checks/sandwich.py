"""The BDMC sandwich: a lower and an upper estimator of ``log p(y)`` paired at a list of knob values.

This module owns everything a sandwich is, given its pair of estimators (:data:`bdmc.contracts.pairs.PAIRS`):
what a sandwich resolves before its runs, once (:func:`plan_sandwich`: the pair "auto" picks, its particles,
its kernel, the data and their exact value), how the caller's key splits into the data's key and each pair's
keys (:func:`sandwich_keys`, :func:`pair_keys`), the gap statistics of a pair (:func:`pair_statistics`), the
doubling of ``until_gap`` (:func:`knob_values`), the run-level bug alarm over the table
(:func:`alarm_from_table`, at the ``alpha`` of :func:`sandwich`) and the verdict against an exact value
(:class:`ExactCheck`). The resumable runner (:mod:`bdmc.experiments.sandwich_runs`), the ``bdmc`` commands and
the audit call these; none of them computes any of it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np
import pandas as pd

from ..contracts import weight_health
from ..contracts.capabilities import OwnKernel, exact_log_marginal_or_none, supports
from ..contracts.estimate import Estimate
from ..contracts.model import Simulated, simulate, validate_data
from ..contracts.observed import real_data_like
from ..contracts.pairs import DIRECTIONS, PAIRS, EstimatorPair, estimator_pair
from ..core import ais, smc, tempered  # noqa: F401  importing them registers the built-in pairs
from ..core.named_kernels import named_kernel
from ..errors import BDMCError, OptionError, ParticlesError
from .alarm import ALPHA, FALLING_ALPHA, Bound, BugAlarm, alarm_from_bounds, crossing_p_bound
from .sandwich_verdict import NOISE_STDERRS, ExactCheck, exact_check

COLUMNS = [
    "method", "num_steps", "direction", "bound", "value", "stderr", "mean_single", "stderr_single", "certified_b3",
    "gap", "gap_single", "gap_single_stderr", "alarm", "alarm_p", "num_runs", "seconds", "compile_seconds",
    "seconds_total", "n_evals", "exact", "divergence_rate", "weight_ess", "khat", "stderr_trusted",
]
CERTIFY_B = 3.0  # ``certified_b3``: the lower bound minus b holds with probability >= 1 - e^-b (Markov)
KERNEL_STREAM = 11  # folded into the key for a named kernel's pilot (its own keys, never the runs')

__all__ = ["COLUMNS", "CERTIFY_B", "DIRECTIONS", "ExactCheck", "NOISE_STDERRS", "SandwichKeys", "SandwichPlan",
           "SandwichResult", "alarm_from_table", "auto_method", "exact_check", "exact_log_marginal_or_none",
           "knob_values", "mark_alarms", "pair_keys", "pair_statistics", "plan_sandwich", "resolve_pair", "run_plan",
           "sandwich", "sandwich_keys", "simulated_data"]


def auto_method(model) -> str:
    """The name of the pair ``method="auto"`` runs on ``model``: forward and reverse AIS for a model with a kernel
    of its own (the paper's models, whose Gibbs and collapsed kernels each AIS chain uses well: ``benchmarks/results/
    estimators/estimators.md``), tempered SMC for any other model, whose pilot-tuned HMC gains most from a population
    (``benchmarks/results/peers/``: tempered SMC is bdmc's fastest method to RMSE < 1 nat on every peer problem
    where either reaches it)."""
    return "ais" if supports(model, OwnKernel) else "tempered-smc"


@dataclass(frozen=True)
class SandwichPlan:
    """What a sandwich resolved before its runs (:func:`plan_sandwich`), so no caller resolves it again.

    Attributes
    ----------
    pair : EstimatorPair
        The pair it runs ("auto" resolved).
    num_particles : int or None
        Particles per run (the pair's default when not told; None for a pair of single chains).
    kernel
        The runs' kernel: None (each estimator's default) or a kernel, a named one tuned by its pilot.
    data, exact_latent
        The data (simulated from the key, given, or observed) and the latent that generated them (None on
        observed data).
    exact : float or None
        The model's exact ``log p(y)`` for the data, where affordable.
    """

    pair: EstimatorPair
    num_particles: int | None
    kernel: Any
    data: Any
    exact_latent: Any
    exact: float | None

    @property
    def method(self) -> str:
        """The pair's name: the ``method`` column of the table."""
        return self.pair.name


def resolve_pair(model, method: str = "auto", num_particles: int | None = None) -> tuple[EstimatorPair, int | None]:
    """The pair ``method`` names ("auto": :func:`auto_method`) and its particles per run (the pair's default when
    not told); an OptionError refuses an unknown method, and particles for a pair of single chains."""
    name = auto_method(model) if method == "auto" else method
    pair = estimator_pair(name)
    if num_particles is not None and pair.particles is None:
        with_particles = [p.name for p in PAIRS.values() if p.particles is not None]
        raise ParticlesError(f"num_particles: method {pair.name} runs single chains; particles need method "
                          f"{' or '.join(with_particles)}")
    return pair, pair.particles if num_particles is None else num_particles


def plan_sandwich(key, model, data=None, exact_latent=None, *, method: str = "auto", num_particles=None,
                  kernel=None, forward_only: bool = False, observed: Mapping[str, Any] | None = None,
                  source: str = "observed", hint: str = "",
                  preflight: Callable[[EstimatorPair, int | None], None] | None = None) -> SandwichPlan:
    """Resolve a sandwich once: the pair ("auto": :func:`auto_method`), its particles, its kernel, the data and
    their exact value.

    Parameters
    ----------
    key, model, data, exact_latent, forward_only
        As for :func:`sandwich`: data not given are simulated from ``key`` (:func:`simulated_data`); with
        ``forward_only`` given data are observed and need no exact latent.
    method : str
        A key of :data:`bdmc.contracts.pairs.PAIRS` or "auto".
    num_particles : int, optional
        Particles per run; refused for a pair of single chains.
    kernel : None, "auto", a kernel name or a kernel
        "auto" and None leave the kernel to each estimator; a name of
        :data:`bdmc.core.named_kernels.KERNELS` is tuned by its pilot (:func:`bdmc.core.named_kernels.named_kernel`).
    observed : mapping of str to array, optional
        The user's observed arrays (real data), read into the structure of the data ``key`` simulates
        (:func:`bdmc.contracts.observed.real_data_like`, ``source`` and ``hint`` as there); implies
        ``forward_only``.
    preflight : callable, optional
        Called with the resolved pair and particles before any data are simulated or read, e.g. to refuse a run
        too large for the machine (``bdmc sandwich``'s memory check).

    Returns
    -------
    SandwichPlan
    """
    pair, num_particles = resolve_pair(model, method, num_particles)
    if observed is not None and data is not None:
        raise OptionError("give data (simulated, with their exact latent) or observed (real data), not both")
    if preflight is not None:
        preflight(pair, num_particles)
    if observed is not None or not (forward_only and data is not None):
        data, exact_latent = given_or_simulated(sandwich_keys(key).data, model, data, exact_latent)
    if observed is not None:  # real data in the simulated data's structure: no exact latent, and none needed
        data, exact_latent = real_data_like(data, observed, source=source, hint=hint), None
    data = validate_data(model, data)
    exact = exact_log_marginal_or_none(model, data)
    if isinstance(kernel, str):  # a named kernel is tuned by its pilot, on its own keys and data set
        kernel = None if kernel == "auto" else named_kernel(jax.random.fold_in(key, KERNEL_STREAM), model, kernel)[0]
    return SandwichPlan(pair=pair, num_particles=num_particles, kernel=kernel, data=data, exact_latent=exact_latent,
                        exact=exact)


# ------------------------------------------------------------------------------------------------ keys


class SandwichKeys(NamedTuple):
    """The two keys a sandwich's key splits into: one simulates the data, one drives the runs."""

    data: Any
    runs: Any


def sandwich_keys(key) -> SandwichKeys:
    """The split of :func:`sandwich`'s ``key``, written once: ``bdmc sandwich --seed s`` uses it too."""
    data, runs = jax.random.split(key)
    return SandwichKeys(data, runs)


def pair_keys(runs_key, knob: int) -> tuple[Any, Any]:
    """The keys of the lower and the upper run at one knob value: each row can be recomputed on its own."""
    forward, reverse = jax.random.split(jax.random.fold_in(runs_key, int(knob)))
    return forward, reverse


def simulated_data(key, model) -> Simulated:
    """The data and exact latent that :func:`sandwich` simulates from ``key`` when none are given."""
    return simulate(sandwich_keys(key).data, model)


# ------------------------------------------------------------------------------------------------ the run


@dataclass(frozen=True)
class SandwichResult:
    """The table of a sandwich run, what it ran on, and its verdicts.

    ``table`` has one row per (knob value, direction), ordered by knob value, forward before reverse; the
    knob ``num_steps`` is the number of intermediate distributions T for ``method="ais"`` and the MCMC moves
    per data case for ``"smc"``. Each row holds the combined bound ``value`` and its ``stderr``, the
    single-run mean, the Markov-certified bound at b = 3 (holds with probability >= 1 - e^-3), the combined
    ``gap`` (upper - lower), ``gap_single`` (B-hat) with its standard error, the bug alarm (``alarm``, and
    ``alarm_p``: ``exp(-crossing)`` of that knob value's pair, the largest probability of its crossing if
    everything is correct, for information), ``num_runs``, times and likelihood evaluations. ``exact`` is the
    model's exact log-ML when known.

    ``verdict`` is the run-level bug alarm (:func:`bdmc.bug_alarm`): every lower bound of the run against every
    upper bound, pooled, at false-alarm level ``verdict.alpha`` (the ``alpha`` of :func:`sandwich`); the
    ``alarm`` column marks the knob values whose own pair crosses at that level when the verdict fires.
    ``against_exact`` says whether the bounds hold around the exact value.
    """

    table: pd.DataFrame
    data: Any
    exact_latent: Any
    exact: float | None
    verdict: BugAlarm | None = None
    method: str = "ais"

    @property
    def alarms(self) -> pd.DataFrame:
        """Knob values whose forward / reverse pair crosses, when the run-level alarm fired (else empty)."""
        fired = self.table[self.table["alarm"].astype(bool) & (self.table["direction"] == "forward")]
        return fired[["num_steps", "gap", "gap_single", "gap_single_stderr", "alarm_p"]].reset_index(drop=True)

    @property
    def final_gap(self) -> float:
        """Upper minus lower combined bound at the largest knob value with both (NaN when there is none)."""
        gaps = self.table.loc[self.table["direction"] == "forward", "gap"].dropna()
        return float(gaps.iloc[-1]) if len(gaps) else math.nan

    @property
    def against_exact(self) -> ExactCheck | None:
        """The bounds against the exact ``log p(y)``: holds, holds within noise or VIOLATED (None without one)."""
        return exact_check(self.table, self.exact)


def sandwich(
    key,
    model,
    data=None,
    exact_latent=None,
    *,
    steps: Iterable[int] = (10, 100, 1000),
    num_runs: int = 16,
    kernel=None,
    schedule: str = "auto",
    method: str = "ais",
    num_particles: int | None = None,
    until_gap: float | None = None,
    max_steps: int = 100_000,
    alpha: float = ALPHA,
    done: Iterable[Mapping] = (),
    on_row: Callable[[dict], None] | None = None,
    progress="auto",
    forward_only: bool = False,
) -> SandwichResult:
    """Sandwich ``log p(y)`` between a lower and an upper estimator at several knob values.

    Parameters
    ----------
    key : PRNG key
        Simulates the data (when not given) and drives every run (:func:`sandwich_keys`); the pair at knob
        value T uses :func:`pair_keys`, so any row can be recomputed (or resumed) on its own.
    model : Model
    data, exact_latent : optional
        Simulated data and the latent that generated it; both are simulated from ``key`` when omitted.
    steps : iterable of int
        Knob values to run. With ``until_gap``, only the first is used.
    num_runs : int
        Independent runs per direction and knob value.
    kernel, schedule
        As for :func:`bdmc.forward_ais` (``schedule`` only where the estimators take one). ``"auto"`` (the default)
        leaves the path to each estimator: the pilot's temperatures where a pilot runs (a model without a kernel
        of its own), else sigmoidal; a named schedule overrides the pilot's.
    method : {"ais", "smc", "tempered-smc", "auto"} or another name in :data:`bdmc.contracts.pairs.PAIRS`
        The pair of estimators: forward and reverse AIS (knob: intermediate distributions T),
        SMC (lower) and SHME (upper) on the data path (knob: MCMC moves per data case), or tempered SMC from
        the prior and from the exact latent (knob: temperatures T; :mod:`bdmc.core.tempered`). "auto" picks
        by model class (:func:`auto_method`) and the result's ``method`` names the pair it ran.
    num_particles : int, optional
        Particles per SMC / SHME or tempered SMC run (default: the pair's, 1 for SMC / SHME, 32 for tempered).
    until_gap : float, optional
        Keep doubling the knob from ``steps[0]`` (:func:`knob_values`) until the mean single-run gap (upper
        minus lower, the BREAD estimate B-hat, non-negative in expectation) is below ``until_gap`` nats or the
        knob passes ``max_steps``.
    alpha : float
        False-alarm level of the run-level bug alarm (:attr:`SandwichResult.verdict`).
    done : iterable of mapping
        Rows already computed (e.g. read back from a CSV of an earlier call with the same settings): they are
        not run again, they complete their partner's gap statistics and ``until_gap``, and they are part of
        the returned table and its verdict.
    on_row : callable, optional
        Called with each newly computed row (a dict), e.g. to print it or append it to a file.
    forward_only : bool
        Run only the lower bound, for observed (real) data: it has no exact posterior sample, so no upper
        bound, no gap and no bug alarm; ``exact_latent`` may then be omitted and ``until_gap`` is refused.

    Returns
    -------
    SandwichResult
        Its runs are :func:`run_plan` of :func:`plan_sandwich`'s plan: a caller that resolved the plan itself
        (to print what it chose first) calls that and nothing is resolved twice.
    """
    plan = plan_sandwich(key, model, data, exact_latent, method=method, num_particles=num_particles, kernel=kernel,
                         forward_only=forward_only)
    return run_plan(key, model, plan, steps=steps, num_runs=num_runs, schedule=schedule, until_gap=until_gap,
                    max_steps=max_steps, alpha=alpha, done=done, on_row=on_row, progress=progress,
                    forward_only=forward_only)


def run_plan(key, model, plan: SandwichPlan, *, steps: Iterable[int], num_runs: int, schedule: str = "auto",
             until_gap: float | None = None, max_steps: int = 100_000, alpha: float = ALPHA,
             done: Iterable[Mapping] = (), on_row: Callable[[dict], None] | None = None, progress="auto",
             forward_only: bool = False) -> SandwichResult:
    """The runs of :func:`sandwich` on what ``plan`` (:func:`plan_sandwich`) resolved; the other options as there."""
    keys = sandwich_keys(key)
    if forward_only and until_gap is not None:
        raise BDMCError("until_gap stops on the gap between the bounds, and forward_only runs no upper bound; "
                        "give the knob values in steps instead")
    if not 0 < alpha < 1:
        raise BDMCError(f"alpha must lie in (0, 1), got {alpha}")
    if int(num_runs) != num_runs or num_runs < 1:
        raise BDMCError(f"num_runs must be an integer >= 1, got {num_runs}")
    pair, method, data, exact_latent, exact = plan.pair, plan.method, plan.data, plan.exact_latent, plan.exact
    steps = checked_steps(method, steps)
    rows = {_row_key(r): {c: r.get(c, np.nan) for c in COLUMNS} | {"method": r.get("method", method)} for r in done}
    options = {"kernel": plan.kernel, "schedule": schedule, "num_particles": plan.num_particles, "progress": progress}
    directions = DIRECTIONS[:1] if forward_only else DIRECTIONS

    for T in knob_values(steps, until_gap=until_gap, max_steps=max_steps):
        k = dict(zip(DIRECTIONS, pair_keys(keys.runs, T), strict=False))
        new = []
        for direction in directions:
            if (T, direction) in rows:
                continue
            est = pair.run(direction, k[direction], model, data, knob=T, num_runs=num_runs,
                           exact_latent=exact_latent, **options)
            rows[(T, direction)] = _row(method, T, direction, est, num_runs, exact)
            new.append(rows[(T, direction)])
        stats = _fill_pair(rows, T)
        for row in new:
            if on_row is not None:
                on_row(dict(row))
        if until_gap is not None and stats.get("gap_single", math.inf) < until_gap:  # NaN never converges
            break
    for T in {t for t, _ in rows}:
        _fill_pair(rows, T)  # resumed pairs saved before their partner finished

    table = pd.DataFrame([rows[k] for k in sorted(rows, key=_order)], columns=COLUMNS)
    verdict = None
    if set(table["direction"]) == set(DIRECTIONS):
        verdict = alarm_from_table(table, alpha=alpha)
        table["alarm"] = mark_alarms(table, verdict)
    return SandwichResult(table=table, data=data, exact_latent=exact_latent, exact=exact, verdict=verdict,
                          method=method)


def knob_values(steps: Iterable[int], *, until_gap: float | None = None, max_steps: int = 100_000) -> Iterator[int]:
    """The knob values a sandwich runs, in order: ``steps``, or with ``until_gap`` ``steps[0]`` doubled up to
    ``max_steps`` (the caller stops once the gap is small)."""
    steps = [int(s) for s in steps]
    if until_gap is None:
        yield from steps
        return
    T = steps[0]
    while max_steps >= T:
        yield T
        T *= 2


def pair_statistics(lower: Mapping, upper: Mapping) -> dict:
    """The gaps between a lower and an upper row at one knob value, and the crossing's Markov p-bound.

    ``gap`` is upper minus lower combined bound; ``gap_single`` (B-hat) the difference of the single-run means,
    with the standard error of two independent means (the directions run on independent keys); ``alarm_p``
    is ``exp(-crossing)`` (:func:`bdmc.checks.alarm.crossing_p_bound`). Rows are table rows or their CSV.
    """
    crossing = float(lower["value"]) - float(upper["value"])
    return {"gap": -crossing, "gap_single": float(upper["mean_single"]) - float(lower["mean_single"]),
            "gap_single_stderr": math.hypot(float(upper["stderr_single"]), float(lower["stderr_single"])),
            "alarm_p": crossing_p_bound(crossing)}


def alarm_from_table(table, *, alpha: float = ALPHA, falling_alpha: float = FALLING_ALPHA) -> BugAlarm:
    """The run-level alarm over the rows of a sandwich table (e.g. one resumed from its CSV).

    ``table`` needs the columns ``direction`` ("forward" / "reverse"), ``num_steps``, ``value``,
    ``mean_single``, ``stderr_single`` and ``num_runs``; ``method`` (a key of :data:`bdmc.contracts.pairs.PAIRS`)
    when present, else "ais".
    """
    sides: dict = {d: [] for d in DIRECTIONS}
    for row in table.to_dict("records"):
        method = str(row.get("method", "ais"))
        knob = int(row["num_steps"])
        label = estimator_pair(method).label(row["direction"], knob)
        sides[row["direction"]].append(Bound(label, float(row["value"]), float(row["mean_single"]),
                                             float(row["stderr_single"]), method, knob, int(row["num_runs"])))
    return alarm_from_bounds(sides["forward"], sides["reverse"], alpha=alpha, falling_alpha=falling_alpha)


def mark_alarms(table: pd.DataFrame, verdict: BugAlarm) -> np.ndarray:
    """Per row: the run-level alarm fired and this knob value's own pair crosses at the alarm's level."""
    return (np.asarray(verdict.fired) & (table["alarm_p"].to_numpy(dtype=float) < verdict.alpha)).astype(bool)


def given_or_simulated(key, model, data, exact_latent):
    """The given data and exact latent, or both simulated from ``key`` when neither is given."""
    if data is None:
        if exact_latent is not None:
            raise BDMCError("exact_latent was given without the data it generated")
        return simulate(key, model)
    if exact_latent is None:
        raise BDMCError("data was given without exact_latent; reverse runs need the latent that generated it")
    return data, exact_latent


def checked_steps(method: str, steps: Iterable[int]) -> list[int]:
    """The knob values as a list of integers, refusing an unknown ``method`` and values it cannot run.

    Parameters
    ----------
    method : str
        A key of :data:`bdmc.contracts.pairs.PAIRS`.
    steps : iterable of int
        Knob values: at least the method's ``smallest`` (2 intermediate distributions for AIS, 1 move for SMC).

    Returns
    -------
    list of int

    Raises
    ------
    bdmc.BDMCError
        On an unknown method, no values, or a value below the method's smallest.
    """
    smallest = estimator_pair(method).smallest
    steps = [int(s) for s in steps]
    if not steps or min(steps) < smallest:
        raise BDMCError(f"steps must be a non-empty list of integers >= {smallest}, got {steps}")
    return steps


def _row_key(row: Mapping) -> tuple[int, str]:
    return int(row["num_steps"]), str(row["direction"])


def _order(row_key: tuple[int, str]):
    T, direction = row_key
    return T, DIRECTIONS.index(direction) if direction in DIRECTIONS else len(DIRECTIONS)


def _fill_pair(rows: dict, T: int) -> dict:
    """Write the pair statistics of knob value ``T`` into both of its rows (empty when a direction is missing)."""
    if not all((T, d) in rows for d in DIRECTIONS):
        return {}
    stats = pair_statistics(rows[(T, "forward")], rows[(T, "reverse")])
    for d in DIRECTIONS:
        rows[(T, d)].update(stats)
    return stats


def _row(method: str, T: int, direction: str, est: Estimate, num_runs: int, exact) -> dict:
    return {
        "method": method, "num_steps": T, "direction": direction, "bound": est.bound, "value": est.value,
        "stderr": est.stderr, "mean_single": est.mean_single, "stderr_single": est.stderr_single,
        "certified_b3": est.certified(CERTIFY_B), "gap": np.nan, "gap_single": np.nan, "gap_single_stderr": np.nan,
        "alarm": False, "alarm_p": np.nan, "num_runs": num_runs, "seconds": est.seconds,
        "compile_seconds": est.compile_seconds, "seconds_total": est.seconds + est.compile_seconds,
        "n_evals": est.n_evals, "exact": np.nan if exact is None else exact,
        "divergence_rate": np.nan if est.divergence_rate is None else est.divergence_rate,
        "weight_ess": est.weight_ess, "khat": est.khat, "stderr_trusted": est.stderr_warning is None,
        "stragglers": _stragglers(est),  # not a stored column (earlier runs' files resume): shown as runs finish
    }


def _stragglers(est: Estimate) -> int:
    """How many of the row's runs are stragglers (far below the others); 0 for rules that average no weights."""
    logw = weight_health.log_weights(est.runs, est.bound)
    return 0 if logw is None else weight_health.stragglers(logw)[0]
