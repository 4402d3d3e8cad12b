"""The weight-health page chooses its rule on the even seeds and scores it on the odd ones.

``benchmarks/pages/weight_health/values.py`` computes the page from the stored rows: the choice (every candidate's
score, the chosen rule) must read only the even seeds' rows, and the held-out figures only the odd seeds'. Checked
by changing rows in a copy of the results folder: rows of the held-out half leave the choice alone and move the
held-out figures; rows of the choosing half move the choice's table.
"""

import json
import shutil

import pytest
from helpers import import_benchmark

pages = import_benchmark("harness.pages")
NAME = "weight_health"


def values_of(folder):
    return pages.folder_values(NAME, folder)


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / NAME
    shutil.copytree(pages.RESULTS / NAME, folder)
    return folder


def rewrite(folder, parity):
    """Every row of the seeds of ``parity`` made to warn by k-hat under every k-hat rule, and to be 2 nats off."""
    path = folder / "rows.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in rows:
        if r["seed"] % 2 == parity:
            r.update(khat=5.0, error=2.0, value=r["exact"] + 2.0)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_page_states_the_held_out_miss_rate():
    stored = (pages.RESULTS / NAME / "README.md").read_text()
    got = values_of(pages.RESULTS / NAME)
    assert got["held_off"] > 0 and got["all_off"] > got["held_off"]
    assert f"the rule misses {got['held_miss']:.0%} of the estimates one nat or more off" in stored
    assert f"it misses {got['all_miss']:.0%} ({got['all_missed']} of {got['all_off']})" in stored
    assert got["selection_seeds"] + got["held_out_seeds"] == got["seeds"]


def test_held_out_rows_leave_the_choice_alone(copy):
    before = values_of(pages.RESULTS / NAME)
    rewrite(copy, parity=1)
    after = values_of(copy)
    for name in ("chosen", "chosen_score", "runner_up", "runner_up_score", "selection_rules"):
        assert after[name] == before[name], name
    assert after["held_out_rules"] != before["held_out_rules"]
    assert after["held_off"] == after["held_out_seeds"] * (before["estimates"] // before["seeds"])


def test_choosing_rows_move_the_choice(copy):
    before = values_of(pages.RESULTS / NAME)
    rewrite(copy, parity=0)
    after = values_of(copy)
    assert after["selection_rules"] != before["selection_rules"]
    assert after["held_out_table"] == before["held_out_table"] or after["chosen"] != before["chosen"]
