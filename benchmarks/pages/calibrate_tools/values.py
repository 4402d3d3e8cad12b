"""Numbers quoted by README.md, recomputed from rows.jsonl and truths.jsonl (tests/test_results_pages.py checks
them)."""

import time
from pathlib import Path

import calibrate_tools
import numpy as np
from pages.calibrate_tools.table_values import calibrations  # noqa: I001
from pages.tables import rows


def _cells(folder, default=True):
    cals = calibrations(folder)
    return {k: c for k, c in cals.items() if (k[2] == calibrate_tools.BUDGETS[k[1]][0]) == default}


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote, computed from the rows stored in ``folder``."""
    stored = rows(folder)
    truths = rows(folder, "truths.jsonl")
    default = _cells(folder)
    larger = _cells(folder, default=False)
    sizes = [len(c.rows) for c in default.values()]
    out = {"rows": len(stored), "cells": len(default), "larger_cells": len(larger),
           "k_min": min(sizes), "k_max": max(sizes),
           "miscalibrated": sum(c.verdict == "miscalibrated" for c in default.values()),
           "failed": sum(c.num_failed for c in default.values()),
           "truth_gap_median": float(np.median([abs(r["truth_upper"] - r["truth_lower"]) for r in truths])),
           "truth_gap_max": float(np.max([abs(r["truth_upper"] - r["truth_lower"]) for r in truths])),
           "load_min": min(r["load_before"] for r in stored), "load_max": max(r["load_after"] for r in stored),
           "began": time.strftime("%H:%M", time.gmtime(min(r["time"] for r in stored))),
           "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in stored)))}
    pymc = [r for r in stored if r["tool"] == "pymc-smc"]
    out["pymc_rows"] = len(pymc)
    out["pymc_no_se"] = sum(not isinstance(r["stderr"], float) or not np.isfinite(r["stderr"]) for r in pymc)
    (worst_model, worst_tool, _), worst = max(default.items(), key=lambda kv: kv[1].rmse)
    out.update({"worst_model": worst_model, "worst_tool": worst_tool, "worst_rmse": worst.rmse,
                "worst_bias": worst.bias, "worst_k": len(worst.rows),
                "worst_over_1": int((worst.ok["error"].abs() > 1).sum()), "worst_min": float(worst.ok["error"].min())})
    return out
