"""``bdmc.check_estimate``: another tool's log p(y) against bdmc's certified bounds.

A conjugate Gaussian mean (exact log p(y) in closed form, exact posterior draws): the exact value is
"consistent", values 15 nats off are "too high" / "too low"; the level holds over seeds where the uncorrected
bounds would misjudge the exact value often; a stated standard error widens what is
consistent; on the user's data only the lower side is certified and the bracketing upper bound only warns.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.checks.estimate_check import CONSISTENT, TOO_HIGH, TOO_LOW

MODEL = bdmc.models.GaussianMean(n=20, dim=2)


@pytest.fixture(scope="module")
def simulated():
    sim = bdmc.simulate(jax.random.key(3), MODEL)
    return sim.data, sim.exact_latent, float(MODEL.exact_log_marginal(sim.data))


def _check(value, simulated, *, seed=0, **options):
    data, latent, _ = simulated
    options = {"exact_latent": latent, "num_steps": 50, "num_runs": 4, "progress": False} | options
    return bdmc.check_estimate(jax.random.key(seed), MODEL, data, value, **options)


def test_exact_value_is_consistent_and_values_far_off_are_caught(simulated):
    exact = simulated[2]
    ok = _check(exact, simulated)
    assert ok.verdict == CONSISTENT and ok.two_sided
    assert ok.certified_lower <= exact <= ok.certified_upper
    assert ok.markov_b == pytest.approx(np.log(2 / 0.01))
    assert ok.width < 12.0  # 2 b plus the bounds' own gap, small with an exact Gibbs kernel
    assert _check(exact + 15.0, simulated).verdict == TOO_HIGH
    assert _check(exact - 15.0, simulated).verdict == TOO_LOW
    assert "level 0.01" in ok.summary()


def test_level_holds_over_seeds_where_the_uncorrected_bounds_misjudge(simulated):
    """With an exact Gibbs kernel the bounds scatter tightly around log p(y), on both sides of it: the interval
    between the uncorrected bounds misses the exact value in many seeds, the verdict (Markov's b on each side)
    in none (at most 1% in expectation)."""
    exact = simulated[2]
    checks = [_check(exact, simulated, seed=s) for s in range(24)]
    wrong = np.mean([c.verdict != CONSISTENT for c in checks])
    outside = np.mean([not c.lower <= exact <= c.upper for c in checks])
    assert wrong <= 1 / 24
    assert outside >= 0.3  # the Markov allowance b is what keeps the level


def test_a_stated_standard_error_widens_what_is_consistent(simulated):
    exact = simulated[2]
    assert _check(exact + 9.0, simulated).verdict == TOO_HIGH
    loose = _check(exact + 9.0, simulated, stderr=4.0)
    assert loose.verdict == CONSISTENT and loose.z > 2.5
    assert loose.markov_b == pytest.approx(np.log(4 / 0.01))


def test_on_the_users_data_only_the_lower_side_is_certified(simulated):
    data, _, exact = simulated
    mean, precision = MODEL._mu_conditional(data, 1.0)
    draws = {"mu": mean + jax.random.normal(jax.random.key(9), (500, MODEL.dim)) / jnp.sqrt(precision)}
    high = _check(exact + 15.0, simulated, exact_latent=None, draws=draws)
    assert high.verdict == CONSISTENT and not high.two_sided and np.isnan(high.certified_upper)
    assert high.above_bracket and high.bracket_upper == pytest.approx(exact, abs=0.5)
    assert "uncertified" in high.summary()
    assert _check(exact - 15.0, simulated, exact_latent=None).verdict == TOO_LOW


@pytest.mark.parametrize("value, stderr, culprit", [(float("nan"), None, "value"), (0.0, float("inf"), "stderr"),
                                                    (0.0, -1.0, "stderr")])
def test_bad_input_names_the_culprit(simulated, value, stderr, culprit):
    with pytest.raises(bdmc.BDMCError, match=culprit):
        _check(value, simulated, stderr=stderr)


def test_another_value_is_judged_against_the_same_bounds_without_new_runs(simulated):
    exact = simulated[2]
    first = _check(exact, simulated)
    for value, verdict in ((exact + 15.0, TOO_HIGH), (exact - 15.0, TOO_LOW), (exact + 1.0, CONSISTENT)):
        again = first.for_value(value)
        assert again.verdict == verdict and (again.lower, again.upper) == (first.lower, first.upper)
        assert again.verdict == _check(value, simulated).verdict  # the same as a fresh call with the same key
