"""``bdmc audit`` passes its options to the audit and writes the report's files; refusals. The slow test runs the
real ``--quick`` audit of a tiny NumPyro program end to end."""

import dataclasses
import json
import struct
import textwrap
import warnings
import zlib

import numpy as np
import pytest
from helpers import assert_one_red_line
from typer.testing import CliRunner

import bdmc.auditing
from bdmc.auditing import AuditResult, Budget, CheckOutcome, Figure
from bdmc.cli import app
from bdmc.models import GaussianMean
from bdmc.ppl.registry import ppl_of

runner = CliRunner()
PROGRAM = textwrap.dedent("""
    import numpyro
    import numpyro.distributions as dist


    def tiny(n, y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        with numpyro.plate("cases", n):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
""")
# --quick, cut further so the test stays cheap: every check still runs.
TINY = ["--quick", "--sbc-replications", "20", "--sbc-draws", "9", "--warmup", "30", "--steps", "5,20",
        "--runs", "4", "--evidence-steps", "20"]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("program")
    (d / "tiny.py").write_text(PROGRAM)
    np.savez(d / "args.npz", n=np.array(5))
    return d


@pytest.mark.slow  # about 40 s unloaded (two minutes on the shared 2-core machine): compilation dominates
def test_quick_audit_writes_the_report(program, tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(app, ["audit", "--numpyro", f"{program / 'tiny.py'}:tiny", "--observed", "y",
                                 "--data", str(program / "args.npz"), *TINY, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("report.html", "results.json", "results.csv"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "results.json").read_text())
    assert {c["name"] for c in doc["checks"]} == {"simulator-density", "prior-normalization", "sbc", "geweke", "bdmc",
                                                  "evidence"}
    assert doc["sampler"] == "NumPyro's NUTS"
    assert "audit verdict" in result.output
    # The terminal says only what matters: no run-health warnings between the stage lines, no source lines.
    assert "warning:" not in result.output and "the ± is not to be trusted" not in result.output, result.output
    assert ".py:" not in result.output.replace(f"{program / 'tiny.py'}:tiny", ""), result.output


def _png(width: int = 2, height: int = 1) -> bytes:
    """A tiny valid PNG (white pixels)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


RECORDED = AuditResult(
    model="gaussian-mean", ppl="bdmc (built-in)", sampler="the model's Gibbs kernel", data="simulated",
    checks=(CheckOutcome(name="sbc", title="Simulation-based calibration", verdict="pass", statistic="gamma 0.2",
                         level=0.005, summary="ranks uniform", figures=(Figure(_png(), "rank ECDF"),),
                         table=({"quantity": "mu[0]", "gamma": 0.2},)),
            CheckOutcome(name="bdmc", title="BDMC on simulated data", verdict="fail", statistic="crossing +9",
                         level=0.005, summary="BUG ALARM")),
    settings={"overall_level": "each statistical check at 0.005"}, seconds=1.0)


def test_options_reach_the_audit_and_the_report_is_written(tmp_path, monkeypatch):
    """The command is thin: its options become the audit's arguments, and the result becomes the files."""
    calls = []

    def audit(key, model, **kw):
        calls.append((model, kw))
        # A check's inner estimate with an untrusted ± (the BDMC check at T = 10): not printed between stages.
        warnings.warn("forward AIS T=10: the ± is not to be trusted", bdmc.UntrustedStderrWarning, stacklevel=2)
        return RECORDED

    monkeypatch.setattr(bdmc.auditing, "audit", audit)
    out = tmp_path / "report"
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--option", "n=3", "--option", "dim=1",
                                 "--sampler", "gibbs", "--quick", "--sbc-replications", "20", "--steps", "5,20",
                                 "--runs", "4", "--level", "0.02", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (model, kw), = calls
    assert model == GaussianMean(n=3, dim=1)
    assert (kw["sampler"], kw["level"], kw["data"]) == ("gibbs", 0.02, None)
    expected = dataclasses.replace(Budget.quick(), sbc_replications=20, sandwich_steps=(5, 20),
                                   sandwich_runs=4, evidence_runs=4)
    assert kw["budget"] == expected
    for name in ("report.html", "results.json", "results.csv"):
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "results.json").read_text())
    assert [(c["name"], c["verdict"]) for c in doc["checks"]] == [("sbc", "pass"), ("bdmc", "fail")]
    assert doc["verdict"] == "fail"
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "BUG ALARM" in html
    assert "audit verdict: fail" in " ".join(result.output.split())
    assert "not to be trusted" not in result.output and "warning:" not in result.output, result.output


def test_observed_without_a_program_is_refused(tmp_path):
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--observed", "y", "--out", str(tmp_path)])
    assert_one_red_line(result, "--observed applies to a PPL program")


def test_hyperparameters_need_data(tmp_path):
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--hyperparameters", "s", "--out",
                                 str(tmp_path)])
    assert_one_red_line(result, "--hyperparameters names sites to fit on real data")


PYMC_PROGRAM = textwrap.dedent("""
    import pymc as pm


    def tiny(x):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", mu * x, 1.0, observed=x * 0.0)
        return model
""")


def test_a_pymc_program_with_real_data_reaches_the_audit(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(bdmc.auditing, "audit", lambda key, model, **kw: calls.append((model, kw)) or RECORDED)
    (tmp_path / "tiny.py").write_text(PYMC_PROGRAM)
    y = np.array([0.3, -1.2, 0.8, 2.0])
    np.savez(tmp_path / "data.npz", x=np.ones(4), y=y)
    result = runner.invoke(app, ["audit", "--pymc", f"{tmp_path / 'tiny.py'}:tiny", "--observed", "y", "--data",
                                 str(tmp_path / "data.npz"), "--real-data", "--quick", "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (model, kw), = calls
    # The command leaves naming the language to the library (its registry), which names it as the report does.
    assert type(model).__name__ == "PyMCModel" and "ppl" not in kw and ppl_of(model).name == "PyMC"
    np.testing.assert_array_equal(kw["data"]["y"], y)  # the user's observations, not simulated ones
    assert kw["provenance"]["data_file"].endswith("(real data: the --observed arrays)")
    assert kw["provenance"]["function"] == "tiny" and kw["provenance"]["observed"] == ["y"]


def test_observed_arrays_are_real_data_only_when_the_user_says_so(tmp_path, monkeypatch):
    """A placeholder y in --data (Stan programs used to need one) is never taken for the user's data."""
    calls = []
    monkeypatch.setattr(bdmc.auditing, "audit", lambda key, model, **kw: calls.append((model, kw)) or RECORDED)
    (tmp_path / "tiny.py").write_text(PYMC_PROGRAM)
    np.savez(tmp_path / "data.npz", x=np.ones(4), y=np.zeros(4))
    result = runner.invoke(app, ["audit", "--pymc", f"{tmp_path / 'tiny.py'}:tiny", "--observed", "y", "--data",
                                 str(tmp_path / "data.npz"), "--quick", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (_, kw), = calls
    assert kw["data"] is None and "simulated data" in result.output
    assert "--data holds the observed y, used only for its shape" in " ".join(result.output.split())
    assert kw["provenance"]["budget"] == "quick" and kw["provenance"]["command"].startswith("bdmc audit")


def test_simulator_without_a_stan_program_is_refused(tmp_path):
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--simulator", "sim.py:f", "--out",
                                 str(tmp_path)])
    assert_one_red_line(result, "--simulator applies to a Stan or WebPPL program")


WEBPPL_PROGRAM = """
var model = function(data) {
  var mu = sample(Gaussian({mu: 0, sigma: 1}));
  mapData({data: data.y}, function(y) { observe(Gaussian({mu: mu * data.scale, sigma: 1}), y); });
};
model
"""


def test_a_webppl_program_with_real_data_reaches_the_audit(tmp_path, monkeypatch):
    import shutil

    if shutil.which("node") is None:
        pytest.skip("the WebPPL adapter needs Node.js (`node` is not on the PATH)")
    calls = []
    monkeypatch.setattr(bdmc.auditing, "audit", lambda key, model, **kw: calls.append((model, kw)) or RECORDED)
    (tmp_path / "mean.wppl").write_text(WEBPPL_PROGRAM)
    y = np.array([0.3, -1.2, 0.8, 2.0])
    np.savez(tmp_path / "data.npz", scale=np.array(2.0), y=y)
    result = runner.invoke(app, ["audit", "--webppl", str(tmp_path / "mean.wppl"), "--observed", "y", "--data",
                                 str(tmp_path / "data.npz"), "--real-data", "--quick", "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (model, kw), = calls
    assert type(model).__name__ == "WebPPLModel" and "ppl" not in kw and ppl_of(model).name == "WebPPL"
    np.testing.assert_array_equal(kw["data"]["y"], y)
    # The program reads data.scale from the file: its likelihood is N(y | 2 mu, 1).
    import jax.numpy as jnp
    from scipy import stats
    ll = model.log_likelihood(jnp.asarray([0.4]), {"y": jnp.asarray(y)})
    np.testing.assert_allclose(np.sum(ll), stats.norm(0.8, 1.0).logpdf(y).sum(), rtol=1e-6)


def test_a_missing_webppl_program_and_two_programs_are_refused(tmp_path):
    result = runner.invoke(app, ["audit", "--webppl", str(tmp_path / "none.wppl"), "--observed", "y", "--out",
                                 str(tmp_path / "out")])
    assert_one_red_line(result, "--webppl: no WebPPL program at")
    result = runner.invoke(app, ["audit", "--webppl", "a.wppl", "--stan", "b.stan", "--observed", "y", "--out",
                                 str(tmp_path / "out")])
    assert_one_red_line(result, "give one of --numpyro, --pymc, --stan, --webppl, not --stan and --webppl")
