"""The values of ``cost_curves/``'s pages, from the rows beside them (``benchmarks/cost_curves.py``)."""

from __future__ import annotations

from pathlib import Path

from cost_curves import page_values


def values(folder: Path) -> dict:
    """The headline, provenance, slopes, per-size table and references (``cost_curves.page_values``)."""
    return page_values(folder)
