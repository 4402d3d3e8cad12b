"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

QUOTES = ("noise_lr", "noise_cg", "correct_lr", "correct_cg")
NOISE = "log-likelihood noise variance x1.1 (density only)"


def _median(folder: Path, bug: str, model: str) -> float:
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return float(np.median([r["statistic"] for r in rows
                            if r["bug"] == bug and r["model"] == model and r["check"] == "exact value"]))


def noise_lr(folder):
    return _median(folder, NOISE, "linear-regression")


def noise_cg(folder):
    return _median(folder, NOISE, "correlated-gaussian")


def correct_lr(folder):
    return _median(folder, "correct", "linear-regression")


def correct_cg(folder):
    return _median(folder, "correct", "correlated-gaussian")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/check_power`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
