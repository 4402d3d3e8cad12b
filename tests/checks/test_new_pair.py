"""A new estimator pair is one module and its test: defined here, registered, and run through everything that speaks
of a pair (the sandwich, the bug alarm, ``bdmc sandwich --method``, the table and the figure) with no other edit."""

import jax
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import bdmc
from bdmc.checks.sandwich import alarm_from_table
from bdmc.cli import app
from bdmc.contracts import ESTIMATORS
from bdmc.contracts.pairs import PAIRS, EstimatorPair, register_pair, unregister_pair
from bdmc.core.ais import annealed_importance_sampling
from bdmc.models import GaussianMean
from bdmc.plotting import plot_sandwich

MODEL = GaussianMean(n=5, dim=2)
NAME = "linear-ais"


def linear_ais(key, model, data, *, direction, exact_latent=None, num_steps: int = 10, num_runs: int = 4,
               progress="auto"):
    """AIS on the linear schedule with the model's own kernel and no pilot, in either direction."""
    return annealed_importance_sampling(key, model, data, direction=direction, exact_latent=exact_latent,
                                        num_steps=num_steps, num_runs=num_runs, schedule="linear", tune="off",
                                        progress=progress)


@pytest.fixture(scope="module")
def pair():
    record = EstimatorPair(NAME, lower="lin-ais", upper="rev-lin-ais", knob="num_steps", symbol="L",
                           nouns=("linear chain length", "linear chain lengths"), axis="linear steps L",
                           labels=("forward linear AIS", "reverse linear AIS"),
                           remedy="More linear steps (a larger L) or more runs (--runs)",
                           summary="AIS on the linear schedule, --steps = L", smallest=2, default_knob=20)
    lower, upper = register_pair(record, linear_ais, knobs=(5, 10), estimator_labels=("lin AIS", "rev lin AIS"),
                                 docs=("Linear AIS, forward.", "Linear AIS, reverse."),
                                 names=("linear_ais_forward", "linear_ais_reverse"))
    yield record, lower, upper
    unregister_pair(NAME)
    assert NAME not in PAIRS and "lin-ais" not in ESTIMATORS and "rev-lin-ais" not in ESTIMATORS


def test_registering_the_pair_registers_both_estimators_and_their_estimates_say_so(pair):
    record, lower, upper = pair
    assert PAIRS[NAME] is record and ESTIMATORS["lin-ais"].bound == "lower" and ESTIMATORS["rev-lin-ais"].needs_exact
    data, latent = bdmc.simulate(jax.random.key(0), MODEL)
    low = lower(jax.random.key(1), MODEL, data, num_steps=5, progress=False)
    up = upper(jax.random.key(2), MODEL, data, exact_latent=latent, num_steps=5, progress=False)
    assert (low.estimator, up.estimator) == ("lin-ais", "rev-lin-ais") and low.settings["num_steps"] == 5
    # The same runs as AIS itself on the linear schedule, forward and reverse.
    same = bdmc.forward_ais(jax.random.key(1), MODEL, data, num_steps=5, num_runs=4, schedule="linear",
                            tune="off", progress=False)
    np.testing.assert_array_equal(low.runs, same.runs)
    alarm = bdmc.bug_alarm(low, up)
    assert (alarm.worst.lower, alarm.worst.upper) == ("forward linear AIS L=5", "reverse linear AIS L=5")


def test_the_sandwich_table_alarm_and_figure_speak_of_the_new_pair(pair):
    res = bdmc.sandwich(jax.random.key(3), MODEL, steps=[3, 6], num_runs=4, method=NAME, progress=False)
    assert res.method == NAME and set(res.table["method"]) == {NAME} and len(res.table) == 4
    assert res.verdict is not None and not res.verdict.fired
    assert "L=" in res.verdict.worst.lower and alarm_from_table(res.table).crossing == res.verdict.crossing
    check = res.against_exact
    assert check is not None and check.symbol == "L" and check.knob_names[1] == "linear chain lengths"
    ax = plot_sandwich(res.table).axes[0]
    assert ax.get_xlabel() == "linear steps L"
    assert any("forward linear AIS" in t.get_text() for t in ax.get_legend().get_texts())


def test_the_command_line_runs_the_new_pair(pair, tmp_path):
    out = tmp_path / "new"
    result = CliRunner().invoke(app, ["sandwich", "--no-progress", "--model", "gaussian-mean", "--option", "n=5",
                                      "--method", NAME, "--steps", "3,6", "--runs", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "L = 3, 6" in result.output and "sandwich around the exact value at L=6" in result.output
    table = pd.read_csv(out / "sandwich.csv")
    assert set(table["method"]) == {NAME} and list(table["num_steps"]) == [3, 3, 6, 6]
    assert (out / "sandwich.png").exists()
    refused = CliRunner().invoke(app, ["sandwich", "--model", "gaussian-mean", "--method", NAME, "--particles", "4",
                                       "--out", str(tmp_path / "refused")])
    assert refused.exit_code != 0 and "single chains" in " ".join(refused.output.split())
