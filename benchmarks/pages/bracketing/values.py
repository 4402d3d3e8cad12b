"""Numbers quoted by README.md, recomputed from the JSON files beside it and the n = 600 log
(tests/test_results_pages.py checks them).

``regression_table1.json``: ``rows`` (one data set, 100 Monte Carlo runs per order) and ``datasets`` (the pass over
100 simulated data sets). ``mixture_table2.json``: one row per k with mean, sd and per-run values of every bound,
``_sym`` (label-symmetrized q, cross-fitted U) and ``_paper`` (the paper's literal estimate).
``mixture_bdmc_k3_n<n>.json``: the BDMC sandwich rows and the five brackets; ``mixture_bdmc_k3_n600_partial.log``: the
stopped n = 600 run (one JSON object a line: ten brackets, then sandwich rows).

Names: ``t1_o<order>_<bound>[_sd]`` (Table 1), ``ds_...`` (the data-set pass), ``t2_<variant>_k<k>_<bound>[_sd]`` and
``t2_k<k>_<column>`` (Table 2 and its summary), ``n<n>_...`` (against BDMC).
"""

import json
import math
import re
import statistics
from pathlib import Path

ORDERS = range(1, 7)
KS = range(2, 11)
BOUNDS1 = ("U2", "U1", "L1", "L2", "L3", "L4")
BOUNDS2 = ("U3", "U2", "U1", "L1", "L2", "L3", "L4")


def _json(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def _t1(folder, order):
    return next(r for r in _json(folder, "regression_table1.json")["rows"] if r["order"] == order)


def _ds(folder, order):
    return next(r for r in _json(folder, "regression_table1.json")["datasets"] if r["order"] == order)


def _t2(folder, k):
    return next(r for r in _json(folder, "mixture_table2.json")["rows"] if r["k"] == k)


def _width(r, variant="sym"):
    """Per-run U1 - L1."""
    return [u - lo for u, lo in zip(r[f"U1_{variant}_values"], r[f"L1_{variant}_values"], strict=False)]


def _n600(folder):
    """(brackets, sandwich rows) of the stopped n = 600 run."""
    brackets, sandwich = [], []
    for line in (folder / "mixture_bdmc_k3_n600_partial.log").read_text().splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            (sandwich if "direction" in rec else brackets).append(rec)
    return brackets, sandwich


def _sandwich(folder, n, t, direction):
    rows = _n600(folder)[1] if n == 600 else _json(folder, f"mixture_bdmc_k3_n{n}.json")["sandwich"]["rows"]
    return next(r for r in rows if r["num_steps"] == t and r["direction"] == direction)


def _bracket_mean(folder, n, name):
    if n == 600:
        return statistics.mean(b[name] for b in _n600(folder)[0])
    return _json(folder, f"mixture_bdmc_k3_n{n}.json")[f"{name}_mean"]


_made = {}


def _add(name, fn, doc):
    fn.__doc__ = doc
    _made[name] = fn


# Table 1 (regression, one data set, 100 runs): every cell.
for _o in ORDERS:
    _add(f"t1_o{_o}_ML", lambda f, o=_o: _t1(f, o)["ML"], f"Order {_o}: the exact log marginal likelihood.")
    for _b in BOUNDS1:
        _add(f"t1_o{_o}_{_b}", lambda f, o=_o, b=_b: _t1(f, o)[b], f"Order {_o}: {_b}, mean over runs.")
        _add(f"t1_o{_o}_{_b}_sd", lambda f, o=_o, b=_b: _t1(f, o)[b + "_sd"], f"Order {_o}: {_b}, sd over runs.")

# Table 2 (mixture) and its summary: every cell.
for _k in KS:
    for _v in ("sym", "paper"):
        for _b in BOUNDS2:
            _add(f"t2_{_v}_k{_k}_{_b}", lambda f, k=_k, n=f"{_b}_{_v}": _t2(f, k)[n], f"k = {_k}: {_b}_{_v}, mean.")
            _add(f"t2_{_v}_k{_k}_{_b}_sd", lambda f, k=_k, n=f"{_b}_{_v}_sd": _t2(f, k)[n], f"k = {_k}: its sd.")
    _add(f"t2_k{_k}_w_sym", lambda f, k=_k: _t2(f, k)["U1_sym"] - _t2(f, k)["L1_sym"],
         f"k = {_k}: U1_sym - L1_sym of the means.")
    _add(f"t2_k{_k}_w_paper", lambda f, k=_k: _t2(f, k)["U1_paper"] - _t2(f, k)["L1_paper"],
         f"k = {_k}: U1_paper - L1_paper of the means.")
    _add(f"t2_k{_k}_shift", lambda f, k=_k: _t2(f, k)["L1_sym"] - _t2(f, k)["L1_paper"],
         f"k = {_k}: L1_sym - L1_paper of the means.")
    _add(f"t2_k{_k}_logkf", lambda f, k=_k: math.lgamma(k + 1), f"log {_k}! (from k, a row's key).")
    _add(f"t2_k{_k}_below", lambda f, k=_k: _t2(f, k)["per_rep_U1_paper<L1_sym"],
         f"k = {_k}: runs whose paper-style U1 is below their L1_sym.")
    _add(f"t2_k{_k}_reps", lambda f, k=_k: _t2(f, k)["reps"], f"k = {_k}: runs.")
    _add(f"t2_k{_k}_switch", lambda f, k=_k: _t2(f, k)["switch_fraction"], f"k = {_k}: label-switch fraction.")
    _add(f"t2_k{_k}_switch_pct", lambda f, k=_k: 100 * _t2(f, k)["switch_fraction"], f"k = {_k}: ... in percent.")
    _add(f"t2_k{_k}_seconds", lambda f, k=_k: _t2(f, k)["seconds"], f"k = {_k}: seconds.")
    _add(f"t2_k{_k}_nested", lambda f, k=_k: _t2(f, k)["per_rep_order_sym_U3>=U2>=U1>=L1>=L2>=L3"],
         f"k = {_k}: runs where U3 >= U2 >= U1 >= L1 >= L2 >= L3 (symmetrized).")
    _add(f"t2_k{_k}_wmed", lambda f, k=_k: statistics.median(_width(_t2(f, k))),
         f"k = {_k}: per-run median of U1_sym - L1_sym.")
    _add(f"t2_k{_k}_outliers", lambda f, k=_k: sum(
        u - statistics.median(_t2(f, k)["U1_sym_values"]) > 100 for u in _t2(f, k)["U1_sym_values"]),
        f"k = {_k}: runs whose U1_sym is more than 100 nats above the median run's.")

# The data-set pass (100 simulated data sets per order).
for _o in ORDERS:
    for _g in ("U2_minus_ML", "U1_minus_ML", "ML_minus_L2", "ML_minus_L3", "ML_minus_L4"):
        _add(f"ds_o{_o}_{_g}", lambda f, o=_o, g=_g: _ds(f, o)["mean_" + g], f"Order {_o}: mean {_g} over data sets.")

# Against BDMC: the sandwich rows and the brackets.
for _n, _ts in ((60, (1000, 10000, 100000)), (200, (1000, 5000, 20000)), (600, (1000,))):
    for _t in _ts:
        for _d, _s in (("forward", "lo"), ("reverse", "hi")):
            _add(f"n{_n}_T{_t}_{_s}", lambda f, n=_n, t=_t, d=_d: _sandwich(f, n, t, d)["value"],
                 f"n = {_n}, T = {_t}: the {_d} AIS estimate.")
            _add(f"n{_n}_T{_t}_{_s}_se", lambda f, n=_n, t=_t, d=_d: _sandwich(f, n, t, d)["stderr"],
                 f"n = {_n}, T = {_t}: its stderr.")
            _add(f"n{_n}_T{_t}_{_s}_s", lambda f, n=_n, t=_t, d=_d: _sandwich(f, n, t, d)["seconds"],
                 f"n = {_n}, T = {_t}: its seconds.")
    for _b in ("U1_sym", "L1_sym", "U1_paper", "L1_paper", "U1_crossfit_unsym"):
        _add(f"n{_n}_{_b}", lambda f, n=_n, b=_b: _bracket_mean(f, n, b), f"n = {_n}: {_b}, mean over runs.")
    if _n != 600:
        for _b in ("U1_sym", "L1_sym", "U1_paper", "L1_paper", "U1_crossfit_unsym"):
            _add(f"n{_n}_{_b}_sd", lambda f, n=_n, b=_b: _json(f, f"mixture_bdmc_k3_n{n}.json")[f"{b}_sd"],
                 f"n = {_n}: {_b}, sd over runs.")
        for _i in range(3):
            _add(f"n{_n}_size{_i}", lambda f, n=_n, i=_i: _json(f, f"mixture_bdmc_k3_n{n}.json")["cluster_sizes"][i],
                 f"n = {_n}: the simulated cluster {_i}'s size.")
        _add(f"n{_n}_seed", lambda f, n=_n: _json(f, f"mixture_bdmc_k3_n{n}.json")["data_seed"],
             f"n = {_n}: the data seed picked.")
globals().update(_made)


# Regression: the text's summaries.
def t1_ordered_rows(folder):
    """Rows of Table 1 ordered U2 > U1 > ML > L2 > L4 > L3 in the means."""
    return sum(r["U2"] > r["U1"] > r["ML"] > r["L2"] > r["L4"] > r["L3"]
               for r in _json(folder, "regression_table1.json")["rows"])


def t1_l1_ml_max_abs(folder):
    """The largest |L1 - ML| of the means over orders."""
    return max(abs(_t1(folder, o)["L1"] - _t1(folder, o)["ML"]) for o in ORDERS)


def t1_l1_above_count(folder):
    """Orders where L1 is above ML in the means."""
    return sum(_t1(folder, o)["L1"] > _t1(folder, o)["ML"] for o in ORDERS)


def t1_l1_sd_lo(folder):
    """The least sd of L1 over runs."""
    return min(_t1(folder, o)["L1_sd"] for o in ORDERS)


def t1_l1_sd_hi(folder):
    """The largest."""
    return max(_t1(folder, o)["L1_sd"] for o in ORDERS)


def t1_estimates(folder):
    """Per-run estimates over the table: runs x 6 bounds x orders."""
    d = _json(folder, "regression_table1.json")
    return d["settings"]["reps"] * len(BOUNDS1) * len(d["rows"])


def t1_expected_3se(folder):
    """Estimates expected more than 3 se on the wrong side by chance (one-sided normal tail)."""
    return t1_estimates(folder) * 0.5 * math.erfc(3 / math.sqrt(2))


def t1_violations_3se(folder):
    """Per-run estimates more than 3 of their standard errors on the wrong side of ML, over the table."""
    return sum(r["violations_3se"] for r in _json(folder, "regression_table1.json")["rows"])


def t1_raw_lo(folder):
    """The fewest raw sign flips of an order."""
    return min(_t1(folder, o)["raw_violations"] for o in ORDERS)


def t1_raw_hi(folder):
    """The most."""
    return max(_t1(folder, o)["raw_violations"] for o in ORDERS)


def _gaps(folder, f):
    return [f(_t1(folder, o)) for o in ORDERS]


def t1_near_ml_max(folder):
    """The largest distance of L1, L2 or U1 from ML in the means."""
    return max(max(abs(r["L1"] - r["ML"]), r["ML"] - r["L2"], r["U1"] - r["ML"]) for r in _gaps(folder, lambda r: r))


def t1_u1_ml_lo(folder):
    """The least U1 - ML of the means."""
    return min(_gaps(folder, lambda r: r["U1"] - r["ML"]))


def t1_u1_ml_hi(folder):
    """The largest."""
    return max(_gaps(folder, lambda r: r["U1"] - r["ML"]))


def t1_u2_ml_lo(folder):
    """The least U2 - ML of the means."""
    return min(_gaps(folder, lambda r: r["U2"] - r["ML"]))


def t1_u2_ml_hi(folder):
    """The largest."""
    return max(_gaps(folder, lambda r: r["U2"] - r["ML"]))


def t1_ml_l2_lo(folder):
    """The least ML - L2 of the means."""
    return min(_gaps(folder, lambda r: r["ML"] - r["L2"]))


def t1_ml_l2_hi(folder):
    """The largest."""
    return max(_gaps(folder, lambda r: r["ML"] - r["L2"]))


def t1_ml_l3_lo(folder):
    """The least ML - L3 of the means."""
    return min(_gaps(folder, lambda r: r["ML"] - r["L3"]))


def t1_ml_l3_hi(folder):
    """The largest."""
    return max(_gaps(folder, lambda r: r["ML"] - r["L3"]))


def t1_l4_l3_lo(folder):
    """The least L4 - L3 of the means."""
    return min(_gaps(folder, lambda r: r["L4"] - r["L3"]))


def t1_l4_l3_hi(folder):
    """The largest."""
    return max(_gaps(folder, lambda r: r["L4"] - r["L3"]))


def t1_mcsa_pct_lo(folder):
    """The least percent of runs whose MCSA convergence diagnostic passes, over orders."""
    return 100 * min(_t1(folder, o)["mcsa_converged_frac"] for o in ORDERS)


def t1_mcsa_pct_hi(folder):
    """The most."""
    return 100 * max(_t1(folder, o)["mcsa_converged_frac"] for o in ORDERS)


def t1_o3_L4_analytic(folder):
    """Order 3: the closed-form ELBO at the VB optimum (mean over runs)."""
    return _t1(folder, 3)["L4_analytic"]


def t1_best_order(folder):
    """The order with the highest ML."""
    return max(ORDERS, key=lambda o: _t1(folder, o)["ML"])


def t1_ml_best(folder):
    """The highest ML."""
    return _t1(folder, t1_best_order(folder))["ML"]


def ds_sets(folder):
    """Data sets per order in the second pass (the same for every order)."""
    (n,) = {r["datasets"] for r in _json(folder, "regression_table1.json")["datasets"]}
    return n


def ds_all_tighter(folder):
    """Orders where U1 < U2 and L2 > L3 on every data set."""
    return sum(r["U1_tighter_than_U2"] == r["datasets"] == r["L2_tighter_than_L3"]
               for r in _json(folder, "regression_table1.json")["datasets"])


def ds_bounds(folder):
    """Bounds in the second pass: orders x data sets x 6."""
    return len(_json(folder, "regression_table1.json")["datasets"]) * ds_sets(folder) * len(BOUNDS1)


def ds_expected_3se(folder):
    """Bounds expected more than 3 se on the wrong side by chance."""
    return ds_bounds(folder) * 0.5 * math.erfc(3 / math.sqrt(2))


def ds_violations(folder):
    """Bounds more than 3 se on the wrong side of the exact ML, over the pass."""
    return sum(r["U_below_ML"] + r["L_above_ML"] for r in _json(folder, "regression_table1.json")["datasets"])


def _ds_range(g, which):
    def quote(folder):
        return which(_ds(folder, o)["mean_" + g] for o in ORDERS)
    quote.__doc__ = f"The {which.__name__} over orders of the mean {g} over data sets."
    return quote


ds_ml_l3_lo, ds_ml_l3_hi = _ds_range("ML_minus_L3", min), _ds_range("ML_minus_L3", max)
ds_ml_l4_lo, ds_ml_l4_hi = _ds_range("ML_minus_L4", min), _ds_range("ML_minus_L4", max)


def ds_small_max(folder):
    """The largest mean U1 - ML or ML - L2 over orders."""
    return max(max(_ds(folder, o)["mean_U1_minus_ML"], _ds(folder, o)["mean_ML_minus_L2"]) for o in ORDERS)


def fit_draws(folder):
    """Posterior draws per cross-fitting half (settings: samples / 2)."""
    return _json(folder, "regression_table1.json")["settings"]["samples"] / 2


# Mixture: the text's summaries.
def t2_symshift_max(folder):
    """k = 2..5: the largest |(L1_sym - L1_paper) - log k!|."""
    return max(abs(_t2(folder, k)["L1_sym"] - _t2(folder, k)["L1_paper"] - math.lgamma(k + 1)) for k in (2, 3, 4, 5))


def t2_k5_gap_to_l1(folder):
    """k = 5: how far L1_sym (mean) is above the paper-style U1 (mean)."""
    return _t2(folder, 5)["L1_sym"] - _t2(folder, 5)["U1_paper"]


def t2_nested_k3_10(folder):
    """The fewest runs, over k = 3..10, where the symmetrized bounds nest."""
    return min(_t2(folder, k)["per_rep_order_sym_U3>=U2>=U1>=L1>=L2>=L3"] for k in range(3, 11))


def _excess(folder, k):
    u = _t2(folder, k)["U1_sym_values"]
    m = statistics.median(u)
    return [x - m for x in u if x - m > 100]


def t2_outlier_lo(folder):
    """k = 2..4: the least excess over the median U1_sym of the runs more than 100 nats above it."""
    return min(e for k in (2, 3, 4) for e in _excess(folder, k))


def t2_outlier_hi(folder):
    """... the largest."""
    return max(e for k in (2, 3, 4) for e in _excess(folder, k))


def t2_wmean_8_10_lo(folder):
    """k = 8..10: the least U1_sym - L1_sym of the means."""
    return min(_made[f"t2_k{k}_w_sym"](folder) for k in (8, 9, 10))


def t2_wmean_8_10_hi(folder):
    """... the largest."""
    return max(_made[f"t2_k{k}_w_sym"](folder) for k in (8, 9, 10))


def t2_wmed_8_10_lo(folder):
    """k = 8..10: the least per-run median of U1_sym - L1_sym."""
    return min(_made[f"t2_k{k}_wmed"](folder) for k in (8, 9, 10))


def t2_wmed_8_10_hi(folder):
    """... the largest."""
    return max(_made[f"t2_k{k}_wmed"](folder) for k in (8, 9, 10))


def t2_sym_L1_drop6(folder):
    """L1_sym at k = 5 less L1_sym at k = 6 (means)."""
    return _t2(folder, 5)["L1_sym"] - _t2(folder, 6)["L1_sym"]


def t2_sym_L1_drop10(folder):
    """L1_sym at k = 5 less L1_sym at k = 10 (means)."""
    return _t2(folder, 5)["L1_sym"] - _t2(folder, 10)["L1_sym"]


def t2_max_identity_error(folder):
    """The largest log-joint identity error over k and runs."""
    return max(_t2(folder, k)["max_identity_error"] for k in KS)


def t2_seconds(folder):
    """The whole run's seconds."""
    return _json(folder, "mixture_table2.json")["seconds"]


def t2_half_draws(folder):
    """Kept draws per cross-fitting half (settings: (sweeps - burn) / 2)."""
    s = _json(folder, "mixture_table2.json")["settings"]
    return (s["sweeps"] - s["burn"]) / 2


# Against BDMC: the text's summaries.
def n60_unsym_shift(folder):
    """n = 60: U1_sym - U1_crossfit_unsym (means)."""
    return _bracket_mean(folder, 60, "U1_sym") - _bracket_mean(folder, 60, "U1_crossfit_unsym")


def n60_unsym_shift_err(folder):
    """n = 60: the largest per-run |U1_sym - U1_crossfit_unsym - log 3!|."""
    d = _json(folder, "mixture_bdmc_k3_n60.json")
    return max(abs(b["U1_sym"] - b["U1_crossfit_unsym"] - d["log_k_factorial"]) for b in d["brackets"])


def n60_switch(folder):
    """n = 60: the largest label-switch fraction of a run."""
    return max(b["label_switch_fraction"] for b in _json(folder, "mixture_bdmc_k3_n60.json")["brackets"])


def n60_paper_below_sym(folder):
    """n = 60: L1_sym - L1_paper (means), how far the paper-style bracket sits below the symmetrized one."""
    return _bracket_mean(folder, 60, "L1_sym") - _bracket_mean(folder, 60, "L1_paper")


def n60_paper_below_forward(folder):
    """n = 60: the forward-AIS lower bound at the longest T less the paper-style U1 (mean)."""
    return _sandwich(folder, 60, 100000, "forward")["value"] - _bracket_mean(folder, 60, "U1_paper")


def n60_runs(folder):
    """n = 60: bracket runs."""
    return len(_json(folder, "mixture_bdmc_k3_n60.json")["brackets"])


def n600_runs(folder):
    """n = 600: bracket runs in the log."""
    return len(_n600(folder)[0])


def n600_size(folder):
    """n = 600: the data size (the cluster sizes in the log's first line, summed)."""
    line = (folder / "mixture_bdmc_k3_n600_partial.log").read_text().splitlines()[0]
    return sum(int(x) for x in re.search(r"\[(.*)\]", line).group(1).split(","))


def _gap(n, t):
    def quote(folder):
        return _sandwich(folder, n, t, "reverse")["value"] - _sandwich(folder, n, t, "forward")["value"]
    quote.__doc__ = f"n = {n}, T = {t}: the sandwich's width (reverse less forward)."
    return quote


n60_gap1000, n60_gap100000 = _gap(60, 1000), _gap(60, 100000)
n600_gap100, n600_gap1000 = _gap(600, 100), _gap(600, 1000)


def n600_T100_lo(folder):
    """n = 600, T = 100: the forward AIS estimate."""
    return _sandwich(folder, 600, 100, "forward")["value"]


def n600_T100_hi(folder):
    """n = 600, T = 100: the reverse AIS estimate."""
    return _sandwich(folder, 600, 100, "reverse")["value"]


def t2_outlier_rest_max(folder):
    """k = 2..4: the largest excess over the median U1_sym among the other runs (those within 100 nats)."""
    out = []
    for k in (2, 3, 4):
        u = _t2(folder, k)["U1_sym_values"]
        out += [x - statistics.median(u) for x in u if x - statistics.median(u) <= 100]
    return max(out)


def n60_bracket_s(folder):
    """n = 60: seconds of the Gibbs runs and the brackets."""
    d = _json(folder, "mixture_bdmc_k3_n60.json")
    return d["gibbs_seconds"] + d["bracket_seconds"]


def n60_sandwich_s(folder):
    """n = 60: seconds of the T = 100,000 sandwich, both directions."""
    return sum(_sandwich(folder, 60, 100000, d)["seconds"] for d in ("forward", "reverse"))


# QUOTES: the tables' generated families, and the quotes the text uses (a name here that the page stops using fails
# the stale-quote check).
TABLES = (
    tuple(f"t1_o{o}_{b}{sd}" for o in ORDERS for b in BOUNDS1 for sd in ("", "_sd"))
    + tuple(f"t1_o{o}_ML" for o in ORDERS)
    + tuple(f"t2_{v}_k{k}_{b}{sd}" for v in ("sym", "paper") for k in KS for b in BOUNDS2 for sd in ("", "_sd"))
    + tuple(f"t2_k{k}_{c}" for k in KS for c in ("w_sym", "w_paper", "shift", "logkf", "below", "reps", "switch",
                                                 "seconds"))
    + tuple(f"n60_T{t}_{s}{e}" for t in (1000, 10000, 100000) for s in ("lo", "hi") for e in ("", "_se"))
    + tuple(f"n60_{b}{sd}" for b in ("U1_sym", "L1_sym", "U1_paper", "L1_paper", "U1_crossfit_unsym")
            for sd in ("", "_sd"))
)
TEXT = (
    "t1_ordered_rows", "t1_l1_ml_max_abs", "t1_l1_above_count", "t1_l1_sd_lo", "t1_l1_sd_hi",
    "t1_estimates", "t1_expected_3se", "t1_violations_3se", "t1_raw_lo", "t1_raw_hi", "t1_near_ml_max",
    "t1_u1_ml_lo", "t1_u1_ml_hi", "t1_u2_ml_lo", "t1_u2_ml_hi", "t1_ml_l2_lo", "t1_ml_l2_hi", "t1_ml_l3_lo",
    "t1_ml_l3_hi", "t1_l4_l3_lo", "t1_l4_l3_hi", "t1_mcsa_pct_lo", "t1_mcsa_pct_hi", "t1_o3_L4_analytic",
    "t1_best_order", "t1_ml_best", "ds_sets", "ds_all_tighter", "ds_bounds", "ds_expected_3se", "ds_violations",
    "ds_ml_l3_lo", "ds_ml_l3_hi", "ds_ml_l4_lo", "ds_ml_l4_hi", "ds_small_max", "fit_draws",
    *(f"ds_o{o}_U2_minus_ML" for o in ORDERS),
    "t2_symshift_max", "t2_nested_k3_10", "t2_k2_nested", "t2_half_draws", "t2_k2_wmed", "t2_k3_wmed", "t2_k4_wmed",
    "t2_k6_wmed", "t2_k2_outliers", "t2_k3_outliers", "t2_k4_outliers", "t2_outlier_lo", "t2_outlier_hi",
    "t2_outlier_rest_max", "t2_k6_switch_pct", "t2_k8_switch_pct", "t2_wmean_8_10_lo", "t2_wmean_8_10_hi",
    "t2_wmed_8_10_lo", "t2_wmed_8_10_hi", "t2_sym_L1_drop6", "t2_sym_L1_drop10", "t2_max_identity_error",
    "t2_seconds",
    "n60_runs", "n60_switch", "n60_unsym_shift_err", "n60_seed", "n60_size0", "n60_size1", "n60_size2",
    "n60_T100000_lo_s", "n60_T100000_hi_s", "n60_unsym_shift", "n60_paper_below_sym", "n60_paper_below_forward",
    "n60_gap1000", "n60_gap100000", "n60_bracket_s", "n60_sandwich_s",
    "n200_size0", "n200_size1", "n200_size2", "n200_U1_sym", "n200_L1_sym", "n200_U1_paper",
    *(f"n200_T{t}_{s}" for t in (1000, 5000, 20000) for s in ("lo", "hi")),
    "n600_size", "n600_T1000_lo", "n600_T1000_hi", "n600_T100_lo", "n600_T100_hi", "n600_U1_sym", "n600_L1_sym",
    "n600_U1_paper", "n600_runs", "n600_gap100", "n600_gap1000",
)
QUOTES = TABLES + TEXT


# Table 2 under other stated priors (``bracketing_mixture.py --prior NAME``; "default" is mixture_table2.json):
# medians over the replicate chains, robust to the chains that had not merged their clusters by burn-in's end.
PRIORS = {"default": "mixture_table2.json", "diffuse": "mixture_table2_diffuse-mean.json",
          "broadcov": "mixture_table2_broad-cov.json", "dir1": "mixture_table2_dir1.json"}
PRIOR_KS = range(4, 11)


def _prior_row(folder, prior, k):
    return next(r for r in _json(folder, PRIORS[prior])["rows"] if r["k"] == k)


def _prior_median(folder, prior, k, bound):
    return statistics.median(_prior_row(folder, prior, k)[f"{bound}_sym_values"])


def _prior_peak(folder, prior, bound):
    ks = [r["k"] for r in _json(folder, PRIORS[prior])["rows"]]
    return max(ks, key=lambda k: _prior_median(folder, prior, k, bound))


PRIOR_QUOTES = []
for _p in PRIORS:
    for _k in PRIOR_KS:
        for _b in ("U1", "L1"):
            _add(f"pr_{_p}_k{_k}_{_b}", lambda f, p=_p, k=_k, b=_b: _prior_median(f, p, k, b),
                 f"Prior {_p}, k = {_k}: median {_b}_sym over the runs.")
            PRIOR_QUOTES.append(f"pr_{_p}_k{_k}_{_b}")
    _add(f"pr_{_p}_L1_peak", lambda f, p=_p: _prior_peak(f, p, "L1"), f"Prior {_p}: the k with the highest median L1.")
    _add(f"pr_{_p}_rise", lambda f, p=_p: _prior_median(f, p, 10, "U1") - _prior_median(f, p, 5, "U1"),
         f"Prior {_p}: median U1_sym at k = 10 minus at k = 5.")
    _add(f"pr_{_p}_l1_fall", lambda f, p=_p: max(_prior_median(f, p, 5, "L1") - _prior_median(f, p, k, "L1")
                                                 for k in range(6, 11)),
         f"Prior {_p}: the largest fall of median L1_sym from k = 5 over k = 6..10.")
    PRIOR_QUOTES += [f"pr_{_p}_L1_peak", f"pr_{_p}_rise"]
_add("pr_dir1_switch_lo", lambda f: 100 * min(_prior_row(f, "dir1", k)["switch_fraction"] for k in range(6, 11)),
     "Prior dir1: the least label-switch percent over k = 6..10.")
_add("pr_dir1_switch_hi", lambda f: 100 * max(_prior_row(f, "dir1", k)["switch_fraction"] for k in range(6, 11)),
     "Prior dir1: the largest label-switch percent over k = 6..10.")
_add("pr_dir1_l1_fall", lambda f: _prior_median(f, "dir1", 5, "L1") - _prior_median(f, "dir1", 10, "L1"),
     "Prior dir1: median L1_sym at k = 5 minus at k = 10.")
_add("pr_diffuse_reps", lambda f: _json(f, PRIORS["diffuse"])["settings"]["reps"], "Runs per k under diffuse-mean.")
PRIOR_QUOTES += ["pr_diffuse_reps", "pr_broadcov_l1_fall", "pr_dir1_switch_lo", "pr_dir1_switch_hi",
                 "pr_dir1_l1_fall"]


def empty_component_dir_k(folder):
    """Least log prior mass ratio p(z | 6) / p(z | 5) under Dir(1/k), n = 600, any z on five labels (nats)."""
    n = 600
    return 5 * (math.lgamma(1 / 6 + n) - math.lgamma(1 / 6) - math.lgamma(1 / 5 + n) + math.lgamma(1 / 5))


def empty_component_dir_1(folder):
    """The same ratio under Dir(1): log(5 / (5 + n)) for every z on five labels (nats)."""
    return math.log(5 / 605)


globals().update(_made)
QUOTES = QUOTES + tuple(PRIOR_QUOTES) + ("empty_component_dir_k", "empty_component_dir_1")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/bracketing`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
