"""A sandwich run kept in an output store: rows saved as they finish, resumed row by row, the verdict at the end.

``bdmc sandwich`` and ``bdmc bread --model`` both run through :func:`run_sandwich`: the rows already in the
store are skipped, each new row is appended as it finishes, and the final table (every row in the store)
carries the run-level bug alarm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from ..checks.alarm import BugAlarm, alarm_from_table, crossing_p_bound
from ..checks.sandwich import COLUMNS, mark_alarms, sandwich
from .store import RunStore

CSV_NAME = "sandwich.csv"
DIRECTIONS = ("forward", "reverse")
KEY = ("num_steps", "direction")
# Column types of the sandwich table, in file order.
DTYPES = {c: float for c in COLUMNS}
DTYPES.update(method=str, num_steps=int, direction=str, bound=str, alarm=bool, num_chains=int, n_evals=int)
# Settings on which a row's numbers depend; a resumed run must agree on all of them.
ROW_DETERMINING = ("command", "model", "options", "seed", "chains", "schedule", "method", "particles", "x64")


@dataclass(frozen=True)
class SandwichRun:
    """Every row in the store after a run, and what this run added.

    Attributes
    ----------
    table : pandas.DataFrame
        Every row, ordered by chain length (forward before reverse), with the ``alarm`` column marked.
    verdict : BugAlarm or None
        The run-level bug alarm over every row (None until both directions have a row).
    new : int
        Rows computed by this run.
    """

    table: pd.DataFrame
    verdict: BugAlarm | None
    new: int


def open_sandwich_store(out, settings: dict, *, overwrite: bool, discard=()) -> RunStore:
    """The store of a sandwich run in ``out``: ``sandwich.csv`` and ``settings.json``.

    ``settings`` holds the keys of :data:`ROW_DETERMINING` and any informational ones; the store keeps
    ``settings["steps"]`` equal to the chain lengths the CSV holds.
    """
    store = RunStore(out, csv_name=CSV_NAME, dtypes=DTYPES, key=KEY, settings={**settings, "steps": []},
                     compare=ROW_DETERMINING, overwrite=overwrite, discard=discard, legacy=_legacy)
    store.update_settings(steps=_steps_of(store.rows))
    return store


def run_sandwich(key, model, data, exact_latent, *, store: RunStore, steps: list[int], num_chains: int,
                 schedule: str = "sigmoidal", method: str = "ais", num_particles: int = 1,
                 until_gap: float | None = None, max_steps: int = 100_000,
                 on_row: Callable[[dict], None] | None = None, progress="auto") -> SandwichRun:
    """Run :func:`bdmc.sandwich` on the rows ``store`` lacks, appending each as it finishes.

    Parameters
    ----------
    key, model, data, exact_latent
        As for :func:`bdmc.sandwich`; ``data`` and ``exact_latent`` are the ones it would simulate from ``key``.
    store : RunStore
        From :func:`open_sandwich_store`.
    steps, num_chains, schedule, method, num_particles, until_gap, max_steps, progress
        As for :func:`bdmc.sandwich`.
    on_row : callable, optional
        Called with each new row after it is saved.

    Returns
    -------
    SandwichRun
    """
    if until_gap is not None:
        # sandwich() cannot see skipped rows' gaps: drop half-finished pairs (recomputed identically) and stop
        # at a length the store already shows converged.
        complete = _complete_pairs(store.rows)
        store.rewrite([r for r in store.rows if int(r["num_steps"]) in complete])
        store.update_settings(steps=_steps_of(store.rows))
        converged = _first_converged(store.rows, steps[0], max_steps, until_gap)
        if converged is not None:
            max_steps = converged
    old = store.rows
    new: list[dict] = []

    def finished(row: dict) -> None:
        row = _fill_partner_gap(row, old + new)
        new.append(row)
        store.settings["steps"] = _steps_of(old + new)  # settings.json states what the CSV holds
        store.append(row)
        if on_row is not None:
            on_row(row)

    skip = {(int(r["num_steps"]), str(r["direction"])) for r in old}
    sandwich(key, model, data, exact_latent, steps=steps, num_chains=num_chains, schedule=schedule, method=method,
             num_particles=num_particles, until_gap=until_gap, max_steps=max_steps, on_row=finished, skip=skip,
             progress=progress)
    table = pd.DataFrame(store.rows, columns=COLUMNS)
    table = table.sort_values(["num_steps", "direction"], key=_sort_key, kind="stable").reset_index(drop=True)
    verdict = None
    if set(table["direction"]) == set(DIRECTIONS):
        verdict = alarm_from_table(table)
        table["alarm"] = mark_alarms(table, verdict)
    store.rewrite(table.to_dict("records"))
    store.record("verdict", verdict.to_dict() if verdict is not None else None)
    return SandwichRun(table=table, verdict=verdict, new=len(new))


def _steps_of(rows: list[dict]) -> list[int]:
    return sorted({int(r["num_steps"]) for r in rows})


def _legacy(previous: dict | None) -> dict | None:
    if previous is not None:
        previous.setdefault("command", "sandwich")  # flat settings files of older versions: sandwich runs
    return previous


def _complete_pairs(rows: list[dict]) -> set[int]:
    seen: dict[int, set] = {}
    for r in rows:
        seen.setdefault(int(r["num_steps"]), set()).add(r["direction"])
    return {t for t, d in seen.items() if set(DIRECTIONS) <= d}


def _first_converged(rows: list[dict], start: int, stop: int, tol: float) -> int | None:
    """First T of the doubling sequence from ``start`` whose recorded single-run gap is below ``tol``."""
    gaps = {int(r["num_steps"]): float(r["gap_single"]) for r in rows}
    T = start
    while T <= stop:
        if T in gaps and math.isfinite(gaps[T]) and gaps[T] < tol:
            return T
        T *= 2
    return None


def _fill_partner_gap(row: dict, rows: list[dict]) -> dict:
    """Give a row whose partner direction was resumed from disk the gaps sandwich() could not compute."""
    if math.isfinite(row["gap"]):
        return row
    other = next((r for r in rows if r["num_steps"] == row["num_steps"] and r["direction"] != row["direction"]),
                 None)
    if other is None:
        return row
    lower, upper = (row, other) if row["direction"] == "forward" else (other, row)
    crossing = lower["value"] - upper["value"]
    mean = upper["mean_single"] - lower["mean_single"]
    se = math.hypot(upper["stderr_single"], lower["stderr_single"])  # the two directions are independent
    return {**row, "gap": -crossing, "gap_single": mean, "gap_single_stderr": se, "alarm": False,
            "alarm_p": crossing_p_bound(crossing)}


def _sort_key(col):
    # Forward before reverse within a chain length.
    return col.map({d: i for i, d in enumerate(DIRECTIONS)}) if col.name == "direction" else col
