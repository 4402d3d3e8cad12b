"""The values of ``evidence_bound_level``'s page: certified bounds' measured levels and widths, from rows.jsonl."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows

LOWER, UPPER, SHARED = "lower", "upper", "upper, shared start"
CONTRAST = "max-of-runs, as if independent"


def _cells(stored: list[dict], side: str, rule: str = "taken", **where) -> list[dict]:
    return [r["cells"][side][rule] for r in stored if all(r[k] == v for k, v in where.items())]


def _rate(cell: dict, seeds: int) -> str:
    """``k / seeds`` and the 95% Clopper-Pearson interval's upper end."""
    return f"{cell['failures']} ({clopper_pearson(cell['failures'], seeds)[1]:.4f})"


def level_table(stored: list[dict]) -> str:
    """Per (model, T, n, a): how many groups' bounds fell on the wrong side, for the bound taken and each rule."""
    lines = ["| model | T | n | a | lower: taken | min-of-runs at a/2 | markov at a/2 | upper: taken | "
             "max-of-runs at a/2 | markov at a/2 | upper, shared start: markov at a | "
             "max-of-runs at a/2 as if independent (not valid) |", "|---" * 12 + "|"]
    for r in stored:
        c, s = r["cells"], r["seeds"]
        lines.append(
            f"| {r['model']} | {r['num_steps']} | {r['num_runs']} | {r['level']} | {_rate(c[LOWER]['taken'], s)} | "
            f"{_rate(c[LOWER]['min-of-runs'], s)} | {_rate(c[LOWER]['markov'], s)} | {_rate(c[UPPER]['taken'], s)} | "
            f"{_rate(c[UPPER]['max-of-runs'], s)} | {_rate(c[UPPER]['markov'], s)} | "
            f"{_rate(c[SHARED]['taken'], s)} | {_rate(c[SHARED][CONTRAST], s)} |")
    return "\n".join(lines)


def width_table(stored: list[dict]) -> str:
    """Per (model, T, n, a): each rule's mean (median) distance to the exact value, and how often each was taken."""
    def cell(c: dict) -> str:
        return f"{c['mean']:.2f} ({c['median']:.2f})"

    lines = ["| model | T | n | a | lower: min-of-runs | markov | taken | min-of-runs taken | upper: max-of-runs | "
             "markov | taken | max-of-runs taken | upper, shared start: markov at a |", "|---" * 13 + "|"]
    for r in stored:
        c, s = r["cells"], r["seeds"]
        lines.append(
            f"| {r['model']} | {r['num_steps']} | {r['num_runs']} | {r['level']} | {cell(c[LOWER]['min-of-runs'])} | "
            f"{cell(c[LOWER]['markov'])} | {cell(c[LOWER]['taken'])} | "
            f"{c[LOWER]['chosen']['min-of-runs'] / s:.0%} | {cell(c[UPPER]['max-of-runs'])} | "
            f"{cell(c[UPPER]['markov'])} | {cell(c[UPPER]['taken'])} | {c[UPPER]['chosen']['max-of-runs'] / s:.0%} | "
            f"{cell(c[SHARED]['taken'])} |")
    return "\n".join(lines)


def spread_table(stored: list[dict]) -> str:
    """Per (model, T): the single runs' error against the exact value, mean and standard deviation (all 32 runs)."""
    lines = ["| model | T | forward log Z_i: mean, sd | reverse log U_i (own draws): mean, sd | "
             "reverse log U_i (shared start): mean, sd | seconds of runs (3 calls) |", "|---" * 6 + "|"]
    for r in stored:
        if r["num_runs"] != max(x["num_runs"] for x in stored) or r["level"] != stored[0]["level"]:
            continue
        f, u, sh = (r["run_spread"][k] for k in ("forward", "reverse", "reverse, shared start"))
        lines.append(f"| {r['model']} | {r['num_steps']} | {f['mean']:+.2f}, {f['sd']:.2f} | "
                     f"{u['mean']:+.2f}, {u['sd']:.2f} | {sh['mean']:+.2f}, {sh['sd']:.2f} | {r['run_seconds']:.1f} |")
    return "\n".join(lines)


def _worst(stored: list[dict], level: float) -> float:
    """The largest failure fraction of a bound taken (every side), over the cells at ``level``."""
    return max(r["cells"][side]["taken"]["failures"] / r["seeds"] for r in stored if r["level"] == level
               for side in (LOWER, UPPER, SHARED))


def _mean_slack(stored, side, rule, **where) -> list[float]:
    return [c["mean"] for c in _cells(stored, side, rule, **where)]


def values(folder: Path) -> dict:
    """Every value the page quotes, computed from the rows stored in ``folder``."""
    stored = rows(folder)
    seeds = {r["seeds"] for r in stored}
    steps = sorted({r["num_steps"] for r in stored})
    short, long = steps[0], steps[-1]
    over_level = sum(clopper_pearson(r["cells"][side]["taken"]["failures"], r["seeds"])[0] > r["level"]
                     for r in stored for side in (LOWER, UPPER, SHARED))
    spread_short = [r["run_spread"]["forward"]["sd"] for r in stored if r["num_steps"] == short]
    spread_long = [r["run_spread"]["forward"]["sd"] for r in stored if r["num_steps"] == long]
    min_long = _mean_slack(stored, LOWER, "min-of-runs", num_steps=long)
    markov_long = _mean_slack(stored, LOWER, "markov", num_steps=long)
    min_short = _mean_slack(stored, LOWER, "min-of-runs", num_steps=short)
    markov_short = _mean_slack(stored, LOWER, "markov", num_steps=short)
    chosen_min_long = [c["chosen"]["min-of-runs"] / r["seeds"] for r in stored if r["num_steps"] == long
                       for c in [r["cells"][LOWER]]]
    shared_long = _mean_slack(stored, SHARED, "taken", num_steps=long)
    upper_long = _mean_slack(stored, UPPER, "taken", num_steps=long)
    shared_short = _mean_slack(stored, SHARED, "taken", num_steps=short)
    max_long = _mean_slack(stored, UPPER, "max-of-runs", num_steps=long)
    upper_short = _mean_slack(stored, UPPER, "taken", num_steps=short)
    by_n = {n: _mean_slack(stored, LOWER, "min-of-runs", num_steps=long, num_runs=n) for n in (16, 32)}
    dates = sorted(r["date"] for r in stored)
    loads = [r["load"] for r in stored]
    return {
        "seeds": min(seeds), "steps_short": short, "steps_long": long, "cells": 3 * len(stored),
        "worst_01": _worst(stored, 0.01), "worst_05": _worst(stored, 0.05), "over_level": over_level,
        "spread_short_lo": min(spread_short), "spread_short_hi": max(spread_short),
        "spread_long_lo": min(spread_long), "spread_long_hi": max(spread_long),
        "min_long_lo": min(min_long), "min_long_hi": max(min_long),
        "markov_long_lo": min(markov_long), "markov_long_hi": max(markov_long),
        "min_short_lo": min(min_short), "min_short_hi": max(min_short),
        "markov_short_lo": min(markov_short), "markov_short_hi": max(markov_short),
        "chosen_min_long_lo": min(chosen_min_long),
        "chosen_min_short_hi": max(r["cells"][LOWER]["chosen"]["min-of-runs"] / r["seeds"] for r in stored
                                   if r["num_steps"] == short),
        "contrast_failures": sum(c["failures"] for c in _cells(stored, SHARED, CONTRAST)),
        "upper_long_lo": min(upper_long), "upper_long_hi": max(upper_long),
        "shared_long_lo": min(shared_long), "shared_long_hi": max(shared_long),
        "max_long_lo": min(max_long), "max_long_hi": max(max_long),
        "upper_short_lo": min(upper_short), "upper_short_hi": max(upper_short),
        "shared_short_lo": min(shared_short), "shared_short_hi": max(shared_short),
        "shared_narrower_short": int(np.sum(np.less(shared_short, upper_short))), "short_cells": len(shared_short),
        "n_growth_lo": min(np.subtract(by_n[32], by_n[16])), "n_growth_hi": max(np.subtract(by_n[32], by_n[16])),
        "posterior_check": max(r["posterior_check"] for r in stored),
        "level_table": level_table(stored), "width_table": width_table(stored), "spread_table": spread_table(stored),
        "provenance": (f"commit {', '.join(sorted({r['commit'] for r in stored}))}, "
                       f"{'clean tree' if all(r['clean_tree'] for r in stored) else 'uncommitted changes in the tree'}"
                       f", {dates[0][:16].replace('T', ' ')} to {dates[-1][11:16]} UTC, 1-minute load "
                       f"{min(loads):.1f} to {max(loads):.1f} on {stored[0]['machine']}"),
    }
