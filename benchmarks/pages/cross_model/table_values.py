"""The values of ``cross_model``'s table: each data set scored by each model, beside the paper's Table 1."""

from __future__ import annotations

from pathlib import Path

from pages.tables import rows

MODELS = ("clustering", "low-rank", "binary")
LABELS = {"clustering": "Clustering", "low-rank": "Low rank", "binary": "Binary"}
PAPER = {  # paper Table 1: rows generate, columns fit
    "clustering": {"clustering": -2377.5, "low-rank": -2390.6, "binary": -2383.2},
    "low-rank": {"clustering": -2214.2, "low-rank": -2145.1, "binary": -2171.4},
    "binary": {"clustering": -2268.6, "low-rank": -2241.7, "binary": -2219.4},
}
CHAINS = 8  # cross_model.py's default --chains: the main table's rows


def table(stored: list[dict], chains: int = CHAINS) -> str:
    """Markdown table at the largest T reached for every cell, with the paper's numbers beside ours."""
    best = {}
    for r in stored:
        cell = (r["data"], r["fit"])
        if r["num_chains"] == chains and (cell not in best or r["num_steps"] > best[cell]["num_steps"]):
            best[cell] = r
    lines = ["| data \\ fit | " + " | ".join(LABELS[m] for m in MODELS) + " |", "|---" * (len(MODELS) + 1) + "|"]
    for d in MODELS:
        cells = []
        for f in MODELS:
            r, own = best.get((d, f)), best.get((d, d))
            if r is None:
                cells.append("-")
                continue
            diff = "" if f == d or own is None else f" ({own['value'] - r['value']:.1f})"
            pdiff = "" if f == d else f" ({PAPER[d][d] - PAPER[d][f]:.1f})"
            cells.append(f"{r['value']:.1f}{diff}; paper {PAPER[d][f]:.1f}{pdiff}")
        lines.append(f"| **{LABELS[d]}** | " + " | ".join(cells) + " |")
    steps = sorted({r["num_steps"] for r in stored})
    trend = ["", "Convergence in T (log-mean-exp over chains):", "",
             "| data | fit | " + " | ".join(f"T={t}" for t in steps) + " |",
             "|---|---|" + "---|" * len(steps)]
    for d in MODELS:
        for f in MODELS:
            vals = {r["num_steps"]: r["value"] for r in stored if (r["data"], r["fit"]) == (d, f)}
            trend.append(f"| {d} | {f} | " + " | ".join(f"{vals[t]:.1f}" if t in vals else "-" for t in steps) + " |")
    return "\n".join(lines + trend)


def values(folder: Path) -> dict:
    """``table``: the Markdown of ``table.md``."""
    return {"table": table(rows(folder))}
