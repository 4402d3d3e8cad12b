"""The pure parts of benchmarks/generative_ablation.py and generative_train_test.py: the cells' one-factor design,
the paired and Welch differences, and the tables built from rows, on inputs whose answers are known exactly."""

import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import generative_ablation as ga  # noqa: E402
import generative_train_test as gtt  # noqa: E402

FACTOR_FIELDS = {"training images": "num_train", "epochs": "epochs", "sigma rule": "sigma_rule",
                 "decoder": "architecture"}


@pytest.mark.parametrize("name", sorted(ga.CELLS))
def test_every_cell_changes_exactly_its_factor_from_its_baseline(name):
    cell = ga.CELLS[name]
    base = ga.CELLS[cell.baseline]
    assert (cell.factor == "baseline") == (cell.baseline == name)
    changed = {f.name for f in fields(ga.Cell)
               if f.name not in ("factor", "baseline", "evals") and getattr(cell, f.name) != getattr(base, f.name)}
    assert changed == (set() if cell.factor == "baseline" else {FACTOR_FIELDS[cell.factor]})


def test_cells_trained_alike_share_a_network_and_others_do_not():
    assert ga.CELLS["vae-sigma-learned"].model_name == ga.CELLS["vae-base"].model_name
    assert ga.CELLS["vae-paper10-sigma-learned"].model_name == ga.CELLS["vae-paper10"].model_name
    names = {c.model_name for n, c in ga.CELLS.items() if c.factor != "sigma rule"}
    assert len(names) == sum(c.factor != "sigma rule" for c in ga.CELLS.values())


def test_paired_difference_is_mean_and_standard_error_of_per_image_differences():
    a, b = {"per_image": [3.0, 5.0, 10.0, 2.0]}, {"per_image": [1.0, 1.0, 4.0, 4.0]}
    mean, se, wins = ga.paired(a, b)
    d = np.array([2.0, 4.0, 6.0, -2.0])
    assert mean == pytest.approx(2.5)
    assert se == pytest.approx(d.std(ddof=1) / 2)
    assert wins == 3


def _ais(cell, per_image, steps=1000, chains=16):
    return {"cell": cell, "unit": "ais", "steps": steps, "chains": chains, "images": len(per_image),
            "per_image": list(per_image), "mean": float(np.mean(per_image)), "stderr": 0.0, "sigma": 0.1,
            "seconds": 1.0}


def test_summary_pairs_a_cell_with_its_baseline_at_the_same_evaluation_only():
    rows = [_ais("vae-base", [10.0, 20.0, 30.0]), _ais("vae-epochs-400", [12.0, 21.0, 33.0]),
            _ais("vae-epochs-400", [1.0, 2.0, 3.0], steps=10_000, chains=4)]
    lines = {(ln["cell"], ln["steps"]): ln for ln in ga.summary(rows)}
    assert lines["vae-base", 1000]["diff"] is None  # a baseline has nothing to differ from
    assert lines["vae-epochs-400", 1000]["diff"] == pytest.approx(2.0)
    assert lines["vae-epochs-400", 1000]["wins"] == 3
    assert lines["vae-epochs-400", 10_000]["diff"] is None  # its baseline has no T = 10,000 row
    assert lines["vae-epochs-400", 1000]["paper"] == 705.4


def test_a_rerun_row_replaces_the_earlier_one():
    rows = [_ais("vae-base", [1.0, 2.0]), _ais("vae-base", [5.0, 6.0])]
    (line,) = ga.summary(rows)
    assert line["mean"] == pytest.approx(5.5)


@pytest.mark.parametrize("text, expected", [("1000x16", ((1000, 16),)), ("1000x16, 10000x4", ((1000, 16), (10000, 4)))])
def test_parse_evals(text, expected):
    assert ga.parse_evals(text) == expected


@pytest.mark.parametrize("text", ["", "1000x0", "x4", "1000"])
def test_parse_evals_refuses_malformed_pairs(text):
    with pytest.raises(ValueError):
        ga.parse_evals(text)


def test_welch_difference_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    a, b = rng.normal(5.0, 2.0, 40), rng.normal(4.0, 5.0, 25)
    diff, se = gtt.welch(a, b)
    assert diff == pytest.approx(a.mean() - b.mean())
    assert diff / se == pytest.approx(stats.ttest_ind(a, b, equal_var=False).statistic, rel=1e-12)


def test_train_test_summary_against_table_2_is_zero_for_table_2s_own_numbers():
    run_rows = gtt.run_rows("run")
    stored = {s: gtt.table_row("vae", "run", s, 1000) for s in ("train", "test")}
    rows = []
    for split in ("train", "test"):
        per_image = list(stored[split]["per_image"]) + [0.0] * 5  # 25 images, the first 20 Table 2's
        rows.append({"model": "vae10", "split": split, "steps": 1000, "chains": 4, "images": 25,
                     "per_image": per_image, "mean": float(np.mean(per_image)), "stderr": 1.0, "sigma": 0.12,
                     "seconds": 1.0})
    (line,) = gtt.summary(rows)
    assert run_rows and line["vs_table_train"] == 0.0 and line["vs_table_test"] == 0.0
    expected, se = gtt.welch(rows[0]["per_image"], rows[1]["per_image"])
    assert line["train_minus_test"] == pytest.approx(expected) and line["z"] == pytest.approx(expected / se)
    assert line["paper_test"] == 705.4


def test_stored_sigma_is_the_runs_choice():
    assert gtt.stored_sigma("vae", "run") == 0.12 and gtt.stored_sigma("gan", "run-gan") == 0.3
