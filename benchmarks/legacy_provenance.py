"""Provenance, recovered from git history, of the stored results files whose rows carry none of their own.

Rows written since ``provenance.stamp()`` existed carry their commit, whether the tree was clean, the date and
the machine's load. Older results files do not; for each of those (a tracked ``.csv``, ``.json`` or ``.jsonl``
under ``benchmarks/results/`` with no ``commit`` field or column) this writes, to
``benchmarks/results/legacy_provenance/legacy_provenance.json``, the commit that added the file and the last commit
that changed it (following renames), with their dates, and renders the folder's page. What git cannot say is written
as unknown (null): whether the tree was clean when the rows were computed, and the machine's load.
``tests/test_benchmark_provenance.py`` requires every results file to carry its own commit or an entry here, so a
new unstamped file fails the default suite.

    python benchmarks/legacy_provenance.py          # rewrite the file from git history (needs a git checkout)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.pages import write_folder
from harness.store import write_text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "legacy_provenance" / "legacy_provenance.json"
SUFFIXES = (".csv", ".json", ".jsonl")


def carries_commit(path: Path) -> bool:
    """The file's rows name their commit: a JSON ``"commit"`` field or a CSV ``commit`` column."""
    text = path.read_text(errors="replace")
    if path.suffix == ".csv":
        return "commit" in text.splitlines()[0].split(",") if text else False
    return '"commit"' in text


def results_files() -> list[Path]:
    """Every results data file under ``benchmarks/results`` (what git tracks, or the tree without git)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "benchmarks/results"], capture_output=True,
                            text=True).stdout.split()
    paths = [ROOT / p for p in listed] if listed else list(RESULTS.rglob("*"))
    return sorted(p for p in paths if p.suffix in SUFFIXES and p.is_file() and p != OUT)


def _git_log(path: Path, *extra: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "-C", str(ROOT), "log", "--follow", "--format=%h %cI", *extra, "--",
                          str(path)],
                         capture_output=True, text=True).stdout.split("\n")
    return [tuple(line.split(" ", 1)) for line in out if line.strip()]


def main() -> None:
    entries = {}
    for path in results_files():
        if carries_commit(path):
            continue
        history = _git_log(path)
        if not history:
            continue  # not committed yet: its writer must stamp it
        (added, added_date), (last, last_date) = history[-1], history[0]
        entries[str(path.relative_to(RESULTS))] = {
            "added_in": added, "added_date": added_date, "last_changed_in": last, "last_changed_date": last_date,
            "clean_tree": None, "load": None}
    note = ("Recovered from git history for results files whose rows carry no provenance of their own: the commit "
            "that added each file and the last that changed it (its rows were committed between the two, computed "
            "on the development machine or, where the results page says so, a lent one); whether the tree was "
            "clean and the machine's load were not recorded (null). A directory's provenance.jsonl, where there "
            "is one, stamps the runs made since.")
    write_text(OUT, json.dumps({"note": note, "files": entries}, indent=1) + "\n")
    write_folder("legacy_provenance")
    print(f"{OUT.relative_to(ROOT)}: {len(entries)} files")


if __name__ == "__main__":
    main()
