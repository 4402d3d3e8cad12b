"""The values of ``time_to_rmse/``'s pages, from the rows beside them (``benchmarks/time_to_rmse.py``)."""

from __future__ import annotations

from pathlib import Path

from time_to_rmse_report import folder_values


def values(folder: Path) -> dict:
    """The table over the models (``summary_...``) and each model's page (``<model>_...``)."""
    return folder_values(folder)
