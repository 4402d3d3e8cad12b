"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

QUOTES = ("normalized_0", "normalized_1", "normalized_2", "missing_0", "missing_1", "missing_2", "found",
          "false_alarms")


def _rows(folder: Path, normalized: bool):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return sorted((r for r in rows if (r["truth"] == 0.0) == normalized), key=lambda r: r["seed"])


def _estimate(normalized, seed):
    return lambda folder: _rows(folder, normalized)[seed]["estimate"]


normalized_0, normalized_1, normalized_2 = (_estimate(True, s) for s in range(3))
missing_0, missing_1, missing_2 = (_estimate(False, s) for s in range(3))


def found(folder):
    return sum(r["verdict"] == "not normalized" for r in _rows(folder, False))


def false_alarms(folder):
    return sum(r["verdict"] == "not normalized" for r in _rows(folder, True))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/prior_normalization`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
