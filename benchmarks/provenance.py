"""Stamp a shell-driven run: ``python benchmarks/provenance.py FILE [KEY=VALUE ...]`` appends one row to FILE
through ``harness.store.append_row`` (the fields given, then the commit, clean tree, date, load and machine);
with ``--rows CSV`` it also records the (condition, num_steps) estimates the CSV holds, so successive lines say
which rows each run added. A script stamps its rows itself: ``from harness.store import append_row``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from harness.store import append_row


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
    append_row(args.file, line)


if __name__ == "__main__":
    main()
