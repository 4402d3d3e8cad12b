"""The values of ``fixed_cost/fixed_cost.md``, from ``fixed_cost.json`` (``benchmarks/fixed_cost.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def values(folder: Path) -> dict:
    """The calls per case, the load averages around the run, and the table of medians per call."""
    out = json.loads((Path(folder) / "fixed_cost.json").read_text())
    rows = out["rows"]
    before_path = Path(folder) / "fixed_cost_before.json"
    before = json.loads(before_path.read_text()) if before_path.exists() else None
    earlier = {r["case"]: r for r in before["rows"]} if before else {}
    calls = sorted({r["calls"] for r in rows})
    table = ["| call | wall ms | engine run ms | pilot run ms | fixed ms (median) | fixed ms (90th pct) | "
             "wall ms before | fixed ms before |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = earlier.get(r["case"])
        then = f"{b['wall_ms']:.2f} | {b['fixed_ms']:.2f}" if b else "- | -"
        table.append(f"| {r['case']} | {r['wall_ms']:.2f} | {r['engine_ms']:.2f} | {r['pilot_ms']:.2f} | "
                     f"{r['fixed_ms']:.2f} | {r['fixed_ms_p90']:.2f} | {then} |")
    stamp = out.get("provenance", {})
    same = [(r["engine_ms"], earlier[r["case"]]["engine_ms"]) for r in rows if r["case"] in earlier]
    ratio = float(np.median([now / then for now, then in same])) if same else float("nan")
    big = [(r, earlier.get(r["case"])) for r in rows if "10^6 data values" in r["case"]]
    big_sentence = "; ".join(
        f"{r['case'].split(',')[0]}: {then['fixed_ms']:.1f} ms before, {r['fixed_ms']:.1f} ms now "
        f"({then['wall_ms']:.0f} ms and {r['wall_ms']:.0f} ms a whole call)" for r, then in big if then)
    return {"big_fixed": big_sentence or "not in the before run",
            "calls": "/".join(map(str, calls)), "src": str(out.get("bdmc_src", "?")),
            "before_src": str(before.get("bdmc_src", before.get("provenance", {}).get("commit", "?"))) if before
            else "-",
            "date": str(stamp.get("date", "?")),
            "before_date": str(before.get("provenance", {}).get("date", "?")) if before else "-",
            "before_load": str(tuple(round(x, 2) for x in before["load_before"])) if before else "-",
"engine_ratio": ratio,
            "load_before": str(tuple(round(x, 2) for x in out["load_before"])),
            "load_after": str(tuple(round(x, 2) for x in out["load_after"])),
            "table": "\n".join(table)}
