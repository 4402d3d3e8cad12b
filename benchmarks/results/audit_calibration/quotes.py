"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

from scipy import stats

SAMPLERS = {"numpyro": "numpyro-nuts", "pymc": "pymc-nuts", "stan": "stan-nuts", "hmc": "hmc"}
QUOTES = tuple(f"{s}_{q}" for s in SAMPLERS for q in ("audits", "fails", "hi", "remaining")) + ("numpyro_lo",
    "remaining", "pymc_schools_quiet", "stan_schools_quiet", "here_latest",
    "total", "total_again", "prior_expected", "c73_rows", "a4a_rows", "c036_rows", "c797_rows", "c4fe_rows",
    "stan_lo", "hmc_lo",
    "regression_numpyro_audits", "regression_numpyro_fails", "regression_numpyro_lo", "lent_audits")


def _rows(folder: Path, sampler=None, program=None):
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in rows if (sampler is None or r["sampler"] == sampler)
            and (program is None or r["program"] == program)]


def _interval(fails, n):  # Clopper-Pearson, 95%
    lo = 0.0 if fails == 0 else stats.beta.ppf(0.025, fails, n - fails + 1)
    hi = 1.0 if fails == n else stats.beta.ppf(0.975, fails + 1, n - fails)
    return lo, hi


def _make(short, sampler):
    def audits(folder):
        return len(_rows(folder, sampler))

    def fails(folder):
        return sum(r["verdict"] == "fail" for r in _rows(folder, sampler))

    def lo(folder):
        return _interval(fails(folder), audits(folder))[0]

    def hi(folder):
        return _interval(fails(folder), audits(folder))[1]

    def remaining(folder):
        return PLANNED - audits(folder)

    return {f"{short}_audits": audits, f"{short}_fails": fails, f"{short}_lo": lo, f"{short}_hi": hi,
            f"{short}_remaining": remaining}


for _short, _sampler in SAMPLERS.items():
    globals().update(_make(_short, _sampler))


PLANNED = 201  # 67 seeds x 3 programs per sampler
LATEST = "431f461"  # the last run's commit (its rows: this machine, PyMC's and Stan's NUTS)


def remaining(folder):
    return 4 * PLANNED - len(_rows(folder))


def here_latest(folder):
    return sum(r["commit"] == LATEST for r in _rows(folder))


def _quiet_schools(folder, sampler):
    """Median seconds of the eight-schools audits of the latest run (load at most 1.6, compilation excluded: each
    process's first audit of a program is left out)."""
    import numpy as np

    rows = [r for r in _rows(folder, sampler, "hierarchical") if r["commit"] == LATEST]
    return float(np.median([r["seconds"] for r in rows[1:] if r["load_before"] <= 1.6]))


def pymc_schools_quiet(folder):
    return _quiet_schools(folder, "pymc-nuts")


def stan_schools_quiet(folder):
    return _quiet_schools(folder, "stan-nuts")


def total(folder):
    return len(_rows(folder))


def regression_numpyro_audits(folder):
    return len(_rows(folder, "numpyro-nuts", "regression"))


def regression_numpyro_fails(folder):
    return sum(r["verdict"] == "fail" for r in _rows(folder, "numpyro-nuts", "regression"))


def regression_numpyro_lo(folder):
    return _interval(regression_numpyro_fails(folder), regression_numpyro_audits(folder))[0]


def lent_audits(folder):
    return sum("lent machine" in r.get("machine", "") for r in _rows(folder))


def total_again(folder):
    """The number of audits, quoted a second time."""
    return total(folder)


def prior_expected(folder):
    """False alarms of the prior-normalization check expected at its level over every audit that ran it."""
    rows = _rows(folder)
    return sum(r["checks"]["prior-normalization"]["level"] for r in rows
               if r["checks"].get("prior-normalization", {}).get("level"))


def c73_rows(folder):
    """Rows of the run at commit c73fc20."""
    return sum(r["commit"] == "c73fc20" for r in _rows(folder))



def a4a_rows(folder):
    """Rows of the run at commit a4a6144."""
    return sum(r["commit"] == "a4a6144" for r in _rows(folder))


def c036_rows(folder):
    """Rows of the run at commit 036c9cc."""
    return sum(r["commit"] == "036c9cc" for r in _rows(folder))


def c797_rows(folder):
    """Rows of the run at commit 797c7ed."""
    return sum(r["commit"] == "797c7ed" for r in _rows(folder))


def c4fe_rows(folder):
    """Rows of the run at commit 4fec285."""
    return sum(r["commit"] == "4fec285" for r in _rows(folder))
