"""``bdmc compare``: two NumPyro programs on one data file give an interval on log BF holding the exact value; other
observations and an unnormalized prior are refused with exit status 1 and one line naming the difference."""

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from bdmc.cli import app

runner = CliRunner()
PROGRAMS = '''
import math
import numpyro
import numpyro.distributions as dist


def narrow(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("cases", 10):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def wide(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 3.0))
    with numpyro.plate("cases", 10):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


class Unnormalized(dist.Normal):
    def log_prob(self, value):
        return super().log_prob(value) + math.log(2.0)


def doubled(y=None):
    mu = numpyro.sample("mu", Unnormalized(0.0, 3.0))
    with numpyro.plate("cases", 10):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
'''


def exact_log_evidence(y, prior_sd):
    cov = np.eye(len(y)) + prior_sd**2 * np.ones((len(y), len(y)))
    return float(stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y))


def files(tmp_path):
    (tmp_path / "programs.py").write_text(PROGRAMS)
    y = np.random.default_rng(0).normal(0.5, 1.0, 10)
    np.savez(tmp_path / "y.npz", y=y)
    np.savez(tmp_path / "other.npz", y=y + np.r_[0.0, 0.0, 1.0, np.zeros(7)])
    return str(tmp_path / "programs.py"), y


# -m slow: its library twin tests/intervals/test_bayes_factor.py (with the result's JSON) stays; the command's
# wiring stays in the refusal test below.
@pytest.mark.slow
def test_the_interval_holds_the_exact_log_bayes_factor(tmp_path):
    program, y = files(tmp_path)
    result = runner.invoke(app, ["compare", "--a", f"numpyro:{program}:narrow", "--b", f"numpyro:{program}:wide",
                                 "--observed", "y", "--data", str(tmp_path / "y.npz"), "--no-check-prior", "--json",
                                 str(tmp_path / "bf.json")])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "bf.json").read_text())
    exact = exact_log_evidence(y, 1.0) - exact_log_evidence(y, 3.0)
    assert saved["lower"] <= exact <= saved["upper"] and saved["names"] == ["narrow", "wide"]
    assert "log BF(narrow : wide)" in " ".join(result.output.split())


def test_other_observations_and_an_unnormalized_prior_are_refused(tmp_path):
    program, _ = files(tmp_path)
    other = runner.invoke(app, ["compare", "--a", f"numpyro:{program}:narrow", "--b", f"numpyro:{program}:wide",
                                "--observed", "y", "--data", str(tmp_path / "y.npz"), "--data-b",
                                str(tmp_path / "other.npz")])
    assert other.exit_code == 1 and "differs in 1 of 10 cases (cases 2)" in " ".join(other.output.split())
    doubled = runner.invoke(app, ["compare", "--a", f"numpyro:{program}:narrow", "--b",
                                  f"numpyro:{program}:doubled", "--observed", "y", "--data", str(tmp_path / "y.npz")])
    text = " ".join(doubled.output.split())
    assert doubled.exit_code == 1 and "the prior of doubled does not integrate to one" in text
    assert "--no-check-prior" in text
