"""Certified bounds from independent runs (bdmc.intervals.bounds): the rules' values, the level split, and their
measured levels on synthetic runs whose expectation is known exactly.

Synthetic runs: unbiased log-normal weights (``log Z_i ~ N(-s^2/2, s^2)``, so ``E Z_i = 1`` and the truth is
``log p(y) = 0``), and the two-point weight at which Markov's inequality is an equality (``Z = v`` with probability
``1/v``, else 0), where min-of-runs fails with probability exactly ``v^-n``.
"""

import math

import numpy as np
import pytest
from scipy import stats

from bdmc import Estimate
from bdmc.errors import BDMCError, NonFiniteLogWeightError, OptionError, OptionTypeError
from bdmc.intervals.bounds import CertifiedBound, certified_lower, certified_upper

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


def test_each_rule_gets_half_the_level():
    """At level 2a each candidate is the rule at a: the same number as the rule written out at a."""
    runs = np.array([-3.0, -2.5, -2.0, -2.8, -1.0])
    a = 0.02
    lower = certified_lower(runs, level=2 * a)
    assert lower.candidates["min-of-runs"] == pytest.approx(runs.min() - math.log(1 / a) / runs.size, abs=1e-14)
    assert lower.candidates["markov"] == pytest.approx(np.log(np.mean(np.exp(runs))) - math.log(1 / a), abs=1e-14)
    upper = certified_upper(-runs, level=2 * a, independent=True)
    assert upper.candidates["max-of-runs"] == pytest.approx(-runs.min() + math.log(1 / a) / runs.size, abs=1e-14)
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
    """The bound taken fails at most a of the time; each rule alone, at level a, too (asked at 2a: each gets a)."""
    a = 0.05
    rng = np.random.default_rng(round(100 * s) + n)
    logs = lognormal_logs(rng, s, (SEEDS, n))
    for bounds in ([certified_lower(r, level=a) for r in logs],
                   [certified_upper(-r, level=a, independent=True) for r in logs]):
        counts = failures(bounds)
        assert counts.pop("taken") <= most_failures(SEEDS, a)
        assert all(count <= most_failures(SEEDS, a / 2) for count in counts.values()), counts  # each at a/2
    for bounds in ([certified_lower(r, level=2 * a) for r in logs],
                   [certified_upper(-r, level=2 * a, independent=True) for r in logs]):
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
    rng = np.random.default_rng(n)
    for sign in (+1, -1):
        v = c * math.exp(sign * eps)
        logs = two_point_logs(rng, v, (SEEDS, n))
        lower = failures([certified_lower(r, level=2 * a) for r in logs])["min-of-runs"]  # min-of-runs at a
        upper = failures([certified_upper(-r, level=2 * a, independent=True) for r in logs])["max-of-runs"]
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
    assumed = failures([certified_upper(-w, level=a, independent=True) for w in log_w])["max-of-runs"]
    assert assumed > 2 * most_failures(SEEDS, a / 2)
