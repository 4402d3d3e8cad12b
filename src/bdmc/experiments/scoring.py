"""Which estimators run on a model, one scored (estimator, knob) batch, and the time-to-RMSE summary.

Every (estimator, knob) pair is one batched call running ``trials`` independent trials, keyed by the seed, the
estimator name and the knob alone (:func:`run_key`); its row holds the per-trial estimates, their mean with a
95% confidence interval, the single-trial RMSE against the ground truth, the error of the combined estimate
(combined as footnote 5 prescribes), and the cost per trial.
"""

from __future__ import annotations

import inspect
import json
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pandas as pd
from scipy import stats

from .. import estimators as _register_estimators  # noqa: F401  (registers every estimator)
from ..contracts.capabilities import missing_methods
from ..contracts.estimate import ESTIMATORS, EstimatorInfo, combine_runs
from ..core.ais import default_kernel
from ..errors import BDMCError

THRESHOLDS = (10.0, 1.0)  # nats: the paper's accuracy target (Sec. 6.3) and a stricter one
CONFIDENCE = 0.95
# fold_in tags separating the key streams of the data, the ground truth and the scored runs (shared with the
# benchmark harness, bdmc.experiments.bench).
DATA_TAG, TRUTH_TAG, RUNS_TAG = 0, 1, 2


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
    return jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, RUNS_TAG), name_tag), int(knob))


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
