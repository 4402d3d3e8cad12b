"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

QUOTES = ("checks", "false_verdicts", "flag_6_lr_low", "flag_6_lr_high", "flag_3_any", "width_median_lr")


def _rows(folder: Path, model=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if model is None or r["model"] == model]


def checks(folder):
    return len(_rows(folder))


def false_verdicts(folder):
    return sum(r["verdict"] != "consistent" for r in _rows(folder))


def flag_6_lr_low(folder):
    return sum(r["shifted"]["-6"] == "too low" for r in _rows(folder, "linear regression"))


def flag_6_lr_high(folder):
    return sum(r["shifted"]["+6"] == "too high" for r in _rows(folder, "linear regression"))


def flag_3_any(folder):
    return sum(r["shifted"][s] != "consistent" for r in _rows(folder) for s in ("-3", "+3"))


def width_median_lr(folder):
    return float(np.median([r["certified_upper"] - r["certified_lower"] for r in _rows(folder, "linear regression")]))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/check_estimate_level`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
