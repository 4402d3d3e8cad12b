"""The numbers of ``hyperparameters_binary_attributes/README.md``, from the rows of the settings its table shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("hp_binary_table_values", Path(__file__).with_name("table_values.py"))
tv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tv)

NAN = {m: float("nan") for m in tv.METRICS}


def values(folder: Path) -> dict:
    """The run's settings and provenance, and the readings the headline and the text quote (NaN where the grid
    lacks a setting)."""
    stored = tv.shown(folder)
    m = tv.means(stored)
    pi0, sn0 = tv.chosen()
    low = [v for (_, sn), v in m.items() if sn <= 0.7] or [NAN]
    high = [v for (_, sn), v in m.items() if sn >= 1.25] or [NAN]
    at_default = [v for (_, sn), v in m.items() if np.isclose(sn, sn0)] or [NAN]
    prior_pi0 = [v for (pi, sn), v in m.items() if np.isclose(pi, pi0) and sn == max(s for _, s in m)] or [NAN]
    first = stored[0]
    return {
        **{k: first[k] for k in tv.DOCUMENTED},
        "pis": ", ".join(f"{p:g}" for p in sorted({p for p, _ in m})),
        "sigma_ns": ", ".join(f"{s:g}" for s in sorted({s for _, s in m})),
        "settings": len(m), "rows": len(stored),
        "commits": ", ".join(sorted({r["commit"] for r in stored})),
        "clean": "clean tree" if all(r["clean_tree"] for r in stored) else "tree not clean",
        "dates": f"{min(r['date'] for r in stored)} to {max(r['date'] for r in stored)}",
        "load_min": min(r["load"] for r in stored), "load_max": max(r["load"] for r in stored),
        "minutes": sum({(r["pi"], r["sigma_n"]): r["seconds"] for r in stored}.values()) / 60,
        "pi0": pi0, "sn0": sn0,
        **{f"chosen_{k}": v for k, v in m.get((pi0, sn0), NAN).items() if k in ("recovered", "uncertain")},
        "low_uncertain_max": max(v["uncertain"] for v in low), "low_hamming_max": max(v["hamming"] for v in low),
        "high_uncertain_min": min(v["uncertain"] for v in high),
        "high_uncertain_max": max(v["uncertain"] for v in high),
        "prior_recovered": prior_pi0[0]["recovered"],
        "mid_recovered_min": min(v["recovered"] for v in at_default),
        "mid_uncertain_min": min(v["uncertain"] for v in at_default),
        "mid_uncertain_max": max(v["uncertain"] for v in at_default),
        "mid_hamming_min": min(v["hamming"] for v in at_default),
        "mid_hamming_max": max(v["hamming"] for v in at_default),
    }
