"""What every results row records about how it was obtained: the commit, whether the tree was clean, the date,
the machine's load and the machine.

    from provenance import stamp
    row = {..., **stamp()}

A shell-driven run stamps what it wrote from the command line: ``python benchmarks/provenance.py FILE
[KEY=VALUE ...]`` appends one JSON line (the fields given, then ``stamp()``) to FILE; with ``--rows CSV`` it also
records the (condition, num_steps) estimates the CSV holds, so successive lines say which rows each run added.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def tree_state() -> tuple[str, bool | None]:
    """The commit of this checkout and whether its tree is clean (benchmarks included; the results folder, which
    the runs themselves write, excepted). Read once per process, when its first row is stamped. A copied tree
    without git takes its commit from ``BDMC_BENCH_COMMIT`` (cleanliness then unknown: None)."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if not head:
        return os.environ.get("BDMC_BENCH_COMMIT", "unknown"), None
    dirty = subprocess.run(git + ["status", "--porcelain", "--", ".", ":!benchmarks/results"], capture_output=True,
                           text=True).stdout.strip()
    return head, not dirty


def stamp() -> dict:
    """The provenance fields of one row, taken now."""
    commit, clean = tree_state()
    return {"commit": commit, "clean_tree": clean, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load": os.getloadavg()[0], "machine": f"{platform.node()} ({os.cpu_count()} cores)"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Append one stamped JSON line to FILE.")
    parser.add_argument("file", type=Path)
    parser.add_argument("fields", nargs="*", help="KEY=VALUE pairs recorded before the stamp")
    parser.add_argument("--rows", type=Path, help="a runs.csv whose (condition, num_steps) estimates to record")
    args = parser.parse_args(argv)
    line = dict(field.split("=", 1) for field in args.fields)
    if args.rows is not None and args.rows.exists():
        with open(args.rows, newline="") as f:
            line["estimates"] = sorted({f"{r['condition']}@{r['num_steps']}" for r in csv.DictReader(f)})
    args.file.parent.mkdir(parents=True, exist_ok=True)
    with open(args.file, "a") as f:
        f.write(json.dumps({**line, **stamp()}) + "\n")


if __name__ == "__main__":
    main()
