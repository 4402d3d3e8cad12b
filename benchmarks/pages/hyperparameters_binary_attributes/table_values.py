"""The table of ``hyperparameters_binary_attributes/README.md``: per (pi, sigma_n), the means over data sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import rows_at

DOCUMENTED = {"sweeps": 400, "datasets": 3, "chains": 4, "seed": 0, "sigma_a": 1.0}  # the script's DEFAULTS
METRICS = ("recovered", "uncertain", "entropy", "hamming")


def shown(folder: Path) -> list[dict]:
    """The rows the page shows: those at the documented settings."""
    return rows_at(folder, DOCUMENTED)


def chosen() -> tuple[float, float]:
    """The model's defaults (pi, sigma_n): the row the table bolds."""
    from bdmc.models.binary_attributes import BinaryAttributes

    model = BinaryAttributes()
    return model.pi, model.sigma_n


def means(stored: list[dict]) -> dict[tuple[float, float], dict]:
    """Per (pi, sigma_n), in grid order, each measure's mean over the data sets, and how many there are."""
    out: dict[tuple[float, float], dict] = {}
    for key in sorted({(r["pi"], r["sigma_n"]) for r in stored}):
        sel = [r for r in stored if (r["pi"], r["sigma_n"]) == key]
        out[key] = {**{m: float(np.mean([r[m] for r in sel])) for m in METRICS}, "datasets": len(sel)}
    return out


def table(stored: list[dict]) -> str:
    lines = ["| pi | sigma_n | recovered | uncertain | entropy (bits) | hamming (of 500) |",
             "|---|---|---|---|---|---|"]
    bold = chosen()
    for (pi, sigma_n), m in means(stored).items():
        cells = [f"{pi}", f"{sigma_n}", f"{m['recovered']:.3f}", f"{m['uncertain']:.3f}", f"{m['entropy']:.3f}",
                 f"{m['hamming']:.1f}"]
        if np.isclose(pi, bold[0]) and np.isclose(sigma_n, bold[1]):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of README.md."""
    return {"table": table(shown(folder))}
