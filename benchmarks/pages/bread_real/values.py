"""Numbers quoted by README.md, recomputed from each run directory's CSV and JSON files (tests/test_results_pages.py
checks them).

Quotes are named ``<run>__<what>`` with the run's directory name made an identifier (``-`` becomes ``_``);
``T<t>`` in a name picks a chain length. B-hat is at the largest S, as in ``benchmarks/bread_real_table.py``.
Family-wide ranges (``<family>__<what>_lo`` / ``_hi``) run over the family's PPLs.
"""

import csv
import json
from pathlib import Path

# The stored run directories (and their hyperparameters) name the quotes: the template has a placeholder for each.
HERE = Path(__file__).resolve().parents[2] / "results" / "bread_real"
RUNS = sorted(p.name for p in HERE.iterdir() if (p / "verdict.json").exists())
FAMILIES = {"linreg": [r for r in RUNS if r.startswith("linear-regression")],
            "logreg": [r for r in RUNS if r.startswith("logistic-regression")]}


def _csv(folder: Path, run: str, name: str):
    with open(folder / run / name) as f:
        return [{k: float(v) if k not in ("condition", "significant") else v for k, v in row.items()}
                for row in csv.DictReader(f)]


def _json(folder: Path, run: str, name: str):
    return json.loads((folder / run / name).read_text())


def _at(rows, t):
    return next(r for r in rows if r["num_steps"] == t)


def _bhat(folder, run, t=None, s=None):
    rows = _csv(folder, run, "bread.csv")
    s = s if s is not None else max(r["S"] for r in rows)
    rows = [r for r in rows if r["S"] == s]
    return _at(rows, t) if t is not None else max(rows, key=lambda r: r["num_steps"])


def _worst(folder, run):
    return max(_csv(folder, run, "forward_consistency.csv"), key=lambda r: r["relative"])


def _seconds_by_pass(folder, run):
    """The seconds of each (condition, T) pass of 100 chains (runs.csv repeats it on every chain)."""
    out = {}
    for r in _csv(folder, run, "runs.csv"):
        out.setdefault((r["condition"], r["num_steps"]), r["seconds"])
    return out


# what -> (description, f(folder, run)); the T-indexed ones take t as well.
PER_RUN = {
    "worst_pct": ("the largest climb difference, percent of the larger climb",
                  lambda f, r: 100 * _worst(f, r)["relative"]),
    "worst_T": ("the chain length where it is", lambda f, r: _worst(f, r)["num_steps"]),
    "worst_z": ("its z", lambda f, r: _worst(f, r)["z"]),
    "worst_climb": ("the larger climb at that chain length (nats)",
                    lambda f, r: max(-_worst(f, r)[k] for k in ("climb_real", "climb_simulated"))),
    "rev_pct": ("the reverse verdict's spread over S as a percent of the gap (floored at 1 nat)",
                lambda f, r: 100 * _json(f, r, "verdict.json")["reverse_relative"]),
    "bhat": ("B-hat at the largest T", lambda f, r: _bhat(f, r)["b_hat"]),
    "bhat_se": ("its stderr", lambda f, r: _bhat(f, r)["b_hat_stderr"]),
    "seconds": ("AIS seconds, every pass summed", lambda f, r: sum(_seconds_by_pass(f, r).values())),
    "spread_max": ("the largest spread over S of the reverse medians (nats)",
                   lambda f, r: max(x["spread"] for x in _csv(f, r, "reverse_agreement.csv"))),
    "t1000_lo": ("the fastest 100-chain pass at T = 1000 (s)",
                 lambda f, r: min(v for (c, t), v in _seconds_by_pass(f, r).items() if t == 1000)),
    "t1000_hi": ("the slowest 100-chain pass at T = 1000 (s)",
                 lambda f, r: max(v for (c, t), v in _seconds_by_pass(f, r).items() if t == 1000)),
    "t1000_sum": ("AIS seconds at T = 1000, every pass summed",
                  lambda f, r: sum(v for (c, t), v in _seconds_by_pass(f, r).items() if t == 1000)),
    "bhat_T10_moves": ("how far B-hat at T = 10 moves across S (nats)",
                       lambda f, r: (lambda v: max(v) - min(v))([x["b_hat"] for x in _csv(f, r, "bread.csv")
                                                                 if x["num_steps"] == 10])),
}
PER_T = {
    "climb_real": ("the real data's climb to the longest run (nats)",
                   lambda f, r, t: -_at(_csv(f, r, "forward_consistency.csv"), t)["climb_real"]),
    "climb_sim": ("the simulated data's climb (nats)",
                  lambda f, r, t: -_at(_csv(f, r, "forward_consistency.csv"), t)["climb_simulated"]),
    "larger_climb": ("the larger of the two climbs (nats)",
                     lambda f, r, t: max(-_at(_csv(f, r, "forward_consistency.csv"), t)[k]
                                         for k in ("climb_real", "climb_simulated"))),
    "rel_pct": ("their difference as a percent of the larger", lambda f, r, t:
                100 * _at(_csv(f, r, "forward_consistency.csv"), t)["relative"]),
    "z": ("its z", lambda f, r, t: _at(_csv(f, r, "forward_consistency.csv"), t)["z"]),
    "spread": ("the spread over S of the reverse medians (nats)",
               lambda f, r, t: _at(_csv(f, r, "reverse_agreement.csv"), t)["spread"]),
    "gap": ("the forward-reverse gap (nats)", lambda f, r, t: _at(_csv(f, r, "reverse_agreement.csv"), t)["gap"]),
    "spread_pct_gap": ("the spread as a percent of the gap (unfloored)", lambda f, r, t:
                       100 * (lambda x: x["spread"] / x["gap"])(_at(_csv(f, r, "reverse_agreement.csv"), t))),
    "rev_pct": ("the spread as a percent of the gap floored at 1 nat", lambda f, r, t:
                100 * _at(_csv(f, r, "reverse_agreement.csv"), t)["relative"]),
    "kp": ("Kruskal-Wallis p across S", lambda f, r, t: _at(_csv(f, r, "reverse_agreement.csv"), t)["kruskal_p"]),
    "bhat": ("B-hat (largest S)", lambda f, r, t: _bhat(f, r, t)["b_hat"]),
    "bhat_se": ("its stderr", lambda f, r, t: _bhat(f, r, t)["b_hat_stderr"]),
    "lowest_forward": ("the lowest forward chain's log-ML, real or simulated data", lambda f, r, t:
                       min(x["log_ml"] for x in _csv(f, r, "runs.csv")
                           if x["num_steps"] == t and x["condition"].startswith("forward"))),
    "median_forward_sim": ("the median forward chain's log-ML on the simulated data", lambda f, r, t:
                           __import__("statistics").median(x["log_ml"] for x in _csv(f, r, "runs.csv")
                                                           if x["num_steps"] == t
                                                           and x["condition"] == "forward-simulated")),
}


def _ident(run):
    return run.replace("-", "_")


def _make_run(run, what):
    doc, get = PER_RUN[what]

    def quote(folder):
        return get(folder, run)
    quote.__doc__ = f"{run}: {doc}."
    return quote


def _make_t(run, what, t):
    doc, get = PER_T[what]

    def quote(folder):
        return get(folder, run, t)
    quote.__doc__ = f"{run}, T = {t}: {doc}."
    return quote


def _make_hp(run, name):
    def quote(folder):
        return _json(folder, run, "verdict.json")["hyperparameters"][name]
    quote.__doc__ = f"{run}: the fitted {name} (the NUTS fit's posterior median)."
    return quote


def _make_range(family, get, which):
    def quote(folder):
        return (min if which == "lo" else max)(get(folder, run) for run in FAMILIES[family])
    quote.__doc__ = f"The {which} end over {family}'s PPLs."
    return quote


_made = {}
for _run in RUNS:
    for _what in PER_RUN:
        _made[f"{_ident(_run)}__{_what}"] = _make_run(_run, _what)
    for _t in (10, 30, 100, 300, 1000):
        for _what in PER_T:
            _made[f"{_ident(_run)}__T{_t}_{_what}"] = _make_t(_run, _what, _t)
    for _hp in _json(HERE, _run, "verdict.json")["hyperparameters"]:
        _made[f"{_ident(_run)}__hp_{_hp}"] = _make_hp(_run, _hp)
_RANGES = {
    "hp_sigma_sq": lambda f, r: _json(f, r, "verdict.json")["hyperparameters"]["sigma_sq"],
    "hp_scale_sq": lambda f, r: _json(f, r, "verdict.json")["hyperparameters"]["scale_sq"],
    "T100_rel_pct": lambda f, r: PER_T["rel_pct"][1](f, r, 100),
    "T100_larger_climb": lambda f, r: PER_T["larger_climb"][1](f, r, 100),
    "T100_absz": lambda f, r: abs(PER_T["z"][1](f, r, 100)),
    "spread_max": PER_RUN["spread_max"][1],
}
for _family in FAMILIES:
    for _what, _get in _RANGES.items():
        for _which in ("lo", "hi"):
            _made[f"{_family}__{_what}_{_which}"] = _make_range(_family, _get, _which)
globals().update(_made)


def kp_lo_but_mf(folder):
    """The least Kruskal-Wallis p over every run and T but matrix factorization's and AR(1) in Stan."""
    return min(x["kruskal_p"] for r in RUNS if not r.startswith("matrix-factorization") and r != "ar1-stan"
               for x in _csv(folder, r, "reverse_agreement.csv"))


def linreg_numpyro_pymc_kp_lo_T100up(folder):
    """Least Kruskal-Wallis p at T >= 100 of linear regression in NumPyro and PyMC."""
    return min(x["kruskal_p"] for r in ("linear-regression-numpyro", "linear-regression-pymc")
               for x in _csv(folder, r, "reverse_agreement.csv") if x["num_steps"] >= 100)


def logistic_numpyro_kp_lo(folder):
    """Least Kruskal-Wallis p of logistic regression in NumPyro, over T."""
    return min(x["kruskal_p"] for x in _csv(folder, "logistic-regression-numpyro", "reverse_agreement.csv"))


def mixture_numpyro_kp_lo_T100up(folder):
    """Least Kruskal-Wallis p at T >= 100 of the mixture in NumPyro."""
    return min(x["kruskal_p"] for x in _csv(folder, "mixture-numpyro", "reverse_agreement.csv")
               if x["num_steps"] >= 100)


def mf_numpyro_rev_pct_lo(folder):
    """Matrix factorization in NumPyro: the least, over T, reverse spread as a percent of the gap."""
    return min(100 * x["relative"] for x in _csv(folder, "matrix-factorization-numpyro", "reverse_agreement.csv"))


def mf_numpyro_rev_pct_hi(folder):
    """... the most."""
    return max(100 * x["relative"] for x in _csv(folder, "matrix-factorization-numpyro", "reverse_agreement.csv"))


def mf_numpyro_T10_p(folder):
    """Matrix factorization in NumPyro, T = 10: the two-sided normal p of the climb difference's z."""
    import math
    return math.erfc(abs(PER_T["z"][1](folder, "matrix-factorization-numpyro", 10)) / math.sqrt(2))


def rev_pct_hi_but_mixtures(folder):
    """The largest reverse verdict's spread as a percent of the gap over every run but the mixtures."""
    return max(100 * _json(folder, r, "verdict.json")["reverse_relative"] for r in RUNS
               if not r.startswith("mixture"))


def _speedup(model):
    def quote(folder):
        forms = json.loads((folder.parent / "ppl_adapters" / "stan_program_forms.json").read_text())
        return next(f["speedup"] for f in forms if f["model"].startswith(model))
    quote.__doc__ = (f"../ppl_adapters/stan_program_forms.json: the shipped Stan program's speed-up per gradient "
                     f"({model}).")
    return quote


speedup_linreg, speedup_logreg, speedup_mixture = (_speedup(m) for m in ("linear", "logistic", "mixture"))


# QUOTES: the table's quotes for every run, and those the text uses (a name here that the page stops using fails
# the stale-quote check).
TABLE = ("worst_pct", "worst_T", "worst_z", "rev_pct", "bhat", "bhat_se", "seconds")
TEXT = (
    "mixture_numpyro__t1000_lo", "mixture_numpyro__t1000_hi", "mixture_stan__t1000_lo", "mixture_stan__t1000_hi",
    "speedup_linreg", "speedup_logreg", "speedup_mixture", "linear_regression_numpyro__worst_climb",
    "linear_regression_pymc__worst_climb", "linear_regression_stan__worst_climb", "linreg__spread_max_hi",
    "linear_regression_stan__T100_spread_pct_gap", "linear_regression_numpyro__T10_kp",
    "linear_regression_stan__T100_kp", "linear_regression_stan__T300_lowest_forward",
    "linear_regression_stan__T300_median_forward_sim", "logistic_regression_numpyro__worst_climb",
    "logistic_regression_pymc__worst_climb", "logistic_regression_stan__worst_climb",
    "logistic_regression_numpyro__T10_rel_pct", "logistic_regression_numpyro__T10_z", "logreg__spread_max_hi",
    "logistic_numpyro_kp_lo", "logistic_regression_pymc__T100_kp", "logistic_regression_stan__T10_kp",
    "logistic_regression_numpyro__T30_bhat", "logistic_regression_numpyro__T30_bhat_se",
    "logistic_regression_numpyro__T100_bhat", "logistic_regression_numpyro__T100_bhat_se",
    "logistic_regression_numpyro__T300_bhat", "logistic_regression_numpyro__T300_bhat_se",
    "logistic_regression_numpyro__T1000_bhat", "logistic_regression_numpyro__T1000_bhat_se",
    "matrix_factorization_numpyro__T10_rel_pct", "matrix_factorization_numpyro__T10_larger_climb",
    "matrix_factorization_numpyro__T10_z", "mf_numpyro_T10_p", "matrix_factorization_numpyro__T30_rel_pct",
    "matrix_factorization_numpyro__T100_rel_pct", "matrix_factorization_numpyro__T300_rel_pct",
    "matrix_factorization_numpyro__T100_climb_real", "matrix_factorization_numpyro__T100_climb_sim",
    "matrix_factorization_stan__worst_climb", "matrix_factorization_stan__T300_lowest_forward",
    "matrix_factorization_stan__T300_median_forward_sim", "mf_numpyro_rev_pct_lo", "mf_numpyro_rev_pct_hi",
    "ar1_numpyro__worst_climb", "ar1_numpyro__T10_kp", "ar1_numpyro__T300_kp", "ar1_stan__worst_climb",
    "ar1_stan__T10_kp", "ar1_stan__T10_spread", "ar1_stan__T10_gap", "ar1_stan__T10_spread_pct_gap",
    "mixture_numpyro__T10_climb_real", "mixture_numpyro__T10_climb_sim", "mixture_numpyro__T10_rel_pct",
    "mixture_numpyro__T10_z", "mixture_numpyro__T30_climb_real", "mixture_numpyro__T30_climb_sim",
    "mixture_numpyro__T30_rel_pct", "mixture_numpyro__T30_z", "mixture_numpyro__T100_climb_real",
    "mixture_numpyro__T100_climb_sim", "mixture_numpyro__T100_rel_pct", "mixture_numpyro__T100_z",
    "mixture_numpyro__T300_rel_pct", "mixture_numpyro__spread_max", "mixture_numpyro__T300_rev_pct",
    "mixture_numpyro__T300_gap", "mixture_numpyro__T300_kp", "mixture_numpyro__T100_bhat",
    "mixture_numpyro__T100_bhat_se", "mixture_numpyro__T300_bhat", "mixture_numpyro__T300_bhat_se",
    "mixture_numpyro__T1000_bhat", "mixture_numpyro__T1000_bhat_se", "mixture_stan__T10_climb_real",
    "mixture_stan__T10_climb_sim", "mixture_stan__T10_rel_pct", "mixture_stan__T10_z",
    "mixture_stan__T30_climb_real", "mixture_stan__T30_climb_sim", "mixture_stan__T30_rel_pct",
    "mixture_stan__T1000_spread", "mixture_stan__T1000_gap", "mixture_stan__T1000_rev_pct", "mixture_stan__T1000_kp",
    "mixture_stan__T100_bhat", "mixture_stan__T100_bhat_se", "mixture_stan__T1000_bhat",
    "mixture_stan__T1000_bhat_se", "matrix_factorization_uncentred_numpyro__T10_climb_real",
    "matrix_factorization_uncentred_numpyro__T10_climb_sim", "matrix_factorization_uncentred_numpyro__T10_rel_pct",
    "matrix_factorization_uncentred_numpyro__T10_z", "mixture_numpyro__T300_spread", "rev_pct_hi_but_mixtures",
    "matrix_factorization_numpyro__T10_kp", "matrix_factorization_numpyro__T30_kp",
    "matrix_factorization_numpyro__T100_kp", "matrix_factorization_numpyro__T300_kp",
    "matrix_factorization_numpyro__T10_spread", "matrix_factorization_numpyro__T30_spread",
    "matrix_factorization_numpyro__T100_spread", "matrix_factorization_numpyro__T300_spread",
    "matrix_factorization_numpyro__T10_gap", "matrix_factorization_numpyro__T30_gap",
    "matrix_factorization_numpyro__T100_gap", "matrix_factorization_numpyro__T300_gap",
    "matrix_factorization_numpyro__T1000_kp", "matrix_factorization_stan__T10_kp",
    "matrix_factorization_stan__T10_spread", "matrix_factorization_stan__T10_gap",
    "matrix_factorization_stan__T30_kp", "matrix_factorization_stan__T100_kp",
    "matrix_factorization_uncentred_numpyro__T10_kp", "matrix_factorization_uncentred_numpyro__T300_kp",
    "kp_lo_but_mf", "mixture_numpyro__T10_kp", "mixture_stan__T300_kp",
    "matrix_factorization_numpyro__bhat_T10_moves", "matrix_factorization_numpyro__T10_bhat_se",
)
QUOTES = tuple(f"{_ident(r)}__{w}" for r in RUNS for w in TABLE) + tuple(
    f"{_ident(r)}__hp_{h}" for r in RUNS for h in _json(HERE, r, "verdict.json")["hyperparameters"]) + TEXT + (
    "linreg__hp_sigma_sq_lo", "linreg__hp_sigma_sq_hi", "linreg__hp_scale_sq_lo", "linreg__hp_scale_sq_hi",
    "logreg__hp_scale_sq_lo", "logreg__hp_scale_sq_hi")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/bread_real`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
