"""``bdmc sandwich --real-data``: forward bounds on the user's observed data, labelled as such everywhere.

The data are chosen far from what the prior simulates (means near 4 under a N(0, 1) prior), so a run that
bounded a simulated data set instead would miss the closed-form log p(y) of the observed one by many nats.
"""

import json
import textwrap

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_red_line
from scipy.stats import multivariate_normal
from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.cli import sandwich as sandwich_cli
from bdmc.contracts.observed import real_data_like
from bdmc.errors import DataError
from bdmc.experiments.sandwich_runs import FORWARD_ONLY

runner = CliRunner()
N, DIM = 5, 2
PROGRAM = textwrap.dedent("""
    import numpyro
    import numpyro.distributions as dist


    def tiny(n, y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
""")


def exact_log_p(y):
    """log p(y) of mu ~ N(0, 1), y_i ~ N(mu, 1), each column of y on its own: y ~ N(0, I + 11^T)."""
    y = np.asarray(y).reshape(len(y), -1)
    cov = np.eye(len(y)) + np.ones((len(y), len(y)))
    return float(sum(multivariate_normal(np.zeros(len(y)), cov).logpdf(col) for col in y.T))


def flat(text):
    return " ".join(text.replace("│", " ").split())


def sandwich(*args):
    return runner.invoke(app, ["sandwich", "--no-progress", *args])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(7)
    y = 4.0 + rng.normal(size=(N, DIM))
    np.savez(d / "gm.npz", y=y)
    np.savez(d / "gm_other.npz", y=y + 0.5)
    np.savez(d / "gm_two.npz", y=y, x=y)
    np.savez(d / "gm_short.npz", y=y[:-1])
    (d / "tiny.py").write_text(PROGRAM)
    np.savez(d / "tiny.npz", n=np.array(N), y=y[:, 0])
    np.savez(d / "tiny_args.npz", n=np.array(N))
    np.savez(d / "tiny_short.npz", n=np.array(N), y=y[:-1, 0])
    return d, y


@pytest.fixture
def titles(monkeypatch):
    """Record the title the command gives its figure."""
    seen = []
    real = sandwich_cli.plot_sandwich

    def spy(table, **kwargs):
        seen.append(kwargs.get("title"))
        return real(table, **kwargs)

    monkeypatch.setattr(sandwich_cli, "plot_sandwich", spy)
    return seen


def builtin(out, data, *extra, steps="5,100"):
    return sandwich("--model", "gaussian-mean", "--option", f"n={N}", "--option", f"dim={DIM}", "--real-data",
                    "--data", str(data), "--steps", steps, "--runs", "8", "--out", str(out), *extra)


def check_forward_bound(out, exact):
    """Only forward rows, each marked real; the longest run's bound below exact (4 stderr) and close to it."""
    table = pd.read_csv(out / "sandwich.csv")
    assert set(table["direction"]) == {"forward"} and set(table["bound"]) == {"lower"}
    assert set(table["data"]) == {"real"}
    last = table.loc[table["num_steps"].idxmax()]
    assert last["value"] <= exact + 4 * last["stderr"], (last["value"], exact, last["stderr"])
    # Close from below: the run bounded these data, not a simulated set (whose log p(y) is far from this one).
    assert last["value"] >= exact - 1.0, (last["value"], exact)
    assert last["certified_b3"] == pytest.approx(last["value"] - 3.0)
    return table, last


def check_labelled(out, result, titles):
    doc = json.loads((out / "settings.json").read_text())
    assert doc["settings"]["data"]["source"] == "real" and doc["settings"]["bounds"] == FORWARD_ONLY
    assert doc["verdict"] is None
    assert titles and FORWARD_ONLY in titles[-1]
    assert (out / "sandwich.png").read_bytes().startswith(b"\x89PNG")
    text = flat(result.output)
    assert f"{FORWARD_ONLY} (no exact posterior sample: no upper bound" in text
    assert "bug alarm" not in text.replace("no bug alarm", "")
    return doc, text


def test_builtin_model_on_real_data_bounds_its_closed_form_from_below(files, tmp_path, titles):
    d, y = files
    out = tmp_path / "gm"
    result = builtin(out, d / "gm.npz")
    assert result.exit_code == 0, result.output
    exact = exact_log_p(y)
    table, last = check_forward_bound(out, exact)
    assert np.allclose(table["exact"], exact)  # the table's closed form is that of the observed data
    doc, text = check_labelled(out, result, titles)
    assert doc["settings"]["data"]["arrays"] == {"y": [N, DIM]}
    assert f"certified: log p(y) >= {last['value'] - 3.0:.4f} with probability >= 0.950" in text
    assert f"exact log p(y) = {exact:.4f}" in text

    # Resumes with the same data; other data (same shapes) or simulated data in the same directory are refused.
    again = builtin(out, d / "gm.npz")
    assert again.exit_code == 0 and "(2 rows, 0 new)" in flat(again.output), again.output
    assert_one_red_line(builtin(out, d / "gm_other.npz"), "different settings", "data:", "--overwrite")
    simulated = sandwich("--model", "gaussian-mean", "--option", f"n={N}", "--option", f"dim={DIM}", "--steps",
                         "5,100", "--runs", "8", "--out", str(out))
    assert_one_red_line(simulated, "different settings", "data:")


def test_numpyro_program_on_real_data(files, tmp_path, titles):
    d, y = files
    out = tmp_path / "tiny"
    result = sandwich("--numpyro", f"{d / 'tiny.py'}:tiny", "--observed", "y", "--real-data", "--data",
                      str(d / "tiny.npz"), "--steps", "100", "--runs", "8", "--out", str(out))
    assert result.exit_code == 0, result.output
    check_forward_bound(out, exact_log_p(y[:, 0]))
    doc, _ = check_labelled(out, result, titles)
    assert doc["settings"]["data"]["arrays"] == {"y": [N]}


@pytest.mark.parametrize("name, needles", [
    ("gm_two.npz", ("exactly one array", "['x', 'y']")),
    ("gm_short.npz", ("'y' has shape (4, 2)", "(5, 2)", "--option")),
])
def test_builtin_data_file_errors_name_the_array(files, tmp_path, name, needles):
    d, _ = files
    result = builtin(tmp_path / "run", d / name)
    assert_one_red_line(result, "DataError", f"--data {d / name}", *needles)
    assert not (tmp_path / "run" / "sandwich.csv").exists()


@pytest.mark.parametrize("name, needles", [
    ("tiny_args.npz", ("holds no observed array 'y' (shape (5,))", "['n']")),
    ("tiny_short.npz", ("'y' has shape (4,)", "(5,)", "arguments")),
])
def test_program_data_file_errors_name_the_site(files, tmp_path, name, needles):
    d, _ = files
    result = sandwich("--numpyro", f"{d / 'tiny.py'}:tiny", "--observed", "y", "--real-data", "--data",
                      str(d / name), "--steps", "10", "--out", str(tmp_path / "run"))
    assert_one_red_line(result, "DataError", *needles)


@pytest.mark.parametrize("args, needles", [
    (["--until-gap", "0.5", "--steps", "10"], ("--until-gap", "no upper bound", "--steps")),
    (["--real-data"], ("--real-data", "--data")),
    (["--data", "DATA"], ("--data with --model", "--real-data")),
])
def test_refused_before_any_work(files, tmp_path, args, needles):
    d, _ = files
    args = [str(d / "gm.npz") if a == "DATA" else a for a in args]
    if "--until-gap" in args:
        args += ["--real-data", "--data", str(d / "gm.npz")]
    result = sandwich("--model", "gaussian-mean", "--out", str(tmp_path / "run"), *args)
    assert_one_red_line(result, *needles)
    assert not (tmp_path / "run" / "sandwich.csv").exists()


def test_real_data_like_reads_named_leaves_and_checks_integers():
    template = {"y": np.zeros(3), "counts": {"k": np.zeros(2, dtype=np.int32)}}
    data = real_data_like(template, {"y": [1, 2, 3], "counts.k": np.array([4.0, 5.0]), "extra": 1})
    assert data["y"].dtype == np.float64 and data["counts"]["k"].dtype == np.int32
    assert data["counts"]["k"].tolist() == [4, 5]
    with pytest.raises(DataError, match=r"'counts.k' holds values that are not int32.*2.5"):
        real_data_like(template, {"y": [1, 2, 3], "counts.k": [4.0, 2.5]})
    with pytest.raises(DataError, match=r"no observed array 'counts.k' \(shape \(2,\)\)"):
        real_data_like(template, {"y": [1, 2, 3]})


def test_forward_only_sandwich_refuses_until_gap_and_runs_no_reverse(files, key):
    from bdmc import sandwich as run_sandwich
    from bdmc.errors import BDMCError
    from bdmc.models import GaussianMean

    model, data = GaussianMean(n=N, dim=DIM), files[1]  # the CLI tests' shapes: their compiled programs serve
    with pytest.raises(BDMCError, match="until_gap"):
        run_sandwich(key, model, data, steps=(5,), forward_only=True, until_gap=0.5)
    result = run_sandwich(key, model, data, steps=(5,), num_runs=8, forward_only=True)
    assert list(result.table["direction"]) == ["forward"] and result.verdict is None
    assert result.exact == pytest.approx(exact_log_p(data))
