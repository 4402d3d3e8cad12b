"""The estimator benchmark harness: scoring, ground truth, resume, Dask, summary, figures and ``bdmc bench``."""

import dataclasses
import json
import math
import sys

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp
from typer.testing import CliRunner

import bdmc
from bdmc.cli import app
from bdmc.experiments import bench
from bdmc.models import GaussianMean
from bdmc.plotting.bench import plot_bench

MODEL = GaussianMean(n=5, dim=2)
# Two knobs where a curve needs two points, one for the other estimators (each knob is another compiled program).
KNOBS = {name: [2, 4] if name in ("lw", "ais") else [2] for name in bench.available(MODEL)}
TRIALS = 4
SETTINGS = dict(knobs=KNOBS, trials=TRIALS, truth_steps=200, truth_runs=8)
TIMING = ["seconds", "seconds_batch", "compile_seconds"]


class NoClosedForm(GaussianMean):
    """GaussianMean as if its log-ML had no closed form: the harness must fall back on AIS."""

    def exact_log_marginal(self, data):
        raise ValueError("no closed form here")


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
    assert list(zip(table["estimator"], table["knob"], strict=False)) == [(n, k) for n in KNOBS for k in KNOBS[n]]
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
    rules = dict(zip(table["estimator"], zip(table["bound"], table["combine"], strict=False), strict=False))
    expected_rules = {"lw": ("lower", "log-mean-exp"), "hme": ("upper", "log-harmonic-mean"),
                      "ais": ("lower", "log-mean-exp"), "rev-ais": ("upper", "log-harmonic-mean"),
                      "smc": ("lower", "log-mean-exp"), "shme": ("upper", "log-harmonic-mean"),
                      "ns": ("neither", "mean-log"), "bic": ("neither", "mean-log"), "vb": ("lower", "max"),
                      "vb+sym": ("lower", "max"), "cms": ("lower", "log-mean-exp"),
                      "tempered-smc": ("lower", "log-mean-exp"), "rev-tempered-smc": ("upper", "log-harmonic-mean")}
    assert rules == {name: expected_rules[name] for name in KNOBS}


def test_ground_truth_is_the_closed_form_with_the_ais_sandwich_beside_it(sweep):
    table, out = sweep
    saved = json.loads((out / bench.JSON_NAME).read_text())
    truth = saved["truth"]
    data, _ = bdmc.simulate(jax.random.fold_in(jax.random.key(7), 0), MODEL)
    exact = float(MODEL.exact_log_marginal(data))
    assert truth["value"] == exact and truth["exact"] == exact and truth["source"] == "closed form"
    assert table["truth"].eq(exact).all() and saved["settings"]["truth_source"] == "closed form"
    assert 0.5 * (truth["forward"] + truth["reverse"]) == pytest.approx(exact, abs=0.1)  # AIS, reported
    assert truth["alarm"]["fired"] is False and truth["num_steps"] == 200


def test_without_a_closed_form_the_truth_is_the_average_of_agreeing_bounds(key):
    model = NoClosedForm(n=5, dim=2)
    data, latent = bdmc.simulate(key, model)
    truth = bench.ground_truth(key, model, data, latent, num_steps=200, num_runs=8)
    assert truth.source == "AIS" and truth.exact is None and truth.value == truth.ais
    assert abs(truth.gap) <= 1.0 and truth.value == pytest.approx(float(MODEL.exact_log_marginal(data)), abs=0.1)


def test_ground_truth_refuses_when_forward_and_reverse_disagree(key, spies):
    model = NoClosedForm(n=5, dim=2)
    data, latent = bdmc.simulate(key, model)
    with pytest.raises(bench.GroundTruthError, match="refuses to score"):
        bench.ground_truth(key, model, data, latent, num_steps=3, num_runs=4, tol=1e-6)
    with pytest.raises(bench.GroundTruthError):
        bench.run_bench(key, model, estimators=["lw"], knobs={"lw": [2]}, trials=3, truth_steps=3, truth_runs=4,
                        truth_tol=1e-6)
    assert "lw" not in spies  # nothing is scored without a ground truth


@pytest.mark.parametrize("bad", [{"truth_tol": 0.0}, {"truth_tol": -1.0}, {"truth_runs": 0}, {"truth_steps": 1},
                                 {"trials": 1}])
def test_impossible_truth_settings_are_refused_before_any_work(key, spies, bad):
    settings = {"trials": 3, "truth_steps": 10, "truth_runs": 4, "truth_tol": 1.0, **bad}
    with pytest.raises(bench.BenchSettingsError, match=next(iter(bad))):
        bench.run_bench(key, MODEL, estimators=["lw"], knobs={"lw": [2]}, **settings)
    assert spies == []


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
    # Killed while writing the last row: it ends inside a number, without its newline.
    text = (tmp_path / bench.CSV_NAME).read_text()
    last = text.splitlines()[-1]
    (tmp_path / bench.CSV_NAME).write_text(text[:len(text) - len(last) - 1] + last[:last.index(",", 40) + 3])
    with pytest.warns(UserWarning, match="cut off"):
        again = bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=tmp_path, **SETTINGS)
    assert spies == [list(KNOBS)[-1]] * 2
    pd.testing.assert_frame_equal(again.drop(columns=TIMING), table.drop(columns=TIMING), check_exact=True)


def test_changed_settings_are_refused_unless_overwrite(sweep, tmp_path):
    _, out = sweep
    for name in (bench.CSV_NAME, bench.JSON_NAME):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    with pytest.raises(bench.BenchSettingsError, match="trials: 4 -> 5"):
        bench.run_bench(jax.random.key(7), MODEL, estimators=list(KNOBS), out=tmp_path, **{**SETTINGS, "trials": 5})
    with pytest.raises(bench.BenchSettingsError, match="seed"):
        bench.run_bench(jax.random.key(8), MODEL, estimators=list(KNOBS), out=tmp_path, **SETTINGS)
    fresh = bench.run_bench(jax.random.key(7), MODEL, estimators=["lw"], knobs={"lw": [3]}, trials=3,
                            truth_steps=200, truth_runs=8, out=tmp_path, overwrite=True)
    assert len(fresh) == 1 and len(pd.read_csv(tmp_path / bench.CSV_NAME)) == 1


def test_an_estimator_the_model_cannot_run_is_refused_by_name(key):
    from bdmc.models import LinearRegression

    assert "vb" not in bench.available(LinearRegression())  # it has no mean-field family
    with pytest.raises(bench.BenchSettingsError, match=r"'vb' cannot run on LinearRegression.*vb_init"):
        bench.run_bench(key, LinearRegression(), estimators=["lw", "vb"], trials=3, truth_steps=3, truth_runs=4)


def test_dask_gives_the_in_process_numbers(sweep):
    table, _ = sweep
    client = bench.connect("local")
    try:
        names = ["smc", "lw", "rev-ais"]  # another order and subset: keys depend on name and knob alone
        remote = bench.run_bench(jax.random.key(7), MODEL, estimators=names, client=client,
                                 **{**SETTINGS, "knobs": {n: KNOBS[n] for n in names}})
    finally:
        client.close()
    local = table.set_index(["estimator", "knob"]).loc[list(zip(remote["estimator"], remote["knob"], strict=False))]
    pd.testing.assert_frame_equal(remote.drop(columns=TIMING).reset_index(drop=True),
                                  local.reset_index().drop(columns=TIMING)[list(remote.drop(columns=TIMING))],
                                  check_exact=True)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(bdmc.MissingExtraError,
                       match=r"pip install 'dask\[distributed\]>=2024\.1' \(or pip install -e '\.\[distributed\]'"):
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


def bench_cli(*args):
    return CliRunner().invoke(app, ["bench", *args])


CLI_ARGS = ["--model", "gaussian-mean", "--option", "n=5", "--option", "dim=2", "--trials", "3", "--truth-steps",
            "50", "--truth-runs", "8", "--seed", "1"]


def test_bench_command_end_to_end(tmp_path):
    args = CLI_ARGS + ["--estimators", "lw,ais", "--knobs", "lw=2,4", "--knobs", "ais=2", "--out", str(tmp_path)]
    result = bench_cli(*args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / bench.CSV_NAME)
    assert list(zip(table["estimator"], table["knob"], strict=False)) == [("lw", 2), ("lw", 4), ("ais", 2)]
    assert table["truth_steps"].eq(50).all()  # the truth's own budget, not an estimator's knob
    model = GaussianMean(n=5, dim=2)
    data, _ = bdmc.simulate(jax.random.fold_in(jax.random.key(1), 0), model)
    saved = json.loads((tmp_path / bench.JSON_NAME).read_text())["truth"]
    assert saved["value"] == float(model.exact_log_marginal(data)) and saved["source"] == "closed form"
    assert table["truth"].eq(saved["value"]).all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert set(summary["estimator"]) == {"lw", "ais"} and set(summary["threshold"]) == {10.0, 1.0}
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")
    text = " ".join(result.output.split())
    assert "(closed form;" in text and "from the closed form" in text and "time to reach RMSE" in text
    assert "bug alarm on the ground-truth runs: silent" in text
    again = bench_cli(*args[:-8], "--estimators", "lw", "--knobs", "lw=2,4", "--out", str(tmp_path))
    assert again.exit_code == 0, again.output
    assert "3 row(s) resumed" in again.output  # a rerun with fewer estimators keeps and summarizes them all
    assert set(pd.read_csv(tmp_path / "summary.csv")["estimator"]) == {"lw", "ais"}
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / bench.CSV_NAME), table)
    refused = bench_cli(*args, "--trials", "4")
    assert refused.exit_code == 1 and "trials: 3 -> 4" in refused.stderr and "Traceback" not in refused.output
    assert len(refused.stderr.strip().splitlines()) == 1


def test_bench_command_refuses_a_bad_truth_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "exact_log_marginal_or_none", lambda model, data: None)
    result = bench_cli(*CLI_ARGS[:-6], "--estimators", "lw", "--knobs", "lw=2", "--truth-steps", "3",
                       "--truth-runs", "4", "--truth-tol", "1e-6", "--out", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert "GroundTruthError" in result.stderr and "refuses to score" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / bench.CSV_NAME).exists()


@pytest.mark.parametrize("args, needle", [
    (["--truth-tol", "0"], "--truth-tol"), (["--truth-tol", "-1"], "--truth-tol"),
    (["--truth-runs", "0"], "--truth-runs"), (["--trials", "0"], "--trials"),
    (["--truth-steps", "1"], "--truth-steps"),
    (["--estimators", "lw,nope"], "nope"), (["--knobs", "ais=0"], "--knobs"), (["--knobs", "smc=2"], "smc"),
    (["--option", "n=-5"], "n=-5"),
])
def test_bench_command_refuses_impossible_settings_before_any_work(tmp_path, args, needle):
    result = bench_cli("--model", "gaussian-mean", "--estimators", "lw", "--out", str(tmp_path / "o"), *args)
    assert result.exit_code == 1, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o" / bench.JSON_NAME).exists()


def test_bench_command_refuses_an_output_path_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    result = bench_cli("--model", "gaussian-mean", "--out", str(tmp_path / "f"))
    assert result.exit_code == 1 and "is a file" in result.stderr


def test_bench_command_on_a_local_dask_cluster(tmp_path):
    result = bench_cli("-m", "gaussian-mean", "--option", "n=5", "--option", "dim=2", "-e", "lw", "-k", "lw=2",
                       "-t", "3", "--truth-steps", "50", "--truth-runs", "8", "--scheduler", "local",
                       "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / bench.CSV_NAME)
    assert list(table["estimator"]) == ["lw"] and table["truth_steps"].eq(50).all()
