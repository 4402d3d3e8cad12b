"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

QUOTES = ("predicted", "published_estimate_max", "published_estimate_min", "exact", "published_lower_max",
          "normalized_lower_max_error", "published_offset")


def _rows(folder: Path, program=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if program is None or r["program"] == program]


def predicted(folder):
    return _rows(folder, "as published")[0]["predicted_log_integral"]


def published_estimate_max(folder):
    return max(r["prior"]["estimate"] for r in _rows(folder, "as published"))


def published_estimate_min(folder):
    return min(r["prior"]["estimate"] for r in _rows(folder, "as published"))


def exact(folder):
    return _rows(folder)[0]["exact_log_evidence"]


def published_lower_max(folder):
    return max(r["check_estimate"]["lower"] for r in _rows(folder, "as published"))


def normalized_lower_max_error(folder):
    return max(abs(r["check_estimate"]["lower"] - r["exact_log_evidence"]) for r in _rows(folder, "normalized"))


def published_offset(folder):
    """How far the published program's evidence (its forward estimate, mean over seeds) lies above log p(y)."""
    rows = _rows(folder, "as published")
    return sum(r["check_estimate"]["lower"] for r in rows) / len(rows) - rows[0]["exact_log_evidence"]


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/posteriordb_checks`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
