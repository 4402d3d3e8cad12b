"""The values of ``hard_targets/README.md``, from ``rows.jsonl`` (``benchmarks/hard_targets.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pages.tables import rows


def _label(budget) -> str:
    return "x".join(map(str, budget)) if isinstance(budget, (list, tuple)) else str(budget)


def values(folder: Path) -> dict:
    """The table (problem, tool, budget: runs, RMSE, worst error, misses, flagged misses, silent misses, median
    seconds), the totals of silent misses per tool, and the provenance of the rows."""
    stored = rows(folder)
    cells: dict = {}
    for r in stored:
        cells.setdefault((r["problem"], r["tool"], _label(r["budget"])), []).append(r)
    table = ["| problem (log Z) | tool | budget | runs (failed) | RMSE | worst error | missed by > 1 nat | of them "
             "flagged | silent misses | false flags | median s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (problem, tool, budget), cell in cells.items():
        ok = [r for r in cell if not r.get("failed")]
        errors = np.array([r["error"] for r in ok], dtype=float)
        finite = errors[np.isfinite(errors)]
        rmse = f"{np.sqrt(np.mean(finite ** 2)):.2f}" if finite.size else "-"
        worst = f"{finite[np.argmax(np.abs(finite))]:+.2f}" if finite.size else "-"
        missed = sum(r["missed"] for r in ok)
        flagged = sum(r["missed"] and r["flagged"] for r in ok)
        silent = sum(r["silent"] for r in ok)
        false = sum(r["flagged"] and not r["missed"] for r in ok)
        table.append(f"| {problem} ({cell[0]['truth']:.3f}) | {tool} | {budget} | {len(ok)} ({len(cell) - len(ok)}) "
                     f"| {rmse} | {worst} | {missed} | {flagged} | {silent} | {false} | "
                     f"{np.median([r['seconds'] for r in cell]):.1f} |")
    big = [r for r in stored if r["tool"] == "bdmc" and r["problem"] == "manywell"
           and _label(r["budget"]) == "1024x1000" and not r.get("failed")]
    big_false = sum(r["flagged"] and not r["missed"] for r in big)
    big_worst = max((abs(r["error"]) for r in big), default=float("nan"))
    big_gap = float(np.median([r["gap"] for r in big])) if big else float("nan")
    tools = sorted({r["tool"] for r in stored})
    silent = {t: sum(r["silent"] for r in stored if r["tool"] == t and not r.get("failed")) for t in tools}
    runs = {t: sum(1 for r in stored if r["tool"] == t and not r.get("failed")) for t in tools}
    eggbox_nautilus = [r["seconds"] for r in stored if r["tool"] == "nautilus" and r["problem"] == "eggbox"]
    return {**_phase(stored), **_coverage(stored),
            "nautilus_eggbox_min": min(eggbox_nautilus, default=float("nan")),
            "nautilus_eggbox_max": max(eggbox_nautilus, default=float("nan")),
            "table": "\n".join(table), "rows": len(stored), "big_false": big_false, "big_runs": len(big),
            "big_worst": big_worst, "big_gap": big_gap,
            "silent_by_tool": "; ".join(f"{t} {silent[t]} of {runs[t]}" for t in tools),
            "bdmc_silent": silent.get("bdmc", 0), "bdmc_runs": runs.get("bdmc", 0),
            "bdmc16_silent": silent.get("bdmc-16", 0), "bdmc16_runs": runs.get("bdmc-16", 0),
            "bdmc_missed": sum(r["missed"] for r in stored if r["tool"] == "bdmc" and not r.get("failed")),
            "commits": ", ".join(sorted({r["commit"] for r in stored})),
            "clean": str(all(r["clean_tree"] for r in stored)),
            "began": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(min(r["time"] for r in stored))),
            "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in stored))),
            "load_min": min(r["load_before"] for r in stored), "load_max": max(r["load_after"] for r in stored),
            "failed": sum(bool(r.get("failed")) for r in stored),
            "seeds": max(r["seed"] for r in stored) + 1,
            "dynesty_problems": ", ".join(sorted({r["problem"] for r in stored if r["tool"] == "dynesty"})) or "none"}


def _phase(stored) -> dict:
    """What the phase-transition paragraph quotes: how far the tempering runs land, bdmc's flags with one run
    each way and with 16, and where its silent misses' exact draws were."""
    mine = [r for r in stored if r["problem"] == "phase" and not r.get("failed")]
    if not mine:
        return {}
    tempering = [r["error"] for r in mine if r["tool"] in ("bdmc", "bdmc-16", "blackjax")]
    one = [r for r in mine if r["tool"] == "bdmc"]
    many = [r for r in mine if r["tool"] == "bdmc-16"]
    ns = [r for r in mine if r["tool"] == "blackjax-ns"]
    return {"phase_low_min": -max(tempering), "phase_low_max": -min(tempering),
            "phase_runs": len(one), "phase_flagged": sum(r["flagged"] for r in one),
            "phase_silent": sum(r["silent"] for r in one),
            "phase_flagged_upper": float(np.median([r["upper"] - r["truth"] for r in one if r["flagged"]])),
            "phase_silent_gap_max": max((r["gap"] for r in one if r["silent"]), default=float("nan")),
            "phase_silent_seeds": ", ".join(str(s) for s in sorted({r["seed"] for r in one if r["silent"]})),
            "phase_silent_upper": max((r["upper"] - r["truth"] for r in one if r["silent"]), default=float("nan")),
            **_draw_radii(one),
            "phase16_runs": len(many), "phase16_flagged": sum(r["flagged"] for r in many),
            "phase16_upper": float(np.median([r["upper"] - r["truth"] for r in many])) if many else float("nan"),
            "phase16_gap_min": min((r["gap"] for r in many), default=float("nan")),
            "phase_ns_worst": max((abs(r["error"]) for r in ns), default=float("nan")),
            "phase_nested_missed": "; ".join(
                f"{t} {sum(r['missed'] for r in mine if r['tool'] == t)} of {sum(r['tool'] == t for r in mine)}"
                for t in ("dynesty", "nautilus") if any(r["tool"] == t for r in mine))}


def _coverage(stored) -> dict:
    """Where the runs are short of the full grid: the nested samplers run only on some targets, some with fewer
    seeds; the problems a tool has no rows on."""
    problems = sorted({r["problem"] for r in stored})
    full = max(r["seed"] for r in stored) + 1
    notes = []
    for tool in sorted({r["tool"] for r in stored}):
        mine = [r for r in stored if r["tool"] == tool]
        seeds = {p: len({r["seed"] for r in mine if r["problem"] == p}) for p in problems}
        covered = [f"{p}" + (f" ({seeds[p]} seeds)" if seeds[p] != full else "") for p in problems if seeds[p]]
        if len(covered) < len(problems) or any(seeds[p] not in (0, full) for p in problems):
            notes.append(f"{tool} on {', '.join(covered)} only" if len(covered) < len(problems)
                         else f"{tool} {', '.join(covered)}")
    return {"coverage": "; ".join(notes) or "every tool on every target"}


def _draw_radii(runs) -> dict:
    """|x| of the exact draw that started each one-run reverse run (its seed's first draw, recomputed): the
    spike's draws lie within about 0.5 of the origin, the background's about 3 from it."""
    from harness.hard_problems import PHASE_HALF_WIDTH, phase_problem

    draws = phase_problem().info["exact_draws"]

    def radius(seed):
        u = draws(seed, 1)[0]
        return float(np.linalg.norm(2 * PHASE_HALF_WIDTH / (1 + np.exp(-u)) - PHASE_HALF_WIDTH))

    silent = [radius(r["seed"]) for r in runs if r["silent"]]
    flagged = [radius(r["seed"]) for r in runs if r["flagged"]]
    return {"phase_silent_radius_min": min(silent, default=float("nan")),
            "phase_flagged_radius_max": max(flagged, default=float("nan"))}
