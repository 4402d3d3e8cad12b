"""The sandwich module: the estimator pairs from the registry, one key split, resumed rows, the alarm's level and
the verdict against the exact value."""

import math

import jax
import numpy as np
import pandas as pd
import pytest

import bdmc
from bdmc.checks.sandwich import (
    alarm_from_table,
    knob_values,
    pair_statistics,
    sandwich_keys,
    simulated_data,
)
from bdmc.checks.sandwich_verdict import HOLDS, NOT_HELD, VIOLATED, WITHIN_NOISE, exact_check
from bdmc.contracts.pairs import PAIRS, estimator_pair
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=5, dim=2)
STEPS = [2, 5, 8]
SAME = ["value", "stderr", "mean_single", "stderr_single", "gap", "gap_single", "gap_single_stderr", "alarm_p",
        "n_evals", "exact"]


@pytest.fixture(scope="module")
def fresh():
    return bdmc.sandwich(jax.random.key(4), MODEL, steps=STEPS, num_runs=6, progress=False)


def test_each_method_pairs_registered_estimators_on_one_knob():
    assert {"ais", "smc", "tempered-smc"} <= set(PAIRS)
    for name, pair in PAIRS.items():
        lower, upper = pair.estimators
        assert (lower.bound, upper.bound) == ("lower", "upper") and upper.needs_exact and not lower.needs_exact
        assert pair.knob == lower.knob == upper.knob
        assert estimator_pair(name) is pair
    assert PAIRS["ais"].knob == "num_steps" and PAIRS["smc"].knob == "num_moves"
    assert "schedule" in PAIRS["ais"].options and "num_particles" in PAIRS["smc"].options
    with pytest.raises(bdmc.BDMCError, match="unknown method 'nested'.*ais, smc"):
        estimator_pair("nested")


def test_every_estimate_records_its_registry_name_and_the_alarm_reads_it():
    model = MODEL
    data, latent = bdmc.simulate(jax.random.key(1), model)
    low = bdmc.tempered_smc(jax.random.key(2), model, data, num_steps=4, num_runs=2, num_moves=2, progress=False)
    up = bdmc.reverse_tempered_smc(jax.random.key(3), model, data, exact_latent=latent, num_steps=4, num_runs=2,
                                   num_moves=2, progress=False)
    assert (low.estimator, up.estimator) == ("tempered-smc", "rev-tempered-smc")
    assert low.to_dict()["estimator"] == "tempered-smc"
    # Tempered SMC records both num_steps and num_moves: the alarm names its knob from the pair, not the keys.
    alarm = bdmc.bug_alarm(low, up)
    assert (alarm.worst.lower, alarm.worst.upper) == ("tempered SMC T=4", "reverse tempered SMC T=4")


def test_the_data_come_from_the_one_key_split(fresh):
    data, latent = simulated_data(jax.random.key(4), MODEL)
    np.testing.assert_array_equal(np.asarray(data), np.asarray(fresh.data))
    again = bdmc.simulate(sandwich_keys(jax.random.key(4)).data, MODEL)
    np.testing.assert_array_equal(np.asarray(again.exact_latent["mu"]), np.asarray(latent["mu"]))


def test_rows_handed_back_as_done_are_not_rerun_and_give_the_fresh_table(fresh):
    rows = fresh.table.to_dict("records")
    # Half of the middle pair and the whole first pair are done; gaps of done rows are recomputed from them.
    done = [{**r, "gap": math.nan, "gap_single": math.nan} for r in rows[:3]]
    new = []
    resumed = bdmc.sandwich(jax.random.key(4), MODEL, steps=STEPS, num_runs=6, done=done, progress=False,
                            on_row=lambda row: new.append((row["num_steps"], row["direction"])))
    assert new == [(5, "reverse"), (8, "forward"), (8, "reverse")]
    pd.testing.assert_frame_equal(resumed.table[SAME], fresh.table[SAME])
    assert resumed.verdict.crossing == fresh.verdict.crossing


def test_until_gap_counts_done_pairs_and_runs_nothing_past_the_converged_one(fresh):
    done = fresh.table.to_dict("records")
    tol = float(fresh.table["gap_single"].iloc[2]) + 1e-9  # converged at T = 5 at the latest
    new = []
    res = bdmc.sandwich(jax.random.key(4), MODEL, steps=[5], num_runs=6, until_gap=tol, done=done, progress=False,
                        on_row=new.append)
    assert new == [] and len(res.table) == len(done)
    assert list(knob_values([4], until_gap=1.0, max_steps=40)) == [4, 8, 16, 32]
    assert list(knob_values([4, 9], max_steps=5)) == [4, 9]


def test_the_alarm_is_computed_once_at_the_given_level(fresh):
    assert fresh.verdict.alpha == 0.01
    loose = bdmc.sandwich(jax.random.key(4), MODEL, steps=STEPS, num_runs=6, alpha=0.2, done=fresh.table.to_dict(
        "records"), progress=False)
    assert loose.verdict.alpha == 0.2 and loose.verdict == alarm_from_table(fresh.table, alpha=0.2)
    with pytest.raises(bdmc.BDMCError, match="alpha"):
        bdmc.sandwich(jax.random.key(4), MODEL, steps=STEPS, alpha=1.5)


def test_pair_statistics_are_those_of_two_independent_means():
    lower = {"value": -10.0, "mean_single": -10.5, "stderr_single": 0.3}
    upper = {"value": -9.0, "mean_single": -8.8, "stderr_single": 0.4}
    stats = pair_statistics(lower, upper)
    assert stats["gap"] == 1.0 and stats["gap_single"] == pytest.approx(1.7) and stats["alarm_p"] == 1.0
    assert stats["gap_single_stderr"] == pytest.approx(0.5)
    assert pair_statistics(upper | {"value": -8.0}, lower)["alarm_p"] == pytest.approx(math.exp(-2.0))


def _table(lower, upper, se=0.1):
    rows = []
    for T, (lo, up) in enumerate(zip(lower, upper, strict=False), start=1):
        rows.append({"num_steps": 10 * T, "direction": "forward", "value": lo, "stderr": se})
        if up is not None:
            rows.append({"num_steps": 10 * T, "direction": "reverse", "value": up, "stderr": se})
    return pd.DataFrame(rows)


def test_the_verdict_against_the_exact_value_is_worded_in_one_place(fresh):
    assert exact_check(_table([-1.0], [1.0]), None) is None
    held = exact_check(_table([-1.0, -0.1], [1.0, 0.1]), 0.0)
    assert held.state == HOLDS and held.violated_at == [] and held.knob == 20
    assert held.lines()[0].startswith("sandwich around the exact value at T=20: holds; lower -0.1000, upper +0.1000")
    noisy = exact_check(_table([-1.0, 0.15], [1.0, 0.1]), 0.0)
    assert noisy.state == WITHIN_NOISE and "holds within noise (crossed by 1.5 stderr, within the" in noisy.lines()[0]
    broken = exact_check(_table([0.5, -0.1], [1.0, 0.1]), 0.0, symbol="moves")
    assert broken.state == HOLDS and broken.violated_at == [10]
    assert broken.lines(mark=lambda state, text: f"<{state}>{text}")[-1].startswith(f"<{VIOLATED}>a bound is off")
    assert "at moves = 10" in broken.lines()[-1]
    real = exact_check(_table([-0.2, 0.5], [None, None]), 0.0)
    assert not real.two_sided and real.state == VIOLATED
    assert real.lines() == ["lower bound against the exact value at T=20: VIOLATED (above by 5 stderr, more than "
                            "the 2.6 that chance allows); +0.5000 nats from exact"]
    # A sandwich result states it for its own table and exact value.
    assert fresh.against_exact.exact == fresh.exact and fresh.against_exact.knob == STEPS[-1]
    assert fresh.against_exact.to_dict()["state"] in (HOLDS, WITHIN_NOISE, VIOLATED, NOT_HELD)
