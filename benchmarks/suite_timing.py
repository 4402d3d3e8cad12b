"""Time the test suites as docs/contributing.md and .ci/run quote them: a fresh clone, empty caches, one row per run.

Each row of ``benchmarks/results/suite_timing/rows.jsonl`` is one run of one suite: its command, the tests it ran
(passed, skipped, failed, errors, from pytest's last line), its wall seconds, whether it ran in a fresh clone with
empty caches, and the stamp of every row (commit, clean tree, date, load, machine). The page ``README.md`` lists
them; docs/contributing.md and .ci/run quote the latest row of each suite, and ``tests/test_doc_figures.py``
checks that they do.

    python benchmarks/suite_timing.py --suite default        # clone HEAD, run the default suite there, store it
    python benchmarks/suite_timing.py --suite float32-core   # the core again in float32, as CI runs it
    python benchmarks/suite_timing.py --suite slow           # the slow suite
    python benchmarks/suite_timing.py --suite default --summary "1634 passed, 4 skipped in 613.21s (0:10:13)"
    python benchmarks/suite_timing.py --render

``--suite`` clones the committed HEAD of this checkout into a temporary folder (a clean tree: uncommitted changes
are not timed), points ``BDMC_CACHE_DIR`` (bdmc's caches: JAX's compilation cache, the Stan builds, WebPPL's
install) at an empty temporary folder, runs the suite's command there and records pytest's summary line and the
wall time. ``--summary`` records a run made by hand instead (the line pytest printed last; ``--seconds`` when it
is not in the line, ``--not-fresh`` when it did not start from a fresh clone with empty caches): the row's commit
is this checkout's, so run it from the checkout that was timed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import ROOT, append_row, tree_state  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "suite_timing"
# suite -> (its command, as docs/contributing.md and .ci/run give it; the pytest workers it runs on)
SUITES = {
    "default": ("python3 -m pytest -q", 2),
    "float32-core": ("BDMC_TEST_DTYPE=float32 python3 -m pytest -q tests/contracts tests/core tests/kernels "
                     "tests/estimators tests/checks", 2),
    "slow": ("python3 -m pytest -q -m slow", 2),
}
COUNTS = ("passed", "skipped", "failed", "errors")


def parse_summary(line: str) -> dict:
    """pytest's last line as counts and seconds: ``"1634 passed, 4 skipped in 613.21s (0:10:13)"``.

    Parameters
    ----------
    line : str

    Returns
    -------
    dict
        ``passed``, ``skipped``, ``failed``, ``errors`` (0 where absent), ``tests`` (their sum) and ``seconds``
        (None where the line has no time).
    """
    found = {k: int(m.group(1)) if (m := re.search(rf"(\d+) {k.rstrip('s')}s?\b", line)) else 0 for k in COUNTS}
    if not any(found.values()):
        raise ValueError(f"not a pytest summary line: {line!r}")
    seconds = re.search(r" in ([\d.]+)s\b", line)
    return {**found, "tests": sum(found.values()), "seconds": float(seconds.group(1)) if seconds else None}


def run_fresh(suite: str) -> tuple[dict, str]:
    """Run ``suite`` in a fresh clone of HEAD with empty caches: its parsed summary and the commit it ran at."""
    command, _ = SUITES[suite]
    commit, _ = tree_state()
    with tempfile.TemporaryDirectory(prefix="bdmc-suite-") as tmp:
        clone, cache = Path(tmp) / "clone", Path(tmp) / "cache"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        # The clone's own package, not the editable install of the checkout it came from.
        env = {**os.environ, "BDMC_CACHE_DIR": str(cache),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(clone / "src"), os.environ.get("PYTHONPATH")]))}
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        began = time.monotonic()
        done = subprocess.run(command, shell=True, cwd=clone, env=env, capture_output=True, text=True)
        wall = time.monotonic() - began
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    summary = parse_summary(lines[-1].strip("= "))
    for line in lines:  # a failing run names its failures (pytest's short summary)
        if line.startswith(("FAILED", "ERROR")):
            print(line)
    return {**summary, "seconds": summary["seconds"] or wall, "wall_seconds": wall}, commit


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", choices=list(SUITES))
    parser.add_argument("--summary", help="record a run made by hand: the summary line pytest printed last")
    parser.add_argument("--seconds", type=float, help="its wall seconds, if the summary line has none")
    parser.add_argument("--not-fresh", action="store_true", help="the run did not start from a fresh clone "
                                                                 "with empty caches")
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("suite_timing")
        return
    if not args.suite:
        parser.error("--suite is required (or --render)")
    command, workers = SUITES[args.suite]
    if args.summary:
        found = parse_summary(args.summary)
        found["seconds"] = found["seconds"] if found["seconds"] is not None else args.seconds
        if found["seconds"] is None:
            parser.error("the summary line has no time: give --seconds")
        fresh = not args.not_fresh
    else:
        found, _ = run_fresh(args.suite)
        fresh = True
    row = {"suite": args.suite, "command": command, "workers": workers, "fresh_clone_empty_caches": fresh,
           **found, "how": "by hand (--summary)" if args.summary else "benchmarks/suite_timing.py --suite"}
    append_row(OUT / "rows.jsonl", row)
    print(f"{args.suite}: {found['tests']} tests ({found['passed']} passed, {found['skipped']} skipped, "
          f"{found['failed']} failed, {found['errors']} errors) in {found['seconds']:.0f} s")
    write_folder("suite_timing")


if __name__ == "__main__":
    main()
