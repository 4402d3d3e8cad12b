"""The values of ``weight_health/README.md``, from ``rows.jsonl`` (``tests/test_results_pages.py`` checks them).

The rule is chosen on one half of the seeds and scored on the other. Each candidate rule (``RULES``) warns on an
estimate from its stored weight ESS and k-hat; on the *selection* half (even seeds) a rule's score is the sum, over
the four cells (16 and 64 runs, forward and reverse), of its false-warning rate and its miss rate; the lowest score
is chosen (the first declared on a tie). The *held-out* half (odd seeds), which the choice never reads, scores
it. *within*: |error| <= 1 stderr; *off*: |error| >= 1 nat; a *false warning* is a warned estimate within one
stderr, a *miss* a silent estimate one nat or more off.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from bdmc.caching import cached
from bdmc.contracts.weight_health import untrusted

CELLS = ((16, "forward"), (16, "reverse"), (64, "forward"), (64, "reverse"))
HALVES = {"selection": 0, "held_out": 1}  # seed % 2


@cached(maxsize=16)
def _rows(folder: Path) -> tuple:
    return tuple(json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip())


def _khat(r):
    k = r["khat"]
    return -math.inf if k is None or not math.isfinite(float(k)) else float(k)


def _ess(r):
    e = r["weight_ess"]
    return math.nan if e is None else float(e)


def _within(r):
    return abs(r["error"]) <= r["stderr"]


def _off(r):
    return abs(r["error"]) >= 1.0


# The candidate rules, in the order a tie is broken: label -> warns(row). NaN ESS warns where a floor is asked.
RULES = {
    "k-hat > 0.7 or ESS < max(4, n / 8)": lambda r: _khat(r) > 0.7 or not _ess(r) >= max(4, r["num_runs"] / 8),
    "k-hat > 0.7 or ESS < 4": lambda r: _khat(r) > 0.7 or not _ess(r) >= 4,
    "k-hat > 0.5 or ESS < 4": lambda r: _khat(r) > 0.5 or not _ess(r) >= 4,
    "k-hat > 0.7 only": lambda r: _khat(r) > 0.7,
    "ESS < 4 only": lambda r: not _ess(r) >= 4,
    "ESS < n / 8 only": lambda r: not _ess(r) >= r["num_runs"] / 8,
    "k-hat > 0.7 or ESS < n / 6": lambda r: _khat(r) > 0.7 or not _ess(r) >= r["num_runs"] / 6,
}


def library_warns(r) -> bool:
    """The warning bdmc gives today (``bdmc.contracts.weight_health.untrusted``), from the stored ESS and k-hat."""
    k = r["khat"]
    return untrusted(_ess(r), math.nan if k is None else float(k), int(r["num_runs"])) is not None


def _half(folder, half):
    return [r for r in _rows(folder) if r["seed"] % 2 == HALVES[half]]


def _cell(rows, runs, direction):
    return [r for r in rows if r["num_runs"] == runs and r["direction"] == direction]


def _rates(rows, warns):
    """(false warnings, within), (misses, off) over ``rows``."""
    within = [r for r in rows if _within(r)]
    off = [r for r in rows if _off(r)]
    return (sum(map(warns, within)), len(within)), (sum(not warns(r) for r in off), len(off))


def _share(count_total):
    count, total = count_total
    return count / total if total else math.nan


def _score(rows, warns):
    total = 0.0
    for runs, direction in CELLS:
        fw, miss = _rates(_cell(rows, runs, direction), warns)
        total += _share(fw) + _share(miss)
    return total


def _scores(folder):
    selection = _half(folder, "selection")
    return {name: _score(selection, warns) for name, warns in RULES.items()}


def _chosen(folder):
    scores = _scores(folder)
    return min(scores, key=lambda name: (scores[name], list(RULES).index(name)))


def _rules_table(folder, half) -> str:
    rows, chosen = _half(folder, half), _chosen(folder)
    head = ["rule"] + [f"{runs} runs, {d}: false warnings / misses" for runs, d in CELLS] + ["score (sum of the eight)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, warns in RULES.items():
        cells = []
        for runs, direction in CELLS:
            fw, miss = _rates(_cell(rows, runs, direction), warns)
            cells.append(f"{_share(fw):.2f} / {_share(miss):.2f}")
        label = f"**{name}** (chosen)" if name == chosen else name
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {_score(rows, warns):.2f} |")
    return "\n".join(lines)


def _cell_table(folder, half) -> str:
    """The chosen rule, cell by cell, on one half of the seeds."""
    rows, warns = _half(folder, half), RULES[_chosen(folder)]
    lines = ["| num_runs | direction | estimates | within 1 stderr | false warnings | 1 nat or more off | misses | "
             "within 3 stderr (silent) | within 3 stderr (warned) |", "|---|---|---|---|---|---|---|---|---|"]
    for runs, direction in CELLS:
        cell = _cell(rows, runs, direction)
        (fw, within), (miss, off) = _rates(cell, warns)
        silent = [r for r in cell if not warns(r)]
        warned = [r for r in cell if warns(r)]

        def z3(group):
            return f"{sum(abs(r['error']) <= 3 * r['stderr'] for r in group) / len(group):.2f}" if group else "-"

        lines.append(f"| {runs} | {direction} | {len(cell)} | {within} | {_share((fw, within)):.2f} | {off} | "
                     f"{_share((miss, off)):.2f} | {z3(silent)} | {z3(warned)} |")
    return "\n".join(lines)


def _pooled(rows, warns):
    (fw, within), (miss, off) = _rates(rows, warns)
    return {"false": fw, "within": within, "fw": _share((fw, within)), "missed": miss, "off": off,
            "miss": _share((miss, off))}


def values(folder: Path) -> dict:
    """Every value the page uses, computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/weight_health`` or a copy of it).

    Returns
    -------
    dict
        Each value's name and value.
    """
    rows = _rows(folder)
    scores, chosen = _scores(folder), _chosen(folder)
    runner_up = min((n for n in RULES if n != chosen), key=lambda n: (scores[n], list(RULES).index(n)))
    warns = RULES[chosen]
    same = all(warns(r) == library_warns(r) for r in rows)
    library = ("It is the rule bdmc applies (`bdmc.contracts.weight_health.untrusted`): the two warn on the same "
               "stored estimates." if same else
               "bdmc applies another rule (`bdmc.contracts.weight_health.untrusted`), which warns on other stored "
               "estimates than this one: the warning is not the rule chosen here.")
    held, everything = _pooled(_half(folder, "held_out"), warns), _pooled(list(rows), warns)
    seeds = sorted({r["seed"] for r in rows})
    out = {"seeds": len(seeds), "selection_seeds": sum(s % 2 == 0 for s in seeds),
           "held_out_seeds": sum(s % 2 == 1 for s in seeds), "steps": ", ".join(map(str, sorted(
               {r["num_steps"] for r in rows}))), "estimates": len(rows),
           "chosen": chosen, "chosen_score": scores[chosen], "runner_up": runner_up,
           "runner_up_score": scores[runner_up], "library": library,
           "held_out_table": _cell_table(folder, "held_out"), "selection_rules": _rules_table(folder, "selection"),
           "held_out_rules": _rules_table(folder, "held_out")}
    out["held_reverse_missed"] = sum(r["direction"] == "reverse" and _off(r) and not warns(r)
                                     for r in _half(folder, "held_out"))
    out.update({f"held_{k}": v for k, v in held.items()})
    out.update({f"all_{k}": v for k, v in everything.items()})
    return out
