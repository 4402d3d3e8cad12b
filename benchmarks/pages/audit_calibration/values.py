"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

from pathlib import Path

from pages.tables import shared_rows
from scipy import stats

SAMPLERS = {"numpyro": "numpyro-nuts", "pymc": "pymc-nuts", "stan": "stan-nuts", "hmc": "hmc"}
QUOTES = tuple(f"{s}_{q}" for s in SAMPLERS for q in ("audits", "fails", "hi")) + ("numpyro_lo",
    "pymc_schools_quiet", "stan_schools_quiet", "here_latest",
    "total", "total_again", "prior_expected", "c73_rows", "a4a_rows", "c036_rows", "c797_rows", "c4fe_rows",
    "stan_lo", "hmc_lo",
    "regression_numpyro_audits", "regression_numpyro_fails", "regression_numpyro_lo", "lent_audits",
    "c6ec_rows", "c4b0_rows", "cdf1_rows", "df1_numpyro_median", "c797_numpyro_median", "geweke_fail_z",
    "geweke_fail_threshold", "hmc_geweke_runs", "hmc_geweke_median", "pymc_sim_p", "pymc_lo")


FIRST = ("regression", "hierarchical", "logistic")  # the programs of the first runs; the added classes are apart


def _rows(folder: Path, sampler=None, program=None):
    rows = shared_rows(folder)
    return [r for r in rows if r["program"] in FIRST and (sampler is None or r["sampler"] == sampler)
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


# Rows per run, by the commit each run stamped: quote name -> commit.
RUN_COMMITS = {"c73_rows": "c73fc20", "a4a_rows": "a4a6144", "c036_rows": "036c9cc", "c797_rows": "797c7ed",
               "c4fe_rows": "4fec285", "c6ec_rows": "6ec583a", "c4b0_rows": "4b0a54b", "cdf1_rows": "df1b403"}


def _run_rows(commit):
    def rows(folder):
        return sum(r["commit"] == commit for r in _rows(folder))
    rows.__doc__ = f"Rows of the run(s) at commit {commit}."
    return rows


for _name, _commit in RUN_COMMITS.items():
    globals()[_name] = _run_rows(_commit)


def _median_seconds(folder, sampler, commit):
    import numpy as np

    return float(np.median([r["seconds"] for r in _rows(folder, sampler) if r["commit"] == commit]))


def df1_numpyro_median(folder):
    """Median seconds of NumPyro's NUTS audits at df1b403 (a program compiled once per process)."""
    return _median_seconds(folder, "numpyro-nuts", "df1b403")


def c797_numpyro_median(folder):
    """Median seconds of NumPyro's NUTS audits at 797c7ed (every audit compiled its checks again)."""
    return _median_seconds(folder, "numpyro-nuts", "797c7ed")


def _geweke_fail(folder):
    return next(r["checks"]["geweke"] for r in _rows(folder, "hmc", "regression") if r["seed"] == 66)


def geweke_fail_z(folder):
    return _geweke_fail(folder)["worst_abs_z"]


def geweke_fail_threshold(folder):
    return _geweke_fail(folder)["threshold"]


def _geweke_z(folder):
    return [r["checks"]["geweke"]["worst_abs_z"] for r in _rows(folder, "hmc")
            if r["checks"].get("geweke", {}).get("worst_abs_z") is not None]


def hmc_geweke_runs(folder):
    """HMC audits with a Geweke statistic."""
    return len(_geweke_z(folder))


def hmc_geweke_median(folder):
    """Median over HMC audits of the Geweke test's largest |z|."""
    import numpy as np

    return float(np.median(_geweke_z(folder)))


def pymc_sim_p(folder):
    """PyMC regression seed 62: the simulator check's smallest p."""
    return next(r["checks"]["simulator-density"]["min_p"] for r in _rows(folder, "pymc-nuts", "regression")
                if r["seed"] == 62)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/audit_calibration`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
