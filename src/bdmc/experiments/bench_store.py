"""The benchmark's store and table: columns, the settings a sweep must agree on to resume, and reading it back.

Rows are appended to ``bench.csv`` as they finish and the settings and ground truth kept in ``bench.json``
(through :class:`bdmc.experiments.store.RunStore`), so an interrupted sweep resumes.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from ..files import json_default
from .scoring import estimator_order
from .store import RunStore, StoreError
from .truth import AIS, BenchSettingsError, GroundTruth

CSV_NAME, JSON_NAME = "bench.csv", "bench.json"
# Column -> dtype: fresh rows and rows read back from the CSV are coerced alike, so a resumed table equals
# the table of an uninterrupted run.
DTYPES = {
    "estimator": str, "label": str, "knob_name": str, "knob": "int64", "bound": str, "combine": str,
    "trials": "int64", "mean": float, "stderr": float, "ci_low": float, "ci_high": float, "combined": float,
    "truth": float, "bias": float, "rmse": float, "combined_error": float, "seconds": float,
    "seconds_batch": float, "compile_seconds": float, "evals": float, "n_evals": "int64",
    "trial_estimates": str, "model": str, "model_options": str, "seed": str, "data": str,
    "truth_steps": "int64", "truth_runs": "int64", "truth_tol": float, "estimator_options": str, "x64": bool,
    "jax_version": str, "numpy_version": str, "bdmc_version": str,
}
COLUMNS = tuple(DTYPES)
# Settings on which every row's numbers depend; a resumed sweep must agree on all of them.
ROW_DETERMINING = ("model", "model_options", "seed", "data", "trials", "truth_steps", "truth_runs",
                   "truth_tol", "truth_source", "estimator_options", "x64")
_STORE_TYPES = {c: {"int64": int}.get(t, t) for c, t in DTYPES.items()}


def sweep_settings(key, model, data_tag, *, trials, truth_steps, truth_runs, truth_tol, options,
                   truth_source) -> dict:
    """The settings a sweep is stored with, and must agree on to resume (:data:`ROW_DETERMINING`).

    Parameters
    ----------
    key : jax.Array
        The sweep's key (its words are stored).
    model : Model
        Recorded by type and options (its dataclass fields, else its repr).
    data_tag : str
        Where the data came from: ``"simulated"``, or ``"sha256:..."`` of the given data.
    trials, truth_steps, truth_runs : int
    truth_tol : float
    options : dict
        Estimator name -> options; only the estimators given options are recorded.
    truth_source : str

    Returns
    -------
    dict
        JSON-ready settings; ``x64`` records whether float64 is on.
    """
    model_options = dataclasses.asdict(model) if dataclasses.is_dataclass(model) else repr(model)
    return {"model": type(model).__name__, "model_options": _json(model_options),
            "seed": _json([int(x) for x in np.asarray(jax.random.key_data(key)).ravel()]), "data": data_tag,
            "trials": int(trials), "truth_steps": int(truth_steps), "truth_runs": int(truth_runs),
            "truth_tol": float(truth_tol), "truth_source": truth_source, "estimator_options": _options_json(options),
            "x64": bool(jax.config.jax_enable_x64)}


def row_context(settings: dict) -> dict:
    """Columns every row carries: the settings and the library versions.

    Parameters
    ----------
    settings : dict
        From :func:`sweep_settings`.

    Returns
    -------
    dict
        Column -> value, for every settings column of :data:`COLUMNS` but ``trials``, and the versions of
        JAX, NumPy and bdmc.
    """
    from ..version import __version__

    return {**{k: settings[k] for k in COLUMNS if k in settings and k != "trials"},
            "jax_version": jax.__version__, "numpy_version": np.__version__, "bdmc_version": __version__}


def _options_json(options) -> str:
    """Estimator options as settings: only the estimators given options, so adding an estimator to the registry
    (or to a sweep) leaves an existing sweep resumable."""
    return _json({name: opts for name, opts in options.items() if opts})


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=json_default)


def rows_frame(rows: list[dict]) -> pd.DataFrame:
    """The benchmark table of ``rows``: the columns :data:`COLUMNS` in order, coerced to :data:`DTYPES`.

    Parameters
    ----------
    rows : list of dict

    Returns
    -------
    pandas.DataFrame
    """
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
    store = open_store(Path(out), body["settings"], overwrite=False)
    table = rows_frame(store.rows)
    order = {name: i for i, name in enumerate(estimator_order())}
    table = table.sort_values(["estimator", "knob"], key=lambda c: c.map(order) if c.name == "estimator" else c,
                              kind="stable").reset_index(drop=True)
    saved = store.records.get("truth")
    return table, GroundTruth(**saved) if saved is not None else None


def open_store(out: Path, settings: dict, *, overwrite: bool) -> RunStore:
    """The sweep's store: settings and ground truth in ``bench.json``, rows in the append-only ``bench.csv``.

    Parameters
    ----------
    out : Path
        The sweep's directory.
    settings : dict
        From :func:`sweep_settings`; a stored sweep must agree on its :data:`ROW_DETERMINING` keys.
    overwrite : bool
        Start afresh rather than resume.

    Returns
    -------
    bdmc.experiments.store.RunStore

    Raises
    ------
    bdmc.experiments.truth.BenchSettingsError
        When the stored sweep's settings differ from ``settings`` (and ``overwrite`` is false).
    """
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
