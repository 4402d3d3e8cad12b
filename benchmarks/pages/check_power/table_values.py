"""The values of ``check_power``'s table: per planted bug, model and check, how often the check fired."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows

# check_power.py's BUGS, then its NUMPYRO_BUGS: the table's bug order within a model (a bug not named here last).
BUG_ORDER = ("correct", "simulator variance x1.1", "simulator variance x4", "MVN sampler with transposed eigenvectors",
             "kernel conditional variance +10%", "log-likelihood constant +0.5 per case",
             "log-likelihood noise variance x1.1 (density only)", "noise variance x1.1 (whole program)",
             "numpyro.factor +0.5 per case (prior side)")
CHECK_ORDER = ("alarm", "alarm (random-walk MH)", "Geweke (default statistics)", "Geweke (eigenbasis moments)",
               "conditional-vs-joint", "exact value", "second implementation")


def table(stored: list[dict]) -> str:
    """One line per (bug, model, check): seeds, firings, the rate with its 95% interval, the median statistic."""
    groups: dict = {}
    for r in stored:
        groups.setdefault((r["bug"], r["model"], r["check"]), []).append(r)
    keys = sorted(groups, key=lambda k: (k[1].endswith("program)"), k[1],
                                         BUG_ORDER.index(k[0]) if k[0] in BUG_ORDER else 99,
                                         CHECK_ORDER.index(k[2])))
    lines = ["| bug | model | check | seeds | fired | rate | 95% CI | median statistic |",
             "|---|---|---|---|---|---|---|---|"]
    for key in keys:
        g = groups[key]
        n, k = len(g), sum(r["fired"] for r in g)
        lo, hi = clopper_pearson(k, n)
        med = float(np.median([r["statistic"] for r in g]))
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {n} | {k} | {k / n:.2f} | [{lo:.2f}, {hi:.2f}] | {med:.3g} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of ``table.md``."""
    return {"table": table(rows(folder))}
