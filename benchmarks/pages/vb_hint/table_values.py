"""The values of ``vb_hint``'s table: random VB restarts against the hinted start, per model."""

from __future__ import annotations

from pathlib import Path

from pages.tables import rows

MODELS = ("clustering", "low-rank", "binary")
LABELS = {"clustering": "Clustering", "low-rank": "Low rank", "binary": "Binary"}


def table(stored: list[dict]) -> str:
    """Markdown table from the latest row of each model."""
    latest = {r["model"]: r for r in stored}
    lines = ["| model | truth | best of R random (VB) | hinted (VB) | random − hinted | truth − best random "
             "| truth − hinted | best random (VB+sym) | hinted (VB+sym) | restarts reaching hinted | median random "
             "| sweeps random (mean) / hinted | s random (compile) | s hinted (compile) |",
             "|---" * 14 + "|"]
    for name in MODELS:
        r = latest.get(name)
        if r is None:
            continue
        diff = round(r["random_minus_hinted"], 2) + 0.0  # no "-0.00" for a difference of rounding error
        lines.append(
            f"| {LABELS[name]} | {r['truth']:.2f} | {r['random_best']:.2f} (R = {r['restarts']}) | {r['hinted']:.2f} "
            f"| {diff:+.2f} | {r['truth_minus_random_best']:.2f} | {r['truth_minus_hinted']:.2f} "
            f"| {r['random_best_sym']:.2f} | {r['hinted_sym']:.2f} | {r['random_reaching_hinted']} / {r['restarts']} "
            f"| {r['random_quantiles']['0.5']:.2f} | {r['random_iterations_mean']:.0f} / {r['hinted_iterations']} "
            f"| {r['random_seconds']:.2f} ({r['random_compile_seconds']:.1f}) "
            f"| {r['hinted_seconds']:.2f} ({r['hinted_compile_seconds']:.1f}) |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of ``table.md``."""
    return {"table": table(rows(folder))}
