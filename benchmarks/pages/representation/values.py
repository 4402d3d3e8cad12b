"""Numbers quoted by README.md, recomputed from results.csv (tests/test_results_pages.py checks them)."""

import csv
from pathlib import Path

QUOTES = ("smallest_bound",)


def smallest_bound(folder: Path):
    """The smallest B-hat (nats) of any row of results.csv."""
    with open(folder / "results.csv", newline="") as f:
        return min(float(row["b_hat"]) for row in csv.DictReader(f) if row["b_hat"])


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/representation`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
