"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

PPLS = ("numpyro", "pymc", "stan")
QUOTES = tuple(f"{p}_{m}_{s}" for p in PPLS for m in ("compile", "cached") for s in ("median", "min", "max")) + (
    "webppl_seconds", "webppl_minutes", "rounds", "load_min", "load_max", "passes", "audits")


def _rows(folder: Path, ppl=None, mode=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if (ppl is None or r["ppl"] == ppl) and (mode is None or r["mode"] == mode)]


def _make(ppl, mode):
    def seconds(folder):
        return [r["seconds"] for r in _rows(folder, ppl, mode)]

    def median(folder):
        return float(np.median(seconds(folder)))

    def low(folder):
        return min(seconds(folder))

    def high(folder):
        return max(seconds(folder))

    median.__doc__ = f"Median wall seconds of {ppl}'s {mode} audits."
    low.__doc__ = f"Fastest {ppl} {mode} audit (s)."
    high.__doc__ = f"Slowest {ppl} {mode} audit (s)."
    return {f"{ppl}_{mode}_median": median, f"{ppl}_{mode}_min": low, f"{ppl}_{mode}_max": high}


for _ppl in PPLS:
    for _mode in ("compile", "cached"):
        globals().update(_make(_ppl, _mode))


def webppl_seconds(folder):
    """Wall seconds of the one WebPPL audit (its first in the cache: compilation included)."""
    return _rows(folder, "webppl")[0]["seconds"]


def webppl_minutes(folder):
    """The same in minutes."""
    return webppl_seconds(folder) / 60


def rounds(folder):
    """Timed rounds (each: every PPL compiled and cached)."""
    return len({r["round"] for r in _rows(folder) if r["mode"] in ("compile", "cached")})


def load_min(folder):
    """Smallest 1-minute load before a timed audit."""
    return min(r["load_before"] for r in _rows(folder))


def load_max(folder):
    """Largest 1-minute load before a timed audit."""
    return max(r["load_before"] for r in _rows(folder))


def passes(folder):
    """Audits whose verdict was pass."""
    return sum(r["verdict"] == "pass" for r in _rows(folder))


def audits(folder):
    """Audits run (warm-ups included)."""
    return len(_rows(folder))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/audit_quick_timing`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
