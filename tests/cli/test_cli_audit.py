"""``bdmc audit --quick`` on a tiny NumPyro program writes the report's three files and exits 0; refusals."""

import json
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from bdmc.cli import app
from helpers import assert_one_red_line

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
        "--chains", "4", "--evidence-steps", "20"]


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
    assert {c["name"] for c in doc["checks"]} == {"simulator-density", "sbc", "geweke", "bdmc", "evidence"}
    assert doc["sampler"] == "NumPyro's NUTS"
    assert "audit verdict" in result.output


def test_observed_without_a_program_is_refused(tmp_path):
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--observed", "y", "--out", str(tmp_path)])
    assert_one_red_line(result, "--observed applies to a NumPyro program")


def test_hyperparameters_need_data(tmp_path):
    result = runner.invoke(app, ["audit", "--model", "gaussian-mean", "--hyperparameters", "s", "--out",
                                 str(tmp_path)])
    assert_one_red_line(result, "--hyperparameters names sites to fit on real data")
