"""Numbers quoted by README.md, recomputed from rows.jsonl as ``benchmarks/audit_power.py`` reads and tabulates it
(tests/test_results_pages.py checks them).

The first row of a (bug, seed) counts. Table quotes are named ``<bug>_<check>_<what>`` with the short bug names of
``BUGS`` and the checks ``sd`` (simulator-density), ``sbc``, ``gw`` (Geweke) and ``bd`` (the BDMC alarm).
"""

import json
import statistics
from pathlib import Path

from scipy import stats

from bdmc.caching import cached

BUGS = {
    "lr": "correct (LR, Gibbs)", "cg": "correct (CG, Gibbs)", "mala": "correct (LR, no conditionals, MALA)",
    "npyro": "correct (LR, NumPyro NUTS)", "kern": "kernel conditional variance +10%",
    "sim": "simulator variance x1.1", "mvn": "MVN sampler with transposed eigenvectors",
    "llc": "log-likelihood constant +0.5 per case", "lln": "log-likelihood noise variance x1.1 (density only)",
    "step": "NUTS step size x10", "warm": "NUTS with 2 warm-up steps",
}
CHECKS = {"sd": "simulator-density", "sbc": "sbc", "gw": "geweke", "bd": "bdmc"}
STAT = {"sbc": "min_gamma", "geweke": "worst_abs_z", "bdmc": "crossing"}
GIBBS = ("lr", "cg", "kern", "sim", "mvn")  # bugs audited with a Gibbs kernel
MALA = ("mala", "llc", "lln")


def _lines(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


@cached(maxsize=16)
def _all(folder: Path):
    rows, seen = [], set()
    for row in _lines(folder):
        if (row["bug"], row["seed"]) not in seen:
            seen.add((row["bug"], row["seed"]))
            rows.append(row)
    return rows


def _rows(folder, *bugs):
    return [r for r in _all(folder) if r["bug"] in {BUGS[b] for b in bugs}]


def _ran(folder, bug, check):
    return [r["checks"][check] for r in _rows(folder, bug)
            if r["checks"].get(check, {}).get("verdict") in ("pass", "fail", "inconclusive")]


def _ci(fails, n):
    lo = 0.0 if fails == 0 else stats.beta.ppf(0.025, fails, n - fails + 1)
    hi = 1.0 if fails == n else stats.beta.ppf(0.975, fails + 1, n - fails)
    return lo, hi


def _bhat(folder, *bugs, seeds=None):
    return [r["checks"]["bdmc"]["b_hat"] for r in _rows(folder, *bugs) if seeds is None or r["seed"] in seeds]


def _make_check(b, c):
    check = CHECKS[c]

    def fired(folder):
        """Audits in which the check failed."""
        return sum(g["verdict"] == "fail" for g in _ran(folder, b, check))

    def ran(folder):
        """Audits in which the check ran."""
        return len(_ran(folder, b, check))

    def stat(folder):
        """The median over seeds of the check's statistic (the table's column)."""
        ran = _ran(folder, b, check)
        key = STAT.get(check) or ("worst_violation" if "worst_violation" in ran[0] else "min_p")
        return statistics.median(g[key] for g in ran if g.get(key) is not None)

    return {f"{b}_{c}_fired": fired, f"{b}_{c}_ran": ran, f"{b}_{c}_stat": stat}


def _make_bug(b):
    def n(folder):
        """Seeds (audits) of the bug."""
        return len(_rows(folder, b))

    def fails(folder):
        """Audits that failed."""
        return sum(r["verdict"] == "fail" for r in _rows(folder, b))

    def unsure(folder):
        """Audits that came out inconclusive."""
        return sum(r["verdict"] == "inconclusive" for r in _rows(folder, b))

    def ci_lo(folder):
        """Clopper-Pearson 95% interval of the failure rate: lower end."""
        return _ci(fails(folder), n(folder))[0]

    def ci_hi(folder):
        """... upper end."""
        return _ci(fails(folder), n(folder))[1]

    def bhat(folder):
        """Median B-hat at T = 100."""
        return statistics.median(_bhat(folder, b))

    def sbc_unsure(folder):
        """SBC checks that came out inconclusive."""
        return sum(g["verdict"] == "inconclusive" for g in _ran(folder, b, "sbc"))

    def sbc_ess(folder):
        """Median over seeds of the worst quantity's median ESS of the SBC draws (where recorded)."""
        return statistics.median(g["worst_median_ess"] for g in _ran(folder, b, "sbc")
                                 if g.get("worst_median_ess") is not None)

    out = {f"{b}_n": n, f"{b}_fails": fails, f"{b}_unsure": unsure, f"{b}_ci_lo": ci_lo, f"{b}_ci_hi": ci_hi,
           f"{b}_bhat": bhat, f"{b}_sbc_unsure": sbc_unsure, f"{b}_sbc_ess": sbc_ess}
    for c in CHECKS:
        out.update(_make_check(b, c))
    return out


def _thins(folder, b):
    return sorted({g.get("thin", 2) for g in _ran(folder, b, "sbc")})  # rows before the pilot: thin 2


def _make_thin(b, i):
    def quote(folder):
        return _thins(folder, b)[i]
    quote.__doc__ = f"{BUGS[b]}: the SBC thinning values used, sorted: number {i + 1}."
    return quote


_made = {}
for _b in BUGS:
    _made.update(_make_bug(_b))
_THIN_COUNTS = {"mala": 6, "llc": 4, "lln": 4}
for _b in BUGS:
    for _i in range(_THIN_COUNTS.get(_b, 1)):
        _made[f"{_b}_thin{_i}"] = _make_thin(_b, _i)
globals().update(_made)


# The pooled false-alarm rate on correct models.
def _correct(folder, without=()):
    return [r for r in _all(folder) if r["kind"] == "correct" and r["bug"] not in {BUGS[b] for b in without}]


def correct_n(folder):
    """Audits of correct models."""
    return len(_correct(folder))


def correct_fails(folder):
    """... that failed."""
    return sum(r["verdict"] == "fail" for r in _correct(folder))


def correct_unsure(folder):
    """... that came out inconclusive."""
    return sum(r["verdict"] == "inconclusive" for r in _correct(folder))


def correct_pct(folder):
    """Percent of the audits of correct models that failed."""
    return 100 * correct_fails(folder) / correct_n(folder)


def correct_ci_lo(folder):
    """Clopper-Pearson 95% interval of that rate: lower end."""
    return _ci(correct_fails(folder), correct_n(folder))[0]


def correct_ci_hi(folder):
    """... upper end."""
    return _ci(correct_fails(folder), correct_n(folder))[1]


def correct_n_but_mala(folder):
    """Audits of correct models other than the MALA row."""
    return len(_correct(folder, without=("mala",)))


def correct_fails_but_mala(folder):
    """... that failed."""
    return sum(r["verdict"] == "fail" for r in _correct(folder, without=("mala",)))


# The text's readings.
def lines(folder):
    """Lines of rows.jsonl."""
    return len(_lines(folder))


def pairs(folder):
    """Distinct (bug, seed) pairs in it."""
    return len(_all(folder))


def _ess(folder, *bugs):
    return [r["checks"]["sbc"]["worst_median_ess"] for r in _rows(folder, *bugs)
            if r["checks"]["sbc"].get("worst_median_ess") is not None]


def gibbs_ess_lo(folder):
    """Correct Gibbs rows (LR, CG): the least worst-quantity median ESS of the SBC draws, where recorded."""
    return min(_ess(folder, "lr", "cg"))


def gibbs_ess_hi(folder):
    """... the largest."""
    return max(_ess(folder, "lr", "cg"))


def mala_pass(folder):
    """Correct LR under MALA: audits that passed."""
    return sum(r["verdict"] == "pass" for r in _rows(folder, "mala"))


def _mala_seed(folder, seed):
    return next(r for r in _rows(folder, "mala") if r["seed"] == seed)


def mala_ess_s2(folder):
    """Correct LR under MALA, seed 2 (inconclusive): the worst median ESS of its SBC draws."""
    return _mala_seed(folder, 2)["checks"]["sbc"]["worst_median_ess"]


def mala_ess_s7(folder):
    """... seed 7 (inconclusive)."""
    return _mala_seed(folder, 7)["checks"]["sbc"]["worst_median_ess"]


def mala_s4_miscal(folder):
    """... seed 4 (the failure): SBC quantities out of their band."""
    return len(_mala_seed(folder, 4)["checks"]["sbc"]["miscalibrated"])


def mala_s4_ess(folder):
    """... seed 4: the worst median ESS of its SBC draws."""
    return _mala_seed(folder, 4)["checks"]["sbc"]["worst_median_ess"]


def mala_ess_lo(folder):
    """Correct LR under MALA: the least worst median ESS over seeds."""
    return min(_ess(folder, "mala"))


def mala_ess_hi(folder):
    """... the largest."""
    return max(_ess(folder, "mala"))


def mala_rows_ess_lo(folder):
    """All three MALA rows (the control and the two density bugs): the least worst median ESS."""
    return min(_ess(folder, *MALA))


def step_bhat_1(folder):
    """NUTS step x10: the smallest B-hat at T = 100 of its seeds."""
    return sorted(_bhat(folder, "step"))[0]


def step_bhat_2(folder):
    """... the middle one."""
    return sorted(_bhat(folder, "step"))[1]


def step_bhat_3(folder):
    """... the largest."""
    return sorted(_bhat(folder, "step"))[2]


def step_crossing_hi(folder):
    """NUTS step x10: the crossing (lower minus upper bound) nearest zero."""
    return max(r["checks"]["bdmc"]["crossing"] for r in _rows(folder, "step"))


def step_crossing_lo(folder):
    """... the farthest from zero."""
    return min(r["checks"]["bdmc"]["crossing"] for r in _rows(folder, "step"))


def alarms(folder):
    """Rows on which the run-level (BDMC) alarm fired."""
    return sum(r["checks"]["bdmc"]["verdict"] == "fail" for r in _all(folder))


def _gibbs_bhat_but_lr_seed2(folder):
    lr_based = {BUGS[b] for b in ("lr", "kern", "sim")}
    return [r["checks"]["bdmc"]["b_hat"] for r in _rows(folder, *GIBBS)
            if not (r["bug"] in lr_based and r["seed"] == 2)]


def gibbs_bhat_lo(folder):
    """Gibbs-kernel rows but seed 2 of the three LR ones: the least B-hat at T = 100."""
    return min(_gibbs_bhat_but_lr_seed2(folder))


def gibbs_bhat_hi(folder):
    """... the largest."""
    return max(_gibbs_bhat_but_lr_seed2(folder))


def lr_seed2_bhat_lo(folder):
    """The three LR Gibbs rows at seed 2: the least B-hat."""
    return min(_bhat(folder, "lr", "kern", "sim", seeds={2}))


def lr_seed2_bhat_hi(folder):
    """... the largest."""
    return max(_bhat(folder, "lr", "kern", "sim", seeds={2}))


def cg_seed2_bhat(folder):
    """The correct CG Gibbs row at seed 2: B-hat."""
    return _bhat(folder, "cg", seeds={2})[0]


def mvn_seed2_bhat(folder):
    """The transposed-eigenvector CG row at seed 2: B-hat."""
    return _bhat(folder, "mvn", seeds={2})[0]


def npyro_bhat_lo(folder):
    """The NumPyro rows (control and 2 warm-up) but seed 2: the least B-hat."""
    return min(_bhat(folder, "npyro", "warm", seeds={0, 1, 3, 4}))


def npyro_bhat_hi(folder):
    """... the largest."""
    return max(_bhat(folder, "npyro", "warm", seeds={0, 1, 3, 4}))


def npyro_bhat_s2(folder):
    """The NumPyro rows at seed 2: B-hat (the same data set, the same engine HMC in both)."""
    (value,) = set(_bhat(folder, "npyro", "warm", seeds={2}))
    return value


def mala_bhat_lo(folder):
    """The three MALA rows: the least B-hat."""
    return min(_bhat(folder, *MALA))


def mala_bhat_hi(folder):
    """... the largest."""
    return max(_bhat(folder, *MALA))


# Seconds: seeds 0 and 5 begin a batch of a bug (5 the extra correct seeds), so they include compilation.
def _seconds(folder, bugs, cold=None):
    return [r["seconds"] for r in _rows(folder, *bugs)
            if cold is None or (r["seed"] in (0, 5)) == cold]


def gibbs_warm_lo(folder):
    """Gibbs-kernel audits after the first of a batch (warm): the fewest seconds."""
    return min(_seconds(folder, GIBBS, cold=False))


def gibbs_warm_hi(folder):
    """... the most."""
    return max(_seconds(folder, GIBBS, cold=False))


def gibbs_cold_hi(folder):
    """Gibbs-kernel audits: the most seconds of any (the first of a batch, compilation included)."""
    return max(_seconds(folder, GIBBS))


def mala_s_lo(folder):
    """MALA audits: the fewest seconds."""
    return min(_seconds(folder, MALA))


def mala_s_hi(folder):
    """... the most."""
    return max(_seconds(folder, MALA))


def step_s_lo(folder):
    """bdmc's NUTS x10 audits: the fewest seconds."""
    return min(_seconds(folder, ("step",)))


def step_s_hi(folder):
    """... the most."""
    return max(_seconds(folder, ("step",)))


def warm_s_lo(folder):
    """NumPyro's NUTS with 2 warm-up steps: the fewest seconds."""
    return min(_seconds(folder, ("warm",)))


def warm_s_hi(folder):
    """... the most."""
    return max(_seconds(folder, ("warm",)))


NO_GEWEKE = ("npyro", "warm")  # Geweke is not run for an adapting sampler
NO_ESS = ("npyro", "kern", "sim", "mvn")  # rows that predate the ESS record
TABLE = tuple(
    f"{b}_{what}" for b in BUGS for what in
    ("n", "fails", "ci_lo", "ci_hi", "bhat")
    + tuple(f"{c}_{k}" for c in CHECKS if not (c == "gw" and b in NO_GEWEKE) for k in ("fired", "ran", "stat"))
    + tuple(f"thin{i}" for i in range(_THIN_COUNTS.get(b, 1)))
    + (() if b in NO_ESS else ("sbc_ess",)) + (("unsure", "sbc_unsure") if b == "mala" else ()))
TEXT = (
    "lines", "pairs", "mala_rows_ess_lo", "gibbs_warm_lo", "gibbs_warm_hi",
    "gibbs_cold_hi", "mala_s_lo", "mala_s_hi", "step_s_lo", "step_s_hi",
    "warm_s_lo", "warm_s_hi", "correct_fails", "correct_n", "correct_pct",
    "correct_ci_lo", "correct_ci_hi", "correct_unsure", "gibbs_ess_lo", "gibbs_ess_hi",
    "mala_pass", "mala_ess_s2", "mala_ess_s7", "mala_s4_miscal", "mala_ess_lo",
    "mala_ess_hi", "mala_s4_ess", "correct_fails_but_mala", "correct_n_but_mala", "step_bhat_1",
    "step_bhat_2", "step_bhat_3", "step_crossing_hi", "step_crossing_lo", "alarms",
    "gibbs_bhat_lo", "gibbs_bhat_hi", "lr_seed2_bhat_lo", "lr_seed2_bhat_hi", "cg_seed2_bhat",
    "mvn_seed2_bhat", "npyro_bhat_lo", "npyro_bhat_hi", "npyro_bhat_s2", "mala_bhat_lo",
    "mala_bhat_hi",
)
QUOTES = TABLE + TEXT


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/audit`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
