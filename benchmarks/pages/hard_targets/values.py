"""The values of ``hard_targets/README.md``, from ``rows.jsonl`` (``benchmarks/hard_targets.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pages.tables import rows


def _label(budget) -> str:
    return "x".join(map(str, budget)) if isinstance(budget, (list, tuple)) else str(budget)


def values(folder: Path) -> dict:
    """The table (problem, tool, budget: runs, RMSE, worst error, misses, flagged misses, silent misses, median
    seconds), the totals of silent misses per tool, and the provenance of the rows."""
    stored = rows(folder)
    cells: dict = {}
    for r in stored:
        cells.setdefault((r["problem"], r["tool"], _label(r["budget"])), []).append(r)
    table = ["| problem (log Z) | tool | budget | runs (failed) | RMSE | worst error | missed by > 1 nat | of them "
             "flagged | silent misses | false flags | median s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (problem, tool, budget), cell in cells.items():
        ok = [r for r in cell if not r.get("failed")]
        errors = np.array([r["error"] for r in ok], dtype=float)
        finite = errors[np.isfinite(errors)]
        rmse = f"{np.sqrt(np.mean(finite ** 2)):.2f}" if finite.size else "-"
        worst = f"{finite[np.argmax(np.abs(finite))]:+.2f}" if finite.size else "-"
        missed = sum(r["missed"] for r in ok)
        flagged = sum(r["missed"] and r["flagged"] for r in ok)
        silent = sum(r["silent"] for r in ok)
        false = sum(r["flagged"] and not r["missed"] for r in ok)
        table.append(f"| {problem} ({cell[0]['truth']:.3f}) | {tool} | {budget} | {len(ok)} ({len(cell) - len(ok)}) "
                     f"| {rmse} | {worst} | {missed} | {flagged} | {silent} | {false} | "
                     f"{np.median([r['seconds'] for r in cell]):.1f} |")
    big = [r for r in stored if r["tool"] == "bdmc" and r["problem"] == "manywell"
           and _label(r["budget"]) == "1024x1000" and not r.get("failed")]
    big_false = sum(r["flagged"] and not r["missed"] for r in big)
    big_worst = max((abs(r["error"]) for r in big), default=float("nan"))
    big_gap = float(np.median([r["gap"] for r in big])) if big else float("nan")
    tools = sorted({r["tool"] for r in stored})
    silent = {t: sum(r["silent"] for r in stored if r["tool"] == t and not r.get("failed")) for t in tools}
    runs = {t: sum(1 for r in stored if r["tool"] == t and not r.get("failed")) for t in tools}
    return {"table": "\n".join(table), "rows": len(stored), "big_false": big_false, "big_runs": len(big),
            "big_worst": big_worst, "big_gap": big_gap,
            "silent_by_tool": "; ".join(f"{t} {silent[t]} of {runs[t]}" for t in tools),
            "bdmc_silent": silent.get("bdmc", 0), "bdmc_runs": runs.get("bdmc", 0),
            "bdmc_missed": sum(r["missed"] for r in stored if r["tool"] == "bdmc" and not r.get("failed")),
            "commits": ", ".join(sorted({r["commit"] for r in stored})),
            "clean": str(all(r["clean_tree"] for r in stored)),
            "began": time.strftime("%H:%M", time.gmtime(min(r["time"] for r in stored))),
            "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in stored))),
            "load_min": min(r["load_before"] for r in stored), "load_max": max(r["load_after"] for r in stored),
            "failed": sum(bool(r.get("failed")) for r in stored),
            "seeds": max(r["seed"] for r in stored) + 1,
            "dynesty_problems": ", ".join(sorted({r["problem"] for r in stored if r["tool"] == "dynesty"})) or "none"}
