"""``bdmc bread`` on the grid toys (exact) and on a model (simulated pairs); ``bdmc bread-real``'s refusals."""

import json
import shutil

import jax
import pandas as pd
import pytest
from helpers import assert_one_red_line
from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.experiments import sandwich_runs
from bdmc.realdata.protocol import RUN_COLUMNS, open_run_store, run_config

runner = CliRunner()
MODEL_ARGS = ["bread", "--model", "gaussian-mean", "--option", "n=5", "--steps", "2,5", "--runs", "4"]


def cut_mid_number(path):
    """Cut the file inside the first number of its last row, as a run killed mid-write leaves it."""
    lines = path.read_text().splitlines(keepends=True)
    last = lines[-1]
    i = next(i for i, ch in enumerate(last) if ch.isdigit() or ch == "-")
    path.write_text("".join(lines[:-1]) + last[:i + 2])


@pytest.fixture(scope="module")
def model_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bread") / "model"
    result = runner.invoke(app, MODEL_ARGS + ["--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result


@pytest.fixture
def count_rows(monkeypatch):
    rows = []
    real = sandwich_runs.run_plan

    def spy(*args, on_row=None, **kwargs):
        def record(row):
            rows.append((row["num_steps"], row["direction"]))
            on_row(row)
        return real(*args, on_row=record, **kwargs)

    monkeypatch.setattr(sandwich_runs, "run_plan", spy)
    return rows


def test_bread_toy_reproduces_the_barrier_numbers_and_resumes(tmp_path):
    args = ["bread", "--toy", "barrier", "--T", "100,1000", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "bread.csv").set_index("num_distributions")
    assert round(table.loc[100, "J"], 2) == 1.65  # BREAD paper, Appendix B
    assert round(table.loc[1000, "J"], 3) == 1.085 and round(table.loc[1000, "B"], 3) == 1.184
    assert (tmp_path / "bread.png").read_bytes().startswith(b"\x89PNG")
    cut_mid_number(tmp_path / "bread.csv")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "cut off" in again.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "bread.csv").set_index("num_distributions"), table)
    assert_one_red_line(runner.invoke(app, args[:2] + ["easy"] + args[3:]), "toy: 'barrier' -> 'easy'")


def test_bread_model_writes_b_hat_table_and_the_verdict(model_run):
    out, result = model_run
    table = pd.read_csv(out / "bread.csv")
    assert list(table["num_steps"]) == [2, 5] and "b_hat" in table.columns
    assert "bug alarm: silent" in result.output
    saved = json.loads((out / "settings.json").read_text())
    assert saved["settings"]["command"] == "bread" and saved["verdict"]["fired"] is False
    assert len(pd.read_csv(out / "sandwich.csv")) == 4


def test_bread_model_resumes_a_damaged_csv_and_refuses_changed_settings(model_run, tmp_path, count_rows):
    out = tmp_path / "run"
    shutil.copytree(model_run[0], out)
    before = pd.read_csv(out / "bread.csv")
    again = runner.invoke(app, MODEL_ARGS + ["--out", str(out)])
    assert again.exit_code == 0, again.output
    assert count_rows == []  # resumed: nothing recomputed
    cut_mid_number(out / "sandwich.csv")
    repaired = runner.invoke(app, MODEL_ARGS + ["--out", str(out)])
    assert repaired.exit_code == 0, repaired.output
    assert count_rows == [(5, "reverse")] and "cut off" in repaired.stderr
    pd.testing.assert_frame_equal(pd.read_csv(out / "bread.csv").drop(columns="seconds"),
                                  before.drop(columns="seconds"))
    assert_one_red_line(runner.invoke(app, MODEL_ARGS + ["--seed", "1", "--out", str(out)]), "seed: 0 -> 1",
                        "--overwrite")
    forced = runner.invoke(app, MODEL_ARGS + ["--seed", "1", "--steps", "3", "--overwrite", "--out", str(out)])
    assert forced.exit_code == 0, forced.output
    assert list(pd.read_csv(out / "bread.csv")["num_steps"]) == [3]


@pytest.mark.parametrize("args, needle", [
    (["--toy", "barrier", "--runs", "8"], "--runs"), (["--toy", "barrier", "--option", "n=5"], "--option"),
    (["--toy", "barrier", "--model", "gaussian-mean"], "exactly one"), ([], "exactly one"),
    (["--toy", "cube"], "cube"), (["--model", "gaussian-mean", "--runs", "0"], "--runs"),
    (["--model", "gaussian-mean", "--option", "n=-5"], "n=-5"), (["--model", "nope"], "nope"),
])
def test_bread_refuses_bad_or_contradictory_options(tmp_path, args, needle):
    assert_one_red_line(runner.invoke(app, ["bread", "--out", str(tmp_path / "o"), *args]), needle)
    assert not (tmp_path / "o" / "bread.csv").exists()


def test_bread_refuses_an_output_path_that_is_a_file_before_computing(tmp_path, count_rows):
    (tmp_path / "f").write_text("")
    assert_one_red_line(runner.invoke(app, MODEL_ARGS + ["--out", str(tmp_path / "f")]), "is a file")
    assert count_rows == []


@pytest.mark.parametrize("args, needle", [
    (["--model", "nope"], "nope"), (["--model", "ar1", "--ppl", "pymc"], "numpyro"),
    (["--model", "ar1", "--runs", "0"], "--runs"), (["--model", "ar1", "--uncentred"], "--uncentred"),
    (["--model", "ar1", "--kernel", "mala"], "--kernel"), (["--model", "ar1", "--steps", "1"], "--steps"),
    (["--model", "ar1", "--mcmc-steps", "x"], "--mcmc-steps"),
])
def test_bread_real_errors_are_one_red_line(tmp_path, args, needle):
    assert_one_red_line(runner.invoke(app, ["bread-real", "--out", str(tmp_path / "o"), *args]), needle)


def test_bread_real_refuses_a_file_and_changed_settings_before_building_the_model(tmp_path):
    (tmp_path / "f").write_text("")
    assert_one_red_line(runner.invoke(app, ["bread-real", "--model", "ar1", "--out", str(tmp_path / "f")]),
                        "is a file")
    out = tmp_path / "run"
    context = {"command": "bread-real", "model": "ar1", "ppl": "numpyro", "uncentred": False}
    from bdmc.realdata import CASES

    open_run_store(out, run_config(jax.random.key(0), hyperparameters=CASES["ar1"].hyperparameters, num_runs=100),
                   context=context)
    refused = runner.invoke(app, ["bread-real", "--model", "ar1", "--seed", "1", "--out", str(out)])
    assert_one_red_line(refused, "different settings", "seed: [0, 0] -> [0, 1]", "--overwrite")


def test_bread_real_store_drops_a_cut_row_and_its_unfinished_run(tmp_path):
    from bdmc.realdata.protocol import _complete_runs

    config = run_config(jax.random.key(0), hyperparameters=["a"], num_runs=3)
    store = open_run_store(tmp_path, config)
    rows = [{"condition": c, "num_steps": 10, "chain": i, "log_ml": -1.5 - i, "seconds": 0.1}
            for c in ("forward-real", "forward-simulated") for i in range(3)]
    store.append(*rows)
    cut_mid_number(tmp_path / "runs.csv")
    with pytest.warns(UserWarning, match="cut off"):
        store = open_run_store(tmp_path, config)
    runs = _complete_runs(store, 3)
    assert list(runs.columns) == RUN_COLUMNS and set(runs["condition"]) == {"forward-real"}  # rerun the other
    assert len(pd.read_csv(tmp_path / "runs.csv")) == 3
    with pytest.raises(Exception, match="num_runs: 3 -> 4"):
        open_run_store(tmp_path, {**config, "num_runs": 4})
    open_run_store(tmp_path, {**config, "num_runs": 4}, overwrite=True)
    assert not (tmp_path / "runs.csv").exists()
