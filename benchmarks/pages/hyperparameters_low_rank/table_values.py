"""The table of ``hyperparameters_low_rank/README.md``: per sigma_n, the means over data sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import rows_at

DOCUMENTED = {"sweeps": 3000, "seed": 0, "thin": 10, "burn": 0.2}  # the script's DEFAULTS


def shown(folder: Path) -> list[dict]:
    """The rows the page shows: those at the documented settings."""
    return rows_at(folder, DOCUMENTED)


def chosen() -> float:
    """The model's default sigma_n (sigma_u = sigma_v = 1): the row the table bolds."""
    from bdmc.models.low_rank import LowRank

    return LowRank().sigma_n


def means(stored: list[dict]) -> dict[float, dict]:
    """Per sigma_n, in grid order, the means over the data sets, and how many there are."""
    out: dict[float, dict] = {}
    for value in sorted({r["sigma_n"] for r in stored}):
        sel = [r for r in stored if r["sigma_n"] == value]
        out[value] = {"rel": np.mean([r["s_rel_sd"] for r in sel], axis=0),
                      **{m: float(np.mean([r[m] for r in sel])) for m in ("subspace_err", "fit_err",
                                                                          "smallest_over_edge")},
                      "datasets": len(sel)}
    return out


def table(stored: list[dict]) -> str:
    lines = ["| sigma_n | rel. posterior sd of singular values (largest .. smallest) | subspace error | fit error | "
             "smallest true s.v. / noise edge |", "|--------:|:------------------------------|------:|------:|-----:|"]
    for value, m in means(stored).items():
        cells = [f"{value:.1f}", " ".join(f"{x:.3f}" for x in m["rel"]), f"{m['subspace_err']:.3f}",
                 f"{m['fit_err']:.3f}", f"{m['smallest_over_edge']:.2f}"]
        if np.isclose(value, chosen()):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of README.md."""
    return {"table": table(shown(folder))}
