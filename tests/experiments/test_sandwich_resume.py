"""A sandwich resumed from its store gives the uninterrupted run's table and summary, wherever the run was cut.

A killed ``bdmc sandwich`` leaves ``sandwich.csv`` holding the rows appended before the kill (a prefix of the
uninterrupted run's rows, possibly with a half-written last line). The resumed run reads them back and computes
the rest; every derived number (gaps, their standard error, the alarm, the verdict against the exact value) must
then be the uninterrupted run's, in particular when the cut falls between the forward and the reverse row of one
chain length (the reported bug: the fresh pair's ``gap_single_stderr`` was paired over runs, the read-back one
combined unpaired).
"""

import json
import shutil
import warnings

import jax
import numpy as np
import pytest

from bdmc import RunHealthWarning
from bdmc.checks.sandwich import plan_sandwich, simulated_data
from bdmc.experiments import sandwich_runs
from bdmc.experiments.store import DamagedRowWarning
from bdmc.models import GaussianMean

MODEL, SEED, STEPS, RUNS = GaussianMean(n=5, dim=2), 3, [10, 20], 4
SETTINGS = {"command": "sandwich", "model": "gaussian-mean", "options": {"n": 5, "dim": 2}, "seed": SEED,
            "runs": RUNS, "schedule": "auto", "method": "ais", "particles": 1, "x64": True}
# Every number a resumed row gets from the rows it is paired with, or the run-level verdict marks on it.
DERIVED = ["gap", "gap_single", "gap_single_stderr", "alarm_p", "certified_b3"]
STORED = ["value", "stderr", "mean_single", "stderr_single", "weight_ess", "khat", "exact"]


def run(out):
    key = jax.random.key(SEED)
    plan = plan_sandwich(key, MODEL, *simulated_data(key, MODEL), method="ais")
    store = sandwich_runs.open_sandwich_store(out, SETTINGS, overwrite=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)  # 4 runs: untrusted stderrs are expected here
        return sandwich_runs.run_sandwich(key, MODEL, plan, store=store, steps=STEPS, num_runs=RUNS, progress=False)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    return out, run(out)


def cut(source, target, lines: int, partial: bool = False):
    """``target``: ``source``'s store as a kill after its first ``lines`` rows (and half the next) leaves it."""
    shutil.copytree(source, target)
    text = (source / "sandwich.csv").read_text().splitlines(keepends=True)
    kept = "".join(text[:1 + lines]) + (text[1 + lines][: len(text[1 + lines]) // 2] if partial else "")
    (target / "sandwich.csv").write_text(kept)


def assert_close(got, want, where="verdict"):
    """Nested JSON-like values equal, numbers to 1e-9 relative (the same computation on the same floats)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12, nan_ok=True), where
    else:
        assert got == want, where


def assert_same_run(resumed, fresh, out, fresh_out):
    a, b = resumed.table, fresh.table
    assert list(zip(a["num_steps"], a["direction"], strict=False)) == list(
        zip(b["num_steps"], b["direction"], strict=False))
    for column in DERIVED + STORED:
        np.testing.assert_allclose(a[column].to_numpy(float), b[column].to_numpy(float), rtol=1e-9, atol=1e-12,
                                   err_msg=column)
    assert list(a["alarm"]) == list(b["alarm"]) and list(a["stderr_trusted"]) == list(b["stderr_trusted"])
    assert_close(resumed.verdict.to_dict(), fresh.verdict.to_dict())
    assert resumed.result.against_exact.lines() == fresh.result.against_exact.lines()
    # The store itself: the rewritten CSV and the saved verdict are the uninterrupted run's.
    saved, want = (json.loads((d / "settings.json").read_text()) for d in (out, fresh_out))
    assert_close(saved["verdict"], want["verdict"])
    assert saved["contents"] == want["contents"] and saved["settings"]["steps"] == want["settings"]["steps"]


@pytest.mark.parametrize("lines", range(2 * len(STEPS)))
def test_a_run_resumed_after_any_cut_gives_the_uninterrupted_runs_numbers(uninterrupted, tmp_path, lines):
    fresh_out, fresh = uninterrupted
    cut(fresh_out, tmp_path / "cut", lines)
    resumed = run(tmp_path / "cut")
    assert resumed.new == 2 * len(STEPS) - lines
    assert_same_run(resumed, fresh, tmp_path / "cut", fresh_out)


def test_a_row_cut_mid_write_between_the_two_directions_is_recomputed_to_the_same_numbers(uninterrupted, tmp_path):
    fresh_out, fresh = uninterrupted
    cut(fresh_out, tmp_path / "cut", 1, partial=True)  # T = 10 forward saved, its reverse row half written
    with pytest.warns(DamagedRowWarning, match="line 3"):
        resumed = run(tmp_path / "cut")
    assert resumed.new == 3
    assert_same_run(resumed, fresh, tmp_path / "cut", fresh_out)


def test_the_check_sees_a_pair_statistic_that_depends_on_how_the_row_was_obtained(uninterrupted, tmp_path):
    """Negative control: a resumed gap stderr off in the 4th digit (paired against unpaired) is caught."""
    fresh_out, fresh = uninterrupted
    cut(fresh_out, tmp_path / "cut", 1)
    resumed = run(tmp_path / "cut")
    resumed.table.loc[:1, "gap_single_stderr"] *= 1 + 1e-4
    with pytest.raises(AssertionError, match="gap_single_stderr"):
        assert_same_run(resumed, fresh, tmp_path / "cut", fresh_out)
