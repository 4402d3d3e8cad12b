"""Numbers quoted by README.md, recomputed from rows.jsonl as ``benchmarks/preconditioning.py`` summarizes them
(tests/test_results_pages.py checks them). One row per kernel and data set (seed)."""

import json
import statistics
from pathlib import Path

KERNELS = {"identity": "hmc-identity", "diagonal": "hmc-diagonal", "dense": "hmc-dense", "imh": "imh"}


def _rows(folder: Path, kernel: str):
    return [r for r in (json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip())
            if r["kernel"] == kernel]


def _make(short, kernel):
    def data_sets(folder):
        """Data sets (distinct seeds) the kernel ran on."""
        return len({r["seed"] for r in _rows(folder, kernel)})

    def median_gap(folder):
        """Median BDMC gap (reverse minus forward AIS, nats)."""
        return statistics.median(r["gap"] for r in _rows(folder, kernel))

    def max_gap(folder):
        """Largest BDMC gap (nats)."""
        return max(r["gap"] for r in _rows(folder, kernel))

    def gap_under(folder):
        """Share of data sets with a gap under 0.2 nat."""
        rows = _rows(folder, kernel)
        return sum(r["gap"] < 0.2 for r in rows) / len(rows)

    def within_3se(folder):
        """Share of data sets whose forward estimate lies within 3 stderr of the exact log p(y)."""
        rows = _rows(folder, kernel)
        return sum(bool(r["lower_within_3se"]) for r in rows) / len(rows)

    def lower_error(folder):
        """Median forward error, lower minus exact (nats)."""
        return statistics.median(r["lower"] - r["exact"] for r in _rows(folder, kernel))

    def acceptance(folder):
        """Mean acceptance of the forward runs."""
        return statistics.fmean(r["acceptance"] for r in _rows(folder, kernel))

    def seconds(folder):
        """Median seconds for both directions, pilots included."""
        return statistics.median(r["seconds"] for r in _rows(folder, kernel))

    fns = dict(n=data_sets, median_gap=median_gap, max_gap=max_gap, gap_under=gap_under, within=within_3se,
               error=lower_error, acc=acceptance, s=seconds)
    return {f"{short}_{k}": f for k, f in fns.items()}


_made = {}
for _short, _kernel in KERNELS.items():
    _made.update(_make(_short, _kernel))
globals().update(_made)

QUOTES = tuple(_made)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/preconditioning`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
