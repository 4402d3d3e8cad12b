"""log p(y) at equal accuracy: bdmc against the tools a user would pick instead.

On four problems with exact (or reference) log Z (``peer_problems.py``), each tool runs at a few budgets
(``peer_tools.BUDGETS``), one run per call, repeated with different seeds, round-robin over tools so drifting
background load hits all alike. For every (problem, tool, budget): error against the exact answer, RMSE and
bias over the repeats, warm seconds per run (compilation or first call excluded) and cold seconds (the first
call in the process, compilation included), and the tool's own count of density or gradient evaluations.
The summary gives per problem the time each tool needs to reach RMSE < 1 and < 0.1 nat, and bdmc's ratio
to the best peer.

Rows go to ``<out>/peers.jsonl`` as each call finishes (one atomic append each; a rerun with the same
settings skips finished rows), then ``peers.md`` and ``rmse_vs_seconds.png``. ``--quick`` writes
``*_quick.*``. See benchmarks/README.md.

    python benchmarks/peers.py --tools bdmc-ais,bdmc-smc,bdmc-tsmc,blackjax,pymc,tfp --repeats 5  # ~25 min, 2 cores
    python benchmarks/peers.py --quick               # smoke run: eight schools, smallest budgets, 3 repeats
    python benchmarks/peers.py --problems regression --tools bdmc-smc,pymc --repeats 20
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

import bdmc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datetime import UTC

import peer_tools  # noqa: E402
from harness import problems as peer_problems  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, bdmc_source, jsonable, load_rows, stamp, tree_state, write_text  # noqa: E402
from peer_tools import BUDGETS, KNOBS, TOOLS, budget_label  # noqa: E402

bdmc.enable_x64()  # float64, as the closed forms

RESULTS = Path(__file__).resolve().parent / "results" / "peers"
BDMC_TOOLS = ("bdmc-ais", "bdmc-smc", "bdmc-tsmc")
# The slow peers run fewer repeats and, for nautilus, fewer problems in the full run (minutes per run on two
# cores); the headline of peers.md says so.
SLOW_REPEATS = {"dynesty": 5, "ultranest": 5, "nautilus": 2}
SLOW_PROBLEMS = {"nautilus": ("schools",), "ultranest": ("regression", "schools", "pima")}
# Cells left out of the full run for time, with the reason (the headline of peers.md repeats it).
SKIP_CELLS = {("correlated", "ultranest", "100"): "its default region sampler did not finish one run in 8 "
                                                  "minutes in 20 dimensions"}
THRESHOLDS = (1.0, 0.1)


# ------------------------------------------------------------------------------------------- rows
def row_key(row: dict) -> tuple:
    return row["problem"], row["tool"], row["budget"], row["seed"]


# --------------------------------------------------------------------------------------------- running
def plan(problems, tools, repeats, quick) -> list[tuple]:
    """(problem, tool, budget, seeds) for every cell, in the order the cells are first called."""
    cells = []
    for name in problems:
        for tool in tools:
            if not quick and name not in SLOW_PROBLEMS.get(tool, (name,)):
                continue
            n = repeats if quick else min(repeats, SLOW_REPEATS.get(tool, repeats))
            for budget in (BUDGETS[tool][:1] if quick else BUDGETS[tool]):
                if quick or (name, tool, budget_label(budget)) not in SKIP_CELLS:
                    cells.append((name, tool, budget, list(range(n))))
    return cells


def timed_call(run, seed) -> dict:
    """One call with wall time and the 1-minute load average before and after."""
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run(seed)
    seconds = time.perf_counter() - start
    return {**out, "seconds": seconds, "load_before": load_before, "load_after": os.getloadavg()[0]}


class Runner:
    """Builds each (problem, tool, budget) once and records every call as a JSONL row."""

    def __init__(self, path, truths, console):
        self.path, self.truths, self.console = path, truths, console
        self.source = bdmc_source()
        self.commit, self.clean = tree_state()
        self.done = {row_key(r) for r in load_rows(path)}
        self.runs, self.calls = {}, {}

    def call(self, name, tool, budget, seed, *, cold: bool) -> None:
        label = budget_label(budget)
        if (name, tool, label, seed) in self.done:
            return
        cell = (name, tool, label)
        if cold and tool in BDMC_TOOLS:
            bdmc.clear_caches()  # so its cold call compiles, whatever ran before
        start = time.perf_counter()
        if cell not in self.runs:
            self.runs[cell] = peer_tools.make(tool, peer_problems.get_problem(name), budget)
        setup = time.perf_counter() - start
        first = self.calls.get(cell, 0) == 0
        out = timed_call(self.runs[cell], seed)
        self.calls[cell] = self.calls.get(cell, 0) + 1
        truth = self.truths[name]
        row = {"problem": name, "tool": tool, "budget": label, "knob": KNOBS[tool], "seed": seed,
               "kind": "cold" if first else "warm", "setup_seconds": setup,
               "seconds_with_setup": out["seconds"] + setup, "truth": truth["value"], "truth_kind": truth["kind"],
               "error": out["log_z"] - truth["value"], "time": time.time(), "bdmc_source": self.source,
               "commit": self.commit, "clean_tree": self.clean, **out}
        append_row(self.path, row)
        self.done.add(row_key(row))
        self.console.print(f"{name:11s} {tool:14s} {label:>7s} seed {seed:2d} {row['kind']:4s} "
                           f"{row['seconds']:8.3f}s  error {row['error']:+10.4f}  load {out['load_before']:.2f}")


def run_all(cells, runner) -> None:
    """Cold calls first (bdmc's first, as they clear JAX's caches), then warm repeats round-robin."""
    for name in dict.fromkeys(c[0] for c in cells):
        mine = [c for c in cells if c[0] == name]
        mine.sort(key=lambda c: c[1] not in BDMC_TOOLS)
        for _, tool, budget, seeds in mine:
            runner.call(name, tool, budget, seeds[0], cold=True)
        for r in range(1, max(len(c[3]) for c in mine)):
            for _, tool, budget, seeds in mine:
                if r < len(seeds):
                    runner.call(name, tool, budget, seeds[r], cold=False)


# --------------------------------------------------------------------------------------------- truths
def truths_for(problems, out_dir, quick, console) -> dict:
    """Exact log Z where there is one; else a long-run reference, computed once and kept in references.json."""
    path = out_dir / ("references_quick.json" if quick else "references.json")
    refs = json.loads(path.read_text()) if path.exists() else {}
    truths = {}
    for name in problems:
        problem = peer_problems.get_problem(name)
        if problem.exact is not None:
            truths[name] = {"value": problem.exact, "kind": "exact"}
            continue
        if name not in refs:
            with console.status(f"reference run for {name} ..."):
                refs[name] = {**peer_tools.long_reference(problem, quick=quick), **stamp()}
            write_text(path, json.dumps(refs, indent=2))
        truths[name] = {"value": refs[name]["value"], "kind": "reference", **refs[name]}
    return truths


# ------------------------------------------------------------------------------------------- summaries
def summarize(rows) -> list[dict]:
    """One record per (problem, tool, budget): RMSE, bias, warm and cold seconds, evaluations."""
    cells = {}
    for r in rows:
        cells.setdefault((r["problem"], r["tool"], r["budget"]), []).append(r)
    out = []
    for (name, tool, label), rs in cells.items():
        err = np.array([r["error"] for r in rs])
        warm = [r["seconds"] for r in rs if r["kind"] == "warm" and not r.get("compiled")]
        cold = [r["seconds_with_setup"] for r in rs if r["kind"] == "cold"]
        evals = [r["n_evals"] for r in rs if r.get("n_evals") is not None]
        pilots = [r["settings"].get("pilot_seconds", r["settings"].get("data_pilot_seconds"))
                  for r in rs if r["kind"] == "warm" and not r.get("compiled") and isinstance(r.get("settings"), dict)]
        pilots = [x for x in pilots if x is not None]
        out.append({"problem": name, "tool": tool, "budget": label, "knob": rs[0]["knob"], "n": len(rs),
                    "rmse": float(np.sqrt(np.mean(err**2))), "bias": float(np.mean(err)),
                    "sd": float(np.std(err, ddof=1)) if len(err) > 1 else float("nan"),
                    "warm_s": statistics.median(warm) if warm else float("nan"), "n_warm": len(warm),
                    "pilot_s": statistics.median(pilots) if pilots else float("nan"),
                    "cold_s": statistics.median(cold) if cold else float("nan"),
                    "n_evals": statistics.median(evals) if evals else None,
                    "load": statistics.mean(r["load_before"] for r in rs),
                    "bdmc_source": ",".join(sorted({str(r.get("bdmc_source")) for r in rs})),
                    "clean_tree": all(r.get("clean_tree", False) for r in rs),
                    "first_time": min(r["time"] for r in rs), "last_time": max(r["time"] for r in rs),
                    "truth_kind": rs[0]["truth_kind"]})
    order = {t: i for i, t in enumerate(TOOLS)}
    budget_order = {(t, budget_label(b)): i for t in TOOLS for i, b in enumerate(BUDGETS[t])}
    out.sort(key=lambda s: (s["problem"], order.get(s["tool"], 99), budget_order.get((s["tool"], s["budget"]), 99)))
    return out


def summary_times(summary) -> str:
    """The span of the rows' timestamps (UTC)."""
    from datetime import datetime

    def stamp(t):
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")
    return f"{stamp(min(s['first_time'] for s in summary))} to {stamp(max(s['last_time'] for s in summary))} UTC"


def reach(summary, problem, tool, threshold) -> dict | None:
    """The smallest budget (in budget order) whose RMSE is below ``threshold``, and the budget before it."""
    cells = [s for s in summary if s["problem"] == problem and s["tool"] == tool]
    for i, s in enumerate(cells):
        if s["rmse"] < threshold:
            return {**s, "previous": cells[i - 1]["budget"] if i else None}
    return None


def ratios(summary, problem, threshold) -> dict:
    """bdmc's time to reach ``threshold`` over the best peer's, warm and cold (above 1: bdmc slower)."""
    peers = [reach(summary, problem, t, threshold) for t in TOOLS if t not in BDMC_TOOLS]
    peers = [p for p in peers if p is not None]
    out = {}
    for tool in BDMC_TOOLS:
        mine = reach(summary, problem, tool, threshold)
        for which in ("warm_s", "cold_s"):
            best = min(peers, key=lambda p: p[which], default=None)
            value = mine[which] / best[which] if (mine and best and best[which] > 0) else None
            out[(tool, which)] = (value, best["tool"] if best else None)
    return out


def resolved(truth, threshold) -> bool:
    """Whether an RMSE below ``threshold`` against this truth says a tool is within ``threshold`` of log Z: always
    for an exact value; for a reference (the mean of two long runs), only when its two runs agree to within half
    the threshold (their gap measures the reference's own error, which an RMSE against it cannot see)."""
    return truth["kind"] == "exact" or truth["agree_nats"] <= threshold / 2


def best_ratio(summary, problem, threshold) -> dict:
    """bdmc's best method against the best peer at ``threshold``: warm seconds per run (the pilot inside bdmc's),
    ``{"bdmc": hit, "peer": hit, "ratio": float}``, or None entries where nobody reached it."""
    def best(tools):
        hits = [h for h in (reach(summary, problem, t, threshold) for t in tools) if h is not None]
        return min(hits, key=lambda h: h["warm_s"], default=None)

    mine, peer = best(BDMC_TOOLS), best([t for t in TOOLS if t not in BDMC_TOOLS])
    ratio = mine["warm_s"] / peer["warm_s"] if mine and peer and peer["warm_s"] > 0 else None
    return {"bdmc": mine, "peer": peer, "ratio": ratio}


def cold_summary(cold_rows, summary) -> list[dict]:
    """Per (problem, tool, kind) the median cold seconds (setup and first call, the import excluded) at the
    tool's smallest budget, and the cold time to each threshold: that first call plus the warm time of the
    budget that reaches the threshold, less the warm time of the smallest budget (what a first call at that
    budget costs once compiled: compilation does not grow with the budget, the run's time does)."""
    cells = {}
    for r in cold_rows:
        if r["kind"] in COLD_KINDS:
            cells.setdefault((r["problem"], r["tool"], r["kind"]), []).append(r)
    out = []
    for (problem, tool, kind), rs in sorted(cells.items()):
        first = statistics.median(r["seconds"] for r in rs)
        smallest = [s for s in summary if s["problem"] == problem and s["tool"] == tool
                    and s["budget"] == budget_label(rs[0]["budget"])]
        base = smallest[0]["warm_s"] if smallest else float("nan")
        row = {"problem": problem, "tool": tool, "kind": kind, "n": len(rs), "first_call_s": first,
               "import_s": statistics.median(r["import_seconds"] for r in rs),
               "load": statistics.mean(r["load_before"] for r in rs),
               "commits": ",".join(sorted({f"{r['commit']}{'' if r['clean_tree'] else '+dirty'}" for r in rs}))}
        for threshold in THRESHOLDS:
            hit = reach(summary, problem, tool, threshold)
            row[f"to_{threshold:g}"] = first + hit["warm_s"] - base if hit and math.isfinite(base) else None
        out.append(row)
    return out


COLD_KINDS = {"cold-nocache": "no disk caches", "cold-cache": "caches warm",
              "cold-rerun": "the same call again"}


def cold_lines(cold, problem, thresholds=THRESHOLDS) -> list[str]:
    kinds = [k for k in COLD_KINDS if any(c["kind"] == k and c["problem"] == problem for c in cold)]
    lines = ["| tool | " + " | ".join(f"{COLD_KINDS[k]}: first call (s) | to < 1 nat | to < 0.1 nat" for k in kinds)
             + " |", "|---|" + "---|---|---|" * len(kinds)]
    tools = dict.fromkeys(c["tool"] for c in cold if c["problem"] == problem)
    for tool in tools:
        cells = []
        for kind in kinds:
            c = next((c for c in cold if c["problem"] == problem and c["tool"] == tool and c["kind"] == kind), None)
            to = [fmt(c[f"to_{t:g}"]) if t in thresholds else "not resolved" for t in THRESHOLDS] if c else []
            cells += [fmt(c["first_call_s"]), *to] if c else ["-", "-", "-"]
        lines.append(f"| {tool} | " + " | ".join(cells) + " |")
    for kind in kinds:
        label = COLD_KINDS[kind]
        for threshold in thresholds:
            key = f"to_{threshold:g}"
            mine = [c for c in cold if c["problem"] == problem and c["kind"] == kind and c["tool"] in BDMC_TOOLS
                    and c[key] is not None]
            peers = [c for c in cold if c["problem"] == problem and c["kind"] == kind
                     and c["tool"] not in BDMC_TOOLS and c[key] is not None]
            if mine and peers:
                a, b = min(mine, key=lambda c: c[key]), min(peers, key=lambda c: c[key])
                lines.append(f"\nCold, {label}, to < {threshold:g} nat: bdmc's best ({a['tool']}, {fmt(a[key])} s) "
                             f"/ the best peer's ({b['tool']}, {fmt(b[key])} s) = **{fmt(a[key] / b[key])}x**.")
    return lines


def fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def reach_cell(hit) -> str:
    if hit is None:
        return "not reached"
    where = f"{hit['budget']}" + (f" (between {hit['previous']} and {hit['budget']})" if hit["previous"] else "")
    return f"{fmt(hit['warm_s'])} s warm / {fmt(hit['cold_s'])} s cold at {where}"


# ---------------------------------------------------------------------------------------------- outputs
def machine_info() -> dict:
    return {"cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "devices": str(jax.devices()),
            "x64": bool(jax.config.jax_enable_x64), **peer_tools.tool_versions()}


def headline(settings, missing) -> str:
    """What ran, and every setting reduced from a full run (``missing``: planned cells short of runs)."""
    reduced = []
    if settings["quick"]:
        reduced.append("QUICK smoke run: smallest budget per tool only")
    if settings["repeats"] < 10:
        reduced.append(f"{settings['repeats']} repeats (a full run has 10)")
    if not settings["quick"]:
        capped = [f"{t} {n}" for t, n in SLOW_REPEATS.items() if t in settings["tools"]]
        if capped:
            reduced.append("repeats capped at " + ", ".join(capped) + " (minutes per run)")
        reduced += [f"{t} only on {', '.join(p)}" for t, p in SLOW_PROBLEMS.items() if t in settings["tools"]]
        reduced += [f"{p} {t} {b} not run: {why}" for (p, t, b), why in SKIP_CELLS.items()
                    if p in settings["problems"] and t in settings["tools"]]
    left_out = [t for t in TOOLS if t not in settings["tools"]]
    if left_out:
        reduced.append("tools left out: " + ", ".join(left_out))
    if missing:
        reduced.append("cells with fewer runs than planned (not run for time): " + ", ".join(missing))
    return "Reduced from a full run: " + ("; ".join(reduced) if reduced else "nothing") + "."


def summary_table(summary, problem) -> list[str]:
    head = ["tool", "budget", "knob", "runs", "RMSE", "bias", "sd", "warm s/run", "of it bdmc's pilot (0: reused)",
            "cold s", "evals/run", "load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in (s for s in summary if s["problem"] == problem):
        lines.append("| " + " | ".join([s["tool"], s["budget"], s["knob"], str(s["n"]), fmt(s["rmse"]),
                                        f"{s['bias']:+.3g}", fmt(s["sd"]), fmt(s["warm_s"]), fmt(s["pilot_s"]),
                                        fmt(s["cold_s"]),
                                        fmt(s["n_evals"]), f"{s['load']:.2f}"]) + " |")
    return lines


def reach_table(summary, problem) -> list[str]:
    lines = ["| tool | RMSE < 1 nat | RMSE < 0.1 nat |", "|---|---|---|"]
    tools = dict.fromkeys(s["tool"] for s in summary if s["problem"] == problem)
    for tool in tools:
        lines.append(f"| {tool} | " + " | ".join(reach_cell(reach(summary, problem, tool, t))
                                                 for t in THRESHOLDS) + " |")
    return lines


def ratio_lines(summary, problem, thresholds=THRESHOLDS) -> list[str]:
    lines = ["| bdmc | threshold | warm: bdmc / best peer | cold: bdmc / best peer |", "|---|---|---|---|"]
    for threshold in thresholds:
        r = ratios(summary, problem, threshold)
        for tool in BDMC_TOOLS:
            cells = []
            for which in ("warm_s", "cold_s"):
                value, best = r[(tool, which)]
                cells.append(f"{fmt(value)} (vs {best})" if value is not None else
                             ("bdmc not reached" if best else "no peer reached"))
            lines.append(f"| {tool} | < {threshold:g} nat | " + " | ".join(cells) + " |")
    return lines


def missing_cells(cells, rows) -> list[str]:
    """The planned cells with fewer rows than seeds, as ``problem tool budget (rows/seeds)``."""
    counts = {}
    for r in rows:
        counts[(r["problem"], r["tool"], r["budget"])] = counts.get((r["problem"], r["tool"], r["budget"]), 0) + 1
    return [f"{name} {tool} {budget_label(b)} ({counts.get((name, tool, budget_label(b)), 0)}/{len(seeds)})"
            for name, tool, b, seeds in cells if counts.get((name, tool, budget_label(b)), 0) < len(seeds)]


def page(folder: Path, stem: str = "peers") -> str:
    """``<stem>.md`` from what a run stored in ``folder``: its rows, ``<stem>_summary.json`` (settings, machine and
    exact or reference answers), the cold rows and the SMC diagnosis rows (``benchmarks/pages/peers/``)."""
    stored = json.loads((folder / f"{stem}_summary.json").read_text())
    settings = stored["settings"]
    rows = [r for r in load_rows(folder / f"{stem}.jsonl")
            if r["problem"] in settings["problems"] and r["tool"] in settings["tools"]]
    cells = plan(settings["problems"], settings["tools"], settings["repeats"], settings["quick"])
    summary = summarize(rows)
    cold_path = folder / ("cold_quick.jsonl" if settings["quick"] else "cold.jsonl")
    cold = cold_summary(load_rows(cold_path), summary) if cold_path.exists() else []
    return markdown_page(summary, stored["truths"], settings, stored["machine"],
                         load_rows(folder / "smc_diagnosis.jsonl"), missing_cells(cells, rows), cold)


def markdown_page(summary, truths, settings, machine, diagnosis_rows, missing, cold=()) -> str:
    """The report of one run (``peers.md``)."""
    loads = [s["load"] for s in summary]
    lines = ["# log p(y) at equal accuracy: bdmc against its peers", "",
             headline(settings, missing), "",
             f"Settings: problems {', '.join(settings['problems'])}; tools {', '.join(settings['tools'])}; "
             f"up to {settings['repeats']} runs per (tool, budget), seeds 0, 1, ...; the first call of each "
             "cell is its cold call (compilation or first-call setup included), the others are warm. "
             f"Mean 1-minute load average before the calls: {statistics.mean(loads):.2f} "
             f"(min {min(loads):.2f}, max {max(loads):.2f}) on {machine['cpu_affinity']} CPUs. "
             "Budgets: smallest that reaches the threshold; 'between a and b' names the budget before it, "
             "which did not. Ratios above 1: bdmc slower than the best peer. The rows ran at commit "
             + ", ".join(sorted({s["bdmc_source"] for s in summary})) + "; clean tree: "
             + ", ".join(sorted({str(s["clean_tree"]) for s in summary})) + "; rows taken from "
             + f"{summary_times(summary)}.", ""]
    for name in settings["problems"]:
        problem, truth = peer_problems.get_problem(name), truths[name]
        lines += [f"## {problem.title}", ""]
        if truth["kind"] == "exact":
            lines += [f"Exact log Z = {truth['value']:.6f} (computed without bdmc).", ""]
        else:
            lines += [f"No closed form. Reference log Z = {truth['value']:.4f}: the mean of a long bdmc AIS run "
                      f"({truth['bdmc_label']}: {truth['bdmc']:.4f} ± {truth['bdmc_stderr']:.4f}) and a long "
                      f"BlackJAX run ({truth['peer_label']}: {truth['peer']:.4f}); they differ by "
                      f"{truth['agree_nats']:.3f} nat. Errors below are against this reference.", ""]
        best = [best_ratio(summary, name, t) for t in THRESHOLDS]
        measured = [t for t in THRESHOLDS if resolved(truth, t)]
        lines += ["### Time to reach RMSE", "", *reach_table(summary, name), ""]
        for threshold, b in zip(THRESHOLDS, best, strict=False):
            if threshold not in measured:
                hits = (reach(summary, name, t, threshold)
                        for t in dict.fromkeys(s["tool"] for s in summary if s["problem"] == name))
                under = ", ".join(f"{h['tool']} {h['budget']}" for h in hits if h is not None)
                lines.append(f"Warm, to < {threshold:g} nat: not resolved. The reference's two long runs differ by "
                             f"{truth['agree_nats']:.3f} nat, more than half the threshold, so an RMSE under "
                             f"{threshold:g} nat against it does not show a tool within {threshold:g} nat of log Z "
                             f"(under it here: {under or 'none'}); no ratio is taken at this threshold.")
            elif b["ratio"] is not None:
                lines.append(f"Warm, to < {threshold:g} nat: bdmc's best ({b['bdmc']['tool']} {b['bdmc']['budget']}, "
                             f"{fmt(b['bdmc']['warm_s'])} s, the pilot of the cell's first call reused) / the best "
                             f"peer's "
                             f"({b['peer']['tool']} {b['peer']['budget']}, {fmt(b['peer']['warm_s'])} s) = "
                             f"**{fmt(b['ratio'])}x**.")
            else:
                lines.append(f"Warm, to < {threshold:g} nat: " + ("no peer reached it" if b["peer"] is None else
                                                                  "no bdmc method reached it") + ".")
            lines.append("")
        lines += [*ratio_lines(summary, name, measured), ""]
        if cold:
            lines += ["### Cold first calls (`peers_cold.py`: fresh processes)", "",
                      *cold_lines(cold, name, measured), ""]
        lines += ["### Every budget", "", *summary_table(summary, name), ""]
    if diagnosis_rows and "regression" in settings["problems"]:
        from peer_smc_diagnosis import markdown

        lines += [markdown(diagnosis_rows), ""]
    lines += ["Machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()), ""]
    return "\n".join(lines)


def plot(path, summary, truths, problems) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(problems), figsize=(4.2 * len(problems), 4), squeeze=False)
    for ax, name in zip(axes[0], problems, strict=False):
        for tool in TOOLS:
            cells = [s for s in summary if s["problem"] == name and s["tool"] == tool and math.isfinite(s["warm_s"])]
            if cells:
                style = "-o" if tool in BDMC_TOOLS else "--."
                ax.plot([s["warm_s"] for s in cells], [max(s["rmse"], 1e-3) for s in cells], style, label=tool,
                        lw=2.2 if tool in BDMC_TOOLS else 1.2)
        for level in THRESHOLDS:
            ax.axhline(level, color="grey", lw=0.8, ls=":")
        ax.set(xscale="log", yscale="log", xlabel="warm seconds per run",
               title=f"{name} ({'exact' if truths[name]['kind'] == 'exact' else 'vs reference'})")
    axes[0][0].set_ylabel("RMSE of log Z (nat)")
    handles = {}
    for ax in axes[0]:  # one legend for every tool, whichever panels it appears in
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(label, handle)
    axes[0][-1].legend(handles.values(), handles.keys(), fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_summary(console, summary, problems) -> None:
    for name in problems:
        table = Table(title=f"{name}: time to RMSE (warm s at the first budget that reaches it)")
        for h in ("tool", "RMSE < 1 nat", "RMSE < 0.1 nat"):
            table.add_column(h)
        for tool in dict.fromkeys(s["tool"] for s in summary if s["problem"] == name):
            table.add_row(tool, *(reach_cell(reach(summary, name, tool, t)) for t in THRESHOLDS))
        console.print(table)


# ------------------------------------------------------------------------------------------------- main
def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default=",".join(peer_problems.BUILDERS),
                    help=f"comma-separated, from {','.join(peer_problems.BUILDERS)} (default all)")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, from {','.join(TOOLS)}")
    ap.add_argument("--repeats", type=int, default=10, help="runs per (tool, budget) (default 10)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: eight schools, smallest budget, 3 repeats, no nautilus (*_quick.*)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: rebuild the summary, markdown and figure from the JSONL")
    ap.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = ap.parse_args(argv)
    args.problems, args.tools = args.problems.split(","), args.tools.split(",")
    if args.quick:
        given = set(argv or sys.argv[1:])
        args.problems = args.problems if any(a.startswith("--problems") for a in given) else ["schools"]
        args.tools = args.tools if any(a.startswith("--tools") for a in given) else [t for t in TOOLS
                                                                                     if t != "nautilus"]
        args.repeats = min(args.repeats, 3)
    for bad in set(args.problems) - set(peer_problems.BUILDERS) | set(args.tools) - set(TOOLS):
        ap.error(f"unknown problem or tool {bad!r}")
    return args


def main(argv=None) -> None:
    args = parse(argv)
    if args.render:
        write_folder("peers")
        return
    console = Console(width=None if sys.stdout.isatty() else 160)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "peers_quick" if args.quick else "peers"
    settings = {"problems": args.problems, "tools": args.tools, "repeats": args.repeats, "quick": args.quick}
    for name in [] if args.report_only else args.problems:
        problem = peer_problems.get_problem(name)
        if "pymc" in args.tools:
            worst = peer_problems.check_pymc_density(problem)
            console.print(f"{name}: PyMC log density matches ours (largest difference {worst:.2e})")
    truths = truths_for(args.problems, args.out, args.quick, console)
    runner = Runner(args.out / f"{stem}.jsonl", truths, console)
    cells = plan(args.problems, args.tools, args.repeats, args.quick)
    if not args.report_only:
        run_all(cells, runner)

    rows = [r for r in load_rows(runner.path) if r["problem"] in args.problems and r["tool"] in args.tools]
    summary = summarize(rows)
    machine = machine_info()
    print_summary(console, summary, args.problems)
    cold_path = args.out / ("cold_quick.jsonl" if args.quick else "cold.jsonl")
    cold = cold_summary(load_rows(cold_path), summary) if cold_path.exists() else []
    write_text(args.out / f"{stem}_summary.json", json.dumps(
        {"settings": settings, "machine": machine, "truths": truths, "summary": summary, "cold": cold,
         "best": {f"{name} < {t:g}": {**best_ratio(summary, name, t), "resolved": resolved(truths[name], t)}
                  for name in args.problems for t in THRESHOLDS}},
        indent=2, default=jsonable))
    if args.quick:  # the full run's page is rendered from its template (write_folder below)
        write_text(args.out / f"{stem}.md", page(args.out, stem))
    plot(args.out / ("rmse_vs_seconds_quick.png" if args.quick else "rmse_vs_seconds.png"), summary, truths,
         args.problems)
    write_folder("peers", written_to=args.out)
    console.print(f"wrote {args.out / stem}.{{jsonl,md}}, {stem}_summary.json and the figure")


if __name__ == "__main__":
    main()
