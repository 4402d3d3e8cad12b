"""The values of ``calibrate_tools``'s table: each tool on each model, from the stored rows, through
``bdmc.calibration.Calibration`` (the figures a user of ``bdmc calibrate`` sees)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pages.tables import rows

from bdmc.calibration import Calibration

LEVEL = 0.01


def calibrations(folder: Path) -> dict:
    """``{(model, tool, budget): Calibration}`` over the stored rows, each row's truth the one in
    ``truths.jsonl`` (computed once per model and data set; rows written before a truth was recomputed carry an
    older copy)."""
    frame = pd.DataFrame(rows(folder))
    truths = pd.DataFrame(rows(folder, "truths.jsonl")).drop_duplicates(["model", "seed"], keep="last")
    truth_columns = ["truth", "truth_lower", "truth_upper", "truth_source"]
    frame = frame.drop(columns=truth_columns).merge(truths[["model", "seed", *truth_columns]], on=["model", "seed"],
                                                    how="inner")
    for column in ("log_z", "stderr", "truth", "truth_lower", "truth_upper"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["error"] = frame["log_z"] - frame["truth"]
    out = {}
    for (model, tool, budget), cell in frame.groupby(["model", "tool", "budget"], sort=False):
        cell = cell.drop_duplicates("seed", keep="last").sort_values("seed").reset_index(drop=True)
        out[(model, tool, int(budget))] = Calibration(label=f"{tool} ({budget})", rows=cell, level=LEVEL)
    return out


def _cover(c: Calibration, nominal: str) -> str:
    cov = c.coverage(nominal)
    if cov.n == 0:
        return "no ± stated"
    return f"{cov.hits}/{cov.n} ({cov.interval[0]:.2f}-{cov.interval[1]:.2f})"


def table(folder: Path) -> str:
    cals = calibrations(folder)
    lines = ["| model | tool (budget) | data sets (failed) | bias ± se | RMSE | coverage 68% | coverage 95% | "
             "spread of error/± | verdict at 0.01 | median s a run |", "|---" * 10 + "|"]
    for (model, tool, budget), c in sorted(cals.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        seconds = float(np.median(c.rows["tool_seconds"])) if len(c.rows) else float("nan")
        lines.append(f"| {model} | {tool} ({budget}) | {len(c.rows)} ({c.num_failed}) | {c.bias:+.3f} ± "
                     f"{c.bias_stderr:.3f} | {c.rmse:.3f} | {_cover(c, '68%')} | {_cover(c, '95%')} | "
                     f"{c.z_spread:.2f} | {c.verdict} | {seconds:.1f} |")
    stored = rows(folder)
    lines.append(f"\n{len(stored)} rows; commits {', '.join(sorted({r['commit'] for r in stored}))}; clean trees: "
                 f"{all(r['clean_tree'] for r in stored)}; produced by `python benchmarks/calibrate_tools.py "
                 "--render` from `rows.jsonl`.")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown of ``table.md``."""
    return {"table": table(folder)}
