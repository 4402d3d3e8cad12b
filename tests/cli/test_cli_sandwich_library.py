"""``bdmc sandwich --seed s`` and ``bdmc.sandwich(jax.random.key(s), ...)`` give the same numbers, fresh and resumed."""

import json

import jax
import numpy as np
import pandas as pd
from typer.testing import CliRunner

import bdmc
from bdmc.cli import app
from bdmc.models import LinearRegression

runner = CliRunner()
SEED, STEPS, RUNS = 3, [10, 20], 4
VALUES = ["value", "stderr", "mean_single", "stderr_single", "certified_b3", "gap", "gap_single", "gap_single_stderr",
          "alarm_p", "exact"]


def cli(out):
    steps = ",".join(map(str, STEPS))
    result = runner.invoke(app, ["sandwich", "--no-progress", "--model", "linear-regression", "--steps", steps,
                                 "--runs", str(RUNS), "--seed", str(SEED), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return pd.read_csv(out / "sandwich.csv"), json.loads((out / "settings.json").read_text())


def assert_same(table, library):
    assert (list(zip(table["num_steps"], table["direction"], strict=False))
            == list(zip(library["num_steps"], library["direction"], strict=False)))
    assert (table["num_runs"] == RUNS).all() and list(table["alarm"]) == list(library["alarm"])
    for column in VALUES:
        np.testing.assert_allclose(table[column].to_numpy(float), library[column].to_numpy(float), rtol=1e-12,
                                   err_msg=column)


def test_the_command_and_the_library_agree_and_a_resumed_half_pair_changes_nothing(tmp_path):
    library = bdmc.sandwich(jax.random.key(SEED), LinearRegression(), steps=STEPS, num_runs=RUNS, progress=False)
    table, saved = cli(tmp_path)
    assert_same(table, library.table)
    assert saved["verdict"]["crossing"] == library.verdict.crossing
    assert saved["verdict"]["alpha"] == library.verdict.alpha

    # A run killed before its last row: the resumed reverse row completes the pair with the library's numbers.
    lines = (tmp_path / "sandwich.csv").read_text().splitlines(keepends=True)
    (tmp_path / "sandwich.csv").write_text("".join(lines[:-1]))
    resumed, _ = cli(tmp_path)
    assert_same(resumed, library.table)
