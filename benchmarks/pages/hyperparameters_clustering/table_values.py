"""The table of ``hyperparameters_clustering/README.md``: per sigma_theta, the means over data sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import rows_at

DOCUMENTED = {"chains": 8, "sweeps": 2000, "thin": 10}  # the script's DEFAULTS
METRICS = ("ARI", "P(true)", "uncertain pairs", "uncertain points", "occupied", "true occupied")


def shown(folder: Path) -> list[dict]:
    """The rows the page shows: those at the documented settings."""
    return rows_at(folder, DOCUMENTED)


def chosen() -> float:
    """The model's default sigma_theta (sigma_noise = 1): the row the table bolds."""
    from bdmc.models.clustering import Clustering

    return Clustering().sigma_theta


def means(stored: list[dict]) -> dict[float, dict]:
    """Per sigma_theta, in grid order, each measure's mean over the data sets, and how many there are."""
    out: dict[float, dict] = {}
    for value in sorted({r["sigma_theta"] for r in stored}):
        sel = [r for r in stored if r["sigma_theta"] == value]
        out[value] = {**{m: float(np.mean([r[m] for r in sel])) for m in METRICS}, "datasets": len(sel)}
    return out


def table(stored: list[dict]) -> str:
    lines = ["| sigma_theta | ARI vs truth | P(partition = truth) | uncertain pairs | uncertain points | "
             "occupied clusters (true) |", "|---|---|---|---|---|---|"]
    for value, m in means(stored).items():
        cells = [f"{value:g}", f"{m['ARI']:.3f}", f"{m['P(true)']:.3f}", f"{m['uncertain pairs']:.3f}",
                 f"{m['uncertain points']:.3f}"]
        if np.isclose(value, chosen()):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + f" | {m['occupied']:.2f} ({m['true occupied']:.1f}) |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of README.md."""
    return {"table": table(shown(folder))}
