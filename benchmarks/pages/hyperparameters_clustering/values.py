"""The numbers of ``hyperparameters_clustering/README.md``, from the rows of the settings its table shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("hp_clustering_table_values",
                                               Path(__file__).with_name("table_values.py"))
tv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tv)

NAN = {m: float("nan") for m in tv.METRICS}


def values(folder: Path) -> dict:
    """The run's settings and provenance, and the readings the headline and the text quote (NaN where the grid
    lacks a value)."""
    stored = tv.shown(folder)
    m = tv.means(stored)
    s0 = tv.chosen()
    low = [v for s, v in m.items() if s <= 1.0] or [NAN]
    high = [v for s, v in m.items() if s >= 1.5] or [NAN]
    at = m.get(s0, NAN)
    return {
        **{k: stored[0][k] for k in tv.DOCUMENTED},
        "grid": ", ".join(f"{s:g}" for s in m), "rows": len(stored),
        "datasets_min": min(v["datasets"] for v in m.values()), "datasets_max": max(v["datasets"] for v in m.values()),
        "commits": ", ".join(sorted({r["commit"] for r in stored})),
        "clean": "clean tree" if all(r["clean_tree"] for r in stored) else "tree not clean",
        "dates": f"{min(r['date'] for r in stored)} to {max(r['date'] for r in stored)}",
        "load_min": min(r["load"] for r in stored), "load_max": max(r["load"] for r in stored),
        "minutes": sum(r["seconds"] for r in stored) / 60,
        "s0": s0, "chosen_ari": at["ARI"], "chosen_p": at["P(true)"], "chosen_points": at["uncertain points"],
        "low_ari_max": max(v["ARI"] for v in low),
        "high_p_min": min(v["P(true)"] for v in high), "high_p_max": max(v["P(true)"] for v in high),
    }
