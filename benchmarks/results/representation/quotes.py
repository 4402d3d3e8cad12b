"""Numbers quoted by README.md, recomputed from results.csv (tests/test_results_pages.py checks them)."""

import csv
from pathlib import Path

QUOTES = ("smallest_bound",)


def smallest_bound(folder: Path):
    """The smallest B-hat (nats) of any row of results.csv."""
    with open(folder / "results.csv", newline="") as f:
        return min(float(row["b_hat"]) for row in csv.DictReader(f) if row["b_hat"])
