"""The values of ``audit_memory/README.md``: RSS growth per run of many audits (or sandwiches) in one process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WARM = 10  # audits (tens of sandwiches) before growth is measured: the first ones import and fill the caches
TARGET_GB = 0.5
PLANNED = 100  # audits a run is meant to reach; a run cut short is projected to it at its slope
NAMES = {"numpyro": "NumPyro", "pymc": "PyMC", "stan": "Stan"}


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def runs(stored: list[dict]) -> dict[tuple, list[dict]]:
    """Rows by run: (kind, ppl, release, commit), in the order they were stored."""
    out: dict[tuple, list[dict]] = {}
    for r in stored:
        out.setdefault((r["kind"], r["ppl"], r["release"], r["commit"]), []).append(r)
    return out


def summary(run: list[dict]) -> dict:
    rss = np.array([r["rss_mb"] for r in run])
    after = rss[min(WARM, len(rss) - 1):]
    slope = float(np.polyfit(np.arange(after.size), after, 1)[0]) if after.size > 1 else float("nan")
    growth = (rss[-1] - rss[0]) / 1024
    short = run[0]["kind"] == "audit" and len(run) < PLANNED and not np.isnan(slope)
    projected = growth + max(slope, 0.0) * (PLANNED - len(run)) / 1024 if short else growth
    return {"count": len(run) * (10 if run[0]["kind"] == "sandwich" else 1), "first": rss[0], "warm": after[0],
            "last": rss[-1], "growth_gb": growth, "slope": slope, "projected_gb": projected,
            "seconds": float(np.median([r["seconds"] for r in run])),
            "load": (min(r["load"] for r in run), max(r["load"] for r in run)),
            "dates": (run[0]["date"], run[-1]["date"]), "clean": all(r["clean_tree"] for r in run)}


def _slope(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:+.1f}"


def table(stored: list[dict]) -> str:
    lines = ["| run | audits or sandwiches | RSS after the first | after warm-up | at the end | growth across the run "
             "(GB) | slope after warm-up (MB per audit, or per 10 sandwiches) | growth projected to 100 audits at "
             "that slope (GB) | within 0.5 GB (projected) | median s (per audit, or per 10 sandwiches) | load | "
             "commit, clean | dates |",
             "|" + "---|" * 13]
    for (kind, ppl, release, commit), run in runs(stored).items():
        s = summary(run)
        name = (f"{NAMES[ppl]} audits, {'release' if release else 'no release'}" if kind == "audit"
                else "sandwiches on the linear regression")
        lines.append(f"| {name} | {s['count']} | {s['first']:.0f} MB | {s['warm']:.0f} MB | {s['last']:.0f} MB | "
                     f"{s['growth_gb']:+.2f} | {_slope(s['slope'])} | {s['projected_gb']:+.2f} | "
                     f"{'yes' if s['projected_gb'] < TARGET_GB else 'no'} | "
                     f"{s['seconds']:.1f} | {s['load'][0]:.1f}-{s['load'][1]:.1f} | {commit}, "
                     f"{'yes' if s['clean'] else 'no'} | {s['dates'][0]} to {s['dates'][1]} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """The headline counts each kind's latest run (per PPL, with release); every run is in the table."""
    stored = rows(folder)
    latest: dict[tuple, tuple] = {}
    for key, run in runs(stored).items():
        latest[key[:3]] = (key[3], run)  # runs are in stored order: the last one of each kind wins
    audits = [(k, c, summary(run)) for k, (c, run) in latest.items() if k[0] == "audit" and k[2]]
    sandwiches = [(c, summary(run)) for k, (c, run) in latest.items() if k[0] == "sandwich"]
    return {"rows": len(stored), "runs": len(runs(stored)), "table": table(stored),
            "released_within": sum(s["projected_gb"] < TARGET_GB for _, _, s in audits),
            "released_runs": len(audits),
            "audits_each": ", ".join(f"{NAMES[k[1]]} {s['count']} at {c}" for k, c, s in audits),
            "sandwich_count": ", ".join(f"{s['count']:,} at {c}" for c, s in sandwiches) or "none",
            "sandwich_growth": ", ".join(f"{s['growth_gb']:+.2f} GB" for _, s in sandwiches) or "not run",
            "warm": WARM}
