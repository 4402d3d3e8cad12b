"""``bdmc check-estimate``: write the simulated data, check a value on them both ways, and on real data one way."""

import json

import numpy as np
from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.models import GaussianMean

runner = CliRunner()
BASE = ["check-estimate", "--model", "gaussian-mean", "--option", "n=10", "--option", "dim=2", "--seed", "4",
        "--steps", "30", "--runs", "4"]


def invoke(*args):
    result = runner.invoke(app, [*BASE, *args])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_the_written_data_are_the_checked_data_and_the_verdicts_follow_the_value(tmp_path):
    invoke("--write-data", str(tmp_path / "sim.npz"))
    y = np.load(tmp_path / "sim.npz")["data"]
    exact = float(GaussianMean(n=10, dim=2).exact_log_marginal(y))
    assert "consistent" in invoke("--value", str(exact), "--json", str(tmp_path / "ok.json"))
    saved = json.loads((tmp_path / "ok.json").read_text())
    assert saved["verdict"] == "consistent" and saved["exact"] == exact and saved["two_sided"]
    assert saved["certified_lower"] <= exact <= saved["certified_upper"]
    assert "too high" in invoke("--value", str(exact + 20))
    # The observed arrays as real data: only the lower side is certified.
    assert "too low" in invoke("--value", str(exact - 20), "--real-data", "--data", str(tmp_path / "sim.npz"))
    assert "consistent" in invoke("--value", str(exact + 20), "--real-data", "--data", str(tmp_path / "sim.npz"))


def test_value_or_write_data_is_required():
    result = runner.invoke(app, BASE)
    assert result.exit_code == 1 and "--value" in result.output
