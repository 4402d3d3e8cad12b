"""The values of ``ais_throughput/ais_throughput.md`` and ``ais_throughput_quick.md`` (``--quick``), each from the
JSON beside it (``benchmarks/ais_throughput.py``)."""

from __future__ import annotations

import json
from pathlib import Path

HEAD = ["implementation", "schedule", "log Z ± stderr", "z vs exact", "accept mean/last", "run s", "cold s",
        "compile s", "chain-steps/s", "chain-steps/s (cold)"]


def _cells(r: dict, exact: float) -> list[str]:
    mean = "-" if r["acceptance_mean"] is None else f"{r['acceptance_mean']:.3f}"
    return [r["implementation"], r["schedule"], f"{r['log_z']:.4f} ± {r['stderr']:.4f}",
            f"{(r['log_z'] - exact) / r['stderr']:+.2f}", f"{mean} / {r['acceptance_last']:.3f}",
            f"{r['run_seconds']:.3f}", f"{r['cold_seconds']:.3f}", f"{r['compile_seconds']:.3f}",
            f"{r['chain_steps_per_sec']:,.0f}", f"{r['chain_steps_per_sec_cold']:,.0f}"]


def _page_values(out: dict, prefix: str) -> dict:
    """One run's settings, its table per implementation, its ratios and its machine, named ``<prefix>_...``."""
    s, exact = out["settings"], out["exact_log_z"]
    results = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD),
               *["| " + " | ".join(_cells(r, exact)) + " |" for r in out["results"]]]
    ratios = ["| ratio | run (compile excluded) | cold (compile included) |", "|---|---|---|",
              *[f"| {k} | {v['run']:.2f} | {v['cold']:.2f} |" for k, v in out["ratios"].items()]]
    found = {"chains": s["chains"], "distributions": s["steps"] + 1, "transitions": s["steps"],
             "step_size": s["step_size"], "leapfrog": s["leapfrog_steps"], "statistic": s["statistic"],
             "repeats": s["repeats"], "exact": exact, "results": "\n".join(results), "ratios": "\n".join(ratios),
             "machine": ", ".join(f"{k}={v}" for k, v in out["machine"].items())}
    return {f"{prefix}_{k}": v for k, v in found.items()}


def values(folder: Path) -> dict:
    """The values of both pages: ``full_...`` from ``ais_throughput.json``, ``quick_...`` from the quick run's."""
    folder = Path(folder)
    found = {}
    for prefix, stem in (("full", "ais_throughput"), ("quick", "ais_throughput_quick")):
        found |= _page_values(json.loads((folder / f"{stem}.json").read_text()), prefix)
    return found
