"""Numbers quoted by README.md, recomputed from the ``sandwich.csv`` of each run directory
(tests/test_results_pages.py checks them; ../cross_model/values.py reuses ``truth``).

``sandwich-<model>`` holds the AIS runs, ``smc-<model>`` the SMC (forward, lower) and SHME (reverse, upper) runs;
every number is taken at the run's longest T (largest number of moves for SMC).
"""

import csv
import math
from pathlib import Path

MODELS = {"clustering": "clustering", "lowrank": "low-rank", "binary": "binary"}


def _last(folder: Path, run: str, direction: str) -> dict:
    """The row of one direction at the longest T, numbers as floats."""
    with open(folder / run / "sandwich.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["direction"] == direction]
    row = max(rows, key=lambda r: int(r["num_steps"]))
    return {k: (v if k in ("method", "direction", "bound", "alarm") else float(v or "nan")) for k, v in row.items()}


def truth(folder: Path, model: str) -> float:
    """The AIS ground truth: the midpoint of the longest sandwich's forward and reverse bounds."""
    run = f"sandwich-{model}"
    return (_last(folder, run, "forward")["value"] + _last(folder, run, "reverse")["value"]) / 2


def alarms(folder):
    """Rows of every run directory whose `alarm` column is true (the page says none)."""
    count = 0
    for csv_path in folder.glob("*/sandwich.csv"):
        with open(csv_path) as f:
            count += sum(r["alarm"] == "True" for r in csv.DictReader(f))
    return count


def _make(short, model):
    ais = f"sandwich-{model}"
    smc = f"smc-{model}"

    def steps(folder):
        """The sandwich's longest T."""
        return _last(folder, ais, "forward")["num_steps"]

    def lower(folder):
        """Forward AIS (lower bound), chains combined by log-mean-exp, at the longest T."""
        return _last(folder, ais, "forward")["value"]

    def lower_se(folder):
        """Its stderr."""
        return _last(folder, ais, "forward")["stderr"]

    def upper(folder):
        """Reverse AIS (upper bound), chains combined, at the longest T."""
        return _last(folder, ais, "reverse")["value"]

    def upper_se(folder):
        """Its stderr."""
        return _last(folder, ais, "reverse")["stderr"]

    def gap_single(folder):
        """The single-run gap (mean reverse minus mean forward single runs, the BREAD estimate) at the longest T."""
        return _last(folder, ais, "forward")["gap_single"]

    def cross(folder):
        """How far the combined bounds cross (forward minus reverse; positive when they cross)."""
        return -_last(folder, ais, "forward")["gap"]

    def cross_se(folder):
        """The two combined bounds' stderrs combined in quadrature."""
        return math.hypot(_last(folder, ais, "forward")["stderr"], _last(folder, ais, "reverse")["stderr"])

    def seconds_lo(folder):
        """Seconds of the faster direction at the longest T (compilation excluded)."""
        return min(_last(folder, ais, d)["seconds"] for d in ("forward", "reverse"))

    def seconds_hi(folder):
        """Seconds of the slower direction."""
        return max(_last(folder, ais, d)["seconds"] for d in ("forward", "reverse"))

    def evals_k(folder):
        """Likelihood evaluations per direction at the longest T, in thousands."""
        return _last(folder, ais, "forward")["n_evals"] / 1e3

    def evals_m(folder):
        """... in millions."""
        return _last(folder, ais, "forward")["n_evals"] / 1e6

    def ais_truth(folder):
        """The AIS ground truth (midpoint of the longest sandwich's two bounds)."""
        return truth(folder, model)

    def smc_mean(folder):
        """SMC: mean single-run estimate (lower) at the most moves per case."""
        return _last(folder, smc, "forward")["mean_single"]

    def shme_mean(folder):
        """SHME: mean single-run estimate (upper) at the most moves per case."""
        return _last(folder, smc, "reverse")["mean_single"]

    def smc_combined(folder):
        """SMC: the 16 runs combined by log-mean-exp."""
        return _last(folder, smc, "forward")["value"]

    def shme_combined(folder):
        """SHME: the 16 runs combined."""
        return _last(folder, smc, "reverse")["value"]

    def moves(folder):
        """SMC: the most moves per case."""
        return _last(folder, smc, "forward")["num_steps"]

    fns = dict(T=steps, lower=lower, lower_se=lower_se, upper=upper, upper_se=upper_se, gap=gap_single,
               cross=cross, cross_se=cross_se, s_lo=seconds_lo, s_hi=seconds_hi, evals_k=evals_k, evals_m=evals_m,
               truth=ais_truth, smc=smc_mean, shme=shme_mean, smc_comb=smc_combined, shme_comb=shme_combined,
               moves=moves)
    return {f"{short}_{k}": f for k, f in fns.items()}


_made = {}
for _short, _model in MODELS.items():
    _made.update(_make(_short, _model))
globals().update(_made)


def gap_lo(folder):
    """The smallest single-run gap of the three models at their longest T."""
    return min(_made[f"{m}_gap"](folder) for m in MODELS)


def gap_hi(folder):
    """The largest."""
    return max(_made[f"{m}_gap"](folder) for m in MODELS)


USED = ("clustering_lower", "clustering_lower_se", "clustering_upper", "clustering_upper_se",
        "clustering_gap", "clustering_s_hi", "clustering_evals_m", "clustering_truth", "clustering_smc",
        "clustering_shme",
        "lowrank_lower", "lowrank_lower_se", "lowrank_upper", "lowrank_upper_se", "lowrank_gap",
        "lowrank_s_lo", "lowrank_s_hi", "lowrank_evals_k", "lowrank_truth", "lowrank_smc", "lowrank_shme",
        "lowrank_smc_comb", "lowrank_shme_comb", "lowrank_cross", "lowrank_cross_se",
        "binary_lower", "binary_lower_se", "binary_upper", "binary_upper_se", "binary_gap",
        "binary_s_hi", "binary_evals_k", "binary_truth", "binary_smc", "binary_shme", "binary_cross",
        "binary_cross_se")
QUOTES = USED + ("gap_lo", "gap_hi", "alarms")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/paper_models`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
