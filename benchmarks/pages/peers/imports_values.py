"""The imports a fresh process pays before its first call, from ``imports.jsonl`` (``peers_cold.py --imports``):
the median seconds per package, bdmc before and after, and the run's commit, rounds, times and loads."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

NAMES = {"bdmc": "bdmc", "blackjax": "blackjax", "pymc": "pymc", "tfp": "tfp", "jax": "jax"}


def values(folder: Path) -> dict:
    """``imp_<package>`` (median seconds), ``imp_before`` (bdmc at the earlier commit), ``imp_before_commit``,
    ``imp_rounds``, ``imp_commit``, ``imp_from``/``imp_to`` (UTC) and ``imp_load_lo``/``imp_load_hi``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/peers`` or a copy of it).

    Returns
    -------
    dict
    """
    rows = [json.loads(line) for line in (folder / "imports.jsonl").read_text().splitlines() if line.strip()]
    seconds = {}
    for r in rows:
        seconds.setdefault(r["package"], []).append(r["import_seconds"])
    (before,) = [name for name in seconds if name.startswith("bdmc@")]
    loads = [load for r in rows for load in (r["load_before"], r["load_after"])]
    times = sorted(r["time"] for r in rows)
    return {
        **{f"imp_{key}": statistics.median(seconds[name]) for name, key in NAMES.items()},
        "imp_before": statistics.median(seconds[before]), "imp_before_commit": before.split("@", 1)[1],
        "imp_rounds": min(len(v) for v in seconds.values()),
        "imp_commit": ", ".join(sorted({r["commit"] for r in rows})),
        "imp_clean": "yes" if all(r["clean_tree"] for r in rows) else "no",
        "imp_from": _utc(times[0]), "imp_to": _utc(times[-1]),
        "imp_load_lo": min(loads), "imp_load_hi": max(loads),
    }


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))
