"""``bdmc check-estimate``: write the simulated data, check a value on them, and on them as real data; bdmc's
interval and estimate are printed beside the verdict, and a value called wrong exits with status 1."""

import json

import numpy as np
from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.models import GaussianMean

runner = CliRunner()
BASE = ["check-estimate", "--model", "gaussian-mean", "--option", "n=10", "--option", "dim=2", "--seed", "4",
        "--steps", "30", "--runs", "4"]


def invoke(*args, code=0):
    result = runner.invoke(app, [*BASE, *args])
    assert result.exit_code == code, result.output
    return " ".join(result.output.split())


def test_the_written_data_are_the_checked_data_and_the_verdicts_follow_the_value(tmp_path):
    invoke("--write-data", str(tmp_path / "sim.npz"))
    y = np.load(tmp_path / "sim.npz")["data"]
    exact = float(GaussianMean(n=10, dim=2).exact_log_marginal(y))
    ok = invoke("--value", str(exact), "--json", str(tmp_path / "ok.json"))
    saved = json.loads((tmp_path / "ok.json").read_text())
    assert saved["verdict"] == "consistent" and saved["exact"] == exact and saved["two_sided"]
    assert saved["certified_lower"] <= exact <= saved["certified_upper"]
    assert "consistent" in ok and f"estimate {saved['estimate']:.3f}" in ok  # bdmc's own estimate, printed
    assert "too high" in invoke("--value", str(exact + 20), code=1)
    # The observed arrays as real data: bdmc evidence's interval, its upper side from (here NUTS) draws.
    low = invoke("--value", str(exact - 20), "--real-data", "--data", str(tmp_path / "sim.npz"), code=1)
    assert "too low" in low and "certified tier" in low
    high = invoke("--value", str(exact + 20), "--real-data", "--data", str(tmp_path / "sim.npz"), code=1)
    assert "too high" in high and "draws" in high


def test_value_or_write_data_is_required():
    result = runner.invoke(app, BASE)
    assert result.exit_code == 1 and "--value" in result.output
