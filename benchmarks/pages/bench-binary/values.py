"""The values of ``bench-binary``'s page, from ``bdmc bench --model binary``'s rows."""

from __future__ import annotations

from pathlib import Path

from pages.tables import bench_values


def values(folder: Path) -> dict:
    """The settings, the ground truth and both tables of ``README.md``, from the folder's rows."""
    return bench_values(folder)
