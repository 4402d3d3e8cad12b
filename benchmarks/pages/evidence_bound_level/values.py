"""The values of ``evidence_bound_level``'s page: certified bounds' measured levels and widths, from rows.jsonl.

Each independent side holds m rules, each computed at ``a/m`` (``bdmc.intervals.bounds``): the extreme run (k = 1:
min-of-runs below, max-of-runs above), the k-th order statistic for k = ceil(n/8) and ceil(n/4), and markov. The
page names the order statistics by their rank's rule, ``n/8`` and ``n/4``, so that n = 16 (k = 2, 4) and n = 32
(k = 4, 8) share a column.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows

from bdmc.errors import DataError

LOWER, UPPER, SHARED = "lower", "upper", "upper, shared start"
CONTRAST = "max-of-runs, as if independent"
EXTREME = {LOWER: "min-of-runs", UPPER: "max-of-runs"}
RULES = ("k=1", "n/8", "n/4", "markov")  # the page's names, in its columns' order
MODELS = {"Gaussian mean": "GaussianMean", "linear regression": "LinearRegression"}


def rank(n: int, rule: str) -> int:
    """The order statistic a rule name stands for at n runs: ceil(n/8) or ceil(n/4)."""
    return math.ceil(n / {"n/8": 8, "n/4": 4}[rule])


def key(row: dict, side: str, rule: str) -> str:
    """The rows' name of a page rule on an independent side (``min-of-runs``, ``quantile-of-runs (k=4)``, ...)."""
    if rule == "k=1":
        return EXTREME[side]
    if rule == "markov":
        return "markov"
    name = f"quantile-of-runs (k={rank(row['num_runs'], rule)})"
    if name not in row["cells"][side]:
        raise DataError(f"{row['model']}, T = {row['num_steps']}, n = {row['num_runs']}: no {name} on the {side} side")
    return name


def cell(row: dict, side: str, rule: str) -> dict:
    return row["cells"][side][key(row, side, rule)]


def taken_share(row: dict, side: str, rule: str) -> float:
    """The fraction of the row's groups whose bound taken is ``rule``'s."""
    return row["cells"][side]["chosen"][key(row, side, rule)] / row["seeds"]


def num_rules(stored: list[dict]) -> int:
    """m, the rules sharing the level on an independent side (the same in every row, or the page's a/m is false)."""
    counts = {len(r["cells"][side]["chosen"]) for r in stored for side in (LOWER, UPPER)}
    if len(counts) != 1:
        raise DataError(f"the rows split the level over different numbers of rules: {sorted(counts)}")
    return counts.pop()


def _rate(c: dict, seeds: int) -> str:
    """``k`` wrong of ``seeds`` and the 95% Clopper-Pearson interval's upper end."""
    return f"{c['failures']} ({clopper_pearson(c['failures'], seeds)[1]:.4f})"


def level_table(stored: list[dict]) -> str:
    """Per (model, T, n, a): how many groups' bounds fell on the wrong side, for the bound taken and each rule."""
    m = num_rules(stored)
    head = ["model", "T", "n", "a"]
    for side in (LOWER, UPPER):
        head += [f"{side}: taken", f"{EXTREME[side]} (k = 1) at a/{m}", f"k = n/8 at a/{m}", f"k = n/4 at a/{m}",
                 f"markov at a/{m}"]
    head += ["upper, shared start: markov at a", f"max-of-runs at a/{m} as if independent (not valid)"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in stored:
        s = r["seeds"]
        parts = [r["model"], str(r["num_steps"]), str(r["num_runs"]), str(r["level"])]
        for side in (LOWER, UPPER):
            parts += [_rate(r["cells"][side]["taken"], s)] + [_rate(cell(r, side, rule), s) for rule in RULES]
        parts += [_rate(r["cells"][SHARED]["taken"], s), _rate(r["cells"][SHARED][CONTRAST], s)]
        lines.append("| " + " | ".join(parts) + " |")
    return "\n".join(lines)


def width_table(stored: list[dict]) -> str:
    """Per (model, T, n, a): each rule's and the bound taken's mean (median) distance to the exact value."""
    def slack(c: dict) -> str:
        return f"{c['mean']:.2f} ({c['median']:.2f})"

    head = ["model", "T", "n", "a"]
    for side in (LOWER, UPPER):
        head += [f"{side}: {EXTREME[side]} (k = 1)", "k = n/8", "k = n/4", "markov", "taken"]
    head += ["upper, shared start: markov at a"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in stored:
        parts = [r["model"], str(r["num_steps"]), str(r["num_runs"]), str(r["level"])]
        for side in (LOWER, UPPER):
            parts += [slack(cell(r, side, rule)) for rule in RULES] + [slack(r["cells"][side]["taken"])]
        parts += [slack(r["cells"][SHARED]["taken"])]
        lines.append("| " + " | ".join(parts) + " |")
    return "\n".join(lines)


def taken_table(stored: list[dict]) -> str:
    """Per (model, T, n, a) and side: the fraction of the groups whose bound taken was each rule's."""
    head = ["model", "T", "n", "a"]
    for side in (LOWER, UPPER):
        head += [f"{side}: {EXTREME[side]} (k = 1)", "k = n/8", "k = n/4", "markov"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in stored:
        parts = [r["model"], str(r["num_steps"]), str(r["num_runs"]), str(r["level"])]
        for side in (LOWER, UPPER):
            parts += [f"{taken_share(r, side, rule):.1%}" for rule in RULES]
        lines.append("| " + " | ".join(parts) + " |")
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


def _worst(stored: list[dict], level: float, sides: tuple[str, ...] = (LOWER, UPPER, SHARED)) -> float:
    """The largest failure fraction of a bound taken (on ``sides``), over the cells at ``level``."""
    return max(r["cells"][side]["taken"]["failures"] / r["seeds"] for r in stored if r["level"] == level
               for side in sides)


def _worst_rule(stored: list[dict], level: float) -> float:
    """The largest failure fraction of one rule alone at its share, independent sides, over the cells at ``level``."""
    return max(cell(r, side, rule)["failures"] / r["seeds"] for r in stored if r["level"] == level
               for side in (LOWER, UPPER) for rule in RULES)


def _select(stored: list[dict], **where) -> list[dict]:
    return [r for r in stored if all(r[k] == v for k, v in where.items())]


def _means(stored: list[dict], side: str, rule: str, **where) -> list[float]:
    """Mean slack of a page rule (or ``taken``) over the selected rows."""
    picked = _select(stored, **where)
    return [r["cells"][side]["taken"]["mean"] if rule == "taken" else cell(r, side, rule)["mean"] for r in picked]


def _shares(stored: list[dict], sides: tuple[str, ...], rule: str, **where) -> list[float]:
    return [taken_share(r, side, rule) for r in _select(stored, **where) for side in sides]


def _count(stored: list[dict], sides: tuple[str, ...], rule: str, **where) -> int:
    return sum(r["cells"][side]["chosen"][key(r, side, rule)] for r in _select(stored, **where) for side in sides)


def _span(out: dict, name: str, numbers) -> None:
    """``name_lo`` and ``name_hi``: the smallest and largest of ``numbers``."""
    numbers = list(numbers)
    out[f"{name}_lo"], out[f"{name}_hi"] = float(min(numbers)), float(max(numbers))


def _ranks_text(stored: list[dict]) -> str:
    """``2 and 4 for n = 16, 4 and 8 for n = 32``: the ranks k = n/8 and n/4 stand for."""
    return ", ".join(f"{rank(n, 'n/8')} and {rank(n, 'n/4')} for n = {n}"
                     for n in sorted({r["num_runs"] for r in stored}))


def values(folder: Path) -> dict:
    """Every value the page quotes, computed from the rows stored in ``folder``."""
    stored = rows(folder)
    m = num_rules(stored)
    for r in stored:  # every page rule must be in every row (key() raises otherwise)
        for side in (LOWER, UPPER):
            for rule in RULES:
                key(r, side, rule)
    seeds = {r["seeds"] for r in stored}
    steps = sorted({r["num_steps"] for r in stored})
    short, long = steps[0], steps[-1]
    runs = sorted({r["num_runs"] for r in stored})
    both = (LOWER, UPPER)
    out: dict = {"seeds": min(seeds), "steps_short": short, "steps_long": long, "cells": 3 * len(stored),
                 "num_rules": m, "ranks": _ranks_text(stored), "n_few": runs[0], "n_many": runs[-1]}
    out["worst_01"], out["worst_05"] = _worst(stored, 0.01), _worst(stored, 0.05)
    for a, name in ((0.01, "01"), (0.05, "05")):
        out[f"worst_shared_{name}"] = _worst(stored, a, (SHARED,))
        out[f"worst_indep_{name}"] = _worst(stored, a, (LOWER, UPPER))
    out["worst_rule_01"], out["worst_rule_05"] = _worst_rule(stored, 0.01), _worst_rule(stored, 0.05)
    out["over_level"] = sum(clopper_pearson(r["cells"][side]["taken"]["failures"], r["seeds"])[0] > r["level"]
                            for r in stored for side in (LOWER, UPPER, SHARED))
    out["over_share"] = sum(clopper_pearson(cell(r, side, rule)["failures"], r["seeds"])[0] > r["level"] / m
                            for r in stored for side in both for rule in RULES)
    out["rule_cells"] = len(stored) * len(both) * len(RULES)
    # The single runs' spread.
    _span(out, "spread_short", (r["run_spread"]["forward"]["sd"] for r in _select(stored, num_steps=short)))
    _span(out, "spread_long", (r["run_spread"]["forward"]["sd"] for r in _select(stored, num_steps=long)))
    _span(out, "rev_spread_short", (r["run_spread"]["reverse"]["sd"] for r in _select(stored, num_steps=short)))
    for model, short_name in MODELS.items():
        out[f"rev_spread_short_{short_name}"] = max(r["run_spread"]["reverse"]["sd"]
                                                    for r in _select(stored, num_steps=short, model=model))
    # Widths: each rule's mean distance, per side and T.
    for t, label in ((short, "short"), (long, "long")):
        for side, s in ((LOWER, "lower"), (UPPER, "upper")):
            for rule, r in (("k=1", "k1"), ("n/8", "q8"), ("n/4", "q4"), ("markov", "markov"), ("taken", "taken")):
                _span(out, f"{r}_{s}_{label}", _means(stored, side, rule, num_steps=t))
        _span(out, f"shared_{label}", _means(stored, SHARED, "taken", num_steps=t))
    # Which rule gives the bound taken.
    _span(out, "q4_taken_long", _shares(stored, both, "n/4", num_steps=long))
    _span(out, "q4_taken_lower_long", _shares(stored, (LOWER,), "n/4", num_steps=long))
    _span(out, "q4_taken_upper_long", _shares(stored, (UPPER,), "n/4", num_steps=long))
    _span(out, "q8_taken_long", _shares(stored, both, "n/8", num_steps=long))
    _span(out, "k1_taken_long", _shares(stored, both, "k=1", num_steps=long))
    out["markov_taken_long"] = _count(stored, both, "markov", num_steps=long)
    out["groups_long"] = sum(r["seeds"] for r in _select(stored, num_steps=long)) * len(both)
    out["q4_most_long"] = sum(max(RULES, key=lambda rule, r=r, side=side: taken_share(r, side, rule)) == "n/4"
                              for r in _select(stored, num_steps=long) for side in both)
    out["side_cells_long"] = len(_select(stored, num_steps=long)) * len(both)
    _span(out, "markov_taken_lower_short", _shares(stored, (LOWER,), "markov", num_steps=short))
    _span(out, "q4_taken_lower_short", _shares(stored, (LOWER,), "n/4", num_steps=short))
    out["q8_taken_lower_short"] = _count(stored, (LOWER,), "n/8", num_steps=short)
    out["k1_taken_lower_short"] = _count(stored, (LOWER,), "k=1", num_steps=short)
    out["groups_lower_short"] = sum(r["seeds"] for r in _select(stored, num_steps=short))
    _span(out, "q4_taken_upper_short", _shares(stored, (UPPER,), "n/4", num_steps=short))
    _span(out, "k1_taken_upper_short", _shares(stored, (UPPER,), "k=1", num_steps=short))
    for model, short_name in MODELS.items():
        _span(out, f"markov_taken_upper_short_{short_name}",
              _shares(stored, (UPPER,), "markov", num_steps=short, model=model))
    out["q4_most_upper_short"] = sum(max(RULES, key=lambda rule, r=r: taken_share(r, UPPER, rule)) == "n/4"
                                     for r in _select(stored, num_steps=short))
    out["short_rows"] = len(_select(stored, num_steps=short))
    q4_upper, markov_upper = (_means(stored, UPPER, rule, num_steps=short) for rule in ("n/4", "markov"))
    out["q4_closer_upper_short"] = int(np.sum(np.less(q4_upper, markov_upper)))
    out["q4_closer_k1_upper_short"] = int(np.sum(np.less(q4_upper, _means(stored, UPPER, "k=1", num_steps=short))))
    # More runs: the extreme run against the k = n/4 rule and the bound taken, at T long, n few -> many.
    few, many = ({rule: _means(stored, LOWER, rule, num_steps=long, num_runs=n) for rule in ("k=1", "n/4", "taken")}
                 for n in (runs[0], runs[-1]))
    _span(out, "n_growth_k1", np.subtract(many["k=1"], few["k=1"]))  # positive: further from log p(y)
    _span(out, "n_gain_q4", np.subtract(few["n/4"], many["n/4"]))  # positive: closer
    _span(out, "n_gain_taken", np.subtract(few["taken"], many["taken"]))
    # The shared start against independent draws.
    shared_short = _means(stored, SHARED, "taken", num_steps=short)
    upper_short = _means(stored, UPPER, "taken", num_steps=short)
    out["shared_narrower_short"] = int(np.sum(np.less(shared_short, upper_short)))
    out["short_cells"] = len(shared_short)
    out["short_gap"] = float(np.max(np.abs(np.subtract(shared_short, upper_short))))
    out["contrast_failures"] = sum(r["cells"][SHARED][CONTRAST]["failures"] for r in stored)
    out["posterior_check"] = max(r["posterior_check"] for r in stored)
    out["level_table"] = level_table(stored)
    out["width_table"] = width_table(stored)
    out["taken_table"] = taken_table(stored)
    out["spread_table"] = spread_table(stored)
    dates = sorted(r["date"] for r in stored)
    loads = [r["load"] for r in stored]
    tree = "clean tree" if all(r["clean_tree"] for r in stored) else "uncommitted changes in the tree"
    out["provenance"] = (f"commit {', '.join(sorted({r['commit'] for r in stored}))}, {tree}"
                         f", {dates[0][:16].replace('T', ' ')} to {dates[-1][11:16]} UTC, 1-minute load "
                         f"{min(loads):.1f} to {max(loads):.1f} on {stored[0]['machine']}")
    return out
