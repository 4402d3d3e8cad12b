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
    python benchmarks/calibrate_tools.py --render
"""

from __future__ import annotations

import argparse
import math
import os
import sys
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
from bdmc.calibration import adapters  # noqa: E402
from bdmc.calibration.run import calibration_row  # noqa: E402

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
    "ultranest": (400, 1600),          # min_num_live_points (default 400)
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


def truth_rows(path: Path, entry, seeds) -> dict:
    """The truth of every data set (computed once, stored in ``truths.jsonl``)."""
    stored = {(r["model"], r["seed"]): r for r in load_rows(path)}
    for seed in seeds:
        if (entry.name, seed) in stored:
            continue
        began = time.time()
        row = calibration_row(KEY, entry.model, lambda data: (math.nan, math.nan), seed, label="truth",
                              takes_seed=False, truth_steps=TRUTH_STEPS, truth_runs=TRUTH_RUNS)
        row = {k: row[k] for k in ("seed", "truth", "truth_lower", "truth_upper", "truth_source", "truth_seconds")}
        row.update({"model": entry.name, "time": began, "load": os.getloadavg()[0]})
        append_row(path, row)
        stored[(entry.name, seed)] = row
    return stored


def run(out: Path, datasets: int, tools, models, budgets) -> None:
    commit, clean = tree_state()
    entries = {name: calibration_models.build(name) for name in models}
    rows_path, truth_path = out / "rows.jsonl", out / "truths.jsonl"
    done = {(r["model"], r["tool"], r["budget"], r["seed"]) for r in load_rows(rows_path)}
    runners = {}
    for seed in range(datasets):
        for name, entry in entries.items():
            truth = truth_rows(truth_path, entry, [seed])[(name, seed)]
            for tool in tools:
                for budget in budgets(tool):
                    if (name, tool, budget, seed) in done:
                        continue
                    if (name, tool, budget) not in runners:
                        runners[(name, tool, budget)] = make(tool, entry, budget)
                    load = os.getloadavg()[0]
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        row = calibration_row(KEY, entry.model, runners[(name, tool, budget)], seed,
                                              label=f"{tool} ({budget})", takes_seed=True,
                                              truth={k: truth[k] for k in ("truth", "truth_lower", "truth_upper",
                                                                           "truth_source", "truth_seconds")})
                    row.update({"model": name, "tool": tool, "budget": budget,
                                "default_budget": budget == BUDGETS[tool][0], "commit": commit, "clean_tree": clean,
                                "time": time.time(), "load_before": load, "load_after": os.getloadavg()[0]})
                    append_row(rows_path, row)
                    print(f"{name:10s} {tool:10s} {budget:6d} seed {seed:3d}: error {row['error']:+8.3f} "
                          f"± {row['stderr']:.3f}  {row['tool_seconds']:6.1f}s {row['failed'][:60]}", flush=True)


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
    args = parser.parse_args(argv)
    if args.render:
        draw(args.out)
        write_folder("calibrate_tools")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    budgets = (lambda tool: BUDGETS[tool][:1]) if args.default_only else (lambda tool: BUDGETS[tool])
    run(args.out, args.datasets, args.tools, args.models, budgets)


if __name__ == "__main__":
    main()
