"""The estimator benchmark harness: scoring, ground truth, resume, Dask, summary, figures and ``bdmc bench``."""

import dataclasses
import json
import math
import sys

import jax
import numpy as np
import pandas as pd
import pytest
import typer
from scipy import stats
from scipy.special import logsumexp
from typer.testing import CliRunner

import bdmc
from bdmc.cli_bench import bench_command
from bdmc.experiments import bench
from bdmc.models import GaussianMean
from bdmc.plotting.bench import plot_bench

MODEL = GaussianMean(n=5, dim=2)
KNOBS = {name: [2, 4] for name in bench.available(MODEL)}
TRIALS = 4
SETTINGS = dict(knobs=KNOBS, trials=TRIALS, truth_steps=200, truth_chains=8)
TIMING = ["seconds", "seconds_batch", "compile_seconds"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    table = bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=out, **SETTINGS)
    return table, out


@pytest.fixture
def spies(monkeypatch):
    """Count calls of every estimator and of the ground truth."""
    calls = []
    for name, spec in list(bench.ESTIMATORS.items()):
        def spy(*args, _fn=spec.fn, _name=name, **kwargs):
            calls.append(_name)
            return _fn(*args, **kwargs)
        monkeypatch.setitem(bench.ESTIMATORS, name, dataclasses.replace(spec, fn=spy))
    real_truth = bench.ground_truth

    def truth_spy(*args, **kwargs):
        calls.append("truth")
        return real_truth(*args, **kwargs)

    monkeypatch.setattr(bench, "ground_truth", truth_spy)
    return calls


def test_table_has_one_row_per_estimator_and_knob(sweep):
    table, out = sweep
    assert list(table.columns) == list(bench.COLUMNS)
    assert list(zip(table["estimator"], table["knob"])) == [(n, k) for n in KNOBS for k in KNOBS[n]]
    assert (table["trials"] == TRIALS).all()
    assert table["jax_version"].eq(jax.__version__).all() and table["bdmc_version"].eq(bdmc.__version__).all()
    assert table["numpy_version"].eq(np.__version__).all() and table["seed"].nunique() == 1
    assert table["model"].eq("GaussianMean").all() and json.loads(table["model_options"][0])["n"] == 5
    saved = pd.read_csv(out / bench.CSV_NAME)
    assert len(saved) == len(table) and list(saved.columns) == list(bench.COLUMNS)


def test_scores_recompute_from_the_stored_trials(sweep):
    table, _ = sweep
    n = TRIALS
    for row in table.itertuples():
        x = np.array(json.loads(row.trial_estimates))
        assert x.shape == (n,)
        truth = row.truth
        np.testing.assert_allclose(row.rmse, math.sqrt(np.mean((x - truth) ** 2)), rtol=1e-12)
        np.testing.assert_allclose(row.mean, x.mean(), rtol=1e-12)
        half = stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n)
        np.testing.assert_allclose([row.ci_low, row.ci_high], [x.mean() - half, x.mean() + half], rtol=1e-12)
        # Footnote 5: arithmetic mean of Z for unbiased-Z estimators, harmonic for unbiased-1/Z, max for
        # variational bounds, mean of logs for NS and BIC.
        expected = {"log-mean-exp": logsumexp(x) - math.log(n), "log-harmonic-mean": -(logsumexp(-x) - math.log(n)),
                    "max": x.max(), "mean-log": x.mean()}[row.combine]
        np.testing.assert_allclose(row.combined, expected, rtol=1e-12)
        np.testing.assert_allclose(row.combined_error, expected - truth, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(row.seconds, row.seconds_batch / n, rtol=1e-12)
        np.testing.assert_allclose(row.evals, row.n_evals / n, rtol=1e-12)
    rules = dict(zip(table["estimator"], zip(table["bound"], table["combine"])))
    expected_rules = {"lw": ("lower", "log-mean-exp"), "hme": ("upper", "log-harmonic-mean"),
                      "ais": ("lower", "log-mean-exp"), "rev-ais": ("upper", "log-harmonic-mean"),
                      "smc": ("lower", "log-mean-exp"), "shme": ("upper", "log-harmonic-mean"),
                      "ns": ("neither", "mean-log"), "bic": ("neither", "mean-log"), "vb": ("lower", "max"),
                      "vb+sym": ("lower", "max"), "cms": ("lower", "log-mean-exp")}
    assert rules == {name: expected_rules[name] for name in KNOBS}


def test_ground_truth_is_the_average_of_agreeing_bounds(sweep):
    table, out = sweep
    saved = json.loads((out / bench.JSON_NAME).read_text())["truth"]
    assert table["truth"].eq(saved["value"]).all()
    assert saved["value"] == pytest.approx(0.5 * (saved["forward"] + saved["reverse"]), abs=1e-12)
    assert abs(saved["reverse"] - saved["forward"]) <= 1.0
    data, _ = bdmc.simulate(jax.random.fold_in(jax.random.key(7), 0), MODEL)
    assert saved["value"] == pytest.approx(float(MODEL.exact_log_marginal(data)), abs=0.1)


def test_ground_truth_refuses_when_forward_and_reverse_disagree(key, spies):
    data, latent = bdmc.simulate(key, MODEL)
    with pytest.raises(bench.GroundTruthError, match="refuses to score"):
        bench.ground_truth(key, MODEL, data, latent, num_steps=3, num_chains=4, tol=1e-6)
    with pytest.raises(bench.GroundTruthError):
        bench.run_bench(key, MODEL, estimators=["lw"], knobs={"lw": [2]}, trials=3, truth_steps=3, truth_chains=4,
                        truth_tol=1e-6)
    assert "lw" not in spies  # nothing is scored without a ground truth


def test_resume_recomputes_nothing_and_returns_the_same_table(sweep, spies):
    table, out = sweep
    again = bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=out, **SETTINGS)
    assert spies == []
    pd.testing.assert_frame_equal(again, table, check_exact=True)


def test_interrupted_sweep_redoes_only_the_missing_row(sweep, spies, tmp_path):
    table, out = sweep
    for name in (bench.CSV_NAME, bench.JSON_NAME):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    lines = (tmp_path / bench.CSV_NAME).read_text().splitlines(keepends=True)
    (tmp_path / bench.CSV_NAME).write_text("".join(lines[:-1]))  # killed before the last row was written
    again = bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=tmp_path, **SETTINGS)
    assert spies == [list(KNOBS)[-1]]
    pd.testing.assert_frame_equal(again.drop(columns=TIMING), table.drop(columns=TIMING), check_exact=True)


def test_changed_settings_are_refused_unless_overwrite(sweep, tmp_path):
    _, out = sweep
    for name in (bench.CSV_NAME, bench.JSON_NAME):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    with pytest.raises(bench.BenchSettingsError, match="trials"):
        bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=tmp_path, **{**SETTINGS, "trials": 5})
    with pytest.raises(bench.BenchSettingsError, match="seed"):
        bench.run_bench(jax.random.key(8), MODEL, estimators=list(KNOBS), out=tmp_path, **SETTINGS)
    fresh = bench.run_bench(jax.random.key(7), MODEL, estimators=["lw"], knobs={"lw": [3]}, trials=3,
                            truth_steps=200, truth_chains=8, out=tmp_path, overwrite=True)
    assert len(fresh) == 1 and len(pd.read_csv(tmp_path / bench.CSV_NAME)) == 1


def test_an_estimator_the_model_cannot_run_is_refused_by_name(key):
    from bdmc.models import LinearRegression

    assert "vb" not in bench.available(LinearRegression())  # it has no mean-field family
    with pytest.raises(bench.BenchSettingsError, match=r"'vb' cannot run on LinearRegression.*vb_init"):
        bench.run_bench(key, LinearRegression(), estimators=["lw", "vb"], trials=3, truth_steps=3, truth_chains=4)


def test_dask_gives_the_in_process_numbers(sweep):
    table, _ = sweep
    client = bench.connect("local")
    try:
        names = ["smc", "lw", "rev-ais"]  # another order and subset: keys depend on name and knob alone
        remote = bench.run_bench(jax.random.key(7), MODEL, estimators=names, client=client,
                                 **{**SETTINGS, "knobs": {n: KNOBS[n] for n in names}})
    finally:
        client.close()
    local = table.set_index(["estimator", "knob"]).loc[list(zip(remote["estimator"], remote["knob"]))]
    pd.testing.assert_frame_equal(remote.drop(columns=TIMING).reset_index(drop=True),
                                  local.reset_index().drop(columns=TIMING)[list(remote.drop(columns=TIMING))],
                                  check_exact=True)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(bdmc.MissingExtraError, match=r"bdmc\[distributed\]"):
        bench.connect("local")


def test_summary_picks_the_first_knob_below_each_threshold():
    table = pd.DataFrame({"estimator": ["a"] * 4 + ["b"] * 2, "knob": [100, 1, 10, 1000, 5, 50],
                          "rmse": [0.5, 30.0, 9.0, 0.2, 12.0, 10.0], "seconds": [3.0, 0.1, 0.9, 20.0, 1.0, 2.0],
                          "evals": [100.0, 1.0, 10.0, 1000.0, 5.0, 50.0]})
    summary = bench.time_to_rmse(table).set_index(["estimator", "threshold"])
    assert summary.loc[("a", 10.0), "knob"] == 10 and summary.loc[("a", 10.0), "seconds"] == 0.9
    assert summary.loc[("a", 1.0), "knob"] == 100 and summary.loc[("a", 1.0), "rmse"] == 0.5
    assert not summary.loc[("b", 10.0), "reached"] and pd.isna(summary.loc[("b", 10.0), "knob"])  # 10 is not < 10
    assert not summary.loc[("b", 1.0), "reached"] and math.isnan(summary.loc[("b", 1.0), "seconds"])


def test_plot_draws_estimates_zoom_and_log_log_rmse(sweep, tmp_path):
    table, out = sweep
    fig = plot_bench(pd.read_csv(out / bench.CSV_NAME), zoom=2.0)
    full, zoomed, rmse = fig.axes
    truth = table["truth"].iloc[0]
    assert zoomed.get_ylim() == pytest.approx((truth - 2.0, truth + 2.0))
    assert full.get_xscale() == "log" and rmse.get_xscale() == "log" and rmse.get_yscale() == "log"
    assert len(full.containers) == len(KNOBS)  # one error-bar series per estimator
    fig.savefig(tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes().startswith(b"\x89PNG")


def test_bench_command_end_to_end(tmp_path):
    app = typer.Typer()
    app.command(name="bench")(bench_command)

    @app.callback()
    def _root():
        """Keep ``bench`` a subcommand."""

    args = ["bench", "--model", "gaussian-mean", "--option", "n=5", "--option", "dim=2", "--estimators", "lw,ais",
            "--knobs", "lw=2,4", "--knobs", "ais=2,8", "--trials", "3", "--truth-chains", "8", "--seed", "1",
            "--out", str(tmp_path)]
    runner = CliRunner()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / bench.CSV_NAME)
    assert list(zip(table["estimator"], table["knob"])) == [("lw", 2), ("lw", 4), ("ais", 2), ("ais", 8)]
    assert table["truth_steps"].eq(8).all()  # default: the largest AIS knob
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 4 and set(summary["threshold"]) == {10.0, 1.0}
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")
    assert "ground truth" in result.output and "time to reach RMSE" in result.output
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "4 row(s) resumed" in again.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / bench.CSV_NAME), table)
    refused = runner.invoke(app, args + ["--trials", "4"])
    assert refused.exit_code == 1 and "BenchSettingsError" in refused.output


def test_bench_command_on_a_local_dask_cluster(tmp_path):
    app = typer.Typer()
    app.command(name="bench")(bench_command)

    @app.callback()
    def _root():
        """Keep ``bench`` a subcommand."""

    result = CliRunner().invoke(app, ["bench", "-m", "gaussian-mean", "--option", "n=5", "--option", "dim=2",
                                      "-e", "lw", "-k", "lw=2", "-t", "3", "--truth-steps", "50", "--truth-chains", "8",
                                      "--scheduler", "local", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / bench.CSV_NAME)
    assert list(table["estimator"]) == ["lw"] and table["truth_steps"].eq(50).all()
