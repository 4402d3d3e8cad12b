"""Certified bounds from independent runs (bdmc.intervals.bounds): the rules' values, the level split, and their
measured levels on synthetic runs whose expectation is known exactly.

Synthetic runs: unbiased log-normal weights (``log Z_i ~ N(-s^2/2, s^2)``, so ``E Z_i = 1`` and the truth is
``log p(y) = 0``), the same with one run in eight (independently) 10 nats low, and the two-point weight at which
Markov's inequality is an equality (``Z = v`` with probability ``1/v``, else 0), where min-of-runs fails with
probability exactly ``v^-n`` and the k-th order statistic with probability ``P(Binomial(n, 1/v) >= n - k + 1)``.
"""

import math

import numpy as np
import pytest
from scipy import stats

from bdmc import Estimate
from bdmc.errors import BDMCError, NonFiniteLogWeightError, OptionError, OptionTypeError
from bdmc.intervals.bounds import (
    CertifiedBound,
    certified_lower,
    certified_upper,
    order_ranks,
    order_statistic_margin,
)

SEEDS = 3000  # Monte Carlo seeds per setting


def most_failures(seeds: int, level: float) -> int:
    """The largest failure count that a rate of ``level`` explains: one-sided binomial test at 1e-4."""
    return int(stats.binom.isf(1e-4, seeds, level))


def lognormal_logs(rng, s: float, shape) -> np.ndarray:
    """``log Z`` with ``Z`` log-normal and ``E Z = 1`` exactly."""
    return rng.normal(-0.5 * s**2, s, size=shape)


def two_point_logs(rng, v: float, shape) -> np.ndarray:
    """``log Z`` with ``Z = v`` w.p. ``1/v``, else 0 (``log Z = -inf``): ``E Z = 1`` and ``P(Z >= v) = 1/v``."""
    return np.where(rng.random(shape) < 1 / v, math.log(v), -np.inf)


def binomial_tail(n: int, q: float, m: int) -> float:
    """``P(Binomial(n, q) >= m)``, summed term by term (no beta function): the check on the beta quantile."""
    return math.fsum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(m, n + 1))


def bisect_margin(n: int, k: int, a: float) -> float:
    """``log c_k`` by bisection on ``q = 1/c`` in ``P(Binomial(n, q) >= n - k + 1) = a`` (increasing in q)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if binomial_tail(n, mid, n - k + 1) < a else (lo, mid)
    return -math.log(0.5 * (lo + hi))


# ------------------------------------------------------------------------------------------- exact identities


def test_lower_rules_by_hand():
    runs = np.array([-1.0, 0.0, 2.0, 0.5])
    bound = certified_lower(runs, level=0.1)
    margin = math.log(2 / 0.1)  # each rule at a/2 = 0.05
    assert bound.candidates["min-of-runs"] == pytest.approx(-1.0 - margin / 4, abs=1e-14)
    assert bound.candidates["markov"] == pytest.approx(math.log(np.mean(np.exp(runs))) - margin, abs=1e-14)
    assert bound.rule == "min-of-runs" and bound.value == bound.candidates["min-of-runs"]
    assert (bound.side, bound.level, bound.num_runs, bound.share) == ("lower", 0.1, 4, 0.05)


def test_markov_wins_below_a_straggler():
    """One run far below the others sinks min-of-runs, not the mean."""
    runs = np.array([0.0, 0.0, 0.0, -50.0])
    bound = certified_lower(runs, level=0.01)
    assert bound.rule == "markov"
    assert bound.value == pytest.approx(math.log(0.75 + 0.25 * math.exp(-50)) - math.log(200), abs=1e-12)
    assert bound.candidates["min-of-runs"] == pytest.approx(-50 - math.log(200) / 4, abs=1e-12)


def test_upper_rules_by_hand():
    runs = np.array([1.0, 0.0, 0.5])  # log U_i = -log W_i
    bound = certified_upper(runs, level=0.05, independent=True)
    margin = math.log(2 / 0.05)
    assert bound.candidates["max-of-runs"] == pytest.approx(1.0 + margin / 3, abs=1e-14)
    assert bound.candidates["markov"] == pytest.approx(-math.log(np.mean(np.exp(-runs))) + margin, abs=1e-14)
    assert bound.rule == "max-of-runs" and bound.value == bound.candidates["max-of-runs"]
    assert bound.candidates["max-of-runs"] < bound.candidates["markov"]


def test_shared_latent_uses_markov_at_the_whole_level():
    runs = np.array([1.0, 0.0, 0.5])
    shared = certified_upper(runs, level=0.05, independent=False)
    assert shared.rule == "markov" and set(shared.candidates) == {"markov"} and shared.share == 0.05
    assert shared.value == pytest.approx(-math.log(np.mean(np.exp(-runs))) + math.log(1 / 0.05), abs=1e-14)
    # Independent runs split the level: their markov candidate is log 2 looser than the shared one's.
    split = certified_upper(runs, level=0.05, independent=True)
    assert split.candidates["markov"] - shared.value == pytest.approx(math.log(2), abs=1e-14)


def test_each_rule_gets_its_share_of_the_level():
    """Five runs: three rules (min-of-runs, the 2nd smallest, markov), so at level 3a each candidate is the rule
    at a: the same number as the rule written out at a."""
    runs = np.array([-3.0, -2.5, -2.0, -2.8, -1.0])
    a = 0.02
    lower = certified_lower(runs, level=3 * a)
    assert set(lower.candidates) == {"min-of-runs", "quantile-of-runs (k=2)", "markov"}
    assert lower.share == pytest.approx(a, abs=1e-15)
    assert lower.candidates["min-of-runs"] == pytest.approx(runs.min() - math.log(1 / a) / runs.size, abs=1e-14)
    assert lower.candidates["quantile-of-runs (k=2)"] == pytest.approx(-2.8 - order_statistic_margin(5, 2, a),
                                                                       abs=1e-14)
    assert lower.candidates["markov"] == pytest.approx(np.log(np.mean(np.exp(runs))) - math.log(1 / a), abs=1e-14)
    upper = certified_upper(-runs, level=3 * a, independent=True)
    assert upper.candidates["max-of-runs"] == pytest.approx(-runs.min() + math.log(1 / a) / runs.size, abs=1e-14)
    assert upper.candidates["quantile-of-runs (k=2)"] == pytest.approx(2.8 + order_statistic_margin(5, 2, a),
                                                                       abs=1e-14)
    assert upper.candidates["markov"] == pytest.approx(certified_upper(-runs, level=a, independent=False).value,
                                                       abs=1e-14)


def test_one_run_ties_and_markov_is_named():
    bound = certified_lower([-2.0], level=0.01)
    assert bound.candidates["min-of-runs"] == bound.candidates["markov"] == pytest.approx(-2.0 - math.log(200))
    assert bound.rule == "markov"
    assert certified_upper([-2.0], level=0.01, independent=True).rule == "markov"


def test_runs_that_found_no_mass():
    """-inf lower runs (Z_i = 0) and +inf upper runs (W_i = 0) are legal: min/max-of-runs become useless, markov
    counts them as zeros."""
    lower = certified_lower([-np.inf, 0.0, 0.0, 0.0], level=0.1)
    assert lower.candidates["min-of-runs"] == -np.inf
    assert lower.rule == "markov" and lower.value == pytest.approx(math.log(0.75) - math.log(20))
    assert certified_lower([-np.inf, -np.inf], level=0.1).value == -np.inf
    upper = certified_upper([np.inf, 0.0, 0.0, 0.0], level=0.1, independent=True)
    assert upper.candidates["max-of-runs"] == np.inf
    assert upper.rule == "markov" and upper.value == pytest.approx(-math.log(0.75) + math.log(20))
    assert certified_upper([np.inf], level=0.1, independent=False).value == np.inf


def test_holds_is_the_side():
    lower = CertifiedBound(value=-1.0, side="lower", rule="markov", level=0.1, num_runs=1, candidates={"markov": -1})
    assert lower.holds(-1.0) and lower.holds(0.0) and not lower.holds(-1.5)
    upper = CertifiedBound(value=-1.0, side="upper", rule="markov", level=0.1, num_runs=1, candidates={"markov": -1})
    assert upper.holds(-1.0) and upper.holds(-1.5) and not upper.holds(0.0)
    with pytest.raises(OptionError, match="NaN"):
        lower.holds(float("nan"))
    with pytest.raises(TypeError):
        lower.candidates["markov"] = 0.0  # read-only


def test_accepts_an_estimate_of_its_side():
    """An Estimate's runs are log Z_i (lower) and log U_i = -log W_i (upper): the markov candidate is its value
    (log-mean-exp, log-harmonic-mean) moved by log(2/a)."""
    runs = np.array([-10.2, -10.0, -10.7, -9.9])
    common = dict(seconds=0.0, compile_seconds=0.0, n_evals=0)
    lower = Estimate.from_runs(runs, bound="lower", **common)
    upper = Estimate.from_runs(runs, bound="upper", **common)
    assert certified_lower(lower, level=0.1).candidates["markov"] == pytest.approx(lower.value - math.log(20))
    assert certified_upper(upper, level=0.1, independent=True).candidates["markov"] == pytest.approx(
        upper.value + math.log(20))
    assert certified_upper(upper, level=0.1, independent=False).value == pytest.approx(upper.value + math.log(10))
    with pytest.raises(OptionError, match="bound='lower'"):
        certified_lower(upper, level=0.1)
    with pytest.raises(OptionError, match="bound='upper'"):
        certified_upper(lower, level=0.1, independent=True)
    deterministic = Estimate.from_runs(runs, bound="lower", combine="max", **common)  # VB's: not unbiased runs
    with pytest.raises(OptionError, match="log-mean-exp"):
        certified_lower(deterministic, level=0.1)


def test_order_ranks_are_fixed_by_n():
    assert [order_ranks(n) for n in (1, 4, 5, 8, 9, 16, 32, 64)] == [
        (1,), (1,), (1, 2), (1, 2), (1, 2, 3), (1, 2, 4), (1, 4, 8), (1, 8, 16)]
    assert set(certified_lower(np.zeros(64), level=0.05).candidates) == {
        "min-of-runs", "quantile-of-runs (k=8)", "quantile-of-runs (k=16)", "markov"}
    assert set(certified_upper(np.zeros(64), level=0.05, independent=True).candidates) == {
        "max-of-runs", "quantile-of-runs (k=8)", "quantile-of-runs (k=16)", "markov"}
    assert set(certified_upper(np.zeros(64), level=0.05, independent=False).candidates) == {"markov"}
    with pytest.raises(OptionError):
        order_ranks(0)


@pytest.mark.parametrize("n", [1, 4, 16, 64, 1000])
def test_rank_one_is_min_of_runs(n):
    """k = 1: ``c^-n = a``, the beta quantile ``beta.ppf(a, n, 1) = a^(1/n)``; the candidate is min-of-runs at the
    same share of the level (m a with m rules: a each)."""
    a = 0.01
    assert order_statistic_margin(n, 1, a) == math.log(1 / a) / n
    assert -math.log(stats.beta.ppf(a, n, 1)) == pytest.approx(math.log(1 / a) / n, rel=1e-12)
    runs = np.random.default_rng(n).normal(size=n)
    m = len(order_ranks(n)) + 1
    assert certified_lower(runs, level=m * a).candidates["min-of-runs"] == runs.min() - math.log(1 / a) / n
    assert certified_upper(runs, level=m * a, independent=True).candidates["max-of-runs"] == (
        runs.max() + math.log(1 / a) / n)


@pytest.mark.parametrize("n, k, a", [(5, 2, 0.02), (8, 2, 0.01), (16, 4, 0.0125), (64, 8, 0.0025),
                                     (64, 16, 1e-6), (256, 64, 0.05), (17, 17, 0.3)])
def test_margin_solves_the_binomial_tail(n, k, a):
    """``1/c_k`` puts the tail ``P(Binomial(n, 1/c_k) >= n - k + 1)`` at a to 1e-10 (summed term by term), is the
    smallest such c (a hair smaller c gives a larger tail), and agrees with plain bisection."""
    margin = order_statistic_margin(n, k, a)
    q = math.exp(-margin)
    assert binomial_tail(n, q, n - k + 1) == pytest.approx(a, abs=1e-10, rel=1e-10)
    assert binomial_tail(n, q * (1 + 1e-6), n - k + 1) > a
    assert margin == pytest.approx(bisect_margin(n, k, a), abs=1e-10)
    assert 0 < order_statistic_margin(n, max(k - 1, 1), a) <= margin  # a higher rank pays more
    with pytest.raises(OptionError):
        order_statistic_margin(n, n + 1, a)
    with pytest.raises(OptionError):
        order_statistic_margin(n, 0, a)
    with pytest.raises(OptionError):
        order_statistic_margin(n, k, 1.0)


def test_quantile_rule_by_hand():
    """Eight runs, one far below: min-of-runs pays for it, markov for its log(1/a), the 2nd smallest run neither.
    At level 0.03 three rules get 0.01 each; ``c_2`` solves ``8 q^7 (1 - q) + q^8 = 0.01`` with ``q = 1/c_2``."""
    runs = np.array([0.1, -20.0, 0.0, -0.1, 0.2, 0.0, 0.05, -0.05])
    lo, hi = 0.0, 1.0
    for _ in range(200):
        q = 0.5 * (lo + hi)
        lo, hi = (q, hi) if 8 * q**7 * (1 - q) + q**8 < 0.01 else (lo, q)
    log_c2 = -math.log(lo)
    assert log_c2 == pytest.approx(0.89146, abs=1e-5)  # q = 0.4101: 8 q^7 (1 - q) + q^8 = 0.01
    lower = certified_lower(runs, level=0.03)
    assert lower.share == pytest.approx(0.01)
    assert lower.candidates["quantile-of-runs (k=2)"] == pytest.approx(-0.1 - log_c2, abs=1e-12)
    assert lower.candidates["min-of-runs"] == pytest.approx(-20.0 - math.log(100) / 8, abs=1e-12)
    assert lower.candidates["markov"] == pytest.approx(math.log(np.mean(np.exp(runs))) - math.log(100), abs=1e-12)
    assert lower.rule == "quantile-of-runs (k=2)" and lower.value == lower.candidates["quantile-of-runs (k=2)"]
    upper = certified_upper(-runs, level=0.03, independent=True)
    assert upper.rule == "quantile-of-runs (k=2)" and upper.value == pytest.approx(0.1 + log_c2, abs=1e-12)
    # A run that found no mass is the smallest: the 2nd smallest stays finite, and is taken.
    runs[1] = -np.inf
    assert certified_lower(runs, level=0.03).value == pytest.approx(-0.1 - log_c2, abs=1e-12)
    runs[0] = -np.inf  # two such runs sink the 2nd smallest too; markov is left
    assert certified_lower(runs, level=0.03).candidates["quantile-of-runs (k=2)"] == -np.inf
    assert certified_lower(runs, level=0.03).rule == "markov"


def test_ties_go_to_markov_then_the_smaller_rank():
    """Two runs that found no mass of five: min-of-runs and the 2nd smallest are both -inf; markov is finite. With
    every run -inf, all three tie at -inf and markov is named."""
    assert certified_lower([-np.inf] * 5, level=0.05).rule == "markov"
    assert certified_upper([np.inf] * 5, level=0.05, independent=True).rule == "markov"
    # All runs equal: every order statistic is the same run, and the smallest margin (k = 1) wins.
    assert certified_lower(np.zeros(16), level=0.05).rule == "min-of-runs"


# ----------------------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("runs, error", [
    ([0.0, np.nan], NonFiniteLogWeightError), ([0.0, np.inf], NonFiniteLogWeightError), ([], OptionError),
    ([[0.0, 1.0]], OptionError), (0.0, OptionError), (["a"], OptionTypeError)])
def test_lower_refuses_bad_runs(runs, error):
    with pytest.raises(error):
        certified_lower(runs, level=0.05)


@pytest.mark.parametrize("runs", [[0.0, np.nan], [0.0, -np.inf]])
def test_upper_refuses_nan_and_infinite_w(runs):
    with pytest.raises(NonFiniteLogWeightError, match="never NaN or -inf"):
        certified_upper(runs, level=0.05, independent=True)


@pytest.mark.parametrize("level, error", [
    (0.0, OptionError), (1.0, OptionError), (-0.1, OptionError), (1.5, OptionError), (float("nan"), OptionError),
    ("0.05", OptionTypeError), (True, OptionTypeError), (None, OptionTypeError)])
def test_refuses_a_level_outside_zero_one(level, error):
    with pytest.raises(error):
        certified_lower([0.0], level=level)
    with pytest.raises(error):
        certified_upper([0.0], level=level, independent=False)


def test_options_are_keyword_only_and_independent_is_a_bool():
    with pytest.raises(TypeError):
        certified_lower([0.0], 0.05)  # the positional level is what is refused
    with pytest.raises(TypeError):
        certified_upper([0.0], level=0.05)  # independence must be stated
    with pytest.raises(OptionTypeError):
        certified_upper([0.0], level=0.05, independent="yes")
    assert all(issubclass(e, BDMCError) for e in (NonFiniteLogWeightError, OptionError, OptionTypeError))


# ------------------------------------------------------------------------------------- measured levels (MC)


def failures(bounds, truth=0.0) -> dict:
    """Per rule, how many seeds' candidate is on the wrong side of the truth; "taken" for the bound itself."""
    counts = {"taken": sum(not b.holds(truth) for b in bounds)}
    for rule in bounds[0].candidates:
        wrong = (lambda v: v > truth) if bounds[0].side == "lower" else (lambda v: v < truth)
        counts[rule] = sum(wrong(b.candidates[rule]) for b in bounds)
    return counts


@pytest.mark.parametrize("s, n", [(0.5, 16), (2.0, 4), (4.0, 16), (1.0, 1)])
def test_level_holds_on_unbiased_lognormal_runs(s, n):
    """The bound taken fails at most a of the time; each rule alone, at its share, too; and at level a (asked at
    m a with m rules: each gets a)."""
    a = 0.05
    rng = np.random.default_rng(round(100 * s) + n)
    logs = lognormal_logs(rng, s, (SEEDS, n))
    m = len(order_ranks(n)) + 1
    for bounds in ([certified_lower(r, level=a) for r in logs],
                   [certified_upper(-r, level=a, independent=True) for r in logs]):
        counts = failures(bounds)
        assert counts.pop("taken") <= most_failures(SEEDS, a)
        assert len(counts) == m and bounds[0].share == pytest.approx(a / m)
        assert all(count <= most_failures(SEEDS, a / m) for count in counts.values()), counts  # each at a/m
    for bounds in ([certified_lower(r, level=m * a) for r in logs],
                   [certified_upper(-r, level=m * a, independent=True) for r in logs]):
        counts = failures(bounds)
        counts.pop("taken")
        assert all(count <= most_failures(SEEDS, a) for count in counts.values()), counts


@pytest.mark.parametrize("n", [1, 4, 16])
def test_min_and_max_of_runs_are_tight_at_the_two_point_weight(n):
    """At ``v = c e^eps`` with ``c = a^(-1/n)`` min-of-runs at level a fails exactly when every run is v:
    probability ``a e^(-n eps)``, about a. At ``v = c e^-eps`` it never fails. A margin smaller than log(1/a)/n
    fails in the second case, a larger one rarely fails in the first: the test pins the constant."""
    a, eps = 0.05, 1e-3
    c = a ** (-1 / n)
    m = len(order_ranks(n)) + 1  # asked at m a, every rule is at a
    rng = np.random.default_rng(n)
    for sign in (+1, -1):
        v = c * math.exp(sign * eps)
        logs = two_point_logs(rng, v, (SEEDS, n))
        lower = failures([certified_lower(r, level=m * a) for r in logs])["min-of-runs"]  # min-of-runs at a
        upper = failures([certified_upper(-r, level=m * a, independent=True) for r in logs])["max-of-runs"]
        if sign < 0:
            assert lower == upper == 0
            continue
        p = v ** -n
        assert p == pytest.approx(a * math.exp(-n * eps))
        sd = math.sqrt(SEEDS * p * (1 - p))
        assert abs(lower - SEEDS * p) < 4 * sd and abs(upper - SEEDS * p) < 4 * sd, (lower, upper, SEEDS * p)


def test_markov_is_tight_for_one_run():
    """One run at the two-point weight ``v = e^eps / a``: markov at level a fails with probability 1/v, about a;
    at ``v = e^-eps / a`` never."""
    a, eps = 0.05, 1e-3
    rng = np.random.default_rng(7)
    for sign in (+1, -1):
        v = math.exp(sign * eps) / a
        logs = two_point_logs(rng, v, (SEEDS, 1))
        lower = failures([certified_lower(r, level=2 * a) for r in logs])["markov"]  # markov at a
        upper = failures([certified_upper(-r, level=a, independent=False) for r in logs])["taken"]
        if sign < 0:
            assert lower == upper == 0
            continue
        sd = math.sqrt(SEEDS / v * (1 - 1 / v))
        assert abs(lower - SEEDS / v) < 4 * sd and abs(upper - SEEDS / v) < 4 * sd, (lower, upper, SEEDS / v)


def test_negative_control_without_the_margin():
    """The same draws, the same threshold: a 'bound' without its log(1/a)/n or log(1/a) term fails far more than
    a, so the level checks above could see a missing term."""
    a = 0.05
    rng = np.random.default_rng(11)
    one = lognormal_logs(rng, 1.0, (SEEDS, 1))[:, 0]
    assert np.sum(one > 0) > 4 * most_failures(SEEDS, a)  # min of one run, no margin: P(Z > 1) = 0.31
    sixteen = lognormal_logs(rng, 1.0, (SEEDS, 16))
    mean_only = np.log(np.mean(np.exp(sixteen), axis=1))  # markov without log(1/a)
    assert np.sum(mean_only > 0) > 4 * most_failures(SEEDS, a)


def test_shared_start_needs_markov():
    """Reverse runs that share their start: ``log W_i = shared + own noise``, each W_i still unbiased for 1/p(y).
    Markov at the whole level holds; max-of-runs, which assumes independence, fails far beyond its share."""
    a, s, s_own, n = 0.05, 2.0, 0.1, 16
    rng = np.random.default_rng(3)
    log_w = (lognormal_logs(rng, s, (SEEDS, 1)) + lognormal_logs(rng, s_own, (SEEDS, n)))
    shared = failures([certified_upper(-w, level=a, independent=False) for w in log_w])["taken"]
    assert shared <= most_failures(SEEDS, a)
    assumed = [certified_upper(-w, level=a, independent=True) for w in log_w]
    assert failures(assumed)["max-of-runs"] > 2 * most_failures(SEEDS, assumed[0].share)


def test_contaminated_runs_take_the_quantile_rule_and_hold():
    """64 runs of which each, independently w.p. 1/8, is 10 nats low (``E Z_i`` still the truth, which moves to
    ``log(7/8 + e^-10/8)``): min-of-runs pays for the lowest run, markov for ``log(4/a)``; the 16th smallest run sits
    above the low ones and is taken, about a nat below the truth; every rule still holds at its share."""
    a, n = 0.05, 64
    rng = np.random.default_rng(5)
    low = np.where(rng.random((SEEDS, n)) < 1 / 8, -10.0, 0.0)
    logs = lognormal_logs(rng, 0.5, (SEEDS, n)) + low
    truth = math.log(7 / 8 + math.exp(-10) / 8)
    for bounds, truth_here, sign in (([certified_lower(r, level=a) for r in logs], truth, 1.0),
                                     ([certified_upper(-r, level=a, independent=True) for r in logs], -truth, -1.0)):
        counts = failures(bounds, truth_here)
        assert counts.pop("taken") <= most_failures(SEEDS, a)
        assert all(count <= most_failures(SEEDS, a / 4) for count in counts.values()), counts
        slack = {rule: sign * (truth_here - np.array([b.candidates[rule] for b in bounds]))
                 for rule in bounds[0].candidates}
        taken = sign * (truth_here - np.array([b.value for b in bounds]))
        assert np.mean([b.rule == "quantile-of-runs (k=16)" for b in bounds]) > 0.9
        assert np.mean(taken) < 1.5 and np.mean(slack["quantile-of-runs (k=16)"]) < 1.5
        extreme = "min-of-runs" if sign > 0 else "max-of-runs"
        assert np.mean(slack[extreme]) > 9.5 and np.mean(slack["markov"]) > 4.0


@pytest.mark.parametrize("n, k", [(16, 4), (32, 8)])
def test_quantile_rule_is_tight_at_the_two_point_weight_and_a_wrong_rank_is_not_a_bound(n, k):
    """At ``v = c_k e^eps`` the k-th order statistic at level a fails exactly when at least ``n - k + 1`` runs are
    v: probability ``P(Binomial(n, 1/v) >= n - k + 1)``, just under a; at ``v = c_k e^-eps`` it never fails. The
    negative control: ``c_k`` used with the (k+3)-th smallest run (a margin computed for the wrong k) fails with
    probability ``P(Binomial(n, 1/v) >= n - k - 2)``, far beyond a, so the level checks could see a wrong k."""
    a, eps = 0.05, 1e-3
    m = len(order_ranks(n)) + 1  # asked at m a, every rule is at a
    name = f"quantile-of-runs (k={k})"
    margin = order_statistic_margin(n, k, a)
    rng = np.random.default_rng(n + k)
    for sign in (+1, -1):
        v = math.exp(margin + sign * eps)
        logs = two_point_logs(rng, v, (SEEDS, n))
        lower = failures([certified_lower(r, level=m * a) for r in logs])[name]
        upper = failures([certified_upper(-r, level=m * a, independent=True) for r in logs])[name]
        wrong_lower = int(np.sum(np.sort(logs, axis=1)[:, k + 2] - margin > 0))
        wrong_upper = int(np.sum(-np.sort(logs, axis=1)[:, k + 2] + margin < 0))  # (k+3)-th largest log U
        if sign < 0:
            assert lower == upper == 0
            continue
        p = binomial_tail(n, 1 / v, n - k + 1)
        assert 0.8 * a < p < a
        sd = math.sqrt(SEEDS * p * (1 - p))
        assert abs(lower - SEEDS * p) < 4 * sd and abs(upper - SEEDS * p) < 4 * sd, (lower, upper, SEEDS * p)
        p_wrong = binomial_tail(n, 1 / v, n - k - 2)
        assert p_wrong > 5 * a
        assert wrong_lower == wrong_upper > 4 * most_failures(SEEDS, a), (wrong_lower, p_wrong)
