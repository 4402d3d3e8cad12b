"""Numbers quoted by README.md, recomputed from rows.jsonl and rows_before.jsonl (tests/test_results_pages.py checks
them)."""

import json
import time
from pathlib import Path

import numpy as np

LR, GM, SHORT = "linear regression", "Gaussian mean", "linear regression, T = 100"


def _rows(folder: Path, model=None, name="rows.jsonl"):
    rows = [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]
    return [r for r in rows if model is None or r["model"] == model]


def _called(rows, shift, tier=None):
    want = "too high" if shift.startswith("+") else "too low"
    return sum(r["shifted"][shift]["verdict"] == want and (tier is None or r["shifted"][shift]["tier"] == tier)
               for r in rows)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote, computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/check_estimate_level`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    rows, before = _rows(folder), _rows(folder, name="rows_before.jsonl")
    out = {"checks": len(rows), "false_verdicts": sum(r["verdict"] != "consistent" for r in rows),
           "checks_before": len(before), "false_before": sum(r["verdict"] != "consistent" for r in before),
           "before_flag_3": sum(r["shifted"][s] != "consistent" for r in before for s in ("-3", "+3")),
           "before_flag_1": sum(r["shifted"][s] != "consistent" for r in before for s in ("-1", "+1")),
           "before_verdicts_3": 2 * len(before),
           "load_min": min(r["load_before"] for r in rows), "load_max": max(r["load_after"] for r in rows),
           "commit": sorted({r["commit"] for r in rows})[0],
           "began": time.strftime("%H:%M", time.gmtime(min(r["time"] for r in rows))),
           "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in rows)))}
    for tag, name in (("lr", LR), ("gm", GM), ("short", SHORT)):
        cell = _rows(folder, name)
        out[f"{tag}_false"] = sum(r["verdict"] != "consistent" for r in cell)
        out[f"{tag}_seeds"] = len(cell)
        out[f"{tag}_low1_certified"] = _called(cell, "-1", "certified")
        out[f"{tag}_high1_calibrated"] = _called(cell, "+1", "calibrated")
        out[f"{tag}_low1_any"] = _called(cell, "-1")
        out[f"{tag}_low05_any"] = _called(cell, "-0.5")
        out[f"{tag}_high05_any"] = _called(cell, "+0.5")
        out[f"{tag}_slack"] = float(np.median([r["exact"] - r["certified_lower"] for r in cell]))
    out["calibrated_false"] = sum(r["tier"] == "calibrated" for r in rows)
    out["lr_upper_markov"] = float(np.median([r["certified_upper"] - r["upper"] for r in _rows(folder, LR)]))
    return out
