"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

QUOTES = ("total", "alarms", "tempered", "tempered_alarms", "tempered_weak_old_rule")


def _rows(folder: Path, method=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if method is None or r["method"] == method]


def total(folder):
    return len(_rows(folder))


def alarms(folder):
    return sum(r["fired"] for r in _rows(folder))


def tempered(folder):
    return len(_rows(folder, "tempered-smc"))


def tempered_alarms(folder):
    return sum(r["fired"] for r in _rows(folder, "tempered-smc"))


def tempered_weak_old_rule(folder):
    return sum(r["old_rule"] for r in _rows(folder, "tempered-smc") if r["model"].startswith("gaussian-mean weak"))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/alarm_calibration`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
