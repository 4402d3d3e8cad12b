"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from collections import Counter
from pathlib import Path

QUOTES = ("false_alarms", "checks_correct", "caught_wrong", "checks_wrong", "caught_tenth", "checks_tenth",
          "worst_alarms", "median_warm_seconds")


def _rows(folder: Path, variant=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if r["verdict"] in ("consistent", "inconsistent")
            and (variant is None or r["variant"] == variant)]


def _flagged(folder, variant):
    return sum(r["verdict"] == "inconsistent" for r in _rows(folder, variant))


def false_alarms(folder):
    return _flagged(folder, "correct")


def checks_correct(folder):
    return len(_rows(folder, "correct"))


def caught_wrong(folder):
    return _flagged(folder, "wrong rate")


def checks_wrong(folder):
    return len(_rows(folder, "wrong rate"))


def caught_tenth(folder):
    return _flagged(folder, "wrong rate / 10")


def checks_tenth(folder):
    return len(_rows(folder, "wrong rate / 10"))


def worst_alarms(folder):
    per_cell = Counter((r["ppl"], r["family"]) for r in _rows(folder, "correct") if r["verdict"] == "inconsistent")
    return max(per_cell.values(), default=0)


def median_warm_seconds(folder):
    warm = sorted(r["seconds"] for r in _rows(folder) if r["seed"] > 0)
    return warm[len(warm) // 2]


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/simulator_density_discrete`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
