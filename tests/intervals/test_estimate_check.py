"""``bdmc.check_estimate``: another tool's log p(y) against bdmc's interval, by tier.

A conjugate Gaussian mean (exact log p(y) in closed form, exact posterior draws): the exact value is "consistent"
over seeds (the level), values 1 nat off are caught (the certified tier below, the calibrated tier above: the
power), values 15 nats off by the certified tier; a stated standard error widens what is consistent; on the user's
data bdmc.evidence's interval judges, its upper side resting on the draws.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc.intervals.estimate_check import CALIBRATED, CERTIFIED, CONSISTENT, DRAWS, TOO_HIGH, TOO_LOW, UNDECIDED

MODEL = bdmc.models.GaussianMean(n=20, dim=2)
SEEDS = 40


@pytest.fixture(scope="module")
def simulated():
    sim = bdmc.simulate(jax.random.key(3), MODEL)
    return sim.data, sim.exact_latent, float(MODEL.exact_log_marginal(sim.data))


def _check(value, simulated, *, seed=0, **options):
    data, latent, _ = simulated
    options = {"exact_latent": latent, "num_steps": 1000, "num_runs": 32, "progress": False} | options
    return bdmc.check_estimate(jax.random.key(seed), MODEL, data, value, **options)


@pytest.fixture(scope="module")
def over_seeds(simulated):
    exact = simulated[2]
    return exact, [_check(exact, simulated, seed=s) for s in range(SEEDS)]


def test_exact_value_is_consistent_and_values_far_off_are_caught_by_the_certified_tier(simulated):
    exact = simulated[2]
    ok = _check(exact, simulated)
    assert ok.verdict == CONSISTENT and ok.tier is None and ok.two_sided
    assert ok.certified_lower <= exact <= ok.certified_upper
    assert ok.certified_lower <= ok.calibrated_lower <= ok.estimate <= ok.calibrated_upper <= ok.certified_upper
    # The upper side from one exact latent is Markov's alone, at a quarter of the level: log(4 / 0.01) above the
    # pooled reverse estimate.
    assert ok.certified_upper - ok.upper == pytest.approx(np.log(4 / 0.01))
    for shift, verdict in ((15.0, TOO_HIGH), (-15.0, TOO_LOW)):
        far = ok.for_value(exact + shift)
        assert (far.verdict, far.tier) == (verdict, CERTIFIED)
    summary = ok.summary()
    assert "level 0.01" in summary and f"{ok.estimate:.3f}" in summary and "one exact latent" in summary


def test_level_holds_over_seeds_where_the_pooled_estimates_misjudge(over_seeds):
    """With an exact Gibbs kernel the pooled estimates scatter on both sides of log p(y): the interval between
    them misses it in many seeds, the verdict (both tiers, each side at level / 4) in at most the binomial's 0.999
    quantile at the stated level."""
    exact, checks = over_seeds
    wrong = sum(c.wrong for c in checks)
    outside = np.mean([not c.lower <= exact <= c.upper for c in checks])
    assert wrong <= stats.binom.ppf(0.999, SEEDS, 0.01)
    assert outside >= 0.3


def test_one_nat_off_is_caught_below_by_the_certified_tier_and_above_by_the_calibrated(over_seeds):
    exact, checks = over_seeds
    low = [c.for_value(exact - 1.0) for c in checks]
    high = [c.for_value(exact + 1.0) for c in checks]
    assert sum((c.verdict, c.tier) == (TOO_LOW, CERTIFIED) for c in low) >= 0.9 * SEEDS
    assert sum((c.verdict, c.tier) == (TOO_HIGH, CALIBRATED) for c in high) >= 0.9 * SEEDS
    # The negative control of the tiers: without the calibrated tier nothing 1 nat high would be called.
    assert all(c.value - c.certified_upper < 0 for c in high)


def test_a_stated_standard_error_widens_what_is_consistent(simulated):
    exact = simulated[2]
    tight = _check(exact + 1.0, simulated)
    assert tight.verdict == TOO_HIGH
    loose = tight.for_value(exact + 1.0, stderr=1.0)
    assert loose.verdict == CONSISTENT and loose.z > 2.5
    assert loose.certified_upper > tight.certified_upper  # half the side's level went to the value's noise


def test_on_the_users_data_the_evidence_interval_judges(simulated):
    data, _, exact = simulated
    mean, precision = MODEL._mu_conditional(data, 1.0)
    draws = {"mu": mean + jax.random.normal(jax.random.key(9), (2000, MODEL.dim)) / jnp.sqrt(precision)}
    ok = _check(exact, simulated, exact_latent=None, draws=draws)
    assert ok.verdict == CONSISTENT and not ok.two_sided and ok.evidence is not None
    assert ok.certified_lower <= exact <= ok.certified_upper and ok.width < 1.0
    assert np.isnan(ok.calibrated_lower) and "draws" in ok.upper_rests_on
    high, low = ok.for_value(exact + 3.0), ok.for_value(exact - 3.0)
    assert (high.verdict, high.tier) == (TOO_HIGH, DRAWS) and (low.verdict, low.tier) == (TOO_LOW, CERTIFIED)
    assert "rests on" in high.summary()


@pytest.mark.parametrize("value, stderr, culprit", [(float("nan"), None, "value"), (0.0, float("inf"), "stderr"),
                                                    (0.0, -1.0, "stderr")])
def test_bad_input_names_the_culprit(simulated, value, stderr, culprit):
    with pytest.raises(bdmc.BDMCError, match=culprit):
        _check(value, simulated, stderr=stderr)


def test_another_value_is_judged_against_the_same_runs_as_a_fresh_call(simulated):
    exact = simulated[2]
    first = _check(exact, simulated)
    for value in (exact + 15.0, exact - 15.0, exact + 1.0, exact - 1.0, exact + 0.01):
        again = first.for_value(value)
        fresh = _check(value, simulated)
        assert (again.verdict, again.tier) == (fresh.verdict, fresh.tier)
        assert again.certified_lower == pytest.approx(fresh.certified_lower)


def test_crossed_certified_sides_judge_nothing(simulated):
    """Reverse runs that failed (far below the forward runs: no correct run produces that) void bdmc's own
    interval: the verdict is undecided, never a value called wrong."""
    exact = simulated[2]
    first = _check(exact, simulated)
    runs = first.details["forward_runs"]
    broken = dataclasses.replace(first, details={"forward_runs": runs, "reverse_runs": runs - 500.0})
    for value in (exact, exact + 5.0, exact - 5.0):
        again = broken.for_value(value)
        assert again.verdict == UNDECIDED and not again.wrong and again.tier is None
    assert "runs failed" in broken.for_value(exact).summary()
