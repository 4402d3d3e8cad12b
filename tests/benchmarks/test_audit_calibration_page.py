"""The audit calibration page says which programs its rows cover and where NumPyro's fails ran, from the rows.

``benchmarks/pages/audit_calibration/coverage_values.py`` reads the stored audits and ``calibration_programs.py``'s
list of programs: a program without rows is named as not covered, and the fails are counted by the machine their
rows record. Checked on the stored rows and on copies with a row added or moved.
"""

import json
import shutil

import pytest
from helpers import import_benchmark

pages = import_benchmark("harness.pages")
NAME = "audit_calibration"


def values_of(folder):
    return pages.folder_values(NAME, folder)


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / NAME
    shutil.copytree(pages.RESULTS / NAME, folder)
    return folder


def rows_of(folder):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def write(folder, rows):
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_stored_page_names_the_programs_it_leaves_out():
    stored = (pages.RESULTS / NAME / "README.md").read_text()
    got = values_of(pages.RESULTS / NAME)
    covered = {r["program"] for r in rows_of(pages.RESULTS / NAME)}
    for program in ("counts", "mixture", "funnel", "constrained"):
        assert (program in covered) == (f"`{program}`" in got["covered_list"])
        assert (program in covered) != (f"`{program}`" in got["not_covered"])
    assert got["not_covered"] in stored and got["covered_list"] in stored


def test_numpyro_fails_are_counted_by_machine():
    rows = [r for r in rows_of(pages.RESULTS / NAME) if r["sampler"] == "numpyro-nuts"
            and r["program"] in ("regression", "hierarchical", "logistic")]  # the added classes are counted apart
    lent = [r for r in rows if "lent machine" in r.get("machine", "")]
    got = values_of(pages.RESULTS / NAME)
    assert got["np_lent_audits"] == len(lent) and got["np_rest_audits"] == len(rows) - len(lent)
    assert got["np_lent_fails"] == sum(r["verdict"] == "fail" for r in lent)
    assert got["np_lent_fails"] + got["np_rest_fails"] == sum(r["verdict"] == "fail" for r in rows)


def test_a_new_program_and_a_moved_fail_change_the_page(copy):
    rows = [r for r in rows_of(copy) if r["program"] != "counts"]
    write(copy, rows)
    before = values_of(copy)
    fail = next(i for i, r in enumerate(rows) if r["sampler"] == "numpyro-nuts" and r["verdict"] == "fail")
    rows[fail] = {**rows[fail], "machine": "another (4 cores)"}
    write(copy, rows + [{**rows[-1], "program": "counts", "seed": 0}])
    after = values_of(copy)
    assert "`counts`" in after["covered_list"] and "`counts`" not in after["not_covered"]
    assert "`counts`" in before["not_covered"] and after["added_audits"] == before["added_audits"] + 1
    assert (after["np_lent_fails"], after["np_rest_fails"]) == (before["np_lent_fails"] - 1,
                                                                 before["np_rest_fails"] + 1)
