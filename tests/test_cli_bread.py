"""``bdmc bread`` on the grid toys (exact) and on a model (simulated pairs)."""

import pandas as pd
from typer.testing import CliRunner

from bdmc.cli import app

runner = CliRunner()


def test_bread_toy_reproduces_the_barrier_numbers(tmp_path):
    result = runner.invoke(app, ["bread", "--toy", "barrier", "--T", "100,1000", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "bread.csv").set_index("num_distributions")
    assert round(table.loc[100, "J"], 2) == 1.65  # BREAD paper, Appendix B
    assert round(table.loc[1000, "J"], 3) == 1.085 and round(table.loc[1000, "B"], 3) == 1.184
    assert (tmp_path / "bread.png").read_bytes().startswith(b"\x89PNG")


def test_bread_model_writes_b_hat_table(tmp_path):
    result = runner.invoke(app, ["bread", "--model", "gaussian-mean", "--steps", "5,50", "--chains", "8",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "bread.csv")
    assert list(table["num_steps"]) == [5, 50] and "b_hat" in table.columns
    assert "silent" in result.output


def test_bread_needs_exactly_one_target(tmp_path):
    assert runner.invoke(app, ["bread", "--out", str(tmp_path)]).exit_code == 2
    both = runner.invoke(app, ["bread", "--toy", "barrier", "--model", "gaussian-mean", "--out", str(tmp_path)])
    assert both.exit_code == 2
    assert runner.invoke(app, ["bread", "--toy", "cube", "--out", str(tmp_path)]).exit_code == 2
