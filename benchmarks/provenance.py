"""What every results row records about how it was obtained: the commit, whether the tree was clean, the date,
the machine's load and the machine.

    from provenance import stamp
    row = {..., **stamp()}
"""

from __future__ import annotations

import functools
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
