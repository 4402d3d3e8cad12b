"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

import numpy as np

PILOT, PILOT_DISPERSED = "pilot path, no dispersal", "pilot path, dispersal (default)"
ONE, ONE_DISPERSED = "one case per step, no dispersal", "one case per step, dispersal (default)"


def _rows(folder: Path, way=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if way is None or r["way"] == way]


def _d(folder, way):
    return np.array([r["d"] for r in _rows(folder, way)])


def _below(folder, way):
    return int(sum(r["d"] < -3 * r["stderr"] for r in _rows(folder, way)))


def data_sets(folder):
    return len({r["seed"] for r in _rows(folder)})


def _ratio(folder, way):
    """p(y)/Z_hat per data set: its mean and that mean's standard error."""
    r = np.exp(-_d(folder, way))
    return float(r.mean()), float(r.std(ddof=1) / np.sqrt(r.size))


def ratio_pilot(folder):
    return _ratio(folder, PILOT)[0]


def ratio_pilot_se(folder):
    return _ratio(folder, PILOT)[1]


def ratio_one(folder):
    return _ratio(folder, ONE)[0]


def ratio_one_se(folder):
    return _ratio(folder, ONE)[1]


def ratio_dispersed(folder):
    return _ratio(folder, PILOT_DISPERSED)[0]


def ratio_dispersed_se(folder):
    return _ratio(folder, PILOT_DISPERSED)[1]


def sd_pilot(folder):
    return float(_d(folder, PILOT).std(ddof=1))


def sd_one(folder):
    return float(_d(folder, ONE).std(ddof=1))


def sd_dispersed(folder):
    return float(_d(folder, PILOT_DISPERSED).std(ddof=1))


def lowest_pilot(folder):
    return float(_d(folder, PILOT).min())


def lowest_dispersed(folder):
    return float(_d(folder, PILOT_DISPERSED).min())


def below_pilot(folder):
    return _below(folder, PILOT)


def below_one(folder):
    return _below(folder, ONE)


def below_dispersed(folder):
    return _below(folder, PILOT_DISPERSED)


def below_one_dispersed(folder):
    return _below(folder, ONE_DISPERSED)


def median_stderr_pilot(folder):
    return float(np.median([r["stderr"] for r in _rows(folder, PILOT)]))


def first_block_max(folder):
    return int(max(r["first_block"] for r in _rows(folder, PILOT)))


def first_block_spread_median(folder):
    return float(np.median([r["first_block_spread"] for r in _rows(folder, PILOT)]))


def block_spread_1(folder):
    return float(np.median([r["block_spreads"]["1"] for r in _rows(folder, PILOT)]))


def block_spread_10(folder):
    return float(np.median([r["block_spreads"]["10"] for r in _rows(folder, PILOT)]))


def block_spread_30(folder):
    return float(np.median([r["block_spreads"]["30"] for r in _rows(folder, PILOT)]))


def alarms(folder):
    return int(sum(r["alarm"] for r in _rows(folder)))


def pairs(folder):
    return len(_rows(folder))


def seconds_ratio(folder):
    return float(np.median([r["seconds"] for r in _rows(folder, PILOT_DISPERSED)])
                 / np.median([r["seconds"] for r in _rows(folder, PILOT)]))


def first_block_spread_max(folder):
    return float(max(r["first_block_spread"] for r in _rows(folder, PILOT)))


# QUOTES: the quotes the page uses, in the page's order.
QUOTES = (
    "sd_pilot", "sd_dispersed", "data_sets", "ratio_pilot", "ratio_pilot_se", "ratio_one", "ratio_one_se",
    "ratio_dispersed", "ratio_dispersed_se", "median_stderr_pilot", "sd_one", "lowest_pilot", "below_pilot",
    "below_one", "first_block_max", "first_block_spread_median", "block_spread_1", "block_spread_10",
    "block_spread_30", "first_block_spread_max", "lowest_dispersed", "below_dispersed", "below_one_dispersed",
    "seconds_ratio", "alarms", "pairs"
)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/shme_one_latent`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
