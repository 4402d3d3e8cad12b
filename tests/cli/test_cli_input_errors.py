"""Every mistake in the input is named, on input: one red line naming the option, file, array or program at fault
and what to do, found before any computation (the commands' simulation and runs are replaced by a tripwire).

A mistake in the user's program is the program's, never "report it"; only a failure inside bdmc asks for a bug
report.
"""

import importlib
import textwrap

import jax
import numpy as np
import pytest
from helpers import assert_one_red_line
from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.cli import bread as bread_cli
from bdmc.cli import check_estimate as check_estimate_cli
from bdmc.cli import sandwich as sandwich_cli
from bdmc.experiments import bench as bench_harness

runner = CliRunner()

REGRESSION = textwrap.dedent("""
    import numpyro, numpyro.distributions as dist


    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([x.shape[1]]))
        numpyro.sample("y", dist.Normal(x @ w, 1.0), obs=y)
""")

# Runs eagerly (NumPyro's first trace), but a Python `if` on a traced value fails once JAX compiles it.
BRANCHES_ON_A_TRACER = textwrap.dedent("""
    import numpyro, numpyro.distributions as dist


    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([x.shape[1]]))
        if w[0] > 0:
            w = 2 * w
        numpyro.sample("y", dist.Normal(x @ w, 1.0), obs=y)
""")

PYMC_BUILDER = textwrap.dedent("""
    import pymc as pm


    def build(x, y):
        with pm.Model() as model:
            w = pm.Normal("w", 0.0, 1.0, shape=x.shape[1])
            pm.Normal("y", x @ w, 1.0, observed=y)
        return model
""")


def sandwich(*args):
    return runner.invoke(app, ["sandwich", "--no-progress", *args])


def regression_args(files, data, *extra):
    return ["--numpyro", f"{files / 'model.py'}:regression", "--observed", "y", "--data", str(data), "--runs", "2",
            "--steps", "10", "--out", str(files / "out"), *extra]


def refused(result, *needles):
    """One red line with every needle, and never a bug report or numpy's pickle advice."""
    assert_one_red_line(result, *needles)
    assert "report it" not in result.stderr and "allow_pickle" not in result.stderr, result.stderr


@pytest.fixture
def no_work(monkeypatch):
    """A tripwire on the first computation of each command: a refusal must come before it."""
    def tripped(*args, **kwargs):
        raise AssertionError("tripwire: the command computed before refusing")

    # the sandwich resolves its pair and checks memory in the library, before it simulates or reads any data
    sandwich_module = importlib.import_module("bdmc.checks.sandwich")  # the package's name is the function
    monkeypatch.setattr(sandwich_module, "simulated_data", tripped)
    monkeypatch.setattr(sandwich_module, "given_or_simulated", tripped)
    monkeypatch.setattr(bread_cli, "plan_sandwich", tripped)
    monkeypatch.setattr(check_estimate_cli, "simulated_data", tripped)
    monkeypatch.setattr(bench_harness, "run_bench", tripped)
    monkeypatch.setattr("bdmc.auditing.audit", tripped)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 3))
    (tmp_path / "model.py").write_text(REGRESSION)
    np.savez(tmp_path / "data.npz", x=x)
    return tmp_path


# ------------------------------------------------------------------------------------------ 1. what --data is


def test_a_npy_file_is_named_with_how_to_wrap_it(files, no_work):
    np.save(files / "x.npy", np.zeros((10, 3)))
    refused(sandwich(*regression_args(files, files / "x.npy")),
            "x.npy: a single NumPy array (.npy, shape (10, 3) float64), not an .npz", "numpy.savez(")


def test_a_text_file_is_named_and_pickling_never_suggested(files, no_work):
    (files / "data.txt").write_text("1.0 2.0 3.0\n4.0 5.0 6.0\n")
    refused(sandwich(*regression_args(files, files / "data.txt")), "data.txt: a text file, not an .npz",
            "numpy.savez(")


def test_an_unreadable_file_is_named(files, no_work):
    (files / "data.bin").write_bytes(bytes(range(256)) * 4)
    refused(sandwich(*regression_args(files, files / "data.bin")), "data.bin: not an .npz file", "numpy.savez(")


@pytest.mark.parametrize("array, what", [(np.array([1, "a"], dtype=object), "Python objects"),
                                         (np.array(["a", "b"]), "strings")])
def test_arrays_that_are_not_numbers_are_refused(files, no_work, array, what):
    np.savez(files / "bad.npz", x=array)
    refused(sandwich(*regression_args(files, files / "bad.npz")), "array 'x' holds " + what)


# ------------------------------------------------------------------------------------------ 2. NaN and inf on load


def test_a_nan_covariate_is_named_with_its_index(files, no_work):
    x = np.random.default_rng(0).normal(size=(10, 3))
    x[3, 1], x[5, 0] = np.nan, np.inf
    np.savez(files / "nan.npz", x=x)
    refused(sandwich(*regression_args(files, files / "nan.npz")),
            f"--data {files / 'nan.npz'}: array 'x' has NaN at index (3, 1) (2 non-finite values)")


def test_an_infinite_observation_is_named_before_the_run(files, no_work):
    y = np.ones(5)
    y[2] = -np.inf
    np.savez(files / "y.npz", y=y.reshape(5, 1))
    result = sandwich("--model", "gaussian-mean", "--option", "n=5", "--option", "dim=1", "--real-data", "--data",
                      str(files / "y.npz"), "--runs", "2", "--steps", "10", "--out", str(files / "out"))
    refused(result, "array 'y' has -inf at index (2, 0) (1 non-finite value)")


# ------------------------------------------------------------------------------------------ 3. finite options


@pytest.mark.parametrize("item", ["tau=nan", "tau=inf", "k0=-inf", "x_range=-2,nan"])
def test_model_options_must_be_finite(tmp_path, no_work, item):
    result = sandwich("--model", "linear-regression", "--option", item, "--out", str(tmp_path))
    refused(result, f"--option {item}: must be a finite number")


# ------------------------------------------------------------------------------------------ 4. lists and flags


@pytest.mark.parametrize("steps", ["10,,100", "10,100,"])
def test_an_empty_item_in_steps_is_refused(tmp_path, no_work, steps):
    refused(sandwich("--model", "gaussian-mean", "--steps", steps, "--out", str(tmp_path)),
            f"--steps {steps!r}: an empty item")


@pytest.mark.parametrize("knobs, needle", [
    ("ais=10,,100", "--knobs 'ais=10,,100': an empty item"),
    ("ais=1", "--knobs 'ais=1': ais's knob num_steps must be >= 2, got 1"),
    ("smc=0", "--knobs 'smc=0': smc's knob num_moves must be >= 1, got 0"),
    ("nope=3", "--knobs 'nope=3': unknown estimator 'nope'"),
])
def test_bench_knobs_are_checked_up_front(tmp_path, no_work, knobs, needle):
    result = runner.invoke(app, ["bench", "--model", "gaussian-mean", "--knobs", knobs, "--out", str(tmp_path)])
    refused(result, needle)


def test_bread_names_both_flags_of_its_steps_option(tmp_path, no_work):
    result = runner.invoke(app, ["bread", "--model", "gaussian-mean", "--T", "abc", "--out", str(tmp_path)])
    refused(result, "--steps/--T: 'abc' is not an integer")


# ------------------------------------------------------------------------------------------ 5. absurd sizes


@pytest.mark.parametrize("command, extra, needle", [
    ("sandwich", ["--runs", "100000000000"], "--runs 100000000000 would need about 40 TB of memory for its chains"),
    ("sandwich", ["--method", "smc", "--particles", "100000000000"],
     "--runs 16 with 100000000000 particles each would need about"),
    ("sandwich", ["--option", "n=100000000"], "--option n=100000000 would need about 1.6 TB of memory"),
    ("bread", ["--runs", "100000000000"], "--runs 100000000000 would need about"),
    ("check-estimate", ["--value", "-10", "--runs", "100000000000"], "--runs 100000000000 would need about"),
    ("check-estimate", ["--value", "-10", "--option", "n=100000000"], "--option n=100000000 would need about"),
    ("audit", ["--runs", "100000000000"], "--runs 100000000000 would need about"),
    ("audit", ["--geweke-samples", "100000000000"], "--geweke-samples 100000000000 would need about"),
    ("audit", ["--sbc-replications", "100000000000"], "--sbc-replications 100000000000 would need about"),
])
def test_absurd_sizes_are_refused_with_the_memory_they_need(tmp_path, no_work, command, extra, needle):
    args = [command, "--model", "gaussian-mean", *extra]
    if command != "check-estimate":
        args += ["--out", str(tmp_path / "out")]
    refused(runner.invoke(app, args), needle, "has", "use ")


def test_xla_running_out_of_memory_is_one_line_and_only_bdmcs_own_failures_ask_for_a_report(tmp_path, monkeypatch):
    def exhausted(*args, **kwargs):
        raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8000000000 "
                                         "bytes.\nBufferAssignment OOM Debugging.")

    def broken(*args, **kwargs):
        raise RuntimeError("an internal failure")

    monkeypatch.setattr(sandwich_cli.sandwich_runs, "prepare_sandwich", exhausted)
    refused(sandwich("--model", "gaussian-mean", "--out", str(tmp_path)),
            "out of memory: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8000000000 bytes.",
            "reduce --runs")
    monkeypatch.setattr(sandwich_cli.sandwich_runs, "prepare_sandwich", broken)
    assert_one_red_line(sandwich("--model", "gaussian-mean", "--out", str(tmp_path)),
                        "RuntimeError: an internal failure (unexpected", "report it")


# ------------------------------------------------------------------------------------------ 6. the user's program


def test_a_syntax_error_in_the_program_names_file_and_line(files, no_work):
    (files / "model.py").write_text("import numpyro\n\ndef regression(x, y=None:\n    pass\n")
    refused(sandwich(*regression_args(files, files / "data.npz")),
            f"--numpyro {files / 'model.py'}: syntax error at line 3")


def test_a_missing_import_in_the_program_names_the_module(files, no_work):
    (files / "model.py").write_text("import numpyro\nimport no_such_module_for_bdmc\n" + REGRESSION)
    refused(sandwich(*regression_args(files, files / "data.npz")),
            "the program imports 'no_such_module_for_bdmc'", "model.py:2", "install it")


def test_a_wrong_array_name_names_the_program_and_its_arguments(files, no_work):
    np.savez(files / "wrong.npz", xx=np.zeros((10, 3)))
    refused(sandwich(*regression_args(files, files / "wrong.npz")),
            f"--numpyro {files / 'model.py'}:regression raised TypeError:", "unexpected keyword argument 'xx'",
            "it was called with xx (10, 3) float64", "rename it to one of ['x', 'y']")


def test_a_program_without_its_data_says_to_give_them(files, no_work):
    args = regression_args(files, files / "data.npz")
    del args[4:6]  # no --data
    refused(sandwich(*args), "missing 1 required positional argument: 'x'", "it was called with no arguments",
            "give x as an array in a --data FILE.npz (none was given)")


def test_an_array_of_the_wrong_rank_names_the_programs_line(files, no_work):
    np.savez(files / "flat.npz", x=np.zeros(10))
    refused(sandwich(*regression_args(files, files / "flat.npz")), "regression raised IndexError",
            "model.py:6)", "it was called with x (10,) float64")


def test_a_pymc_builder_that_wants_the_observed_array_is_told_why(files, no_work):
    (files / "build.py").write_text(PYMC_BUILDER)
    result = sandwich("--pymc", f"{files / 'build.py'}:build", "--observed", "y", "--data", str(files / "data.npz"),
                      "--out", str(files / "out"))
    refused(result, "build.py:build raised TypeError", "missing 1 required positional argument: 'y'",
            "it was called with x (10, 3) float64",
            "are not passed to the program (bdmc sets them itself: the --data values under --real-data, simulated "
            "ones otherwise)")


def test_an_error_while_jax_traces_the_program_is_the_programs(files):
    (files / "model.py").write_text(BRANCHES_ON_A_TRACER)
    refused(sandwich(*regression_args(files, files / "data.npz")), "error in your program",
            "model.py:7 (regression): TracerBoolConversionError")


def test_a_stan_program_without_a_simulator_is_told_why_even_on_real_data(files, no_work):
    (files / "model.stan").write_text("parameters { real mu; } model { mu ~ normal(0, 1); }")
    np.savez(files / "y.npz", y=np.zeros(3))
    result = sandwich("--stan", str(files / "model.stan"), "--observed", "y", "--data", str(files / "y.npz"),
                      "--real-data", "--out", str(files / "out"))
    refused(result, "--simulator", "cannot draw from its prior", "--real-data too")
