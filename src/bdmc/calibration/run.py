"""Simulation-based calibration of another tool's evidence: its ``log p(y)`` and stated ± on data sets simulated
from the model, against bdmc's ground truth on each.

Per data set (seed ``i``: the data are ``bdmc.simulate(fold_in(key, i), model)``, so any one reruns alone) the
truth is the model's closed form where it has one, else the midpoint of bdmc's forward and reverse estimates from
the latent that simulated the data (AIS, or the pair the sandwich picks for the model), with an interval spanning
both estimates widened by ``TRUTH_Z`` standard errors of each: the truth's own uncertainty, carried into every row
and test. The tool is a callable ``estimator(data) -> (log_z,
stderr)`` (``stderr`` NaN when it states none); one that takes a ``seed`` keyword gets the data set's seed. An
exception or a non-finite value is a failed row, kept with its message.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from ..checks.sandwich import exact_log_marginal_or_none, plan_sandwich
from ..contracts.model import simulate
from ..errors import OptionError
from ..experiments.store import read_jsonl
from ..files import append_lines, to_jsonable
from .result import Calibration


def calibrate_estimator(key, model, estimator: Callable, *, num_datasets: int = 50, label: str | None = None,
                        level: float = 0.01, truth_steps: int | None = None, truth_runs: int = 16,
                        method: str = "auto", path: str | Path | None = None, truths: str | Path | None = None,
                        client=None, progress: Any = "auto") -> Calibration:
    """Run another tool's evidence estimator on data sets simulated from the model, against bdmc's truth.

    Parameters
    ----------
    key : PRNG key
        Data set ``i`` is simulated from ``jax.random.fold_in(key, i)``; the truth's runs from a key folded from it.
    model
        A bdmc Model (built in or a PPL program) with a simulator.
    estimator : callable
        ``estimator(data) -> (log_z, stderr)``, or ``estimator(data, *, seed)``; :mod:`bdmc.calibration.adapters`
        has ready ones for bdmc's estimators, BlackJAX, dynesty, nautilus, UltraNest and PyMC.
    num_datasets : int
        K, the number of simulated data sets.
    label : str, optional
        The tool's name in rows and summaries (default: the callable's name).
    level : float
        The verdict's false-alarm level (:attr:`Calibration.verdict`).
    truth_steps, truth_runs : int
        The truth's knob (default the pair's own) and runs per direction, where the model has no closed form.
    method : str
        The truth's estimator pair (as :func:`bdmc.sandwich`'s).
    path : path, optional
        A JSON-lines file: each finished data set's row is appended as it finishes, and rows already there (same
        label and seed) are not recomputed; a truth already there for a seed (any label) is reused.
    truths : path, optional
        Another rows file of the same model and ``key`` (e.g. of another tool): its truths are reused, so tools
        calibrated one after another share one ground truth per data set.
    client : dask.distributed.Client, optional
        Run the data sets as Dask tasks (:func:`bdmc.experiments.bench.connect` starts a local one).
    progress : bool or "auto"
        A progress bar over the data sets.

    Returns
    -------
    Calibration

    Raises
    ------
    bdmc.errors.OptionError
        ``num_datasets`` below 1, ``level`` outside (0, 1), an estimator that is not callable.
    """
    if not callable(estimator):
        raise OptionError(f"estimator must be a callable data -> (log_z, stderr), got {type(estimator).__name__}")
    if int(num_datasets) != num_datasets or num_datasets < 1:
        raise OptionError(f"num_datasets must be an integer >= 1, got {num_datasets}")
    if not 0 < level < 1:
        raise OptionError(f"level must lie in (0, 1), got {level}")
    label = label or getattr(estimator, "__name__", type(estimator).__name__)
    takes_seed = _takes_seed(estimator)
    stored = read_jsonl(path) if path is not None and Path(path).exists() else []
    done = {r["seed"]: r for r in stored if r.get("label") == label}
    shared = read_jsonl(truths) if truths is not None and Path(truths).exists() else []
    truths = {r["seed"]: {k: r[k] for k in TRUTH_COLUMNS} for r in shared + stored if "truth" in r}
    todo = [i for i in range(int(num_datasets)) if i not in done]
    settings = {"truth_steps": truth_steps, "truth_runs": truth_runs, "method": method, "level": level}

    def job(i: int) -> dict:
        return calibration_row(key, model, estimator, i, label=label, takes_seed=takes_seed, truth=truths.get(i),
                               **settings)

    rows = list(done.values())
    with _progress(progress, f"calibrating {label}", len(todo)) as advance:
        for row in _run(job, todo, client):
            rows.append(row)
            if path is not None:
                append_lines(path, [json.dumps(to_jsonable(row, nonfinite="string"))])
            advance()
    table = pd.DataFrame(sorted(rows, key=lambda r: r["seed"]))
    table = table[table["seed"] < num_datasets]
    for column in ("log_z", "stderr", "truth", "truth_lower", "truth_upper", "error"):
        table[column] = pd.to_numeric(table[column], errors="coerce")
    return Calibration(label=label, rows=table.reset_index(drop=True), level=level,
                       settings={**settings, "num_datasets": int(num_datasets)})


TRUTH_COLUMNS = ("truth", "truth_lower", "truth_upper", "truth_source", "truth_seconds")
TRUTH_Z = 3.0  # the truth's interval: each estimate widened by 3 standard errors of its runs


def calibration_row(key, model, estimator, seed: int, *, label: str, takes_seed: bool, truth: dict | None = None,
                    truth_steps=None, truth_runs: int = 16, method: str = "auto", level: float = 0.01) -> dict:
    """One data set's row: the tool's value and the truth (computed unless given)."""
    data_key = jax.random.fold_in(key, seed)
    data, latent = simulate(data_key, model)
    if truth is None:
        truth = ground_truth(jax.random.fold_in(data_key, 1), model, data, latent, steps=truth_steps,
                             runs=truth_runs, method=method)
    began = time.perf_counter()
    failed, log_z, stderr = "", math.nan, math.nan
    try:
        out = estimator(data, seed=seed) if takes_seed else estimator(data)
        log_z, stderr = (float(out[0]), float(out[1])) if isinstance(out, (tuple, list)) else (float(out), math.nan)
        if not math.isfinite(log_z):
            failed = f"returned log_z = {log_z}"
    except Exception as err:  # a tool that fails on one data set is a failed row, not a failed calibration
        failed = f"{type(err).__name__}: {err}"[:500]
    seconds = time.perf_counter() - began
    return {"label": label, "seed": int(seed), "log_z": log_z, "stderr": stderr, **truth,
            "error": log_z - truth["truth"] if not failed else math.nan, "tool_seconds": seconds, "failed": failed}


def ground_truth(key, model, data, latent, *, steps=None, runs: int = 16, method: str = "auto") -> dict:
    """The truth for one simulated data set: the closed form, else from bdmc's forward and reverse estimates from
    the latent that simulated it: their midpoint, and an interval that spans both widened by ``TRUTH_Z`` standard
    errors of each (the estimates are noisy: on a near-exact sandwich they scatter on both sides of the truth)."""
    began = time.perf_counter()
    exact = exact_log_marginal_or_none(model, data)
    if exact is not None:
        value = float(exact)
        return {"truth": value, "truth_lower": value, "truth_upper": value, "truth_source": "closed form",
                "truth_seconds": time.perf_counter() - began}
    plan = plan_sandwich(key, model, data, latent, method=method)
    knob = plan.pair.default_knob if steps is None else int(steps)
    k_forward, k_reverse = jax.random.split(key)
    options = {"kernel": plan.kernel, "num_particles": plan.num_particles, "progress": False}
    lower = plan.pair.run("forward", k_forward, model, plan.data, knob=knob, num_runs=runs, **options)
    upper = plan.pair.run("reverse", k_reverse, model, plan.data, knob=knob, num_runs=runs,
                          exact_latent=plan.exact_latent, **options)
    lo, hi = float(lower.value), float(upper.value)
    se_lo, se_hi = (float(e.stderr) if math.isfinite(e.stderr) else math.inf for e in (lower, upper))
    return {"truth": (lo + hi) / 2, "truth_lower": min(lo, hi) - TRUTH_Z * se_lo,
            "truth_upper": max(lo, hi) + TRUTH_Z * se_hi,
            "truth_source": f"{plan.method} sandwich, {knob} steps x {runs} runs, widened by {TRUTH_Z:g} stderr",
            "truth_seconds": time.perf_counter() - began}


@contextlib.contextmanager
def _progress(progress, description: str, total: int):
    """``advance()`` after each data set: a bar on a terminal (``progress`` True, or "auto" on a terminal)."""
    if not (progress is True or (progress == "auto" and sys.stderr.isatty())) or total == 0:
        yield lambda: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("data sets"),
                  TimeElapsedColumn(), TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)


def _run(job, todo, client):
    if client is None:
        for i in todo:
            yield job(i)
        return
    from dask.distributed import as_completed

    futures = [client.submit(job, i, pure=False) for i in todo]
    for future in as_completed(futures):
        yield future.result()


def _takes_seed(estimator) -> bool:
    try:
        parameters = inspect.signature(estimator).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return "seed" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
