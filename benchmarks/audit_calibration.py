"""The audit's false-fail rate on correct programs, under each PPL's own NUTS and bdmc's HMC.

Every audit is ``bdmc.auditing.audit(key(seed), program, sampler=..., quick=True)`` (``Budget.quick()``, level
0.01 split evenly over the statistical checks) on its own simulated data sets: the seed drives every data set
the audit simulates. The programs (``calibration_programs.py``) are correct, so every "fail" is a false alarm;
per sampler, the false-fail rate with its exact (Clopper-Pearson) 95% interval must be consistent with the
stated level 0.01.

Samplers and programs:

- ``numpyro-nuts``: NumPyro's NUTS on the NumPyro programs;
- ``pymc-nuts``: ``pymc.sample`` on the PyMC programs;
- ``stan-nuts``: Stan's NUTS through pystan on the Stan programs;
- ``hmc``: bdmc's HMC (step sizes and preconditioner from the audit's pilot) on the NumPyro programs.

The programs are ``calibration_programs.PROGRAMS`` (``--programs`` picks some); the page says which the stored rows
cover and which they leave out.

Cells are visited round-robin, seed by seed, so a run cut short has the same number of audits in every cell.
Each finished audit appends one JSON row to ``rows.jsonl`` (sampler, program, seed, verdict, every check's
verdict and numbers, the seconds, the commit, whether the tree was clean, the time and the load); a rerun skips
the (sampler, program, seed) triples already there.

    python benchmarks/audit_calibration.py --quick --seeds 67           # 67 seeds per (sampler, program) (resumes)
    python benchmarks/audit_calibration.py --quick --seeds 2 --samplers stan-nuts   # a first look
    python benchmarks/audit_calibration.py --table-only
    python benchmarks/audit_calibration.py --quick --seeds 67 --workers 14 --until 480   # a many-core machine

``--workers N`` starts N processes (fresh interpreters, never a fork after JAX has started), each taking every
N-th audit of the plan (``--shard i/N``) and appending to the same ``rows.jsonl`` (one atomic write per row);
``--until S`` stops starting audits S seconds after launch, so a run on a lent machine ends inside its lease.
A checkout without git (a copied tree) takes its commit from ``BDMC_BENCH_COMMIT`` (``harness.store.tree_state``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration_programs  # noqa: E402
from audit_power import numbers  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state, write_text  # noqa: E402

import bdmc  # noqa: E402
from bdmc.auditing import Budget, audit  # noqa: E402

bdmc.enable_x64()

LEVEL = 0.01
OUT = Path(__file__).resolve().parent / "results" / "audit_calibration"
# sampler -> the language of the programs it audits
SAMPLERS = {"numpyro-nuts": "NumPyro", "pymc-nuts": "PyMC", "stan-nuts": "Stan", "hmc": "NumPyro"}
LABELS = {"numpyro-nuts": "NumPyro's NUTS", "pymc-nuts": "PyMC's NUTS", "stan-nuts": "Stan's NUTS (pystan)",
          "hmc": "bdmc's HMC"}
CHECKS = ("simulator-density", "prior-normalization", "sbc", "geweke", "bdmc", "evidence")


def row_key(row: dict) -> tuple:
    return row["sampler"], row["program"], row["seed"]


class Runner:
    """Builds each program once and appends one row per audit."""

    def __init__(self, path: Path, budget: Budget, quick: bool):
        self.path, self.budget, self.quick = path, budget, quick
        self.commit, self.clean = tree_state()
        self.machine = f"{platform.node()} ({os.cpu_count()} cores)"
        self.done = {row_key(r) for r in load_rows(path)}
        self.programs: dict = {}

    def run(self, sampler: str, program: str, seed: int) -> None:
        if (sampler, program, seed) in self.done:
            return
        ppl = SAMPLERS[sampler]
        if (ppl, program) not in self.programs:
            self.programs[ppl, program] = calibration_programs.program(ppl, program)
        load_before = os.getloadavg()[0]
        began = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # One program object audited seed after seed: its compiled programs are kept (release=False).
            result = audit(jax.random.key(seed), self.programs[ppl, program], sampler=sampler, budget=self.budget,
                           level=LEVEL, name=f"{program} ({ppl})", release=False)
        seconds = time.perf_counter() - began
        row = {"sampler": sampler, "audited_sampler": result.sampler, "ppl": ppl, "program": program, "seed": seed,
               "verdict": result.verdict, "seconds": seconds, "quick": self.quick,
               "level": LEVEL, "level_per_check": result.settings["level_per_check"],
               "thin": (result.settings["sampler"].get("thinning") or {}).get("thin"),
               "checks": {c.name: {"verdict": c.verdict, "level": c.level, "statistic": c.statistic, **numbers(c)}
                          for c in result.checks},
               "commit": self.commit, "clean_tree": self.clean, "time": time.time(), "machine": self.machine,
               "load_before": load_before, "load_after": os.getloadavg()[0]}
        append_row(self.path, row)
        self.done.add(row_key(row))
        failed = [n for n, c in row["checks"].items() if c["verdict"] == "fail"]
        print(f"{sampler:13s} {program:13s} seed {seed:3d}  {row['verdict']:12s} {seconds:7.1f}s"
              f"{'  fails: ' + ', '.join(failed) if failed else ''}  load {load_before:.2f}", flush=True)


def plan(samplers, programs, seeds: int) -> list[tuple[str, str, int]]:
    """Round-robin: every (sampler, program) cell at seed 0, then every cell at seed 1, ..."""
    return [(s, p, seed) for seed in range(seeds) for s in samplers for p in programs]


def pending(tasks: list[tuple[str, str, int]], path: Path) -> list[tuple[str, str, int]]:
    """The tasks of the plan without a stored row: what a resumed run shards, so no worker is left with only
    finished audits while another runs the rest alone."""
    done = {row_key(r) for r in load_rows(path)}
    return [t for t in tasks if tuple(t) not in done]


def shard(tasks: list[tuple[str, str, int]], spec: str) -> list[tuple[str, str, int]]:
    """Shard ``i/N`` of the plan: worker i keeps to one (sampler, program) cell (cell i mod the number of cells,
    so it compiles one program) and takes every k-th of that cell's seeds, k the workers sharing the cell."""
    index, count = (int(x) for x in spec.split("/"))
    if count == 1:
        return tasks
    cells = list(dict.fromkeys((s, p) for s, p, _ in tasks))
    if count < len(cells):
        return [t for i, t in enumerate(tasks) if i % count == index]
    cell = cells[index % len(cells)]
    sharing = len(range(index % len(cells), count, len(cells)))
    mine = [t for t in tasks if (t[0], t[1]) == cell]
    return mine[index // len(cells)::sharing]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Budget.quick() audits (the issue's setting)")
    parser.add_argument("--seeds", type=int, default=67, help="seeds per (sampler, program) cell")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    parser.add_argument("--programs", nargs="+", default=list(calibration_programs.PROGRAMS),
                        choices=list(calibration_programs.PROGRAMS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--workers", type=int, default=1, help="processes, each running every N-th audit")
    parser.add_argument("--shard", default="0/1", help="i/N: run only the audits whose plan index is i mod N")
    parser.add_argument("--tasks", type=Path, default=None, help=argparse.SUPPRESS)  # a worker's plan, from --workers
    parser.add_argument("--until", type=float, default=None, help="start no audit after this many seconds")
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("audit_calibration")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    if args.workers > 1:
        # The workers shard what is left, read once here, so each holds the same list whatever rows the others
        # write meanwhile; the list lies outside the tree (an untracked file would mark every row's tree not clean).
        with tempfile.TemporaryDirectory() as tmp:
            tasks = Path(tmp) / "pending.json"
            write_text(tasks, json.dumps(pending(plan(args.samplers, args.programs, args.seeds), path)))
            run_workers(args, [*(argv if argv is not None else sys.argv[1:]), "--tasks", str(tasks)])
    else:
        began = time.monotonic()
        runner = Runner(path, Budget.quick() if args.quick else Budget.default(), args.quick)
        tasks = ([tuple(t) for t in json.loads(args.tasks.read_text())] if args.tasks is not None
                 else plan(args.samplers, args.programs, args.seeds))
        for sampler, program, seed in shard(tasks, args.shard):
            if args.until is not None and time.monotonic() - began > args.until:
                break
            runner.run(sampler, program, seed)
    write_folder("audit_calibration", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if args.shard == "0/1" and (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


def run_workers(args, argv: list[str]) -> None:
    """Start ``args.workers`` fresh interpreters, one shard each, one thread each; wait for all."""
    passed = [a for i, a in enumerate(argv)
              if a not in ("--workers",) and (i == 0 or argv[i - 1] != "--workers") and not a.startswith("--workers=")]
    env = {**os.environ, "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1").strip(),
           "OMP_NUM_THREADS": "1", "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    procs = [subprocess.Popen([sys.executable, __file__, *passed, "--shard", f"{i}/{args.workers}"], env=env)
             for i in range(args.workers)]
    for proc in procs:
        proc.wait()


if __name__ == "__main__":
    main()
