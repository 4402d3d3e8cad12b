"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

PPLS = ("numpyro", "pymc", "stan")
WEBPPL_SAMPLERS = ("auto", "nuts")
QUOTES = tuple(f"{p}_{m}_{s}" for p in PPLS for m in ("compile", "cached") for s in ("median", "min", "max")) + (
    "webppl_seconds", "webppl_minutes", "rounds", "load_min", "load_max", "passes", "audits") + tuple(
    f"webppl_{s}_{m}" for s in WEBPPL_SAMPLERS for m in ("compile", "cached")) + (
    "webppl_auto_ran", "webppl_commits", "webppl_load_min", "webppl_load_max", "webppl_audits", "webppl_passes",
    "webppl_nuts_over_auto")


def _all(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _rows(folder: Path, ppl=None, mode=None):
    """The first run's rows (before rows recorded their sampler: every PPL under its default)."""
    return [r for r in _all(folder) if "sampler" not in r and (ppl is None or r["ppl"] == ppl)
            and (mode is None or r["mode"] == mode)]


def _webppl(folder: Path, sampler=None, mode=None):
    """The timed WebPPL audits that recorded their sampler (warm-ups left out)."""
    return [r for r in _all(folder) if r["ppl"] == "webppl" and "sampler" in r and r["mode"] != "warmup"
            and (sampler is None or r["sampler"] == sampler) and (mode is None or r["mode"] == mode)]


def _webppl_median(sampler, mode):
    def median(folder):
        return float(np.median([r["seconds"] for r in _webppl(folder, sampler, mode)]))

    median.__doc__ = f"Median wall seconds of WebPPL's audits under --sampler {sampler}, mode {mode}."
    return {f"webppl_{sampler}_{mode}": median}


for _sampler in WEBPPL_SAMPLERS:
    for _mode in ("compile", "cached"):
        globals().update(_webppl_median(_sampler, _mode))


def webppl_auto_ran(folder):
    """The sampler --sampler auto resolved to in WebPPL's audits."""
    return ", ".join(sorted({r["sampler_run"] for r in _webppl(folder, "auto")}))


def webppl_commits(folder):
    """The commits of the timed WebPPL audits."""
    return ", ".join(sorted({r["commit"] for r in _webppl(folder)}))


def webppl_load_min(folder):
    """Smallest 1-minute load before a timed WebPPL audit."""
    return min(r["load_before"] for r in _webppl(folder))


def webppl_load_max(folder):
    """Largest 1-minute load before a timed WebPPL audit."""
    return max(r["load_before"] for r in _webppl(folder))


def webppl_audits(folder):
    """Timed WebPPL audits."""
    return len(_webppl(folder))


def webppl_passes(folder):
    """Timed WebPPL audits whose verdict was pass."""
    return sum(r["verdict"] == "pass" for r in _webppl(folder))


def webppl_nuts_over_auto(folder):
    """Median time under NUTS over the median under auto (both modes pooled)."""
    return (float(np.median([r["seconds"] for r in _webppl(folder, "nuts")]))
            / float(np.median([r["seconds"] for r in _webppl(folder, "auto")])))


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
