"""The estimator benchmark of BDMC paper Secs. 6.2-6.4: accuracy against time, scored on BDMC ground truth.

Every (estimator, knob value) pair is one batched call running ``trials`` independent trials; its row holds
the per-trial estimates, their mean with a 95% confidence interval, the single-trial RMSE against the ground
truth, the error of the combined estimate (combined as footnote 5 prescribes), and the cost per trial. Rows
are appended to a CSV as they finish, so an interrupted sweep resumes; with a Dask client the pairs run on a
cluster and give the same numbers, because every pair's key comes from the seed, the estimator name and the
knob alone.

The ground truth never settles for less than the best available: the model's closed form where it has one
(with the AIS sandwich reported beside it), else forward and reverse AIS at the harness's own budget
``truth_steps`` (never an estimator's knob), refused when the two disagree by more than ``truth_tol`` or when
the bug alarm fires on them.

The pieces live in sibling modules: the ground truth in :mod:`bdmc.experiments.truth`, scoring in
:mod:`bdmc.experiments.scoring` and the table and its store in :mod:`bdmc.experiments.bench_store`; their public
names are importable from here too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..checks.sandwich import exact_log_marginal_or_none
from ..config import enable_x64
from ..contracts.estimate import ESTIMATORS
from ..contracts.model import simulate
from ..errors import require
from .bench_store import (
    COLUMNS,
    CSV_NAME,
    DTYPES,
    JSON_NAME,
    ROW_DETERMINING,
    load,
    open_store,
    row_context,
    rows_frame,
    sweep_settings,
)
from .scoring import (
    CONFIDENCE,
    DATA_TAG,
    PAPER_ORDER,
    THRESHOLDS,
    TRUTH_TAG,
    available,
    estimator_order,
    missing,
    run_key,
    run_one,
    score,
    time_to_rmse,
)
from .truth import (
    AIS,
    CLOSED_FORM,
    TRUTH_RUNS,
    TRUTH_STEPS,
    TRUTH_TOL,
    BenchSettingsError,
    GroundTruth,
    GroundTruthError,
    check_truth_settings,
    ground_truth,
)

__all__ = [
    "AIS", "CLOSED_FORM", "COLUMNS", "CONFIDENCE", "CSV_NAME", "DTYPES", "ESTIMATORS", "JSON_NAME", "PAPER_ORDER",
    "ROW_DETERMINING", "THRESHOLDS", "TRUTH_RUNS", "TRUTH_STEPS", "TRUTH_TOL", "BenchSettingsError", "GroundTruth",
    "GroundTruthError", "available", "check_truth_settings", "connect", "estimator_order", "ground_truth", "load",
    "missing", "run_bench", "run_key", "run_one", "score", "time_to_rmse",
]


def run_bench(key, model, *, estimators: Sequence[str] | None = None,
              knobs: Mapping[str, Sequence[int]] | None = None, trials: int = 25, data=None, exact_latent=None,
              out: str | os.PathLike | None = None, client=None, truth_steps: int = TRUTH_STEPS,
              truth_runs: int = TRUTH_RUNS, truth_tol: float = TRUTH_TOL,
              estimator_options: Mapping[str, Mapping[str, Any]] | None = None,
              overwrite: bool = False, on_row: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """Benchmark log-ML estimators against BDMC ground truth: accuracy against time (paper Secs. 6.2-6.4).

    Parameters
    ----------
    key : PRNG key or int
        Simulates the data (unless given), drives the ground truth and every run. The runs of an
        (estimator, knob) pair use ``fold_in`` of this key with the name and the knob, so any row can be
        recomputed, resumed or run on another machine with identical numbers.
    model : Model
    estimators : sequence of str, optional
        Names in :data:`ESTIMATORS`: "lw", "hme", "ais", "rev-ais", "smc", "shme", "ns", "bic", "vb", "vb+sym",
        "cms". Default: every one the model supports (:func:`available`).
    knobs : mapping, optional
        Estimator name -> knob values; an estimator not listed uses its default sweep.
    trials : int
        Independent trials per (estimator, knob), batched as the runs of one call (the paper uses 25).
    data, exact_latent : optional
        Data and the latent that generated it; simulated from ``model`` when ``data`` is None.
    out : path, optional
        Directory for ``bench.csv`` (one row appended and flushed per finished pair) and ``bench.json``
        (settings and ground truth). Rows already there are not recomputed.
    client : dask.distributed.Client, optional
        Run the pairs as tasks on this cluster (see :func:`connect`).
    truth_steps, truth_runs, truth_tol : int, int, float
        Budget of the ground-truth AIS runs and the agreement required of them (see :func:`ground_truth`);
        the closed form is the truth where the model has one, with these runs reported beside it.
    estimator_options : mapping, optional
        Estimator name -> extra keyword arguments (e.g. ``{"smc": {"num_particles": 4}}``).
    overwrite : bool
        Discard results in ``out`` made with other settings instead of refusing.
    on_row : callable, optional
        Called with each newly computed row as it finishes.

    Returns
    -------
    pandas.DataFrame
        One row per requested (estimator, knob), in request order; columns :data:`COLUMNS`.

    Raises
    ------
    GroundTruthError
        When forward and reverse AIS do not agree within ``truth_tol``.
    BenchSettingsError
        On unknown estimators, bad knobs, or an ``out`` holding another benchmark (without ``overwrite``).
    """
    key = _as_key(key)
    plan = _plan(model, available(model) if estimators is None else estimators, knobs, trials)
    check_truth_settings(num_steps=truth_steps, num_runs=truth_runs, tol=truth_tol)
    if set(estimator_options or {}) - set(ESTIMATORS):
        raise BenchSettingsError(f"estimator_options for unknown estimator(s) "
                                 f"{sorted(set(estimator_options) - set(ESTIMATORS))}")
    options = {name: dict((estimator_options or {}).get(name, {})) for name in ESTIMATORS}
    data, exact_latent, data_tag = _data(key, model, data, exact_latent)
    exact = exact_log_marginal_or_none(model, data)
    settings = sweep_settings(key, model, data_tag, trials=trials, truth_steps=truth_steps,
                              truth_runs=truth_runs, truth_tol=truth_tol, options=options,
                              truth_source=AIS if exact is None else CLOSED_FORM)
    store = open_store(Path(out), settings, overwrite=overwrite) if out is not None else None
    saved = store.records.get("truth") if store is not None else None
    truth = GroundTruth(**saved) if saved is not None else None
    if truth is None:
        truth = ground_truth(jax.random.fold_in(key, TRUTH_TAG), model, data, exact_latent,
                             num_steps=truth_steps, num_runs=truth_runs, tol=truth_tol, exact=exact)
        if store is not None:
            store.record("truth", dataclasses.asdict(truth))
    done = {(r["estimator"], r["knob"]): r for r in store.rows} if store is not None else {}
    todo = [pair for pair in plan if pair not in done]
    context = row_context(settings)
    payload = dict(model=model, data=data, exact_latent=exact_latent, trials=trials, truth=truth.value,
                   context=context)
    new: dict[tuple[str, int], dict] = {}

    def finished(row: dict) -> None:
        new[(row["estimator"], row["knob"])] = row
        if store is not None:
            store.append(row)
        if on_row is not None:
            on_row(row)

    jobs = [(name, knob, np.asarray(jax.random.key_data(run_key(key, name, knob))), options[name])
            for name, knob in todo]
    if client is None:
        for name, knob, key_data, opts in jobs:
            finished(run_one(name, knob, key_data, options=opts, **payload))
    else:
        _run_dask(client, jobs, payload, finished)
    rows = {**done, **new}
    return rows_frame([rows[pair] for pair in plan])


def connect(scheduler: str = "local"):
    """A Dask client for :func:`run_bench`.

    Parameters
    ----------
    scheduler : str
        ``"local"`` starts a LocalCluster of threads in this process (enough on a small machine); anything
        else is the address of a running scheduler, e.g. ``"tcp://10.0.0.5:8786"``.

    Returns
    -------
    dask.distributed.Client
        Close it when done (``client.close()``); a local cluster closes with it.

    Raises
    ------
    bdmc.MissingExtraError
        When ``dask.distributed`` is not installed (``pip install -e '.[distributed]'``).
    """
    distributed = require("dask.distributed", extra="distributed")
    if scheduler == "local":
        # Threads in this process: JAX already parallelizes within a call, and nothing needs pickling.
        return distributed.Client(processes=False, dashboard_address=None)
    return distributed.Client(scheduler)


def _run_dask(client, jobs, payload, finished) -> None:
    distributed = require("dask.distributed", extra="distributed")
    if not jobs:
        return
    [shared] = client.scatter([payload], broadcast=True)  # one copy of model and data per worker
    x64 = bool(jax.config.jax_enable_x64)
    futures = [client.submit(_run_task, name, knob, key_data, opts, shared, x64, pure=False)
               for name, knob, key_data, opts in jobs]
    for future in distributed.as_completed(futures):
        finished(future.result())


def _run_task(name, knob, key_data, opts, payload, x64: bool) -> dict:
    # A worker in another process starts in JAX's float32 default: run in the caller's dtype, or the
    # float64 data would be cast down and the rows would differ from the in-process ones.
    enable_x64(x64)
    return run_one(name, knob, key_data, options=opts, **payload)


def _as_key(key):
    if isinstance(key, (int, np.integer)):
        return jax.random.key(int(key))
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(key)  # a legacy uint32 key
    return key


def _plan(model, estimators, knobs, trials) -> list[tuple[str, int]]:
    unknown = [name for name in estimators if name not in ESTIMATORS]
    if unknown or not len(estimators):
        raise BenchSettingsError(f"unknown estimator(s) {unknown}; choose from {list(ESTIMATORS)}")
    for name in estimators:
        if missing(ESTIMATORS[name], model):
            raise BenchSettingsError(f"estimator {name!r} cannot run on {type(model).__name__}: it needs "
                                     f"{', '.join(missing(ESTIMATORS[name], model))}; supported here: "
                                     f"{available(model)}")
    extra = set(knobs or {}) - set(estimators)
    if extra:
        raise BenchSettingsError(f"knobs given for estimator(s) not benchmarked: {sorted(extra)}")
    if int(trials) != trials or trials < 2:
        raise BenchSettingsError(f"trials must be an integer >= 2 (an RMSE and an interval need two), got {trials}")
    plan = []
    for name in dict.fromkeys(estimators):
        values = list((knobs or {}).get(name, ESTIMATORS[name].knobs))
        if not values or any(int(v) != v or v < 1 for v in values):
            raise BenchSettingsError(f"knobs of {name!r} must be positive integers, got {values}")
        plan += [(name, int(v)) for v in dict.fromkeys(values)]
    return plan


def _data(key, model, data, exact_latent):
    """Data and exact latent as NumPy (they travel to workers), and a tag identifying them in the settings."""
    if data is None:
        if exact_latent is not None:
            raise BenchSettingsError("exact_latent given without data")
        data, exact_latent = simulate(jax.random.fold_in(key, DATA_TAG), model)
        tag = "simulated"
    elif exact_latent is None:
        raise BenchSettingsError("the ground truth needs the exact latent that generated the given data")
    else:
        tag = None
    data, exact_latent = jax.tree.map(np.asarray, (data, exact_latent))
    if tag is None:
        digest = hashlib.sha256()
        for leaf in jax.tree.leaves((data, exact_latent)):
            digest.update(np.ascontiguousarray(leaf).tobytes())
        tag = f"sha256:{digest.hexdigest()[:16]}"
    return data, exact_latent, tag
