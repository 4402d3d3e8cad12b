"""The values of ``cold_programs/README.md``, from ``rows.jsonl`` and ``sizes.jsonl`` (``cold_programs.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pages.tables import rows

STAGES = ("trace_s", "lower_s", "compile_s")
OURS = ("pilot", "run")  # bdmc's two large programs, by the names the engine gives them


def _label(budget) -> str:
    return "x".join(map(str, budget)) if isinstance(budget, (list, tuple)) else str(budget)


def _occurrences(names) -> list[tuple[str, int]]:
    """Each name with its occurrence number: a program compiled twice under one name (prior draws of two sizes)."""
    seen: dict = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append((name, seen[name]))
    return out


def _lines(sizes: list[dict]) -> dict:
    """(problem, tool) -> {(program, occurrence): StableHLO lines}."""
    return {(s["problem"], s["tool"]): dict(zip(_occurrences(m["module"].removeprefix("jit_") for m in s["modules"]),
                                                (m["lines"] for m in s["modules"]), strict=True)) for s in sizes}


def _stage_sum(row: dict) -> float:
    return sum(p[s] for p in row["programs"] for s in STAGES)


def values(folder: Path) -> dict:
    """The per-tool table, bdmc's tempered SMC program by program, the sentences comparing it with BlackJAX, and
    the provenance of the rows."""
    stored = rows(folder)
    lines = _lines(rows(folder, "sizes.jsonl"))
    cells: dict = {}
    for r in stored:
        cells.setdefault((r["problem"], r["tool"], r["kind"]), []).append(r)
    table = ["| problem | tool (budget) | kind | first call (s) | programs | tracing (s) | lowering (s) | compiling or "
             "loading (s) | the call less its programs' stages (s) | StableHLO lines |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    medians: dict = {}
    for (problem, tool, kind), cell in sorted(cells.items()):
        call = float(np.median([r["call_seconds"] for r in cell]))
        stage = {s: float(np.median([sum(p[s] for p in r["programs"]) for r in cell])) for s in STAGES}
        outside = float(np.median([r["call_seconds"] - _stage_sum(r) for r in cell]))
        count = int(np.median([len(r["programs"]) for r in cell]))
        size = sum(lines.get((problem, tool), {}).values())
        medians[(problem, tool, kind)] = {"call": call, "stages": sum(stage.values()), **stage, "programs": count}
        table.append(f"| {problem} | {tool} ({_label(cell[0]['budget'])}) | {kind} | {call:.2f} | {count} | "
                     f"{stage['trace_s']:.2f} | {stage['lower_s']:.2f} | {stage['compile_s']:.2f} | {outside:.2f} | "
                     f"{size:,} |")
    programs = ["| problem | program | tracing (s) | lowering (s) | loading (s) | StableHLO lines |",
                "|---|---|---|---|---|---|"]
    sentences = []
    for problem in sorted({r["problem"] for r in stored}):
        cell = cells.get((problem, "bdmc-tsmc", "cold-cache"), [])
        if not cell:
            continue
        names = _occurrences(p["name"] for p in cell[0]["programs"])
        per = {n: {s: float(np.median([r["programs"][i][s] for r in cell if len(r["programs"]) == len(names)]))
                   for s in STAGES} for i, n in enumerate(names)}
        sizes = lines.get((problem, "bdmc-tsmc"), {})
        for n in names:
            label = n[0] if n[1] == 1 else f"{n[0]} ({n[1]})"
            programs.append(f"| {problem} | {label} | {per[n]['trace_s']:.3f} | {per[n]['lower_s']:.3f} | "
                            f"{per[n]['compile_s']:.3f} | {sizes.get(n, 0):,} |")
        ours = {name: sum(per[(name, 1)].values()) for name in OURS if (name, 1) in per}
        rest = sum(sum(v.values()) for n, v in per.items() if n[0] not in OURS)
        peer = medians.get((problem, "blackjax", "cold-cache"))
        peer_lines = lines.get((problem, "blackjax"), {})
        peer_size = max(peer_lines.values()) if peer_lines else 0
        mine = medians[(problem, "bdmc-tsmc", "cold-cache")]
        pilot = (f"the pilot's {ours['pilot']:.2f} s ({sizes.get(('pilot', 1), 0):,} lines), " if "pilot" in ours
                 else "no pilot's (its choice loaded from the pilot store), ")
        sentence = (f"**{problem}, caches warm.** bdmc's tempered SMC's first call took {mine['call']:.2f} s, "
                    f"{mine['stages']:.2f} s of it in the stages of its {mine['programs']} programs: {pilot}the "
                    f"run's {ours.get('run', 0.0):.2f} s ({sizes.get(('run', 1), 0):,} lines) and the "
                    f"{len(names) - len(ours)} others' (prior draws, the prior check, the keys) {rest:.2f} s.")
        if peer is not None:
            sentence += (f" BlackJAX's took {peer['call']:.2f} s, {peer['stages']:.2f} s of it in its "
                         f"{peer['programs']} programs, whose largest (its whole run) has {peer_size:,} lines: bdmc's "
                         f"run alone is {sizes.get(('run', 1), 0) / max(peer_size, 1):.2f} times its size and "
                         f"took {ours.get('run', 0.0) / max(peer['stages'], 1e-9):.2f} times BlackJAX's stages.")
        sentences.append(sentence)
    before = rows(folder, "rows_before.jsonl") if (Path(folder) / "rows_before.jsonl").exists() else []
    then: dict = {}
    for r in before:
        then.setdefault((r["problem"], r["tool"], r["kind"]), []).append(r["call_seconds"])
    pairs = [(cell, float(np.median(calls)), medians[cell]["call"]) for cell, calls in sorted(then.items())
             if cell in medians and cell[1].startswith("bdmc")]
    compared = [f"{' '.join(cell)}: {was:.2f} s then, {now:.2f} s now" for cell, was, now in pairs]
    changes = [now / was - 1 for _, was, now in pairs]
    times = [r["time"] for r in stored]
    loads = [x for r in stored for x in (r["load_before"], r["load_after"])]
    fmt = "%Y-%m-%d %H:%M"
    return {"before": "; ".join(compared) if compared else "no earlier rows stored",
            "before_cells": len(pairs), "before_shorter": sum(c < 0 for c in changes),
            "before_median_fall": -float(np.median(changes)) if changes else float("nan"),
            "before_commits": ", ".join(sorted({r["commit"] for r in before})) or "-",
            "table": "\n".join(table), "programs": "\n".join(programs), "sentences": "\n\n".join(sentences),
            "rounds": max((r["round"] for r in stored), default=-1) + 1,
            "commits": ", ".join(sorted({r["commit"] for r in stored})),
            "clean": ", ".join(sorted({str(r["clean_tree"]) for r in stored})),
            "tools": ", ".join(sorted({r["tool"] for r in stored})),
            "problems": ", ".join(sorted({r["problem"] for r in stored})),
            "first": time.strftime(fmt, time.gmtime(min(times))) if times else "-",
            "last": time.strftime(fmt, time.gmtime(max(times))) if times else "-",
            "load_min": min(loads, default=float("nan")), "load_max": max(loads, default=float("nan"))}
