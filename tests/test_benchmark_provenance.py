"""Every benchmark script writes its results through ``benchmarks/harness/store.py``, and ``benchmarks/README.md``
lists every script.

The store is the one writer: ``append_row`` appends a row as one synced JSON line stamped with its provenance
(commit, clean tree, date, load, machine; checked below on a real file), ``write_text`` replaces any other file
atomically. A script that writes a file any other way (``open`` for writing, ``Path.write_text``, ``json.dump``,
``to_csv`` to a path, NumPy's savers, ``os.open``, the library's ``RunStore``, or an ``append_row`` /
``write_text`` of its own) fails, unless ``ALLOWED`` names that function with its reason. Figures
(matplotlib's ``savefig``) are images, not rows, and are exempt. Static, from the scripts' syntax trees: nothing
is imported or run.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from helpers import import_benchmark

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
HARNESS = ("harness", "harness.store")

# (script, function) -> why its own writer is not a results writer. "<module>" is code outside any function.
ALLOWED = {
    ("same_numbers.py", "main"): "a fingerprint written to the path the user gives and compared key by key with "
                                 "another checkout's; it runs with PYTHONPATH at that checkout's src/, whose bdmc may "
                                 "predate what harness.store imports",
    ("audit_quick_timing.py", "write_programs"): "the audited programs' data (.npz) in a temporary folder: inputs "
                                                 "of `bdmc audit`, not results",
    ("posteriordb_check.py", "export"): "copies posteriordb's files into benchmarks/data/posteriordb/ (the shipped "
                                        "inputs: its licence, reference draws in NumPy's format), not results",
    ("posteriordb_check.py", "ship_draws"): "copies posteriordb's reference draws into benchmarks/data/posteriordb/ "
                                             "(shipped data, not a result)",
    ("posteriordb_check.py", "stan_phase"): "the PyStan child process hands its log densities to its parent in a "
                                            "temporary file; it imports no bdmc, which harness.store does",
}

WRITE_MODE = re.compile(r"[wax+]")
DUMPERS = {"dump", "save", "savez", "savez_compressed", "savetxt", "tofile", "write_bytes", "write_text"}
FRAME_WRITERS = {"to_csv", "to_json", "to_parquet", "to_excel", "to_pickle", "to_markdown", "to_html"}
LIBRARY_WRITERS = {"RunStore", "append_lines", "write_atomic", "write_json_atomic"}
STORE_NAMES = {"append_row", "write_text"}


def _mode(call: ast.Call, position: int) -> ast.expr | None:
    given = [k.value for k in call.keywords if k.arg == "mode"]
    return given[0] if given else call.args[position] if len(call.args) > position else None


def _writes_by_mode(call: ast.Call, position: int) -> bool:
    mode = _mode(call, position)
    if mode is None:
        return False  # open's default mode reads
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or bool(WRITE_MODE.search(mode.value))


def _harness_aliases(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound to the harness modules (``import harness.store``, ``from harness import store``), and the
    names imported from them."""
    modules, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name in HARNESS}
        elif isinstance(node, ast.ImportFrom) and node.module in HARNESS:
            names |= {a.asname or a.name for a in node.names}
            if node.module == "harness":
                modules |= {a.asname or a.name for a in node.names if a.name == "store"}
    return modules, names


def _writer(call: ast.Call, harness_modules: set[str], harness_names: set[str]) -> str | None:
    """What makes ``call`` a writer of its own, or None."""
    f = call.func
    if isinstance(f, ast.Name):
        if f.id == "open" and _writes_by_mode(call, 1):
            return "open() for writing"
        if f.id in LIBRARY_WRITERS:
            return f"{f.id}()"
        if f.id in STORE_NAMES and f.id not in harness_names:
            return f"{f.id}() not imported from harness.store"
        return None
    if not isinstance(f, ast.Attribute):
        return None
    receiver = f.value
    on_harness = (isinstance(receiver, ast.Name) and receiver.id in harness_modules) or (
        isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
        and receiver.value.id in harness_modules | {"harness"})
    if on_harness:
        return None
    if f.attr == "open":
        is_os = isinstance(receiver, ast.Name) and receiver.id == "os"
        if is_os or _writes_by_mode(call, 0):
            return f"{'os.open' if is_os else '.open'}() for writing"
    if isinstance(receiver, ast.Name) and receiver.id == "os" and f.attr in ("write", "fdopen", "replace"):
        return f"os.{f.attr}()"
    if isinstance(receiver, ast.Name) and receiver.id == "shutil" and f.attr.startswith(("copy", "move")):
        return f"shutil.{f.attr}()"
    if f.attr in DUMPERS:
        return f".{f.attr}()"
    if f.attr in FRAME_WRITERS and (call.args or any(k.arg in ("path_or_buf", "buf", "path", "excel_writer")
                                                      for k in call.keywords)):
        return f".{f.attr}(path)"
    if f.attr in LIBRARY_WRITERS:
        return f".{f.attr}()"
    return None


def own_writers(source: str) -> list[tuple[str, int, str]]:
    """(function, line, what) for every call that writes a file other than through harness.store."""
    tree = ast.parse(source)
    modules, names = _harness_aliases(tree)
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            defines = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            inner = child.name if defines and function == "<module>" else function
            if defines and child.name in STORE_NAMES:
                found.append((inner, child.lineno, f"defines its own {child.name}()"))
            if isinstance(child, ast.Call):
                what = _writer(child, modules, names)
                if what is not None:
                    found.append((function, child.lineno, what))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def scripts() -> list[Path]:
    """Every Python file of benchmarks/ but the store itself (harness/) and the stored results."""
    return sorted(p for p in BENCHMARKS.rglob("*.py")
                  if p.relative_to(BENCHMARKS).parts[0] not in ("harness", "results"))


def name(path: Path) -> str:
    return str(path.relative_to(BENCHMARKS))


def test_every_script_writes_through_harness_store():
    unexplained = [f"{name(p)}:{line} in {function}: {what}" for p in scripts()
                   for function, line, what in own_writers(p.read_text())
                   if (name(p), function) not in ALLOWED]
    assert not unexplained, "writers of their own (use harness.store's append_row / write_text):\n" + "\n".join(
        unexplained)


@pytest.mark.parametrize(("script", "function"), sorted(ALLOWED))
def test_allow_list_is_current(script, function):
    """Each allowed function exists and writes on its own (else its entry is stale)."""
    assert any(f == function for f, _, _ in own_writers((BENCHMARKS / script).read_text())), ALLOWED[
        (script, function)]


def test_negative_control():
    """The check flags each way a script could write rows of its own, and passes the store's calls."""
    appender = ("import json\ndef _append(path, row):\n    with open(path, 'a') as f:\n"
                "        f.write(json.dumps(row) + '\\n')\n")
    assert own_writers(appender) == [("_append", 3, "open() for writing")]
    flagged = [
        "import os\nfd = os.open('rows.jsonl', os.O_WRONLY | os.O_APPEND)\n",
        "from pathlib import Path\nPath('table.md').write_text('| a |')\n",
        "import json\njson.dump({'x': 1}, open('out.json', 'w'))\n",
        "table.to_csv('out.csv', index=False)\n",
        "with path.open('a') as f:\n    pass\n",
        "import numpy as np\nnp.savez('out.npz', x=1)\n",
        "from bdmc.experiments.store import RunStore\nstore = RunStore('out', key=(), settings={}, compare=())\n",
        "from peers import append_row\nappend_row('rows.jsonl', {})\n",
        "def append_row(path, row):\n    pass\n",
        "def write_text(path, text):\n    pass\nwrite_text('a.md', '')\n",
        "open('rows.jsonl', mode)\n",
    ]
    for source in flagged:
        assert own_writers(source), source
    passed = [
        "from harness.store import append_row, load_rows\nappend_row('rows.jsonl', {'x': 1})\n",
        "from harness.store import write_text\nwrite_text('table.md', table.to_csv(index=False))\n",
        "import harness.store\nharness.store.write_text('a.md', '')\n",
        "from harness import store\nstore.append_row('rows.jsonl', {})\n",
        "text = open('rows.jsonl').read()\nrows = [json.loads(x) for x in open(p, 'r')]\n",
        "fig.savefig('figure.png', dpi=120)\n",
        "print('no rows')\n",
    ]
    for source in passed:
        assert not own_writers(source), source


def test_append_row_stamps_each_row(tmp_path):
    store = import_benchmark("harness.store")
    path = tmp_path / "rows.jsonl"
    store.append_row(path, {"x": 1})
    store.append_row(path, {"x": 2, "commit": "given"})
    lines = path.read_text().splitlines()
    assert [json.loads(line)["x"] for line in lines] == [1, 2]
    first, second = store.load_rows(path)
    assert {"commit", "clean_tree", "date", "load", "machine"} <= set(first)
    assert first["commit"] == store.tree_state()[0]
    assert second["commit"] == "given"  # a row's own field wins


def test_every_results_file_names_its_commit():
    """A results data file carries its rows' commit, or legacy_provenance.json gives the commits that added and
    last changed it (recovered from git history; rerun ``python benchmarks/legacy_provenance.py``)."""
    legacy_provenance = import_benchmark("legacy_provenance")
    out, results = legacy_provenance.OUT, legacy_provenance.RESULTS
    legacy = json.loads(out.read_text())["files"]
    files = [p for p in results.rglob("*") if p.suffix in (".csv", ".json", ".jsonl") and p.is_file() and p != out]
    missing = [str(p.relative_to(results)) for p in files
               if not legacy_provenance.carries_commit(p) and str(p.relative_to(results)) not in legacy]
    assert not missing, f"results files with no commit of their own and no legacy_provenance.json entry: {missing}"
    gone = [entry for entry in legacy if not (results / entry).exists()]
    assert not gone, f"legacy_provenance.json lists files that are gone: {gone}"
    assert all(e["added_in"] and e["last_changed_in"] for e in legacy.values())


def test_stored_rows_still_load():
    """Every stored JSON-lines file loads through the store (the pages' data: its format did not change)."""
    store = import_benchmark("harness.store")
    files = sorted((BENCHMARKS / "results").rglob("*.jsonl"))
    assert files
    for path in files:
        rows = store.load_rows(path)
        assert rows and all(isinstance(r, dict) for r in rows), path


# ----------------------------------------------------------------------------------------- the README
README = BENCHMARKS / "README.md"
LISTED = re.compile(r"^\| `([^`]+\.(?:py|sh))` \|", re.M)


def listed_scripts(text: str) -> set[str]:
    """The scripts the README's tables list: a row's first cell, a path relative to benchmarks/."""
    return set(LISTED.findall(text))


def readme_scripts() -> set[str]:
    """What the README must list: every script and shell script of benchmarks/ and its script folders."""
    return {name(p) for p in scripts() if p.relative_to(BENCHMARKS).parts[0] != "pages"} | {
        name(p) for p in BENCHMARKS.rglob("*.sh")}


def test_readme_lists_every_script():
    listed = listed_scripts(README.read_text())
    missing = sorted(readme_scripts() - listed)
    assert not missing, f"benchmarks/README.md does not list: {missing}"
    gone = sorted(listed - readme_scripts())
    assert not gone, f"benchmarks/README.md lists scripts that do not exist: {gone}"


def test_readme_check_fails_on_a_missing_script():
    text = README.read_text()
    assert "| `peers.py` |" in text
    assert "peers.py" not in listed_scripts(text.replace("| `peers.py` |", "| peers |"))
