"""A sandwich run kept in an output store: rows saved as they finish, resumed row by row, the verdict at the end.

``bdmc sandwich`` and ``bdmc bread --model`` both run through :func:`run_sandwich`, which hands the rows already
in the store to :func:`bdmc.sandwich` (``done``) and appends each new row as it finishes; the sandwich itself
pairs the bounds, computes the gaps, stops ``until_gap`` and raises the alarm, so a resumed run gives the
numbers of a fresh one. The final table (every row in the store) carries the run-level bug alarm.

On the user's observed data (``real_data=True``) only the forward rows run: real data have no exact posterior
sample to start a reverse chain from, so there is no upper bound, no gap and no alarm. Such a store says so in
``settings.json`` (``data``, ``bounds``) and in a last CSV column, ``data``, whose every value is ``real``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..checks.alarm import ALPHA, BugAlarm
from ..checks.sandwich import COLUMNS, SandwichPlan, SandwichResult, plan_sandwich, run_plan
from ..contracts.observed import data_array_names, real_data_record
from ..contracts.pairs import EstimatorPair
from ..errors import BDMCError
from .store import RunStore

CSV_NAME = "sandwich.csv"
KEY = ("num_steps", "direction")
# Column types of the sandwich table, in file order.
DTYPES = {c: float for c in COLUMNS}
DTYPES.update(method=str, num_steps=int, direction=str, bound=str, alarm=bool, num_runs=int, n_evals=int,
              stderr_trusted=bool)
# Settings on which a row's numbers depend; a resumed run must agree on all of them. ``data`` is "simulated"
# or, for the user's observed data, a record of the arrays read (names, shapes) and a digest of their values.
ROW_DETERMINING = ("command", "model", "options", "seed", "runs", "schedule", "method", "particles", "x64",
                   "data")
CSV_COLUMN = "data"  # the extra column of a real-data store
REAL = "real"  # the value of the ``data`` column of a real-data store
FORWARD_ONLY = "forward bounds only: real data"
BOUNDS = {False: "forward and reverse", True: FORWARD_ONLY}


@dataclass(frozen=True)
class SandwichRun:
    """Every row in the store after a run, and what this run added.

    Attributes
    ----------
    result : SandwichResult
        What :func:`bdmc.sandwich` returned over every row in the store (its verdicts included).
    table : pandas.DataFrame
        The store's rows: ``result.table`` ordered by knob value (forward before reverse), with the ``alarm``
        column marked and, in a real-data store, the ``data`` column.
    new : int
        Rows computed by this run.
    """

    result: SandwichResult
    table: pd.DataFrame
    new: int

    @property
    def verdict(self) -> BugAlarm | None:
        """The run-level bug alarm over every row (None until both directions have a row)."""
        return self.result.verdict


@dataclass(frozen=True)
class PreparedSandwich:
    """A sandwich run resolved once and its store opened: what a command prints before the first row.

    Attributes
    ----------
    plan : SandwichPlan
        The pair, particles, kernel, data and exact value (:func:`bdmc.checks.sandwich.plan_sandwich`).
    store : RunStore
        The output store, its rows those already done.
    data_record : str or dict
        ``settings["data"]``: "simulated", or the observed arrays read (names, shapes) and their digest.
    """

    plan: SandwichPlan
    store: RunStore
    data_record: Any


def prepare_sandwich(key, model, *, out, settings: dict, method: str = "auto", num_particles=None, kernel=None,
                     observed: Mapping[str, np.ndarray] | None = None, source: str = "--data", hint: str = "",
                     preflight: Callable[[EstimatorPair, int | None], None] | None = None,
                     overwrite: bool = False, discard=()) -> PreparedSandwich:
    """Resolve a sandwich run once (:func:`bdmc.checks.sandwich.plan_sandwich`) and open its store.

    Parameters
    ----------
    key, model
        As for :func:`bdmc.sandwich`: the key simulates the data (and drives the runs).
    out : path
        The output directory (:func:`open_sandwich_store`).
    settings : dict
        The store's settings less what this resolves: ``method``, ``particles`` and ``data`` are added.
    method, num_particles, kernel, preflight
        As for :func:`bdmc.checks.sandwich.plan_sandwich`.
    observed : mapping of str to array, optional
        The user's observed arrays (real data): read into the structure of the data ``key`` simulates
        (:func:`bdmc.contracts.observed.real_data_like`, ``source`` and ``hint`` as there), forward bounds only.
        None: simulated data.
    overwrite, discard
        As for :func:`open_sandwich_store`.

    Returns
    -------
    PreparedSandwich
    """
    plan = plan_sandwich(key, model, method=method, num_particles=num_particles, kernel=kernel, observed=observed,
                         source=source, hint=hint, preflight=preflight)
    record = ("simulated" if observed is None else
              real_data_record(data_array_names(plan.data) or list(observed), plan.data))
    store = open_sandwich_store(out, {**settings, "method": plan.method, "particles": plan.num_particles,
                                      "data": record}, overwrite=overwrite, discard=discard,
                                real_data=observed is not None)
    return PreparedSandwich(plan=plan, store=store, data_record=record)


def open_sandwich_store(out, settings: dict, *, overwrite: bool, discard=(), real_data: bool = False) -> RunStore:
    """The store of a sandwich run in ``out``: ``sandwich.csv`` and ``settings.json``.

    ``settings`` holds the keys of :data:`ROW_DETERMINING` (``data`` defaults to "simulated") and any
    informational ones; the store keeps ``settings["steps"]`` equal to the knob values the CSV holds. With
    ``real_data`` the settings must describe the data (not "simulated"), ``settings["bounds"]`` reads
    :data:`FORWARD_ONLY` and the CSV has the extra column ``data``.
    """
    settings = dict(settings)
    settings.setdefault("data", "simulated")
    if real_data == (settings["data"] == "simulated"):
        raise BDMCError("settings['data'] must describe the real data exactly when real_data is true")
    dtypes = {**DTYPES, CSV_COLUMN: str} if real_data else DTYPES
    store = RunStore(out, csv_name=CSV_NAME, dtypes=dtypes, key=KEY,
                     settings={**settings, "bounds": BOUNDS[real_data], "steps": []},
                     compare=ROW_DETERMINING, overwrite=overwrite, discard=discard, legacy=_legacy)
    store.update_settings(steps=_steps_of(store.rows))
    return store


def run_sandwich(key, model, plan: SandwichPlan, *, store: RunStore, steps: list[int], num_runs: int,
                 schedule: str = "auto", until_gap: float | None = None, max_steps: int = 100_000,
                 alpha: float = ALPHA, on_row: Callable[[dict], None] | None = None, progress="auto",
                 real_data: bool = False) -> SandwichRun:
    """Run :func:`bdmc.sandwich` on the rows ``store`` lacks, appending each as it finishes.

    Parameters
    ----------
    key, model
        As for :func:`bdmc.sandwich`.
    plan : SandwichPlan
        What the sandwich runs (:func:`bdmc.checks.sandwich.plan_sandwich`, or :func:`prepare_sandwich`): the
        pair, its particles and kernel, the data ``key`` simulates (or, with ``real_data``, the user's observed
        data) and their exact value; nothing of it is resolved again.
    store : RunStore
        From :func:`open_sandwich_store`.
    steps, num_runs, schedule, until_gap, max_steps, alpha, progress
        As for :func:`bdmc.sandwich`.
    on_row : callable, optional
        Called with each new row after it is saved.
    real_data : bool
        ``data`` are observed, not simulated: forward rows only (``forward_only`` of :func:`bdmc.sandwich`),
        each with ``data = "real"``, in a store opened with ``real_data=True``; ``until_gap`` is refused.

    Returns
    -------
    SandwichRun
    """
    if real_data != (CSV_COLUMN in store.columns):
        raise BDMCError("open the store with the same real_data as the run: a real-data store has the data "
                        "column")
    old = store.rows
    new: list[dict] = []

    def finished(row: dict) -> None:
        if real_data:
            row = {**row, CSV_COLUMN: REAL}
        new.append(row)
        store.settings["steps"] = _steps_of(old + new)  # settings.json states what the CSV holds
        store.append(row)
        if on_row is not None:
            on_row(row)

    result = run_plan(key, model, plan, steps=steps, num_runs=num_runs, schedule=schedule, until_gap=until_gap,
                      max_steps=max_steps, alpha=alpha, done=old, on_row=finished, progress=progress,
                      forward_only=real_data)
    table = result.table.copy()
    if real_data:
        table[CSV_COLUMN] = REAL
    # The sandwich completed the gaps of resumed half pairs and marked the alarm: the CSV says so too.
    store.rewrite(table.to_dict("records"),
                  records={"verdict": result.verdict.to_dict() if result.verdict is not None else None})
    return SandwichRun(result=result, table=table, new=len(new))


def _steps_of(rows: list[dict]) -> list[int]:
    return sorted({int(r["num_steps"]) for r in rows})


def _legacy(previous: dict | None) -> dict | None:
    if previous is not None:
        previous.setdefault("command", "sandwich")  # flat settings files of older versions: sandwich runs
        previous.setdefault("data", "simulated")  # before real data, every sandwich ran on simulated data
    return previous
