"""The ``bdmc`` command line: outputs, resume, settings checks and the one error path."""

import json
import shutil
import time

import pandas as pd
import pytest
from helpers import assert_one_red_line
from typer.testing import CliRunner

import bdmc
from bdmc.cli import app
from bdmc.cli._models import parse_options
from bdmc.experiments import sandwich_runs
from bdmc.models import REGISTRY, LinearRegression

runner = CliRunner()
VALUE_COLUMNS = ["num_steps", "direction", "bound", "value", "stderr", "mean_single", "stderr_single", "gap",
                 "gap_single", "n_evals", "exact"]


def run(*args):
    return runner.invoke(app, ["sandwich", "--no-progress", *args])


def small(out, *extra, steps="2,5", runs="4"):
    return run("--model", "gaussian-mean", "--option", "n=5", "--steps", steps, "--runs", runs,
               "--out", str(out), *extra)


def flat(text):
    """Output with whitespace and rich box characters collapsed, so wrapped messages can be searched."""
    return " ".join(text.replace("│", " ").split())


def settings_of(out):
    return json.loads((out / "settings.json").read_text())


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    """One finished small run (T = 2, 5; 4 chains), copied by the tests that resume or change it."""
    out = tmp_path_factory.mktemp("cli") / "base"
    result = small(out)
    assert result.exit_code == 0, result.output
    return out, result


@pytest.fixture
def finished(base_run, tmp_path):
    """A private copy of the finished small run."""
    out = tmp_path / "run"
    shutil.copytree(base_run[0], out)
    return out


@pytest.fixture
def count_rows(monkeypatch):
    """Wrap the sandwich the CLI runs to record the rows it computes and the rows it was handed as done."""
    calls = {"rows": [], "done": []}
    real = sandwich_runs.run_plan

    def spy(*args, on_row=None, done=(), **kwargs):
        done = list(done)
        calls["done"].append({(r["num_steps"], r["direction"]) for r in done})

        def record(row):
            calls["rows"].append((row["num_steps"], row["direction"]))
            on_row(row)

        return real(*args, on_row=record, done=done, **kwargs)

    monkeypatch.setattr(sandwich_runs, "run_plan", spy)
    return calls


def test_small_run_writes_csv_settings_and_png(base_run):
    out, result = base_run
    table = pd.read_csv(out / "sandwich.csv")
    assert list(zip(table["num_steps"], table["direction"], strict=False)) == [
        (2, "forward"), (2, "reverse"), (5, "forward"), (5, "reverse")]
    saved = settings_of(out)
    settings = saved["settings"]
    assert settings["model"] == "gaussian-mean" and settings["runs"] == 4 and settings["seed"] == 0
    assert settings["steps"] == [2, 5] and settings["until_gap"] is None and settings["options"]["n"] == 5
    assert saved["contents"]["rows"] == 4 and saved["verdict"]["fired"] is False
    png = (out / "sandwich.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 1000
    text = flat(result.output)
    assert "exact log p(y)" in text and "final gap at T=5" in text and "bug alarm: silent" in text


def test_rerun_resumes_and_equals_a_fresh_run(finished, tmp_path, count_rows):
    out = finished
    first = pd.read_csv(out / "sandwich.csv")
    again = small(out)
    assert again.exit_code == 0, again.output
    assert count_rows["rows"] == []  # nothing new
    assert count_rows["done"][-1] == {(2, "forward"), (2, "reverse"), (5, "forward"), (5, "reverse")}
    assert "bug alarm: silent" in flat(again.output)  # the verdict covers resumed rows
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv"), first)

    extra = small(out, steps="5,8")
    assert extra.exit_code == 0, extra.output
    assert count_rows["rows"] == [(8, "forward"), (8, "reverse")]
    table = pd.read_csv(out / "sandwich.csv")
    assert list(table["num_steps"]) == [2, 2, 5, 5, 8, 8]
    pd.testing.assert_frame_equal(table.iloc[:4], first)
    assert settings_of(out)["settings"]["steps"] == [2, 5, 8]  # what the CSV holds, not the last request

    assert small(tmp_path / "fresh", steps="8,5,2").exit_code == 0
    fresh = pd.read_csv(tmp_path / "fresh" / "sandwich.csv")[VALUE_COLUMNS]
    pd.testing.assert_frame_equal(table[VALUE_COLUMNS], fresh)


@pytest.mark.parametrize("cut", ["mid-number", "after-a-full-line"])
def test_truncated_csv_resumes_and_recomputes_the_damaged_row(finished, count_rows, cut):
    out = finished
    full = pd.read_csv(out / "sandwich.csv")
    text = (out / "sandwich.csv").read_text()
    lines = text.splitlines(keepends=True)
    if cut == "mid-number":  # killed while writing the last row: it ends inside a number, with no newline
        fields = lines[-1].split(",")
        damaged = "".join(lines[:-1]) + ",".join(fields[:4]) + "," + fields[4][:4]  # e.g. "...,upper,-36."
    else:  # killed just before the last row was written
        damaged = "".join(lines[:-1])
    (out / "sandwich.csv").write_text(damaged)
    result = small(out)
    assert result.exit_code == 0, result.output
    assert count_rows["rows"] == [(5, "reverse")]
    if cut == "mid-number":
        assert "warning:" in result.stderr and "cut off" in flat(result.stderr)
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv")[VALUE_COLUMNS], full[VALUE_COLUMNS])


def test_changed_settings_refused_listing_the_difference_unless_overwrite(finished):
    out = finished
    before = pd.read_csv(out / "sandwich.csv")
    refused = small(out, "--seed", "1")
    assert_one_red_line(refused, "different settings", "seed: 0 -> 1", "--overwrite")
    pd.testing.assert_frame_equal(pd.read_csv(out / "sandwich.csv"), before)

    forced = small(out, "--seed", "1", "--overwrite")
    assert forced.exit_code == 0, forced.output
    after = pd.read_csv(out / "sandwich.csv")
    assert len(after) == 4 and not after["value"].equals(before["value"])
    assert settings_of(out)["settings"]["seed"] == 1


def test_until_gap_doubles_until_the_gap_is_small(tmp_path, count_rows):
    args = ["--model", "gaussian-mean", "--option", "n=5", "--steps", "4", "--runs", "8", "--until-gap", "1.0",
            "--out", str(tmp_path / "run")]
    result = run(*args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "run" / "sandwich.csv")
    lengths = sorted(set(table["num_steps"]))
    assert lengths == [4 * 2**i for i in range(len(lengths))] and len(table) == 2 * len(lengths)
    assert table["gap_single"].iloc[-1] < 1.0 <= table["gap_single"].iloc[-3]
    assert "until-gap 1: reached" in flat(result.output)
    computed = len(count_rows["rows"])
    again = run(*args)
    assert again.exit_code == 0, again.output
    assert len(count_rows["rows"]) == computed  # converged already: nothing past it is run


def test_a_single_chain_works_with_missing_standard_errors(tmp_path):
    out = tmp_path / "run"
    result = small(out, steps="3", runs="1")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "sandwich.csv")
    assert len(table) == 2 and table["stderr"].isna().all() and table["value"].notna().all()
    assert "final gap at T=3" in flat(result.output)


def test_unknown_model_lists_choices(tmp_path):
    result = run("--model", "no-such-model", "--out", str(tmp_path))
    assert_one_red_line(result, "no-such-model", *REGISTRY)


def test_bad_option_key_names_valid_fields(tmp_path):
    assert_one_red_line(small(tmp_path, "--option", "bogus=1"), "bogus", "prior_std", "noise_std")


@pytest.mark.parametrize("args, needle", [
    (["--steps", "5,abc"], "--steps"), (["--steps", "1,10"], "--steps"), (["--steps", ""], "--steps"),
    (["--runs", "0"], "--runs"), (["--runs", "-3"], "--runs"), (["--option", "n=abc"], "n="),
    (["--option", "n"], "KEY=VALUE"), (["--option", "n=-5"], "n=-5"), (["--option", "dim=0"], "dim=0"),
    (["--option", "noise_std=-1"], "noise_std"), (["--schedule", "nope"], "--schedule"),
    (["--until-gap", "-1"], "--until-gap"), (["--particles", "4"], "--particles"),
    (["--until-gap", "1", "--steps", "5,10"], "--until-gap"), (["--max-steps", "100"], "--max-steps"),
    (["--method", "mcmc"], "--method"), (["--data", "x.npz"], "--data"),
    (["--steps", "100000000000"], "--steps 100000000000 is above"),
    (["--steps", "200000", "--until-gap", "1"], "pass --max-steps"),
])
def test_bad_input_is_one_red_line_before_any_work(tmp_path, args, needle):
    out = tmp_path / "run"
    result = run("--model", "gaussian-mean", "--out", str(out), *args)
    assert_one_red_line(result, needle)
    assert not (out / "sandwich.csv").exists()


def test_usage_errors_exit_2(tmp_path):
    assert run("--model", "gaussian-mean", "--runs", "many").exit_code == 2
    assert run("--no-such-flag").exit_code == 2


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_an_unusable_output_directory_is_refused_before_computing(tmp_path, where, count_rows):
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory")
    out = blocker if where == "file" else blocker / "sub"
    start = time.perf_counter()
    result = small(out)
    assert_one_red_line(result, str(out))
    assert time.perf_counter() - start < 5 and count_rows["rows"] == []


def test_library_error_is_one_red_line_and_debug_shows_the_traceback(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise bdmc.ScheduleError("the schedule is broken")

    monkeypatch.setattr(sandwich_runs, "run_plan", fail)
    assert_one_red_line(small(tmp_path / "run"), "ScheduleError: the schedule is broken")
    debug = runner.invoke(app, ["--debug", "sandwich", "--no-progress", "--model", "gaussian-mean", "--option",
                                "n=5", "--steps", "2", "--runs", "4", "--out", str(tmp_path / "run")])
    assert debug.exit_code == 1 and isinstance(debug.exception, bdmc.ScheduleError)


def test_options_are_typed_and_saved(tmp_path):
    out = tmp_path / "run"
    result = small(out, "--option", "prior_std=2", steps="2")
    assert result.exit_code == 0, result.output
    options = settings_of(out)["settings"]["options"]
    assert options["n"] == 5 and isinstance(options["n"], int) and options["prior_std"] == 2.0
    parsed = parse_options(LinearRegression, ["x_range=-1,1.5", "degree=2", "tau=0.5"])
    assert parsed == {"x_range": (-1.0, 1.5), "degree": 2, "tau": 0.5}
    assert isinstance(parsed["x_range"], tuple) and isinstance(parsed["degree"], int)


def test_models_command_lists_registry():
    result = runner.invoke(app, ["models"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert all(name in text for name in REGISTRY)
    assert "noise_std=1.0" in text


def test_models_command_shows_each_models_capabilities():
    result = runner.invoke(app, ["models", "--capabilities"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("│┃ ").split("│")]
                                              for line in result.output.splitlines()) if cells[0] in REGISTRY}
    assert set(rows) == set(REGISTRY)
    header = next(line for line in result.output.splitlines() if "model" in line and "BIC" in line)
    columns = [c.strip() for c in header.strip("┃ ").split("┃")][1:]
    # Each cell says whether the model supports the capability, as bdmc.contracts.capabilities computes it.
    for name, cells in rows.items():
        caps = bdmc.capabilities(REGISTRY[name]())
        assert cells == ["yes" if caps[c] else "-" for c in columns], name


def test_the_tempered_pair_runs_from_the_command_line_with_its_own_particle_default(tmp_path):
    out = tmp_path / "tempered"
    result = run("--model", "gaussian-mean", "--method", "tempered-smc", "--steps", "3,6", "--runs", "2",
                 "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "sandwich.csv")
    assert set(table.method) == {"tempered-smc"} and len(table) == 4
    settings = json.loads((out / "settings.json").read_text())["settings"]
    assert settings["particles"] == 32  # the pair's default, not SMC's 1


def test_the_command_resolves_auto_and_computes_the_exact_value_once(tmp_path, monkeypatch):
    """The command computes nothing the library computes again: one resolution of "auto", one exact value.
    Negative control: resolving a second time in the command (as it once did) counts two."""
    import importlib

    from bdmc.models.gaussian_mean import GaussianMean

    sandwich_module = importlib.import_module("bdmc.checks.sandwich")
    calls = {"auto": 0, "exact": 0}
    auto, exact = sandwich_module.auto_method, GaussianMean.exact_log_marginal

    def counted_auto(model):
        calls["auto"] += 1
        return auto(model)

    def counted_exact(self, data):
        calls["exact"] += 1
        return exact(self, data)

    monkeypatch.setattr(sandwich_module, "auto_method", counted_auto)
    monkeypatch.setattr(GaussianMean, "exact_log_marginal", counted_exact)
    result = run("--model", "gaussian-mean", "--method", "auto", "--steps", "3", "--runs", "2",
                 "--out", str(tmp_path / "once"))
    assert result.exit_code == 0, result.output
    assert calls == {"auto": 1, "exact": 1}
    sandwich_module.resolve_pair(GaussianMean(), "auto")  # the negative control: a second resolution is seen
    assert calls["auto"] == 2


def test_method_auto_resolves_from_the_model_and_checks_particles_against_the_pair_it_picked(tmp_path):
    out = tmp_path / "auto"
    result = run("--model", "gaussian-mean", "--method", "auto", "--steps", "3", "--runs", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(out / "sandwich.csv").method) == {"ais"}  # the model ships its own kernel
    assert "method auto: ais (the model has a kernel of its own)" in result.output  # said on the terminal
    refused = run("--model", "gaussian-mean", "--method", "auto", "--particles", "8", "--steps", "3",
                  "--out", str(tmp_path / "refused"))
    assert refused.exit_code != 0 and "--particles" in refused.output and "ais" in refused.output


def test_two_programs_of_one_file_get_labels_of_their_own():
    from bdmc.cli._models import ppl_label

    assert ppl_label("numpyro", "models/coal.py:trend") == "numpyro:coal:trend"
    assert ppl_label("numpyro", "models/coal.py:constant") == "numpyro:coal:constant"
    assert ppl_label("stan", "coal.stan") == "stan:coal"
