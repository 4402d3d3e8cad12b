"""``bdmc calibrate``: rows written and resumed, the summary printed, the figure drawn; a nested sampler without a
prior transform, and an unknown tool, are refused naming the option."""

import json

import pytest
from typer.testing import CliRunner

from bdmc.cli import app

runner = CliRunner()
BASE = ["calibrate", "--model", "gaussian-mean", "--option", "n=8", "--option", "dim=2", "-k", "4"]


def test_rows_summary_and_figure_and_a_resumed_run(tmp_path):
    args = [*BASE, "--tool", "bdmc-ais", "--budget", "100", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "bdmc-ais (100)" in text and "coverage of its stated" in text and "4 simulated data sets" in text
    saved = json.loads((tmp_path / "calibration.json").read_text())
    assert saved["num_datasets"] == 4 and len(saved["rows"]) == 4 and (tmp_path / "calibration.png").stat().st_size
    again = runner.invoke(app, [*args[:-2], "-k", "5", "--out", str(tmp_path)])
    assert again.exit_code == 0, again.output
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 5  # four resumed, one new


def test_a_nested_sampler_needs_a_prior_transform_and_an_unknown_tool_is_named(tmp_path):
    nested = runner.invoke(app, [*BASE, "--tool", "dynesty"])
    assert nested.exit_code == 1 and "--prior-transform" in nested.output
    assert "declares no Gaussian prior blocks" in " ".join(nested.output.split())
    unknown = runner.invoke(app, [*BASE, "--tool", "multinest"])
    assert unknown.exit_code == 1 and "multinest" in unknown.output


def test_a_nested_sampler_with_a_prior_transform_runs(tmp_path):
    transform = tmp_path / "prior.py"
    transform.write_text("from scipy import stats\n\ndef cube(u):\n    return stats.norm.ppf(u)\n")
    result = runner.invoke(app, [*BASE, "-k", "2", "--tool", "dynesty", "--budget", "50", "--prior-transform",
                                 f"{transform}:cube"])
    assert result.exit_code in (0, 1), result.output
    assert "dynesty (50)" in " ".join(result.output.split())


# -m slow: the transform's library test (tests/calibration/test_adapters.py) and the command's nested-sampler
# wiring (above) stay.
@pytest.mark.slow
def test_a_nested_sampler_takes_its_prior_transform_from_the_model_s_gaussian_blocks(tmp_path):
    args = ["calibrate", "--model", "low-rank", "--option", "n=3", "--option", "d=2", "--option", "k=1", "-k", "2",
            "--tool", "dynesty", "--budget", "50", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output  # 1 would be a verdict, not an error
    assert "dynesty (50)" in " ".join(result.output.split())
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["failed"] == "" and abs(row["error"]) < 2.0 for row in rows)
