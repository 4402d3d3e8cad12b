"""``sandwich``: bidirectional Monte Carlo at a list of chain lengths, as a tidy table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import jax
import numpy as np
import pandas as pd

from ..errors import BDMCError
from ..contracts.model import simulate, validate_data
from ..core.ais import forward_ais, reverse_ais
from .alarm import BugAlarm, crossing_p_bound, alarm_from_table
from ..contracts.capabilities import ExactEvidence, supports
from ..contracts.estimate import Estimate, gap
from ..core.smc import shme, smc

COLUMNS = [
    "method", "num_steps", "direction", "bound", "value", "stderr", "mean_single", "stderr_single", "certified_b3",
    "gap", "gap_single", "gap_single_stderr", "alarm", "alarm_p", "num_chains", "seconds", "compile_seconds", "seconds_total", "n_evals", "exact",
]


@dataclass(frozen=True)
class SandwichResult:
    """The table of a sandwich run and what it ran on.

    ``table`` has one row per (knob value, direction), where the knob ``num_steps`` is the number of
    intermediate distributions T for ``method="ais"`` and the MCMC moves per data case for ``"smc"``: the combined bound ``value`` and its ``stderr``, the
    single-run mean, the Markov-certified bound at b = 3 (holds with probability >= 1 - e^-3), the combined
    ``gap`` (upper - lower), ``gap_single`` (B-hat) with its standard error, the bug alarm (``alarm``, and
    ``alarm_p``: ``exp(-crossing)`` of that knob value's pair, the largest probability of its crossing if
    everything is correct, for information), times and likelihood evaluations. ``exact`` is the model's exact
    log-ML when known.

    ``verdict`` is the run-level bug alarm (:func:`bdmc.bug_alarm`): every lower bound of the run against every
    upper bound, pooled, at false-alarm level ``verdict.alpha``; the ``alarm`` column marks the knob values
    whose own pair crosses at that level when the verdict fires.
    """

    table: pd.DataFrame
    data: Any
    exact_latent: Any
    exact: float | None
    verdict: BugAlarm | None = None

    @property
    def alarms(self) -> pd.DataFrame:
        """Knob values whose forward / reverse pair crosses, when the run-level alarm fired (else empty)."""
        fired = self.table[self.table["alarm"].astype(bool) & (self.table["direction"] == "forward")]
        return fired[["num_steps", "gap", "gap_single", "gap_single_stderr", "alarm_p"]].reset_index(drop=True)

    @property
    def final_gap(self) -> float:
        """Upper minus lower combined bound at the longest chain length run."""
        return float(self.table["gap"].iloc[-1])


def sandwich(
    key,
    model,
    data=None,
    exact_latent=None,
    *,
    steps: Iterable[int] = (10, 100, 1000),
    num_chains: int = 16,
    kernel=None,
    schedule: str = "sigmoidal",
    method: str = "ais",
    num_particles: int = 1,
    until_gap: float | None = None,
    max_steps: int = 100_000,
    skip: Iterable[tuple[int, str]] = (),
    on_row: Callable[[dict], None] | None = None,
    progress="auto",
    forward_only: bool = False,
) -> SandwichResult:
    """Sandwich ``log p(y)`` between forward AIS (lower) and reverse AIS (upper) at several chain lengths.

    Parameters
    ----------
    key : PRNG key
        Simulates the data (when not given) and drives every run; the run at chain length T uses
        ``fold_in(key, T)``, so any row can be recomputed (or resumed) on its own.
    model : Model
    data, exact_latent : optional
        Simulated data and the latent that generated it; both are simulated from ``key`` when omitted.
    steps : iterable of int
        Numbers of intermediate distributions T to run. With ``until_gap``, only the first is used.
    num_chains : int
        Chains per direction and length.
    kernel, schedule
        As for :func:`bdmc.forward_ais`.
    method : {"ais", "smc"}
        Forward and reverse AIS, or SMC (lower) and SHME (upper) on the data path; for "smc" the values in
        ``steps`` are MCMC moves per data case and ``num_chains`` counts independent runs.
    num_particles : int
        Particles per SMC / SHME run.
    until_gap : float, optional
        Keep doubling T from ``steps[0]`` until the mean single-run gap (reverse minus forward, the BREAD
        estimate B-hat, which is non-negative in expectation) is below ``until_gap`` nats or T > ``max_steps``.
    skip : iterable of (T, direction)
        Rows already computed elsewhere (resume); they are not run and not in the returned table.
    on_row : callable, optional
        Called with each finished row (a dict), e.g. to print it or append it to a file.
    forward_only : bool
        Run only the lower bound, for observed (real) data: it has no exact posterior sample, so no reverse
        run, no gap and no bug alarm; ``exact_latent`` may then be omitted and ``until_gap`` is refused.

    Returns
    -------
    SandwichResult
    """
    key_data, key_runs = jax.random.split(key)
    if forward_only and until_gap is not None:
        raise BDMCError("until_gap stops on the gap between the bounds, and forward_only runs no upper bound; "
                        "give the chain lengths in steps instead")
    if not (forward_only and data is not None):  # real data have no exact latent and need none
        data, exact_latent = given_or_simulated(key_data, model, data, exact_latent)
    data = validate_data(model, data)
    exact = exact_log_marginal_or_none(model, data)
    steps = checked_steps(method, steps)
    skip = {(int(t), str(d)) for t, d in skip}

    rows: list[dict] = []
    schedule_of_lengths = _doubling(steps[0], max_steps) if until_gap is not None else steps
    for T in schedule_of_lengths:
        k_fwd, k_rev = jax.random.split(jax.random.fold_in(key_runs, T))
        pair = {}
        if method == "ais":
            common = dict(num_steps=T, num_runs=num_chains, kernel=kernel, schedule=schedule, progress=progress)
            lower, upper = forward_ais, reverse_ais
        else:
            common = dict(num_moves=T, num_runs=num_chains, num_particles=num_particles, kernel=kernel,
                          progress=progress)
            lower, upper = smc, shme
        if (T, "forward") not in skip:
            pair["forward"] = lower(k_fwd, model, data, **common)
        if not forward_only and (T, "reverse") not in skip:
            pair["reverse"] = upper(k_rev, model, data, exact_latent=exact_latent, **common)
        pair_stats = _pair_stats(pair) if len(pair) == 2 else {}
        for direction, est in pair.items():
            row = {"method": method, **_row(T, direction, est, num_chains, exact), **pair_stats}
            rows.append(row)
            if on_row is not None:
                on_row(row)
        width_single = pair_stats.get("gap_single", np.nan)
        if until_gap is not None and np.isfinite(width_single) and width_single < until_gap:
            break
    table = pd.DataFrame(rows, columns=COLUMNS)
    verdict = None
    if set(table["direction"]) == {"forward", "reverse"}:
        verdict = alarm_from_table(table)
        table["alarm"] = mark_alarms(table, verdict)
    return SandwichResult(table=table, data=data, exact_latent=exact_latent, exact=exact, verdict=verdict)


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
    """The chain lengths as a list of integers, refusing an unknown ``method`` and lengths it cannot run.

    Parameters
    ----------
    method : {"ais", "smc"}
    steps : iterable of int
        Numbers of intermediate distributions: at least 2 for AIS, 1 for SMC.

    Returns
    -------
    list of int

    Raises
    ------
    bdmc.BDMCError
        On an unknown method, no lengths, or a length below the method's smallest.
    """
    if method not in ("ais", "smc"):
        raise BDMCError(f"unknown method {method!r}; choose 'ais' or 'smc'")
    steps = [int(s) for s in steps]
    smallest = 2 if method == "ais" else 1
    if not steps or min(steps) < smallest:
        raise BDMCError(f"steps must be a non-empty list of integers >= {smallest}, got {steps}")
    return steps


def exact_log_marginal_or_none(model, data) -> float | None:
    """The model's exact log p(y) when it has one that is affordable for this data (else None)."""
    if not supports(model, ExactEvidence):
        return None
    try:
        return float(model.exact_log_marginal(data))
    except ValueError:  # too large to enumerate or integrate: a sandwich is exactly what is needed then
        return None


def _doubling(start: int, stop: int):
    T = start
    while T <= stop:
        yield T
        T *= 2


def _pair_stats(pair) -> dict:
    """Gaps between the two directions at one knob value, and the bug alarm on them."""
    lower, upper = pair["forward"], pair["reverse"]
    mean, se = gap(lower, upper)
    return {"gap": upper.value - lower.value, "gap_single": mean, "gap_single_stderr": se, "alarm": False,
            "alarm_p": crossing_p_bound(lower.value - upper.value)}


def _row(T: int, direction: str, est: Estimate, num_chains: int, exact) -> dict:
    return {
        "num_steps": T, "direction": direction, "bound": est.bound, "value": est.value, "stderr": est.stderr,
        "mean_single": est.mean_single, "stderr_single": est.stderr_single, "certified_b3": est.certified(3.0),
        "gap": np.nan, "gap_single": np.nan, "gap_single_stderr": np.nan, "alarm": False, "alarm_p": np.nan,
        "num_chains": num_chains, "seconds": est.seconds, "compile_seconds": est.compile_seconds,
        "seconds_total": est.seconds + est.compile_seconds, "n_evals": est.n_evals,
        "exact": np.nan if exact is None else exact,
    }
