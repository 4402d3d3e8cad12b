"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

QUOTES = ("bdmc_100", "torch_100", "ratio_100_min", "ratio_100_max", "bdmc_1000", "torch_1000", "mean_diff_1000",
          "bdmc_mean_1000", "torch_mean_1000", "stderr_1000", "compile_100", "load_min", "load_max",
          "quiet_ratio_100", "quiet_ratio_1000", "quiet_load_min", "quiet_load_max", "quiet_bdmc_100",
          "quiet_torch_100", "quiet_bdmc_1000", "quiet_torch_1000", "quiet_compile_100", "quiet_mean_diff_1000",
          "quiet_stderr_1000")


def _rows(folder: Path, tool=None, steps=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if (tool is None or r["tool"] == tool) and (steps is None or r["num_steps"] == steps)]


def _pairs(folder, steps):
    """(bdmc seconds, torch seconds) of each round that ran both at ``steps``."""
    b = {r["round"]: r["seconds"] for r in _rows(folder, "bdmc", steps)}
    t = {r["round"]: r["seconds"] for r in _rows(folder, "torch", steps)}
    return [(b[k], t[k]) for k in sorted(b) if k in t]


def bdmc_100(folder):
    """Median seconds of bdmc's T = 100 runs (compilation excluded)."""
    return float(np.median([r["seconds"] for r in _rows(folder, "bdmc", 100)]))


def torch_100(folder):
    """Median seconds of the torch peer's T = 100 runs."""
    return float(np.median([r["seconds"] for r in _rows(folder, "torch", 100)]))


def ratio_100_min(folder):
    """Smallest torch / bdmc ratio over the rounds at T = 100."""
    return min(t / b for b, t in _pairs(folder, 100))


def ratio_100_max(folder):
    """Largest torch / bdmc ratio over the rounds at T = 100."""
    return max(t / b for b, t in _pairs(folder, 100))


def bdmc_1000(folder):
    """Seconds of bdmc's T = 1000 run."""
    return float(np.median([r["seconds"] for r in _rows(folder, "bdmc", 1000)]))


def torch_1000(folder):
    """Seconds of the torch peer's T = 1000 run."""
    return float(np.median([r["seconds"] for r in _rows(folder, "torch", 1000)]))


def bdmc_mean_1000(folder):
    """bdmc's mean log-likelihood per image at T = 1000."""
    return _rows(folder, "bdmc", 1000)[0]["mean"]


def torch_mean_1000(folder):
    """The torch peer's mean log-likelihood per image at T = 1000."""
    return _rows(folder, "torch", 1000)[0]["mean"]


def mean_diff_1000(folder):
    """bdmc minus torch, mean log-likelihood per image at T = 1000."""
    return bdmc_mean_1000(folder) - torch_mean_1000(folder)


def stderr_1000(folder):
    """The standard error across images of bdmc's T = 1000 mean."""
    return _rows(folder, "bdmc", 1000)[0]["stderr"]


def compile_100(folder):
    """bdmc's compilation seconds (its first call)."""
    return max(r["compile_seconds"] for r in _rows(folder, "bdmc"))


def load_min(folder):
    """The smallest 1-minute load before a run."""
    return min(r["load_before"] for r in _rows(folder))


def load_max(folder):
    """The largest 1-minute load before a run."""
    return max(r["load_before"] for r in _rows(folder))


def _quiet(fn, doc):
    def quote(folder):
        return fn(folder / "quiet")
    quote.__doc__ = f"The quiet rerun (quiet/rows.jsonl): {doc}"
    return quote


quiet_bdmc_100 = _quiet(bdmc_100, "bdmc's seconds at T = 100.")
quiet_torch_100 = _quiet(torch_100, "the torch peer's seconds at T = 100.")
quiet_ratio_100 = _quiet(ratio_100_min, "torch / bdmc at T = 100.")
quiet_bdmc_1000 = _quiet(bdmc_1000, "bdmc's seconds at T = 1000.")
quiet_torch_1000 = _quiet(torch_1000, "the torch peer's seconds at T = 1000.")
quiet_mean_diff_1000 = _quiet(mean_diff_1000, "bdmc minus torch, mean log-likelihood per image at T = 1000.")
quiet_stderr_1000 = _quiet(stderr_1000, "the standard error across images of bdmc's T = 1000 mean.")
quiet_compile_100 = _quiet(compile_100, "bdmc's compilation seconds.")
quiet_load_min = _quiet(load_min, "the smallest 1-minute load before a run.")
quiet_load_max = _quiet(load_max, "the largest 1-minute load before a run.")


def quiet_ratio_1000(folder):
    """The quiet rerun: torch / bdmc at T = 1000."""
    return quiet_torch_1000(folder) / quiet_bdmc_1000(folder)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/generative_torch_peer`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
