"""Rows of the decoder-model evaluation (``bdmc generative``) on disk, and the tables made from them.

One output directory holds one evaluation: ``settings.json`` (the configuration on which the rows' numbers
depend), ``rows.jsonl`` (one JSON object per finished unit, model x split x estimator x budget, appended,
flushed and synced as it finishes, so a killed run loses at most the unit it was computing), the trained
networks under ``models/`` and the arrays the figures draw under ``arrays/``. The tables are functions of the
rows alone, so a resumed run gives the table an uninterrupted one gives.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..files import to_jsonable, write_atomic
from .store import RunStore, read_jsonl

ROWS_NAME, SETTINGS_NAME = "rows.jsonl", "settings.json"
KEY = ("model", "split", "estimator", "budget")
# Columns of Table 2 (Wu et al. 2017) in our shape: the estimate and its standard error across images.
ESTIMATES = (("ais", "train"), ("ais", "test"), ("kde", "train"), ("kde", "test"), ("iwae", "train"),
             ("iwae", "test"), ("ais-encoder", "test"))


def row_key(row: Mapping[str, Any]) -> tuple:
    """The unit a row belongs to: ``(model, split, estimator, budget)``."""
    return tuple(row[k] for k in KEY)


class RowStore(RunStore):
    """``settings.json`` and the append-only ``rows.jsonl`` of one evaluation directory.

    A :class:`bdmc.experiments.store.RunStore` with rows as JSON lines keyed by :data:`KEY`: settings compared,
    a cut-off last row reported and recomputed, the same way as every other command's store.

    Parameters
    ----------
    out : path
        The directory (created and checked writable).
    settings : mapping
        The evaluation's settings, saved in ``settings.json``.
    compare : sequence of str
        Settings on which the rows depend: a resumed run must agree on each (others, such as the list of
        model kinds or AIS step counts, only add or leave out units).
    overwrite : bool
        Discard the directory's rows instead of resuming.

    Raises
    ------
    StoreError
        When the directory holds an evaluation with other settings (each difference listed), or its rows
        file is damaged before its last line.
    """

    def __init__(self, out, *, settings: Mapping[str, Any], compare: Sequence[str], overwrite: bool = False):
        super().__init__(out, jsonl_name=ROWS_NAME, json_name=SETTINGS_NAME, key=KEY, settings=to_jsonable(settings),
                         compare=compare, overwrite=overwrite)
        self.settings_file = self.json

    def get(self, model: str, split: str, estimator: str, budget: int) -> dict | None:
        """The finished row of this unit, or None."""
        return self.find((model, split, estimator, int(budget)))

    def append(self, row: Mapping[str, Any]) -> dict:
        """Append one finished row: one line, flushed and synced before this returns; the row as stored."""
        return super().append(row)[0]


def save_arrays(path: Path, **arrays) -> Path:
    """Write ``arrays`` to an ``.npz`` file atomically (:func:`bdmc.files.write_atomic`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


def load_rows(out) -> tuple[dict, list[dict]]:
    """The settings and every row of an evaluation directory (for tables and figures after the run)."""
    out = Path(out)
    body = json.loads((out / SETTINGS_NAME).read_text())
    return body["settings"], read_jsonl(out / ROWS_NAME)


def summary_of(values: Iterable[float]) -> tuple[float, float]:
    """Mean over images and its standard error across images (NaN with fewer than two)."""
    v = np.asarray(list(values), np.float64)
    if v.size == 0:
        return math.nan, math.nan
    return float(np.mean(v)), float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan


def curve_table(rows: Sequence[Mapping]) -> pd.DataFrame:
    """Forward AIS against the number of steps: one line per model, split and T (log-likelihood per image)."""
    picked = [r for r in rows if r["estimator"] == "ais"]
    frame = pd.DataFrame([{"model": r["model"], "split": r["split"], "steps": r["budget"], "mean": r["mean"],
                           "stderr": r["stderr"], "images": r["images"], "chains": r.get("chains"),
                           "sigma": r["sigma"], "acceptance": r.get("acceptance"), "seconds": r["seconds"]}
                          for r in picked],
                         columns=["model", "split", "steps", "mean", "stderr", "images", "chains", "sigma",
                                  "acceptance", "seconds"])
    return frame.sort_values(["model", "split", "steps"], kind="stable").reset_index(drop=True)


def table2(rows: Sequence[Mapping], *, models: Sequence[str], steps: int) -> pd.DataFrame:
    """Table 2 of Wu et al. (2017) in our numbers: one row per model kind, nats per image.

    Columns ``<estimator>_<split>`` (mean over images) and ``..._se`` (standard error across images) for AIS
    at ``steps`` intermediate distributions, KDE, IWAE and AIS from the encoder; ``bdmc_forward``,
    ``bdmc_reverse``, ``bdmc_gap`` (and ``bdmc_gap_se``) on simulated images, ``bdmc_alarm``; the sigma
    and KDE bandwidth every number was computed with, the IWAE k, the images evaluated and the seconds of
    all the model's rows (training included). Missing units are NaN.
    """
    out = []
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        entry: dict[str, Any] = {"model": model}
        sigma_row = next((r for r in mine if r["estimator"] == "sigma"), None)
        entry["sigma"] = sigma_row["best"] if sigma_row else math.nan
        bw = next((r for r in mine if r["estimator"] == "kde-bandwidth"), None)
        entry["bandwidth"] = bw["best"] if bw else math.nan
        for estimator, split in ESTIMATES:
            found = [r for r in mine if r["estimator"] == estimator and r["split"] == split
                     and (estimator not in ("ais", "ais-encoder") or r["budget"] == steps)]
            entry[f"{estimator}_{split}"] = found[0]["mean"] if found else math.nan
            entry[f"{estimator}_{split}_se"] = found[0]["stderr"] if found else math.nan
            if estimator == "iwae" and found:
                entry["iwae_k"] = found[0]["budget"]
        entry["images"] = next((r["images"] for r in mine if r["estimator"] == "ais"), math.nan)
        gap = next((r for r in mine if r["estimator"] == "bdmc"), None)
        for name in ("forward", "reverse"):
            entry[f"bdmc_{name}"] = gap[name] if gap else math.nan
        entry["bdmc_gap"] = gap["mean"] if gap else math.nan
        entry["bdmc_gap_se"] = gap["stderr"] if gap else math.nan
        entry["bdmc_alarm"] = gap["alarm"] if gap else None
        entry["seconds"] = float(sum(r["seconds"] for r in mine))
        out.append(entry)
    return pd.DataFrame(out)


def comparisons(rows: Sequence[Mapping], *, models: Sequence[str], steps: int) -> pd.DataFrame:
    """The paper's comparisons in our numbers, one line per model and comparison (nats per image).

    ``kde - ais`` and ``iwae - ais`` on the same images are paired: the mean of the per-image differences and
    its standard error across images (much smaller than either estimate's, since images differ far more
    than estimators). ``train - test`` of AIS compares different images: the difference of the means, its
    standard error ``sqrt(se_train^2 + se_test^2)``. AIS is taken at ``steps``.
    """
    def find(model, estimator, split):
        found = [r for r in rows if r["model"] == model and r["estimator"] == estimator and r["split"] == split
                 and (estimator != "ais" or r["budget"] == steps)]
        return found[0] if found else None

    lines = []
    for model in models:
        for split in ("train", "test"):
            ais = find(model, "ais", split)
            for other in ("kde", "iwae"):
                row = find(model, other, split)
                if ais is None or row is None:
                    continue
                diff = np.asarray(row["per_image"], np.float64) - np.asarray(ais["per_image"], np.float64)
                mean, stderr = summary_of(diff)
                lines.append({"model": model, "comparison": f"{other} - ais", "split": split, "difference": mean,
                              "stderr": stderr, "paired": True})
        train, test = find(model, "ais", "train"), find(model, "ais", "test")
        if train is not None and test is not None:
            lines.append({"model": model, "comparison": "train - test", "split": "ais",
                          "difference": train["mean"] - test["mean"],
                          "stderr": math.hypot(train["stderr"], test["stderr"]), "paired": False})
    return pd.DataFrame(lines, columns=["model", "comparison", "split", "difference", "stderr", "paired"])


def markdown_table(table: pd.DataFrame, *, steps: int) -> str:
    """Table 2 as a markdown table: ``mean ± standard error`` in nats, sigma and bandwidth beside them."""
    def pm(row, name):
        m, s = row.get(name, math.nan), row.get(f"{name}_se", math.nan)
        if m is None or not np.isfinite(m):
            return "-"
        return f"{m:.1f} ± {s:.1f}" if np.isfinite(s) else f"{m:.1f}"

    head = ["model", "sigma", f"AIS train (T={steps})", f"AIS test (T={steps})", "KDE train", "KDE test",
            "IWAE train", "IWAE test", "BDMC gap (sim.)", "alarm", "KDE bandwidth", "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        alarm = {True: "FIRED", False: "silent"}.get(r["bdmc_alarm"], "-")
        cells = [r["model"], _g(r["sigma"]), pm(r, "ais_train"), pm(r, "ais_test"), pm(r, "kde_train"),
                 pm(r, "kde_test"), pm(r, "iwae_train"), pm(r, "iwae_test"),
                 (f"{r['bdmc_gap']:.2f} ± {r['bdmc_gap_se']:.2f}" if np.isfinite(r["bdmc_gap"]) else "-"), alarm,
                 _g(r["bandwidth"]), f"{r['seconds']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _g(x) -> str:
    return f"{x:.3g}" if x is not None and np.isfinite(x) else "-"

