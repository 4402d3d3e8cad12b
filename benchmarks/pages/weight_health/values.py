"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them).

An estimate *warns* by the rule the page states (k-hat > 0.7 or weight ESS < max(4, runs / 8)), recomputed from
the stored ESS and k-hat as ``benchmarks/weight_health.py`` does; *within* means |error| <= 1 stderr, *off* means
|error| >= 1 nat.
"""

import json
import math
from pathlib import Path

from bdmc.caching import cached


@cached(maxsize=16)
def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


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


# The rules of the second table: name -> warns(row).
RULES = {
    "rule": lambda r: _khat(r) > 0.7 or not _ess(r) >= max(4, r["num_runs"] / 8),
    "k7e4": lambda r: _khat(r) > 0.7 or _ess(r) < 4,
    "k5e4": lambda r: _khat(r) > 0.5 or _ess(r) < 4,
    "k7": lambda r: _khat(r) > 0.7,
    "e4": lambda r: _ess(r) < 4,
    "e8": lambda r: _ess(r) < r["num_runs"] / 8,
    "k7e6": lambda r: _khat(r) > 0.7 or _ess(r) < r["num_runs"] / 6,
}
WARNS = RULES["rule"]


def _share(rows, pred):
    return sum(map(pred, rows)) / len(rows)


def _cell(folder, runs=None, direction=None):
    return [r for r in _rows(folder) if (runs is None or r["num_runs"] == runs)
            and (direction is None or r["direction"] == direction)]


def _cell_quotes(prefix, runs, direction):
    def estimates(folder):
        """Estimates in the cell."""
        return len(_cell(folder, runs, direction))

    def within(folder):
        """Estimates within one stderr of the exact value."""
        return sum(map(_within, _cell(folder, runs, direction)))

    def false_warn(folder):
        """Share of the estimates within one stderr that warn."""
        return _share([r for r in _cell(folder, runs, direction) if _within(r)], WARNS)

    def off(folder):
        """Estimates one nat or more off."""
        return sum(map(_off, _cell(folder, runs, direction)))

    def misses(folder):
        """Share of the estimates one nat or more off that stay silent."""
        return _share([r for r in _cell(folder, runs, direction) if _off(r)], lambda r: not WARNS(r))

    def z3_silent(folder):
        """Share of the silent estimates within 3 stderr."""
        return _share([r for r in _cell(folder, runs, direction) if not WARNS(r)],
                      lambda r: abs(r["error"]) <= 3 * r["stderr"])

    def z3_warned(folder):
        """Share of the warned estimates within 3 stderr."""
        return _share([r for r in _cell(folder, runs, direction) if WARNS(r)],
                      lambda r: abs(r["error"]) <= 3 * r["stderr"])

    fns = dict(estimates=estimates, within=within, fw=false_warn, off=off, miss=misses, z3s=z3_silent,
               z3w=z3_warned)
    return {f"{prefix}_{k}": f for k, f in fns.items()}


def _rule_quotes(rule, direction):
    warns = RULES[rule]
    d = direction[0]

    def false_warn(folder):
        """At 64 runs: share of the estimates within one stderr that this rule warns on."""
        return _share([r for r in _cell(folder, 64, direction) if _within(r)], warns)

    def misses(folder):
        """At 64 runs: share of the estimates one nat or more off that this rule leaves silent."""
        return _share([r for r in _cell(folder, 64, direction) if _off(r)], lambda r: not warns(r))

    return {f"{rule}_{d}_fw": false_warn, f"{rule}_{d}_miss": misses}


_made = {}
for _runs in (16, 64):
    for _dir in ("forward", "reverse"):
        _made.update(_cell_quotes(f"r{_runs}{_dir[0]}", _runs, _dir))
for _rule in RULES:
    for _dir in ("forward", "reverse"):
        _made.update(_rule_quotes(_rule, _dir))
_made.update({k: v for k, v in _cell_quotes("all", None, None).items()
              if k.split("_", 1)[1] in ("estimates", "within", "fw", "off", "miss")})
globals().update(_made)


def seeds(folder):
    """Seeds per cell (the distinct seeds of the rows)."""
    return len({r["seed"] for r in _rows(folder)})


QUOTES = tuple(_made) + ("seeds",)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/weight_health`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
