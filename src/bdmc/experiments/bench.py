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
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jax
import numpy as np
import pandas as pd
from scipy import stats

from ..errors import BDMCError, require
from ..checks.alarm import bug_alarm
from ..checks.sandwich import exact_log_marginal_or_none
from ..contracts.capabilities import missing_methods
from ..contracts.estimate import ESTIMATORS, EstimatorInfo, combine_runs
from ..contracts.model import simulate
from ..core.ais import default_kernel, forward_ais, reverse_ais
from .. import estimators as _register_estimators  # noqa: F401  (registers every estimator)
from .store import RunStore, StoreError

CSV_NAME, JSON_NAME = "bench.csv", "bench.json"
THRESHOLDS = (10.0, 1.0)  # nats: the paper's accuracy target (Sec. 6.3) and a stricter one
CONFIDENCE = 0.95
TRUTH_STEPS, TRUTH_CHAINS, TRUTH_TOL = 10_000, 25, 1.0  # the ground truth's own budget, not an estimator's
CLOSED_FORM, AIS = "closed form", "AIS"  # where the ground truth comes from
# fold_in tags separating the key streams of the data, the ground truth and the scored runs.
_DATA_TAG, _TRUTH_TAG, _RUNS_TAG = 0, 1, 2


class GroundTruthError(BDMCError, RuntimeError):
    """Forward and reverse AIS disagree by more than the tolerance: there is no ground truth to score against."""


class BenchSettingsError(BDMCError, ValueError):
    """An output directory holds a benchmark made with other settings, or the request is malformed."""


# The paper's order of estimators (tables and figures); estimators registered later follow in their own order.
PAPER_ORDER = ("lw", "hme", "ais", "rev-ais", "smc", "shme", "ns", "bic", "vb", "vb+sym", "cms")


def estimator_order() -> list[str]:
    """Names in :data:`~bdmc.contracts.ESTIMATORS`, the paper's first."""
    return sorted(ESTIMATORS, key=lambda n: (PAPER_ORDER.index(n) if n in PAPER_ORDER else len(PAPER_ORDER), n))


def missing(info: EstimatorInfo, model) -> list[str]:
    """What ``model`` (or its default kernel) lacks for estimator ``info``; empty when it can run."""
    out = [f"{type(model).__name__}.{m}" for p in info.requires for m in missing_methods(model, p)]
    if info.kernel_requires:
        kernel = default_kernel(model)
        out += [f"{type(kernel).__name__}.{m}" for p in info.kernel_requires for m in missing_methods(kernel, p)]
    return out


def available(model) -> list[str]:
    """Names of the registered estimators that can run on ``model`` (the default of a sweep)."""
    return [name for name in estimator_order() if not missing(ESTIMATORS[name], model)]

# Column -> dtype: fresh rows and rows read back from the CSV are coerced alike, so a resumed table equals
# the table of an uninterrupted run.
DTYPES = {
    "estimator": str, "label": str, "knob_name": str, "knob": "int64", "bound": str, "combine": str,
    "trials": "int64", "mean": float, "stderr": float, "ci_low": float, "ci_high": float, "combined": float,
    "truth": float, "bias": float, "rmse": float, "combined_error": float, "seconds": float,
    "seconds_batch": float, "compile_seconds": float, "evals": float, "n_evals": "int64",
    "trial_estimates": str, "model": str, "model_options": str, "seed": str, "data": str,
    "truth_steps": "int64", "truth_chains": "int64", "truth_tol": float, "estimator_options": str, "x64": bool,
    "jax_version": str, "numpy_version": str, "bdmc_version": str,
}
COLUMNS = tuple(DTYPES)
# Settings on which every row's numbers depend; a resumed sweep must agree on all of them.
ROW_DETERMINING = ("model", "model_options", "seed", "data", "trials", "truth_steps", "truth_chains",
                   "truth_tol", "truth_source", "estimator_options", "x64")
_STORE_TYPES = {c: {"int64": int}.get(t, t) for c, t in DTYPES.items()}


# ----------------------------------------------------------------------------------------- ground truth


@dataclass(frozen=True)
class GroundTruth:
    """The ground truth of a benchmark: the closed form where the model has one, else BDMC (paper Sec. 6.4).

    Attributes
    ----------
    value : float
        The truth the estimators are scored against: ``exact`` when ``source`` is ``"closed form"``, else
        ``(forward + reverse) / 2``.
    forward, reverse : float
        Combined forward (lower) and reverse (upper) AIS estimates at the ground truth's own budget.
    num_steps, num_chains : int
        That budget.
    tol : float
        The agreement required of ``reverse - forward``, in nats, when AIS is the truth.
    seconds : float
        Wall time of both AIS runs, compilation excluded.
    source : {"closed form", "AIS"}
        Where ``value`` comes from.
    exact : float or None
        The model's closed-form log p(y), when it has one.
    alarm : dict or None
        The bug alarm's verdict on the two AIS runs (:meth:`bdmc.checks.BugAlarm.to_dict`).
    """

    value: float
    forward: float
    reverse: float
    num_steps: int
    num_chains: int
    tol: float
    seconds: float
    source: str = AIS  # files written before the closed form was used hold AIS truths
    exact: float | None = None
    alarm: dict | None = None

    @property
    def gap(self) -> float:
        """``reverse - forward``: by the sandwich, the AIS truth's error is at most about this (Sec. 4.1)."""
        return self.reverse - self.forward

    @property
    def ais(self) -> float:
        """The AIS ground truth ``(forward + reverse) / 2``, reported beside a closed form."""
        return 0.5 * (self.forward + self.reverse)

    @property
    def ais_agrees(self) -> bool:
        """Forward and reverse AIS lie within ``tol`` of each other."""
        return abs(self.gap) <= self.tol


def ground_truth(key, model, data, exact_latent, *, num_steps: int = TRUTH_STEPS, num_chains: int = TRUTH_CHAINS,
                 tol: float = TRUTH_TOL, exact: float | None = None) -> GroundTruth:
    """The closed form when given, else forward and reverse AIS accepted only when they agree.

    Forward and reverse AIS run in both cases: beside a closed form they are reported (and must not raise the
    bug alarm); without one their average is the truth, refused when they are more than ``tol`` apart.

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and data simulated from it.
    exact_latent : pytree
        The latent that generated ``data`` (an exact posterior sample), where reverse AIS starts.
    num_steps, num_chains : int
        The largest AIS budget: intermediate distributions and chains per direction.
    tol : float
        Largest accepted distance, in nats, between the combined forward and reverse estimates when they are
        the truth.
    exact : float, optional
        The model's closed-form log p(y) for ``data`` (see :func:`bdmc.checks.sandwich.exact_log_marginal_or_none`).

    Returns
    -------
    GroundTruth

    Raises
    ------
    GroundTruthError
        When the bug alarm fires on the two runs, or (without a closed form) when they are more than ``tol``
        nats apart: the harness then refuses to score.
    """
    check_truth_settings(num_steps=num_steps, num_chains=num_chains, tol=tol)
    k_fwd, k_rev = jax.random.split(key)
    lower = forward_ais(k_fwd, model, data, num_steps=num_steps, num_runs=num_chains, progress=False)
    upper = reverse_ais(k_rev, model, data, exact_latent=exact_latent, num_steps=num_steps, num_runs=num_chains,
                        progress=False)
    verdict = bug_alarm(lower, upper)
    if verdict.fired:
        raise GroundTruthError(f"no ground truth: the bug alarm fired on the ground-truth runs at T={num_steps}; "
                               f"the harness refuses to score. {verdict.message()}")
    distance = abs(upper.value - lower.value)
    if exact is None and not distance <= tol:  # also refuses NaN
        raise GroundTruthError(
            f"no ground truth: forward AIS ({lower.value:.4f}) and reverse AIS ({upper.value:.4f}) at "
            f"T={num_steps} with {num_chains} chains are {distance:.4g} nats apart, more than the tolerance "
            f"{tol:g}; the harness refuses to score against it. Raise the ground-truth budget (truth_steps).")
    ais = 0.5 * (lower.value + upper.value)
    return GroundTruth(value=float(exact) if exact is not None else ais, forward=lower.value, reverse=upper.value,
                       num_steps=int(num_steps), num_chains=int(num_chains), tol=float(tol),
                       seconds=lower.seconds + upper.seconds, source=CLOSED_FORM if exact is not None else AIS,
                       exact=None if exact is None else float(exact), alarm=verdict.to_dict())


def check_truth_settings(*, num_steps, num_chains, tol) -> None:
    """Refuse a ground-truth budget that cannot give a truth, before any work.

    Raises
    ------
    BenchSettingsError
    """
    if int(num_steps) != num_steps or num_steps < 2:
        raise BenchSettingsError(f"truth_steps (--truth-steps) must be an integer >= 2, got {num_steps}")
    if int(num_chains) != num_chains or num_chains < 1:
        raise BenchSettingsError(f"truth_chains (--truth-chains) must be an integer >= 1, got {num_chains}")
    if not (tol > 0 and math.isfinite(tol)):
        raise BenchSettingsError(f"truth_tol (--truth-tol) must be a positive number of nats, got {tol}")


# ----------------------------------------------------------------------------------------- scoring


def score(trials, truth: float, rule: str) -> dict[str, float]:
    """Mean with its 95% confidence interval, single-trial RMSE and combined error of per-trial estimates.

    The interval is for the expected single-trial estimate (Student t), not for ``log p(y)`` itself.
    """
    x = np.asarray(trials, dtype=np.float64)
    mean = float(np.mean(x))
    stderr = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, x.size - 1)) * stderr if x.size > 1 else math.nan
    combined = combine_runs(x, rule)
    return {"mean": mean, "stderr": stderr, "ci_low": mean - half, "ci_high": mean + half, "combined": combined,
            "truth": float(truth), "bias": mean - truth, "rmse": float(np.sqrt(np.mean((x - truth) ** 2))),
            "combined_error": combined - truth}


def run_key(key, name: str, knob: int):
    """The key of one (estimator, knob) batch: a function of the seed, the name and the knob only."""
    name_tag = zlib.crc32(name.encode()) & 0x7FFFFFFF  # stable across processes, unlike hash()
    return jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, _RUNS_TAG), name_tag), int(knob))


def run_one(name: str, knob: int, key_data, model, data, exact_latent, *, trials: int, truth: float,
            options: Mapping[str, Any], context: Mapping[str, Any]) -> dict:
    """One batched call of estimator ``name`` at ``knob`` with ``trials`` runs, scored into a table row.

    ``key_data`` is the raw data of the key from :func:`run_key` (plain arrays travel to Dask workers).
    """
    spec = ESTIMATORS[name]
    key = jax.random.wrap_key_data(np.asarray(key_data))
    quiet = {"progress": False} if "progress" in inspect.signature(spec.fn).parameters else {}
    est = spec(key, model, data, **quiet, **options, exact_latent=exact_latent if spec.needs_exact else None,
               **{spec.knob: int(knob), "num_runs": int(trials)})
    runs = np.asarray(est.runs, dtype=np.float64)
    if runs.size != trials:
        raise BDMCError(f"estimator {name!r} returned {runs.size} runs for {trials} trials")
    return {"estimator": name, "label": spec.label, "knob_name": spec.knob, "knob": int(knob),
            "bound": spec.bound or "neither", "combine": spec.combine, "trials": int(trials),
            **score(runs, truth, spec.combine),
            "seconds": est.seconds / trials, "seconds_batch": est.seconds, "compile_seconds": est.compile_seconds,
            "evals": est.n_evals / trials, "n_evals": int(est.n_evals),
            "trial_estimates": json.dumps([float(r) for r in runs]), **context}


def time_to_rmse(table: pd.DataFrame, *, thresholds: Sequence[float] = THRESHOLDS) -> pd.DataFrame:
    """Per estimator and threshold, the first knob value (in increasing order) whose single-trial RMSE is below it.

    Parameters
    ----------
    table : pandas.DataFrame
        A table from :func:`run_bench` (columns ``estimator``, ``knob``, ``rmse``, ``seconds``, ``evals``).
    thresholds : sequence of float
        RMSE targets in nats (paper Sec. 6.3 argues for 10).

    Returns
    -------
    pandas.DataFrame
        One row per (estimator, threshold): ``reached``, and the ``knob``, ``seconds`` per trial, ``evals``
        per trial and ``rmse`` of the first knob reaching it (missing when none does).
    """
    rows = []
    for name in pd.unique(table["estimator"]):
        sweep = table[table["estimator"] == name].sort_values("knob")
        for threshold in thresholds:
            hit = sweep[sweep["rmse"] < threshold]
            first = hit.iloc[0] if len(hit) else None
            rows.append({"estimator": name, "threshold": float(threshold), "reached": first is not None,
                         "knob": int(first["knob"]) if first is not None else pd.NA,
                         "seconds": float(first["seconds"]) if first is not None else math.nan,
                         "evals": float(first["evals"]) if first is not None else math.nan,
                         "rmse": float(first["rmse"]) if first is not None else math.nan})
    frame = pd.DataFrame(rows, columns=["estimator", "threshold", "reached", "knob", "seconds", "evals", "rmse"])
    return frame.astype({"knob": "Int64"})


# ----------------------------------------------------------------------------------------- the sweep


def run_bench(key, model, *, estimators: Sequence[str] | None = None,
              knobs: Mapping[str, Sequence[int]] | None = None, trials: int = 25, data=None, exact_latent=None,
              out: str | os.PathLike | None = None, client=None, truth_steps: int = TRUTH_STEPS,
              truth_chains: int = TRUTH_CHAINS, truth_tol: float = TRUTH_TOL, estimator_options: Mapping[str, Mapping[str, Any]] | None = None,
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
    truth_steps, truth_chains, truth_tol : int, int, float
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
    check_truth_settings(num_steps=truth_steps, num_chains=truth_chains, tol=truth_tol)
    if set(estimator_options or {}) - set(ESTIMATORS):
        raise BenchSettingsError(f"estimator_options for unknown estimator(s) "
                                 f"{sorted(set(estimator_options) - set(ESTIMATORS))}")
    options = {name: dict((estimator_options or {}).get(name, {})) for name in ESTIMATORS}
    data, exact_latent, data_tag = _data(key, model, data, exact_latent)
    exact = exact_log_marginal_or_none(model, data)
    settings = _settings(key, model, data_tag, trials=trials, truth_steps=truth_steps, truth_chains=truth_chains,
                         truth_tol=truth_tol, options=options, truth_source=AIS if exact is None else CLOSED_FORM)
    store = _open_store(Path(out), settings, overwrite=overwrite) if out is not None else None
    saved = store.records.get("truth") if store is not None else None
    truth = GroundTruth(**saved) if saved is not None else None
    if truth is None:
        truth = ground_truth(jax.random.fold_in(key, _TRUTH_TAG), model, data, exact_latent,
                             num_steps=truth_steps, num_chains=truth_chains, tol=truth_tol, exact=exact)
        if store is not None:
            store.record("truth", dataclasses.asdict(truth))
    done = {(r["estimator"], r["knob"]): r for r in store.rows} if store is not None else {}
    todo = [pair for pair in plan if pair not in done]
    context = _context(settings)
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
    return _frame([rows[pair] for pair in plan])


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
        When ``dask.distributed`` is not installed (``pip install 'bdmc[distributed]'``).
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
    futures = [client.submit(_run_task, name, knob, key_data, opts, shared, pure=False)
               for name, knob, key_data, opts in jobs]
    for future in distributed.as_completed(futures):
        finished(future.result())


def _run_task(name, knob, key_data, opts, payload) -> dict:
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
        data, exact_latent = simulate(jax.random.fold_in(key, _DATA_TAG), model)
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


def _settings(key, model, data_tag, *, trials, truth_steps, truth_chains, truth_tol, options, truth_source) -> dict:
    model_options = dataclasses.asdict(model) if dataclasses.is_dataclass(model) else repr(model)
    return {"model": type(model).__name__, "model_options": _json(model_options),
            "seed": _json([int(x) for x in np.asarray(jax.random.key_data(key)).ravel()]), "data": data_tag,
            "trials": int(trials), "truth_steps": int(truth_steps), "truth_chains": int(truth_chains),
            "truth_tol": float(truth_tol), "truth_source": truth_source, "estimator_options": _options_json(options),
            "x64": bool(jax.config.jax_enable_x64)}


def _context(settings: dict) -> dict:
    """Columns every row carries: the settings and the library versions."""
    from ..version import __version__

    return {**{k: settings[k] for k in COLUMNS if k in settings and k != "trials"},
            "jax_version": jax.__version__, "numpy_version": np.__version__, "bdmc_version": __version__}


def _options_json(options) -> str:
    """Estimator options as settings: only the estimators given options, so adding an estimator to the registry
    (or to a sweep) leaves an existing sweep resumable."""
    return _json({name: opts for name, opts in options.items() if opts})


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v))


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype(DTYPES).reset_index(drop=True)


def load(out: str | os.PathLike) -> tuple[pd.DataFrame, GroundTruth | None]:
    """Every row of the benchmark stored in ``out`` (all estimators run there, in registry order) and its truth.

    Parameters
    ----------
    out : path
        A directory written by :func:`run_bench`.

    Returns
    -------
    (pandas.DataFrame, GroundTruth or None)
    """
    body = json.loads((Path(out) / JSON_NAME).read_text())
    store = _open_store(Path(out), body["settings"], overwrite=False)
    table = _frame(store.rows)
    order = {name: i for i, name in enumerate(estimator_order())}
    table = table.sort_values(["estimator", "knob"], key=lambda c: c.map(order) if c.name == "estimator" else c,
                              kind="stable").reset_index(drop=True)
    saved = store.records.get("truth")
    return table, GroundTruth(**saved) if saved is not None else None


def _open_store(out: Path, settings: dict, *, overwrite: bool) -> RunStore:
    """The sweep's store: settings and ground truth in ``bench.json``, rows in the append-only ``bench.csv``."""
    try:
        return RunStore(out, csv_name=CSV_NAME, json_name=JSON_NAME, dtypes=_STORE_TYPES, key=("estimator", "knob"),
                        settings=settings, compare=ROW_DETERMINING, overwrite=overwrite,
                        discard=("summary.csv", "bench.png"), legacy=_legacy)
    except StoreError as err:
        raise BenchSettingsError(str(err)) from None


def _legacy(previous: dict | None) -> dict | None:
    """Settings saved by older versions: estimator options listed every estimator; the truth was always AIS."""
    if previous is None:
        return None
    if isinstance(previous.get("estimator_options"), str):
        previous["estimator_options"] = _options_json(json.loads(previous["estimator_options"]))
    previous.setdefault("truth_source", AIS)
    return previous
