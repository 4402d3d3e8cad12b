"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them).

One row per (model, variance factor, seed), written by ``benchmarks/alarm_power.py`` under today's run-level
alarm (``fired``, ``pooled_crossing`` in nats). Names: ``<model>_<factor>_<what>`` with model ``lr``
(linear regression), ``cl`` (clustering), ``lr2`` (low rank), ``bi`` (binary) and factor ``f1_1``, ``f1_5``,
``f2``, ``f4``; ``what`` is ``runs``, ``fired``, ``hi`` (the upper end of the firing rate's exact 95% interval),
``median`` and ``largest`` (pooled crossings).
"""

import json
import statistics
from pathlib import Path

from scipy import stats

MODELS = {"lr": "linear-regression", "cl": "clustering", "lr2": "low-rank", "bi": "binary"}
FACTORS = {"f1_1": 1.1, "f1_5": 1.5, "f2": 2.0, "f4": 4.0}


def _rows(folder: Path, model=None, factor=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if (model is None or r["model"] == model) and (factor is None or r["factor"] == factor)]


def _make(model, factor):
    def runs(folder):
        return len(_rows(folder, model, factor))

    def fired(folder):
        return sum(r["fired"] for r in _rows(folder, model, factor))

    def hi(folder):
        k, n = fired(folder), runs(folder)
        return 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))

    def median(folder):
        return statistics.median(r["pooled_crossing"] for r in _rows(folder, model, factor))

    def largest(folder):
        return max(r["pooled_crossing"] for r in _rows(folder, model, factor))

    return {"runs": runs, "fired": fired, "hi": hi, "median": median, "largest": largest}


_made = {f"{m}_{f}_{what}": fn for m, model in MODELS.items() for f, factor in FACTORS.items()
         for what, fn in _make(model, factor).items()}
globals().update(_made)


def total(folder):
    """Every sandwich of the study."""
    return len(_rows(folder))


def total_fired(folder):
    """Alarms over the whole study."""
    return sum(r["fired"] for r in _rows(folder))


def below_f4(folder):
    """Sandwiches at factors 1.1 to 2 (every model)."""
    return sum(r["factor"] < 4 for r in _rows(folder))


def largest_below_f4(folder):
    """The largest pooled crossing at factors 1.1 to 2 (every model)."""
    return max(r["pooled_crossing"] for r in _rows(folder) if r["factor"] < 4)


def seconds_max(folder):
    """The longest sandwich (seconds, compilation included on each cell's first seed)."""
    return max(r["seconds"] for r in _rows(folder))


# QUOTES: the quotes the page uses, in the page's order.
QUOTES = (
    "below_f4", "largest_below_f4", "bi_f4_fired", "bi_f4_runs", "cl_f4_runs", "total_fired", "total", "lr_f1_1_hi",
    "lr_f1_1_runs", "lr_f1_1_fired", "lr_f1_1_median", "lr_f1_1_largest", "lr_f1_5_runs", "lr_f1_5_fired",
    "lr_f1_5_median", "lr_f1_5_largest", "lr_f2_runs", "lr_f2_fired", "lr_f2_median", "lr_f2_largest", "lr_f4_runs",
    "lr_f4_fired", "lr_f4_median", "lr_f4_largest", "cl_f1_1_runs", "cl_f1_1_fired", "cl_f1_1_median",
    "cl_f1_1_largest", "cl_f1_5_runs", "cl_f1_5_fired", "cl_f1_5_median", "cl_f1_5_largest", "cl_f2_runs",
    "cl_f2_fired", "cl_f2_median", "cl_f2_largest", "cl_f4_fired", "cl_f4_median", "cl_f4_largest", "lr2_f1_1_runs",
    "lr2_f1_1_fired", "lr2_f1_1_median", "lr2_f1_1_largest", "lr2_f1_5_runs", "lr2_f1_5_fired", "lr2_f1_5_median",
    "lr2_f1_5_largest", "lr2_f2_runs", "lr2_f2_fired", "lr2_f2_median", "lr2_f2_largest", "lr2_f4_runs",
    "lr2_f4_fired", "lr2_f4_median", "lr2_f4_largest", "bi_f1_1_runs", "bi_f1_1_fired", "bi_f1_1_median",
    "bi_f1_1_largest", "bi_f1_5_runs", "bi_f1_5_fired", "bi_f1_5_median", "bi_f1_5_largest", "bi_f2_runs",
    "bi_f2_fired", "bi_f2_median", "bi_f2_largest", "bi_f4_median", "bi_f4_largest", "bi_f4_hi"
)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/alarm_power`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
