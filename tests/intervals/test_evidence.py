"""``bdmc.evidence``: the interval holds, the escalation stops at the tolerance, and the upper side from exact
posterior draws is a bound (closed forms, many seeds)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.errors import OptionError
from bdmc.intervals.bounds import certified_upper
from bdmc.intervals.result import CROSSED, INTERVAL, WIDE
from bdmc.intervals.run import BoundsCrossedWarning, DrawsCheckWarning, evidence
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=20, dim=2)


def exact_draws(key, model, data, n):
    """Exact posterior draws of the conjugate Gaussian mean (its Gibbs conditional at lam = 1)."""
    keys = jax.random.split(key, n)
    start = model.sample_prior(key)
    return jax.vmap(lambda k: model.gibbs_update(k, start, data, 1.0))(keys)


@pytest.fixture(scope="module")
def simulated():
    data, latent = bdmc.simulate(jax.random.key(0), MODEL)
    return data, latent, float(MODEL.exact_log_marginal(data))


def test_exact_draws_give_a_narrow_interval_that_holds_and_stops_at_the_first_narrow_round(simulated):
    data, _, exact = simulated
    draws = exact_draws(jax.random.key(1), MODEL, data, 400)
    seen = []
    result = evidence(jax.random.key(2), MODEL, data, draws={"mu": np.asarray(draws["mu"])}, tolerance=0.5,
                      on_round=seen.append, progress=False)
    assert result.status == INTERVAL and result.width <= 0.5 and result.contains(exact)
    assert result.lower.value <= result.estimate <= result.upper.value
    assert [r.round for r in seen] == [r.round for r in result.rounds] and result.rounds[0].kind == "proposal"
    # the result is the intersection of every round's interval, and the escalation stopped once it was narrow
    assert result.lower.value == max(r.lower for r in result.rounds)
    assert result.upper.value == min(r.upper for r in result.rounds)
    widths = [min(r.upper for r in result.rounds[:k]) - max(r.lower for r in result.rounds[:k])
              for k in range(1, len(result.rounds) + 1)]
    assert all(w > 0.5 for w in widths[:-1]) and widths[-1] <= 0.5
    assert result.upper.rule in result.upper.candidates and "exact" in result.upper_rests_on
    assert result.draws["check"]["passed"]
    assert result.bracket is not None and result.bracket >= exact - 0.5  # an upper bound in expectation
    # every round certified at its own share, fixed in advance: the proposal stage at level / 4 per side, tempered
    # round r at (level / 2) / 2^(r + 2) per side; the shares sum to the level
    shares = {0: 0.01 / 4, **{r: 0.005 / 2 ** (r + 1) for r in range(1, 12)}}
    assert any(math.isclose(result.lower.level, share) for share in shares.values())


def test_a_tolerance_out_of_reach_escalates_and_says_the_interval_is_wide(simulated):
    data, _, exact = simulated
    draws = exact_draws(jax.random.key(3), MODEL, data, 400)
    result = evidence(jax.random.key(4), MODEL, data, draws={"mu": np.asarray(draws["mu"])}, tolerance=1e-3,
                      max_rounds=3, num_steps=8, num_runs=16, bracket=False, progress=False)
    assert result.status == WIDE and "max_rounds" in result.note and result.contains(exact)
    budgets = [(r.num_steps, r.num_runs) for r in result.rounds if r.kind != "proposal"]
    pairs = zip(budgets, budgets[1:], strict=False)
    assert len(budgets) == 3 and all(b != a and b[0] >= a[0] and b[1] >= a[1] for a, b in pairs)
    assert "wider than the tolerance" in result.summary()


def test_simulated_data_rest_on_markov_for_the_upper_side_and_say_so():
    result = evidence(jax.random.key(5), MODEL, tolerance=0.5, num_steps=32, num_runs=16, progress=False)
    exact = None
    assert result.upper.rule == "markov" and "Markov" in result.upper_rests_on
    assert result.status == WIDE and "Markov" in result.note and len(result.rounds) == 1
    data, _ = bdmc.simulate(jax.random.split(jax.random.key(5), 5)[0], MODEL)
    exact = float(MODEL.exact_log_marginal(data))
    assert result.contains(exact)


def test_the_upper_side_from_independent_exact_draws_is_a_bound_over_many_seeds(simulated):
    """Reverse AIS from independent exact posterior draws, 16 runs per seed, 400 seeds: the certified upper bound
    lies below log p(y) in at most a fraction `a` of seeds (binomial noise allowed); the wrong extreme of the runs
    (their minimum) fails far more often (the negative control)."""
    data, _, exact = simulated
    seeds, n, a = 400, 16, 0.05
    draws = exact_draws(jax.random.key(6), MODEL, data, seeds * n)
    reverse = bdmc.reverse_ais(jax.random.key(7), MODEL, data, exact_latent=draws, num_steps=30, num_runs=seeds * n,
                               progress=False)
    runs = np.asarray(reverse.runs).reshape(seeds, n)
    wrong = np.mean([not certified_upper(r, level=a, independent=True).holds(exact) for r in runs])
    assert wrong <= a + 3 * math.sqrt(a * (1 - a) / seeds)
    broken = np.mean(runs.min(axis=1) < exact)
    assert broken > 4 * a


def test_draws_of_another_data_set_are_flagged(simulated):
    data, _, _ = simulated
    other, _ = bdmc.simulate(jax.random.key(8), GaussianMean(n=20, dim=2, prior_std=5.0))
    wrong = exact_draws(jax.random.key(9), MODEL, other, 200)
    with pytest.warns(DrawsCheckWarning, match="posterior draws"):
        result = evidence(jax.random.key(10), MODEL, data, draws={"mu": np.asarray(wrong["mu"])}, max_rounds=1,
                          num_steps=8, num_runs=16, bracket=False, progress=False)
    assert "FAILED" in result.upper_rests_on and not result.draws["check"]["passed"]


def test_draws_far_from_the_posterior_cross_the_bounds_and_give_no_interval(simulated):
    """Draws six posterior sds off: the reverse runs' upper side falls below the certified lower side (which rests on
    the model's density alone). That is no interval but a failed assumption: status "crossed", a warning, and the
    estimate from the forward runs."""
    data, _, exact = simulated
    mu = np.asarray(exact_draws(jax.random.key(1), MODEL, data, 400)["mu"])
    shifted = {"mu": mu + 6 * mu.std(axis=0)}
    with pytest.warns(BoundsCrossedWarning, match="crossed"), pytest.warns(DrawsCheckWarning):
        result = evidence(jax.random.key(11), MODEL, data, draws=shifted, max_rounds=1, num_steps=8, num_runs=16,
                          bracket=False, progress=False)
    assert result.status == CROSSED and result.crossed and not result.converged
    assert result.lower.value > result.upper.value and result.lower.value <= exact
    assert "NO INTERVAL" in result.summary() and abs(result.estimate - exact) < 0.5


@pytest.mark.parametrize("kwargs, needle", [
    ({"tolerance": 0.0}, "tolerance"),
    ({"level": 1.0}, "level"),
    ({"max_seconds": -1.0}, "max_seconds"),
    ({"method": "nested"}, "method"),
    ({"num_runs": 0}, "num_runs"),
    ({"num_steps": 1}, "num_steps"),
    ({"draws": {"mu": np.zeros((4, 2))}, "exact_latent": {"mu": jnp.zeros(2)}}, "not both"),
])
def test_bad_options_are_refused_naming_them(simulated, kwargs, needle):
    data, _, _ = simulated
    with pytest.raises(OptionError, match=needle):
        evidence(jax.random.key(0), MODEL, data, **kwargs)
