"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

QUOTES = ("checked_values", "wrong", "flagged", "smallest_flagged_error", "largest_unflagged_error")


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def checked_values(folder):
    return len(_rows(folder))


def wrong(folder):
    return sum(r["wrong_verdict"] for r in _rows(folder))


def flagged(folder):
    return sum(r["verdict"] != "consistent" for r in _rows(folder))


def smallest_flagged_error(folder):
    """The smallest |error| among the flagged values (nats)."""
    return min(abs(r["error"]) for r in _rows(folder) if r["verdict"] != "consistent")


def largest_unflagged_error(folder):
    """The error of largest magnitude among the values called consistent (signed, nats)."""
    return max((r["error"] for r in _rows(folder) if r["verdict"] == "consistent"), key=abs)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/check_estimate`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
