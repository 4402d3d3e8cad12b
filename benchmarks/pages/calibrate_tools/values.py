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
    out = {"rows": len(stored), "cells": len(default), "larger_cells": len(larger),
           "miscalibrated": sum(c.verdict == "miscalibrated" for c in default.values()),
           "failed": sum(c.num_failed for c in default.values()),
           "truth_gap_median": float(np.median([abs(r["truth_upper"] - r["truth_lower"]) for r in truths])),
           "truth_gap_max": float(np.max([abs(r["truth_upper"] - r["truth_lower"]) for r in truths])),
           "load_min": min(r["load_before"] for r in stored), "load_max": max(r["load_after"] for r in stored),
           "began": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(min(r["time"] for r in stored))),
           "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in stored)))}
    full = sorted({k[1] for k, c in default.items() if len(c.rows) >= 50})
    out["full_tools"] = ", ".join(full)
    out["full_count"] = len(full)
    out["full_cells"] = sum(len(c.rows) >= 50 for c in default.values())
    short = {k: c for k, c in default.items() if len(c.rows) < 50}
    short_sizes = [len(c.rows) for c in short.values()] or [0]
    out["short_tools"] = ", ".join(sorted({k[1] for k in short})) or "no tool"
    out["short_k_min"], out["short_k_max"] = min(short_sizes), max(short_sizes)
    out["unclean_commits"] = ", ".join(sorted({r["commit"] for r in stored if not r.get("clean_tree", True)})) or "none"
    out["short_cells"] = "; ".join(f"{k[1]} on {k[0]} ({len(c.rows)})" for k, c in sorted(short.items())) or "none"
    larger_sizes = [len(c.rows) for c in larger.values()] or [0]
    lo, hi = min(larger_sizes), max(larger_sizes)
    out["larger_k"] = f"{lo}" if lo == hi else f"{lo} to {hi}"
    out["larger_todo"] = "" if lo >= 50 else ", and the larger budgets at K = 50"
    out.update({
                "larger_tools": ", ".join(sorted({k[1] for k in larger})),
                "larger_miscalibrated": sum(c.verdict == "miscalibrated" for c in larger.values()),
                "miscalibrated_cells": "; ".join(f"{k[1]} on {k[0]}" for k, c in sorted(default.items())
                                                 if c.verdict == "miscalibrated") or "none",
                "larger_miscalibrated_cells": "; ".join(f"{k[1]} ({k[2]}) on {k[0]}" for k, c in sorted(larger.items())
                                                        if c.verdict == "miscalibrated") or "none"})
    pymc = [r for r in stored if r["tool"] == "pymc-smc"]
    out["pymc_rows"] = len(pymc)
    out["pymc_no_se"] = sum(not isinstance(r["stderr"], float) or not np.isfinite(r["stderr"]) for r in pymc)
    (worst_model, worst_tool, _), worst = max(default.items(), key=lambda kv: kv[1].rmse)
    out.update({"worst_model": worst_model, "worst_tool": worst_tool, "worst_rmse": worst.rmse,
                "worst_bias": worst.bias, "worst_k": len(worst.rows),
                "worst_over_1": int((worst.ok["error"].abs() > 1).sum()), "worst_min": float(worst.ok["error"].min())})
    return out
