"""Whose evidence, and whose error bars, are honest: other tools' log p(y) calibrated against bdmc's ground truth.

For each model of ``calibration_models.py`` and each data set i (simulated from ``fold_in(key(0), i)``, so any one
reruns alone), the truth is computed once (bdmc's AIS sandwich from the latent that simulated the data, T = 1,000,
16 runs each way; its gap is the truth's own uncertainty) and every tool runs at its default settings and at one
larger budget (``BUDGETS``). Tools are interleaved data set by data set, so load hits them alike; every row is
appended as it finishes, with its commit, load and time, and a rerun resumes. The page
(``results/calibrate_tools/``) is rendered from the rows by ``bdmc.calibration.Calibration``: bias, RMSE,
coverage of the stated ± at 68% and 95% with Clopper-Pearson intervals, the verdict at level 0.01, the worst
data sets.

    python benchmarks/calibrate_tools.py --datasets 50                 # every tool
    python benchmarks/calibrate_tools.py --datasets 50 --tools dynesty nautilus ultranest   # a second process
    python benchmarks/calibrate_tools.py --datasets 50 --workers 2      # on 2 Dask worker processes
    python benchmarks/calibrate_tools.py --quick --workers 2            # a trial: K = 2, default budgets
    python benchmarks/calibrate_tools.py --render
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import jax

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import calibration_models  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402
from bdmc.caching import cached  # noqa: E402
from bdmc.calibration import adapters  # noqa: E402
from bdmc.calibration.run import TRUTH_COLUMNS, calibration_row  # noqa: E402

bdmc.enable_x64()

OUT = HERE / "results" / "calibrate_tools"
KEY = jax.random.key(0)
TRUTH_STEPS, TRUTH_RUNS = 1000, 16
# (default, larger): the knob a user turns for accuracy; None is the tool's own default.
BUDGETS = {
    "bdmc-ais": (1000, 4000),          # T, 16 runs (bdmc's defaults: T = 1,000)
    "bdmc-tsmc": (100, 400),           # temperatures, 16 runs (default 100)
    "blackjax": (1000, 4000),          # particles
    "dynesty": (500, 2000),            # nlive (default 500)
    "nautilus": (500, 2000),           # n_live (default 2,000: reduced, 30-190 s a run here)
    "ultranest": (400, 800),           # min_num_live_points (default 400; 1,600 would take ~4x: 20-90 s a run here)
    "pymc-smc": (2000, 8000),          # draws per chain, 4 chains (default 2,000)
}
TOOLS = tuple(BUDGETS)


def make(tool: str, entry, budget: int):
    model = entry.model
    if tool == "bdmc-ais":
        return adapters.bdmc_adapter(model, "ais", num_steps=budget)
    if tool == "bdmc-tsmc":
        return adapters.bdmc_adapter(model, "tempered-smc", num_steps=budget)
    if tool == "blackjax":
        return adapters.blackjax_adapter(model, num_particles=budget)
    if tool == "pymc-smc":
        return adapters.pymc_smc_adapter(entry.pymc, draws=budget, chains=4)
    return adapters.nested_adapter(tool, model, prior_transform=entry.prior_transform, live=budget)


@cached(maxsize=8)
def entry_of(name: str):
    """One model's entry per process (a Dask worker builds its own)."""
    return calibration_models.build(name)


@cached(maxsize=64)
def runner(name: str, tool: str, budget: int):
    """One adapter per (model, tool, budget) per process: its compiled programs are reused across data sets."""
    return make(tool, entry_of(name), budget)


def truth_task(name: str, seed: int) -> dict:
    """The truth of one data set (bdmc's sandwich from the simulating latent, or the closed form)."""
    began = time.time()
    row = calibration_row(KEY, entry_of(name).model, lambda data: (math.nan, math.nan), seed, label="truth",
                          takes_seed=False, truth_steps=TRUTH_STEPS, truth_runs=TRUTH_RUNS)
    row = {k: row[k] for k in ("seed", *TRUTH_COLUMNS)}
    row.update({"model": name, "time": began, "load": os.getloadavg()[0]})
    return row


def tool_task(name: str, tool: str, budget: int, seed: int, truth: dict) -> dict:
    """One tool's run on one data set, against its stored truth."""
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = calibration_row(KEY, entry_of(name).model, runner(name, tool, budget), seed, label=f"{tool} ({budget})",
                              takes_seed=True, truth={k: truth[k] for k in TRUTH_COLUMNS})
    row.update({"model": name, "tool": tool, "budget": budget, "default_budget": budget == BUDGETS[tool][0],
                "time": time.time(), "load_before": load, "load_after": os.getloadavg()[0]})
    return row


def run(out: Path, datasets: int, tools, models, budgets, client=None) -> None:
    """Every missing truth and row, data set by data set with the tools interleaved; each row appended (with the
    commit) as it finishes. With a Dask ``client`` the same tasks run on its workers, lower seeds first."""
    commit, clean = tree_state()
    rows_path, truth_path = out / "rows.jsonl", out / "truths.jsonl"
    truths = {(r["model"], r["seed"]): r for r in load_rows(truth_path)}
    done = {(r["model"], r["tool"], r["budget"], r["seed"]) for r in load_rows(rows_path)}

    def tool_jobs(name, seed):
        return [(name, tool, budget, seed) for tool in tools for budget in budgets(tool)
                if (name, tool, budget, seed) not in done]

    def stored_truth(row):
        append_row(truth_path, row)
        truths[(row["model"], row["seed"])] = row
        print(f"{row['model']:10s} truth             seed {row['seed']:3d}: {row['truth']:+10.3f} "
              f"[{row['truth_lower']:.3f}, {row['truth_upper']:.3f}]  {row['truth_seconds']:6.1f}s", flush=True)

    def stored_row(row):
        row.update({"commit": commit, "clean_tree": clean})
        append_row(rows_path, row)
        print(f"{row['model']:10s} {row['tool']:10s} {row['budget']:6d} seed {row['seed']:3d}: error "
              f"{row['error']:+8.3f} ± {row['stderr']:.3f}  {row['tool_seconds']:6.1f}s {row['failed'][:60]}",
              flush=True)

    if client is None:
        for seed in range(datasets):
            for name in models:
                jobs = tool_jobs(name, seed)
                if jobs and (name, seed) not in truths:
                    stored_truth(truth_task(name, seed))
                for job in jobs:
                    stored_row(tool_task(*job, truths[(name, seed)]))
        return
    import calibrate_tools as module  # by name, so the workers unpickle the tasks from their own import
    from dask.distributed import as_completed

    def submit_tools(name, seed):
        return [client.submit(module.tool_task, *job, truths[(name, seed)], pure=False, priority=-seed)
                for job in tool_jobs(name, seed)]

    futures = []
    for seed in range(datasets):
        for name in models:
            if not tool_jobs(name, seed):
                continue
            if (name, seed) in truths:
                futures += submit_tools(name, seed)
            else:
                futures.append(client.submit(module.truth_task, name, seed, pure=False, priority=-seed))
    pending = as_completed(futures, with_results=False)
    for future in pending:
        try:
            row = future.result()
        except Exception as err:  # one task's crash is reported, the others go on
            print(f"task {future.key} failed: {type(err).__name__}: {err}", flush=True)
            continue
        if "tool" in row:
            stored_row(row)
        else:
            stored_truth(row)
            for job in submit_tools(row["model"], row["seed"]):
                pending.add(job)


def timings(out: Path) -> None:
    """Median seconds a run, by model and tool (and the truths'), from the rows in ``out``."""
    import pandas as pd

    rows, truths = pd.DataFrame(load_rows(out / "rows.jsonl")), pd.DataFrame(load_rows(out / "truths.jsonl"))
    if len(truths):
        print("\ntruth seconds (median, max) by model:")
        print(truths.groupby("model")["truth_seconds"].agg(["count", "median", "max"]).round(1).to_string())
    if len(rows):
        print("\ntool seconds a run (median, max) by tool, budget and model:")
        table = rows.groupby(["tool", "budget", "model"])["tool_seconds"].agg(["count", "median", "max"])
        print(table.round(1).to_string())


def connect_workers(workers: int):
    """A local Dask cluster of ``workers`` processes, one thread each. Dask starts them by spawn (no fork of a
    process that has started JAX); they find this folder's modules through ``PYTHONPATH``."""
    from dask.distributed import Client

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return Client(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=0, dashboard_address=None)


def draw(out: Path) -> None:
    """``figure.png``: each tool's error against its stated ±, every model's data sets at the default budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from pages.calibrate_tools.table_values import calibrations

    from bdmc.calibration import Calibration

    cells = {k: c for k, c in calibrations(out).items() if k[2] == BUDGETS[k[1]][0]}
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
    for ax, tool in zip(axes.flat, TOOLS, strict=False):
        rows = [c.rows for (m, t, b), c in cells.items() if t == tool]
        if rows:
            Calibration(label=f"{tool} (default)", rows=pd.concat(rows, ignore_index=True), level=0.01).plot(ax=ax)
        else:
            ax.set_title(f"{tool}: not run yet", fontsize=10)
            ax.axis("off")
    axes.flat[-1].axis("off")
    fig.tight_layout()
    fig.savefig(out / "figure.png", dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=50)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    parser.add_argument("--models", nargs="+", default=list(calibration_models.NAMES),
                        choices=list(calibration_models.NAMES))
    parser.add_argument("--default-only", action="store_true", help="only each tool's default budget")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    parser.add_argument("--workers", type=int, default=0,
                        help="run the tasks on a local Dask cluster of this many processes (0: in this process)")
    parser.add_argument("--quick", action="store_true",
                        help="a trial: 2 data sets, default budgets, rows in a temporary folder (unless --out); "
                             "prints the seconds a run by tool and model")
    args = parser.parse_args(argv)
    if args.render:
        draw(args.out)
        write_folder("calibrate_tools")
        return
    if args.quick:
        args.datasets, args.default_only = 2, True
        if args.out == OUT:
            args.out = Path(tempfile.mkdtemp(prefix="calibrate_tools_quick_"))
        print(f"--quick: rows in {args.out}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    budgets = (lambda tool: BUDGETS[tool][:1]) if args.default_only else (lambda tool: BUDGETS[tool])
    client = connect_workers(args.workers) if args.workers > 0 else None
    began = time.time()
    try:
        run(args.out, args.datasets, args.tools, args.models, budgets, client=client)
    finally:
        if client is not None:
            client.close()
    print(f"\nwall time {time.time() - began:.0f} s ({args.workers or 'no'} Dask workers)", flush=True)
    timings(args.out)


if __name__ == "__main__":
    main()
