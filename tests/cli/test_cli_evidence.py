"""``bdmc evidence``: a NumPyro program on its observed data with the user's draws (the interval holds the closed
form), simulated data (Markov's upper side, said), and every mistake named in one line."""

import json
import textwrap

import numpy as np
import pytest
from helpers import assert_one_red_line
from scipy.stats import multivariate_normal
from typer.testing import CliRunner

from bdmc.cli import app

runner = CliRunner()
N = 6
PROGRAM = textwrap.dedent("""
    import numpyro
    import numpyro.distributions as dist


    def tiny(n, y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        s = numpyro.sample("s", dist.HalfNormal(1.0))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
""")


def evidence(*args):
    return runner.invoke(app, ["evidence", "--no-progress", *args])


def exact_log_p(y):
    """mu ~ N(0, 1), y_i ~ N(mu, 1): y ~ N(0, I + 11^T) (s does not touch the data: it integrates to 1)."""
    return float(multivariate_normal(np.zeros(len(y)), np.eye(len(y)) + np.ones((len(y), len(y)))).logpdf(y))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("evidence")
    (d / "tiny.py").write_text(PROGRAM)
    rng = np.random.default_rng(3)
    y = 0.7 + rng.normal(size=N)
    np.savez(d / "tiny.npz", n=N, y=y)
    precision = 1.0 + N  # the conjugate posterior of mu; s keeps its prior
    mu = y.sum() / precision + rng.normal(size=400) / np.sqrt(precision)
    s = np.abs(rng.normal(size=400))
    np.savez(d / "draws.npz", mu=mu, s=s)
    np.savez(d / "draws_misnamed.npz", m=mu, s=s)
    np.savez(d / "draws_far.npz", mu=mu + 8 / np.sqrt(precision), s=s)  # eight posterior sds off
    np.savez(d / "draws_nan.npz", mu=np.where(np.arange(400) == 7, np.nan, mu), s=s)
    return d, y


def test_a_numpyro_program_with_the_users_draws_gets_an_interval_around_the_closed_form(files, tmp_path):
    d, y = files
    out = tmp_path / "result.json"
    result = evidence("--numpyro", f"{d / 'tiny.py'}:tiny", "--observed", "y", "--data", str(d / "tiny.npz"),
                      "--draws", str(d / "draws.npz"), "--tolerance", "0.5", "--json", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["status"] == "interval" and doc["width"] <= 0.5
    assert doc["lower"] <= exact_log_p(y) <= doc["upper"]
    assert doc["draws"]["check"]["passed"] and "exact, independent posterior draws" in doc["upper_rests_on"]
    text = " ".join(result.output.split())
    assert "round 0:" in text and "with probability >= 0.99" in text and "rests on" in text


def test_draws_far_from_the_posterior_give_no_interval_and_a_failing_exit_status(files):
    d, _ = files
    result = evidence("--numpyro", f"{d / 'tiny.py'}:tiny", "--observed", "y", "--data", str(d / "tiny.npz"),
                      "--draws", str(d / "draws_far.npz"), "--max-rounds", "1", "--steps", "8", "--runs", "8")
    assert result.exit_code == 1, result.output
    assert "NO INTERVAL" in " ".join(result.output.split())


def test_simulated_data_say_their_upper_side_rests_on_markov(tmp_path):
    result = evidence("--model", "gaussian-mean", "--option", "n=10", "--option", "dim=2", "--simulated",
                      "--steps", "16", "--runs", "16")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Markov" in text and "wider than the tolerance" in text


@pytest.mark.parametrize("args, needles", [
    (("--draws", "{d}/draws_misnamed.npz"), ("DataError", "'m'")),
    (("--draws", "{d}/draws_nan.npz"), ("--draws", "'mu'", "NaN")),
    (("--draws", "{d}/missing.npz"), ("--draws", "no such file")),
    (("--draws", "{d}/tiny.py"), ("--draws", ".npz")),
    (("--simulated", "--draws", "{d}/draws.npz"), ("--draws", "--simulated")),
    (("--tolerance", "0"), ("--tolerance",)),
    (("--level", "2"), ("--level",)),
])
def test_mistakes_are_named_in_one_line(files, args, needles):
    d, _ = files
    result = evidence("--numpyro", f"{d / 'tiny.py'}:tiny", "--observed", "y", "--data", str(d / "tiny.npz"),
                      *(a.format(d=d) for a in args))
    assert_one_red_line(result, *needles)


def test_real_data_need_their_file():
    assert_one_red_line(evidence("--model", "gaussian-mean"), "--data", "--simulated")
