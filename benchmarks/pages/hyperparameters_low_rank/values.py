"""The numbers of ``hyperparameters_low_rank/README.md``, from the rows of the settings its table shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("hp_low_rank_table_values", Path(__file__).with_name("table_values.py"))
tv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tv)

NAN = {"rel": np.full(1, np.nan), "subspace_err": np.nan, "fit_err": np.nan, "smallest_over_edge": np.nan}


def values(folder: Path) -> dict:
    """The run's settings and provenance, and the readings the headline and the text quote (NaN where the grid
    lacks a value)."""
    stored = tv.shown(folder)
    m = tv.means(stored)
    s0 = tv.chosen()
    at = m.get(s0, NAN)
    below = [v for s, v in m.items() if s < s0] or [NAN]
    above = [v for s, v in m.items() if s > s0] or [NAN]
    return {
        **{k: stored[0][k] for k in tv.DOCUMENTED},
        "grid": ", ".join(f"{s:g}" for s in m), "rows": len(stored),
        "datasets_min": min(v["datasets"] for v in m.values()), "datasets_max": max(v["datasets"] for v in m.values()),
        "commits": ", ".join(sorted({r["commit"] for r in stored})),
        "clean": "clean tree" if all(r["clean_tree"] for r in stored) else "tree not clean",
        "dates": f"{min(r['date'] for r in stored)} to {max(r['date'] for r in stored)}",
        "load_min": min(r["load"] for r in stored), "load_max": max(r["load"] for r in stored),
        "minutes": sum(r["seconds"] for r in stored) / 60,
        "s0": s0, "chosen_edge": at["smallest_over_edge"], "chosen_subspace": at["subspace_err"],
        "chosen_fit": at["fit_err"], "chosen_rel_max": float(np.max(at["rel"])),
        "below_rel_max": max(float(np.max(v["rel"])) for v in below),
        "below_subspace_max": max(v["subspace_err"] for v in below),
        "above_edge_max": max(v["smallest_over_edge"] for v in above),
        "above_fit_min": min(v["fit_err"] for v in above),
    }
