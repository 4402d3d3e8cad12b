"""``bdmc generative``: a tiny run writes its table, rows and figures and resumes; bad options are one red line."""

import json

import pandas as pd
import pytest
from helpers import assert_one_red_line
from typer.testing import CliRunner

from bdmc.cli import app

runner = CliRunner()
TINY = ["generative", "--data", "digits8x8", "--models", "gmmn", "--epochs", "1", "--train-images", "200",
        "--steps", "5,10", "--runs", "2", "--images", "3", "--valid-images", "3", "--sigmas", "0.1,0.2",
        "--sigma-steps", "5", "--sim-images", "3", "--kde-samples", "50", "--iwae-k", "5"]


@pytest.mark.parametrize("args, needles", [
    (["--models", "vae,vea"], ["--models", "vea", "vae, gan, gmmn"]),
    (["--data", "cifar"], ["--data", "cifar", "mnist or digits8x8"]),
    (["--steps", "10,x"], ["--steps", "'x'"]),
    (["--sigmas", "0.1,-1"], ["--sigmas", "positive"]),
    (["--images", "1"], ["--images must be >= 2"]),
    (["--architecture", "huge"], ["unknown architecture 'huge'"]),
])
def test_bad_options_end_in_one_red_line_naming_the_option(tmp_path, args, needles):
    result = runner.invoke(app, ["generative", "--data", "digits8x8", *args, "--out", str(tmp_path / "x")])
    assert_one_red_line(result, *needles)
    assert not (tmp_path / "x" / "rows.jsonl").exists()


def test_a_tiny_run_writes_table_rows_and_figures_and_a_rerun_resumes(tmp_path):
    out = tmp_path / "run"
    first = runner.invoke(app, TINY + ["--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "log-likelihood per image" in first.stdout and "gmmn" in first.stdout
    for name in ("table2.csv", "table2.md", "curve.csv", "rows.jsonl", "settings.json", "figures/ais_curve.png",
                 "figures/sigma_sweep.png", "figures/samples_gmmn.png", "figures/posterior_gmmn.png"):
        assert (out / name).stat().st_size > 0, name
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 10  # train, sigma, AIS 2 x 2, KDE bandwidth, KDE x 2, BDMC (no encoder: no IWAE)
    table = pd.read_csv(out / "table2.csv")
    ais = next(r for r in rows if (r["estimator"], r["split"], r["budget"]) == ("ais", "test", 10))
    assert table["ais_test"].iloc[0] == pytest.approx(ais["mean"], rel=1e-12)
    assert f"{ais['mean']:.1f}" in first.stdout  # the printed table shows the saved number
    again = runner.invoke(app, TINY + ["--out", str(out)])
    assert again.exit_code == 0, again.output
    said = " ".join(again.stdout.split())  # the console may wrap a long output path
    assert "10 row(s) resumed" in said and ", 0 computed" in said, again.stdout
    assert len((out / "rows.jsonl").read_text().splitlines()) == 10
    changed = runner.invoke(app, [*TINY, "--runs", "3", "--out", str(out)])
    assert_one_red_line(changed, "chains: 2 -> 3", "--overwrite")


def test_the_gap_curve_reruns_the_tables_bdmc_images_at_every_t(tmp_path):
    out = tmp_path / "curve"
    # --bdmc-steps 6 and the curve's T = 6 with as many chains: the same unit computed twice, so the same numbers.
    args = TINY + ["--bdmc-steps", "6", "--bdmc-curve", "3,6", "--curve-runs", "2", "--out", str(out)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert (out / "figures" / "bdmc_gap_curve.png").stat().st_size > 0
    gaps = pd.read_csv(out / "gap_curve.csv")
    assert gaps["steps"].tolist() == [3, 6] and (gaps["images"] == 3).all() and (gaps["chains"] == 2).all()
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    table_row = next(r for r in rows if r["estimator"] == "bdmc")
    curve_row = next(r for r in rows if r["estimator"] == "bdmc-curve" and r["budget"] == 6)
    assert curve_row["forward_per_image"] == pytest.approx(table_row["forward_per_image"], rel=1e-9)
    assert curve_row["reverse_per_image"] == pytest.approx(table_row["reverse_per_image"], rel=1e-9)
    assert gaps["gap"].iloc[1] == pytest.approx(table_row["mean"], rel=1e-9)
    refused = runner.invoke(app, [*args[:-4], "--curve-runs", "3", "--out", str(out)])
    assert_one_red_line(refused, "2 chains per image", "--curve-runs 2")
    bad = runner.invoke(app, [*TINY, "--bdmc-curve", "1", "--out", str(tmp_path / "bad")])
    assert_one_red_line(bad, "--bdmc-curve")
