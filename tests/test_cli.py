"""The ``bdmc`` command line: outputs, resume, settings checks and input errors."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import bdmc
from bdmc.cli import _parse_options, app
from bdmc.models import REGISTRY, LinearRegression

runner = CliRunner()
VALUE_COLUMNS = ["num_steps", "direction", "bound", "value", "stderr", "mean_single", "stderr_single", "gap",
                 "gap_single", "n_evals", "exact"]


def run(*args):
    return runner.invoke(app, ["sandwich", "--no-progress", *args])


def small(out, *extra, steps="5,20"):
    return run("--model", "gaussian-mean", "--steps", steps, "--chains", "8", "--out", str(out), *extra)


def flat(text):
    """Output with whitespace and rich box characters collapsed, so wrapped messages can be searched."""
    return " ".join(text.replace("│", " ").split())


@pytest.fixture
def count_rows(monkeypatch):
    """Wrap bdmc.sandwich to record the rows it computes and what it was told to skip."""
    calls = {"rows": [], "skip": []}
    real = bdmc.sandwich

    def spy(*args, on_row=None, skip=(), **kwargs):
        calls["skip"].append(set(skip))

        def record(row):
            calls["rows"].append((row["num_steps"], row["direction"]))
            on_row(row)

        return real(*args, on_row=record, skip=skip, **kwargs)

    monkeypatch.setattr(bdmc, "sandwich", spy)
    return calls


def test_small_run_writes_csv_settings_and_png(tmp_path):
    out = tmp_path / "run"
    result = small(out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "sandwich.csv")
    assert len(table) == 4
    assert list(zip(table["num_steps"], table["direction"])) == [
        (5, "forward"), (5, "reverse"), (20, "forward"), (20, "reverse")]
    settings = json.loads((out / "settings.json").read_text())
    assert settings["model"] == "gaussian-mean" and settings["chains"] == 8 and settings["seed"] == 0
    assert settings["steps"] == [5, 20] and settings["until_gap"] is None
    assert settings["options"]["n"] == 20
    png = (out / "sandwich.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 1000
    text = flat(result.output)
    assert "exact log p(y)" in text and "final gap at T=20" in text


def test_rerun_resumes_without_recomputing(tmp_path, count_rows):
    out = tmp_path / "run"
    assert small(out).exit_code == 0
    first = pd.read_csv(out / "sandwich.csv")
    assert len(count_rows["rows"]) == 4

    again = small(out)
    assert again.exit_code == 0, again.output
    assert len(count_rows["rows"]) == 4  # nothing new
    assert count_rows["skip"][-1] == {(5, "forward"), (5, "reverse"), (20, "forward"), (20, "reverse")}
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv"), first)

    extra = small(out, steps="5,20,40")
    assert extra.exit_code == 0, extra.output
    assert count_rows["rows"][4:] == [(40, "forward"), (40, "reverse")]
    table = pd.read_csv(out / "sandwich.csv")
    assert len(table) == 6 and list(table["num_steps"]) == [5, 5, 20, 20, 40, 40]
    pd.testing.assert_frame_equal(table.iloc[:4], first)


def test_resumed_rows_equal_a_fresh_run(tmp_path):
    assert small(tmp_path / "a").exit_code == 0
    assert small(tmp_path / "a", steps="5,20,40").exit_code == 0
    assert small(tmp_path / "b", steps="40,20,5").exit_code == 0
    a, b = (pd.read_csv(tmp_path / d / "sandwich.csv")[VALUE_COLUMNS] for d in "ab")
    pd.testing.assert_frame_equal(a, b)


def test_half_finished_pair_is_completed_with_its_gap(tmp_path, count_rows):
    out = tmp_path / "run"
    assert small(out).exit_code == 0
    full = pd.read_csv(out / "sandwich.csv")
    full.iloc[:3].to_csv(out / "sandwich.csv", index=False)  # as if killed before (20, reverse)
    result = small(out)
    assert result.exit_code == 0, result.output
    assert count_rows["rows"][4:] == [(20, "reverse")]
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv")[VALUE_COLUMNS], full[VALUE_COLUMNS])


def test_changed_settings_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    assert small(out).exit_code == 0
    before = pd.read_csv(out / "sandwich.csv")
    refused = small(out, "--seed", "1")
    assert refused.exit_code == 1
    text = flat(refused.output)
    assert "different settings" in text and "seed" in text and "--overwrite" in text
    assert "Traceback" not in refused.output
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv"), before)

    forced = small(out, "--seed", "1", "--overwrite")
    assert forced.exit_code == 0, forced.output
    after = pd.read_csv(out / "sandwich.csv")
    assert len(after) == 4 and not after["value"].equals(before["value"])
    assert json.loads((out / "settings.json").read_text())["seed"] == 1


def test_until_gap_doubles_until_the_gap_is_small(tmp_path, count_rows):
    out = tmp_path / "run"
    result = run("--model", "gaussian-mean", "--steps", "5", "--chains", "8", "--until-gap", "1.0",
                 "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "sandwich.csv")
    lengths = sorted(set(table["num_steps"]))
    assert lengths == [5 * 2**i for i in range(len(lengths))] and len(table) == 2 * len(lengths)
    assert table["gap_single"].iloc[-1] < 1.0 <= table["gap_single"].iloc[-3]
    assert "until-gap 1: reached" in flat(result.output)
    computed = len(count_rows["rows"])
    again = run("--model", "gaussian-mean", "--steps", "5", "--chains", "8", "--until-gap", "1.0",
                "--out", str(out))
    assert again.exit_code == 0, again.output
    assert len(count_rows["rows"]) == computed  # converged already: nothing past it is run


def test_unknown_model_lists_choices(tmp_path):
    result = run("--model", "no-such-model", "--out", str(tmp_path))
    assert result.exit_code == 2
    text = flat(result.output)
    assert "no-such-model" in text
    assert all(name in text for name in REGISTRY)


def test_bad_option_key_names_valid_fields(tmp_path):
    result = small(tmp_path, "--option", "bogus=1")
    assert result.exit_code == 2
    text = flat(result.output)
    assert "bogus" in text and "prior_std" in text and "noise_std" in text


@pytest.mark.parametrize("args", [
    ["--steps", "5,abc"], ["--steps", "1,10"], ["--steps", ""], ["--chains", "0"], ["--option", "n=abc"],
    ["--option", "n"], ["--schedule", "nope"], ["--until-gap", "-1"],
])
def test_bad_input_exits_2(tmp_path, args):
    result = run("--model", "gaussian-mean", "--out", str(tmp_path), *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_options_are_typed_and_saved(tmp_path):
    out = tmp_path / "run"
    result = small(out, "--option", "n=10", "--option", "prior_std=2", steps="5")
    assert result.exit_code == 0, result.output
    options = json.loads((out / "settings.json").read_text())["options"]
    assert options["n"] == 10 and isinstance(options["n"], int) and options["prior_std"] == 2.0
    parsed = _parse_options(LinearRegression, ["x_range=-1,1.5", "degree=2", "tau=0.5"])
    assert parsed == {"x_range": (-1.0, 1.5), "degree": 2, "tau": 0.5}
    assert isinstance(parsed["x_range"], tuple) and isinstance(parsed["degree"], int)


def test_library_error_is_one_red_line(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise bdmc.ScheduleError("the schedule is broken")

    monkeypatch.setattr(bdmc, "sandwich", fail)
    result = small(tmp_path / "run")
    assert result.exit_code == 1
    assert "ScheduleError: the schedule is broken" in result.output
    assert "Traceback" not in result.output


def test_models_command_lists_registry():
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert all(name in text for name in REGISTRY)
    assert "noise_std=1.0" in text
