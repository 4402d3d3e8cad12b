"""The decoder-model evaluation runner: rows, Table 2 recomputed from them, resuming after an interruption,
refusing other settings, and the figures drawn from a finished directory."""

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from bdmc.errors import DataError
from bdmc.experiments.generative import GenerativeConfig, run_generative, select, unit_key
from bdmc.experiments.generative_figures import write_figures
from bdmc.experiments.generative_store import ROWS_NAME, load_rows, markdown_table, table2
from bdmc.experiments.store import StoreError
from bdmc.plotting.generative import plot_ais_curve

# 8 x 8 digits, one VAE (every estimator: AIS, KDE, IWAE, BDMC), tiny budgets.
TINY = GenerativeConfig(data="digits8x8", architecture="digits10", models=("vae",), epochs=1, batch_size=50,
                        num_train=200, num_valid=20, num_test=20, steps=(5, 10), chains=2, images=3, valid_images=3,
                        sigmas=(0.1, 0.2), sigma_steps=5, sim_images=3, bdmc_steps=10, kde_samples=50,
                        bandwidths=(0.1, 0.3), iwae_k=5)
UNITS = 12  # train, sigma, AIS 2 splits x 2 T, KDE bandwidth, KDE x 2, IWAE x 2, BDMC
NOT_NUMBERS = {"seconds", "compile_seconds", "reloaded"}  # timings, and whether the network was trained here


class Stop(Exception):
    pass


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("generative") / "full"
    return run_generative(TINY, out=out, progress=False)


def numbers(row):
    return {k: v for k, v in row.items() if k not in NOT_NUMBERS}


def test_every_unit_is_one_row_and_the_table_has_the_paper_shape(full):
    rows = full.rows
    assert len(rows) == UNITS and full.computed == UNITS and full.resumed == 0
    assert len({(r["model"], r["split"], r["estimator"], r["budget"]) for r in rows}) == UNITS
    assert len((full.out / ROWS_NAME).read_text().splitlines()) == UNITS
    assert list(full.table["model"]) == ["vae"]
    for column in ("ais_train", "ais_test", "kde_train", "kde_test", "iwae_train", "iwae_test", "bdmc_gap",
                   "sigma", "bandwidth", "seconds"):
        assert np.isfinite(full.table[column].iloc[0]), column
    # Sigma and the bandwidth travel with every result computed under them.
    sigma = full.table["sigma"].iloc[0]
    assert sigma in TINY.sigmas
    assert all(r["sigma"] == sigma for r in rows if r["estimator"] in ("ais", "kde", "iwae", "bdmc"))
    assert all(r["bandwidth"] == full.table["bandwidth"].iloc[0] for r in select(rows, estimator="kde"))
    assert sorted(full.curve["steps"].unique()) == [5, 10] and set(full.curve["split"]) == {"train", "test"}
    for name in ("table2.csv", "table2.md", "curve.csv", "settings.json"):
        assert (full.out / name).stat().st_size > 0


def test_table_numbers_are_the_mean_and_stderr_of_the_rows_per_image_values(full):
    rows, row = full.rows, full.table.iloc[0]
    for estimator, split, budget in (("ais", "train", 10), ("ais", "test", 10), ("kde", "test", 50),
                                     ("kde", "train", 50), ("iwae", "train", 5), ("iwae", "test", 5)):
        values = np.array(select(rows, estimator=estimator, split=split, budget=budget)[0]["per_image"])
        assert values.shape == (TINY.images,)
        assert row[f"{estimator}_{split}"] == pytest.approx(values.mean(), rel=1e-12)
        assert row[f"{estimator}_{split}_se"] == pytest.approx(values.std(ddof=1) / math.sqrt(values.size), rel=1e-12)
    gap = select(rows, estimator="bdmc")[0]
    per_image = np.array(gap["reverse_per_image"]) - np.array(gap["forward_per_image"])
    assert np.allclose(gap["per_image"], per_image, rtol=0, atol=1e-10)
    assert row["bdmc_gap"] == pytest.approx(per_image.mean(), rel=1e-12)
    assert row["bdmc_forward"] == pytest.approx(np.mean(gap["forward_per_image"]), rel=1e-12)
    sweep = select(rows, estimator="sigma")[0]
    assert row["sigma"] == sweep["sigmas"][int(np.argmax(sweep["means"]))]
    text = markdown_table(full.table, steps=10)
    assert f"{row['ais_test']:.1f} ± {row['ais_test_se']:.1f}" in text
    # The saved table is the one recomputed from the saved rows.
    settings, saved_rows = load_rows(full.out)
    pd.testing.assert_frame_equal(table2(saved_rows, models=settings["models"], steps=10), full.table)
    assert pd.read_csv(full.out / "table2.csv")["ais_test"].iloc[0] == pytest.approx(row["ais_test"], rel=1e-12)


def test_paired_comparisons_agree_with_the_table(full):
    row, compared = full.table.iloc[0], full.comparisons.set_index(["comparison", "split"])
    for other in ("kde", "iwae"):
        for split in ("train", "test"):
            # mean of the per-image differences = difference of the table's means (over the same images)
            assert compared.loc[(f"{other} - ais", split), "difference"] == pytest.approx(
                row[f"{other}_{split}"] - row[f"ais_{split}"], rel=1e-9, abs=1e-9)
    assert compared.loc[("train - test", "ais"), "difference"] == pytest.approx(row["ais_train"] - row["ais_test"])
    assert len(pd.read_csv(full.out / "comparisons.csv")) == 5


def test_an_interrupted_run_resumes_without_recomputing_and_gives_the_same_table(full, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(full.out / "models", out / "models")  # the trained network is reloaded, not retrained
    seen = []

    def stop_after_five(row):
        seen.append(row)
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        run_generative(TINY, out=out, on_row=stop_after_five, progress=False)
    first = (out / ROWS_NAME).read_text().splitlines()
    assert len(first) == 5
    again = []
    resumed = run_generative(TINY, out=out, on_row=again.append, progress=False)
    assert resumed.resumed == 5 and resumed.computed == len(again) == UNITS - 5
    assert (out / ROWS_NAME).read_text().splitlines()[:5] == first  # finished rows untouched
    keys = {(r["model"], r["split"], r["estimator"], r["budget"]) for r in again}
    assert not keys & {(r["model"], r["split"], r["estimator"], r["budget"]) for r in seen}
    # Every unit has its own key: the numbers equal the uninterrupted run's.
    by_key = {(r["model"], r["split"], r["estimator"], r["budget"]): numbers(r) for r in full.rows}
    for r in resumed.rows:
        assert numbers(r) == by_key[(r["model"], r["split"], r["estimator"], r["budget"])], r["estimator"]
    columns = [c for c in full.table.columns if c != "seconds"]
    pd.testing.assert_frame_equal(resumed.table[columns], full.table[columns])


def test_a_directory_with_other_settings_is_refused_before_any_work(full, tmp_path):
    out = tmp_path / "other"
    shutil.copytree(full.out, out)
    with pytest.raises(StoreError, match=r"chains: 2 -> 3"):
        run_generative(GenerativeConfig(**{**TINY.__dict__, "chains": 3}), out=out, progress=False)
    assert json.loads((out / "settings.json").read_text())["settings"]["chains"] == 2


def test_bad_configurations_name_the_culprit():
    with pytest.raises(DataError, match="unknown model kind.*'vea'"):
        GenerativeConfig(models=("vae", "vea"))
    with pytest.raises(DataError, match="unknown data set 'cifar'"):
        GenerativeConfig(data="cifar")
    with pytest.raises(DataError, match="images must be"):
        GenerativeConfig(images=1)


def test_unit_keys_depend_on_the_unit_alone():
    import jax

    same = jax.random.key_data(unit_key(0, "vae", "test", "ais", 10))
    assert np.array_equal(same, jax.random.key_data(unit_key(0, "vae", "test", "ais", 10)))
    assert not np.array_equal(same, jax.random.key_data(unit_key(0, "vae", "test", "ais", 100)))
    assert not np.array_equal(same, jax.random.key_data(unit_key(1, "vae", "test", "ais", 10)))


def test_figures_are_written_from_the_saved_rows_and_arrays(full):
    files = write_figures(full.out)
    names = {f.name for f in files}
    assert names == {"ais_curve.png", "sigma_sweep.png", "samples_vae.png", "posterior_vae.png"}
    assert all(f.stat().st_size > 1000 for f in files)
    with np.load(full.out / "arrays" / "posterior_vae_test_10.npz") as z:
        assert z["images"].shape == (3, 64) and z["decoded"].shape == (3, 2, 64)
    with pytest.raises(ValueError, match="stderr"):
        plot_ais_curve(full.curve.drop(columns="stderr"))


def test_rate_distortion_comes_from_the_tables_own_test_run(full, tmp_path):
    """--rate-distortion adds one unit per model, reusing everything else: its run is the table's test AIS run at
    the largest T (the same key gives the same per-image numbers), with the curve read from its increments."""
    out = tmp_path / "rd"
    shutil.copytree(full.out, out)
    config = GenerativeConfig(**{**TINY.__dict__, "rate_distortion": True})
    again = run_generative(config, out=out, progress=False)
    assert again.computed == 1
    (rd,) = select(again.rows, estimator="rate-distortion")
    (ais,) = select(again.rows, estimator="ais", split="test", budget=max(TINY.steps))
    np.testing.assert_allclose(rd["per_image"], ais["per_image"], rtol=1e-12)
    assert rd["beta"][0] == 0.0 and rd["rate"][0] == 0.0 and rd["rate"][-1] > 0
    assert len(rd["beta"]) == len(rd["rate"]) == len(rd["mse"])
    curves = pd.read_csv(out / "rate_distortion.csv")
    assert set(curves["model"]) == {"vae"} and len(curves) == len(rd["beta"])
    assert (out / "figures" / "rate_distortion_vae.png") in write_figures(out)
