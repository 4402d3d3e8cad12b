"""The values of ``audit_quick_timing``'s table: the wall time of ``bdmc audit --quick`` per PPL and mode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import rows

PPLS = ("numpyro", "pymc", "stan", "webppl")  # audit_quick_timing.py's order


def table(stored: list[dict]) -> str:
    """Per PPL, sampler asked for and mode (warm-up rows left out), the audits that exited cleanly: their times,
    verdicts and commits."""
    lines = ["| PPL | --sampler | mode | audits | median s | min s | max s | verdicts | commit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for ppl in PPLS:
        samplers = sorted({r.get("sampler", "auto") for r in stored if r["ppl"] == ppl})
        for sampler in samplers:
            for mode in ("compile", "cached"):
                sel = [r for r in stored if r["ppl"] == ppl and r.get("sampler", "auto") == sampler
                       and r["mode"] == mode and r["exit_code"] == 0]
                if not sel:
                    continue
                s = [r["seconds"] for r in sel]
                verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in sel)}"
                                     for v in sorted({r["verdict"] for r in sel}))
                commits = ", ".join(sorted({r["commit"] for r in sel}))
                lines.append(f"| {ppl} | {sampler} | {mode} | {len(sel)} | {np.median(s):.0f} | {min(s):.0f} | "
                             f"{max(s):.0f} | {verdicts} | {commits} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of ``table.md``."""
    return {"table": table(rows(folder))}
