"""Every benchmark script that writes result rows stamps them with ``benchmarks/provenance.py``'s fields (commit,
clean tree, date, load, machine).

Static, from the scripts' syntax trees (nothing is imported or run): a script writes results when it calls a
writer (``json.dump``/``json.dumps``, ``.to_csv``, ``append_row``, a ``RunStore``); it stamps them when it calls
``stamp()`` or writes through ``peers.append_row``, which stamps every row it appends (checked below). A script
that writes no result rows is allow-listed with its reason.
"""

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# Scripts that call a writer but write no result rows.
ALLOWED = {
    # renders the time_to_rmse pages from stored rows (json.dumps only compares settings); time_to_rmse.py
    # writes and stamps the rows
    "time_to_rmse_report.py": "a table renderer over stored rows",
    # a fingerprint of computed numbers, written to a path the user gives and compared key by key with another
    # checkout's: a provenance entry would differ between any two runs, and its commit would name this
    # checkout, not the bdmc under test (run with PYTHONPATH pointing at another checkout's src/)
    "same_numbers.py": "a fingerprint compared key by key, not a results row",
    # writes, from git history, the provenance of results files that predate stamp(): an index, not a row
    "legacy_provenance.py": "an index of older files' commits, recovered from git history",
}

WRITERS = {"dump", "dumps", "to_csv", "append_row", "RunStore"}


def _called(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def writes_rows(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _called(n) in WRITERS for n in ast.walk(tree))


def stamps(tree: ast.AST) -> bool:
    """A ``stamp()`` call, or ``append_row`` imported from peers (which stamps; see the test below)."""
    return any(isinstance(n, ast.Call) and _called(n) == "stamp" and not n.args for n in ast.walk(tree)) or any(
        isinstance(n, ast.ImportFrom) and n.module == "peers" and any(a.name == "append_row" for a in n.names)
        for n in ast.walk(tree))


def unstamped(source: str) -> bool:
    if not any(w in source for w in WRITERS):  # no writer named: nothing to parse
        return False
    tree = ast.parse(source)
    return writes_rows(tree) and not stamps(tree)


def scripts() -> list[Path]:
    return sorted(BENCHMARKS.rglob("*.py"))


def test_every_benchmark_that_writes_rows_stamps_them():
    missing = [str(p.relative_to(BENCHMARKS)) for p in scripts()
               if str(p.relative_to(BENCHMARKS)) not in ALLOWED and unstamped(p.read_text())]
    assert not missing, f"write result rows without provenance.stamp(): {missing}"


def test_peers_append_row_stamps_rows():
    tree = ast.parse((BENCHMARKS / "peers.py").read_text())
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "append_row"]
    assert stamps(fn)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_allow_list_is_current(name):
    """Each allow-listed script exists and would be flagged without its entry (else the entry is stale)."""
    assert unstamped((BENCHMARKS / name).read_text())


def test_negative_control():
    plain = "import json\nrow = {'x': 1}\nwith open('rows.jsonl', 'a') as f:\n    f.write(json.dumps(row))\n"
    assert unstamped(plain)
    assert unstamped("table.to_csv('out.csv')\n")
    assert unstamped("from bdmc.experiments.store import RunStore\nstore = RunStore('out')\n")
    assert unstamped("from peers import load_rows\nappend_row('rows.jsonl', {})\n")
    assert not unstamped(plain.replace("{'x': 1}", "{'x': 1, **stamp()}"))
    assert not unstamped("from peers import append_row, load_rows\nappend_row('rows.jsonl', {})\n")
    assert not unstamped("print('no rows')\n")


def test_every_results_file_names_its_commit():
    """A results data file carries its rows' commit, or legacy_provenance.json gives the commits that added and
    last changed it (recovered from git history; rerun ``python benchmarks/legacy_provenance.py``)."""
    import json
    import sys

    sys.path.insert(0, str(BENCHMARKS))
    try:
        from legacy_provenance import OUT, RESULTS, carries_commit
    finally:
        sys.path.remove(str(BENCHMARKS))
    legacy = json.loads(OUT.read_text())["files"]
    files = [p for p in RESULTS.rglob("*") if p.suffix in (".csv", ".json", ".jsonl") and p.is_file() and p != OUT]
    missing = [str(p.relative_to(RESULTS)) for p in files
               if not carries_commit(p) and str(p.relative_to(RESULTS)) not in legacy]
    assert not missing, f"results files with no commit of their own and no legacy_provenance.json entry: {missing}"
    gone = [name for name in legacy if not (RESULTS / name).exists()]
    assert not gone, f"legacy_provenance.json lists files that are gone: {gone}"
    assert all(e["added_in"] and e["last_changed_in"] for e in legacy.values())
