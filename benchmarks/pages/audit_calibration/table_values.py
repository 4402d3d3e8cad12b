"""The values of ``audit_calibration``'s table: the audit's false-fail rate on correct programs, per sampler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows

LEVEL = 0.01
LABELS = {"numpyro-nuts": "NumPyro's NUTS", "pymc-nuts": "PyMC's NUTS", "stan-nuts": "Stan's NUTS (pystan)",
          "hmc": "bdmc's HMC"}
CHECKS = ("simulator-density", "prior-normalization", "sbc", "geweke", "bdmc")


def summarize(stored: list[dict]) -> list[dict]:
    """Per sampler (and per sampler and program): audits, fails, inconclusive, the false-fail rate's interval."""
    out = []
    for sampler in dict.fromkeys(r["sampler"] for r in stored):
        mine = [r for r in stored if r["sampler"] == sampler]
        for program in [None, *dict.fromkeys(r["program"] for r in mine)]:
            cell = [r for r in mine if program is None or r["program"] == program]
            fails = sum(r["verdict"] == "fail" for r in cell)
            lo, hi = clopper_pearson(fails, len(cell))
            out.append({"sampler": sampler, "program": program or "all", "audits": len(cell), "fails": fails,
                        "inconclusive": sum(r["verdict"] == "inconclusive" for r in cell),
                        "rate": fails / len(cell), "lo": lo, "hi": hi, "consistent": lo <= LEVEL,
                        "check_fails": {c: sum(r["checks"].get(c, {}).get("verdict") == "fail" for r in cell)
                                        for c in CHECKS},
                        "median_seconds": float(np.median([r["seconds"] for r in cell])),
                        "commits": sorted({r["commit"] for r in cell}),
                        "clean": all(r["clean_tree"] is not False for r in cell)})
    return out


def table(stored: list[dict]) -> str:
    lines = ["| sampler | program | audits | fails | rate | 95% interval | consistent with 0.01 | inconclusive | "
             "fails by check (sim, prior, sbc, geweke, bdmc) | median s | commits |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summarize(stored):
        by_check = ", ".join(str(s["check_fails"][c]) for c in CHECKS)
        lines.append(f"| {LABELS.get(s['sampler'], s['sampler'])} | {s['program']} | {s['audits']} | {s['fails']} | "
                     f"{s['rate']:.3f} | {s['lo']:.4f} to {s['hi']:.4f} | {'yes' if s['consistent'] else 'NO'} | "
                     f"{s['inconclusive']} | {by_check} | {s['median_seconds']:.1f} | "
                     f"{', '.join(s['commits'])}{'' if s['clean'] else ' (dirty tree)'} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``audits`` (rows stored), ``level`` (the audit's) and ``table`` (per sampler and program)."""
    stored = rows(folder)
    return {"audits": len(stored), "level": LEVEL, "table": table(stored)}
