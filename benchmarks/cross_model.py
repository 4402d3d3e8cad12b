"""The BDMC paper's Table 1: log-ML of every model's simulated data under every model, hyperparameters integrated.

Data are the benchmark's simulated data sets (one per model, fixed hyperparameters, ``bdmc sandwich --seed``
convention). Each is fitted by the three ``-hyper`` models (variances, mixture weights and Bernoulli
probabilities integrated out, paper footnote 6) with forward AIS, a stochastic lower bound, at growing T; the
table reports the largest T and the difference to the generating model's column. Rows are appended to a JSONL
file as they finish, and a rerun skips them.

    python benchmarks/cross_model.py --steps 1000,3000,10000,30000 --chains 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

import bdmc
from bdmc.models import REGISTRY

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

MODELS = ("clustering", "low-rank", "binary")
LABELS = {"clustering": "Clustering", "low-rank": "Low rank", "binary": "Binary"}
PAPER = {  # paper Table 1: rows generate, columns fit
    "clustering": {"clustering": -2377.5, "low-rank": -2390.6, "binary": -2383.2},
    "low-rank": {"clustering": -2214.2, "low-rank": -2145.1, "binary": -2171.4},
    "binary": {"clustering": -2268.6, "low-rank": -2241.7, "binary": -2219.4},
}


def dataset(name: str, seed: int):
    """The data ``bdmc sandwich --model NAME --seed SEED`` scores."""
    return bdmc.simulate(jax.random.split(jax.random.key(seed))[0], REGISTRY[name]())[0]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1000,3000,10000,30000")
    parser.add_argument("--chains", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cross_model"))
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("cross_model")
        return
    steps = [int(s) for s in args.steps.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    rows = load_rows(rows_path)
    done = {(r["data"], r["fit"], r["num_steps"], r["num_chains"]) for r in rows}
    for T in steps:
        for data_name in MODELS:
            data = dataset(data_name, args.seed)
            for fit in MODELS:
                if (data_name, fit, T, args.chains) in done:
                    continue
                model = REGISTRY[f"{fit}-hyper"]()
                key = jax.random.fold_in(jax.random.key(args.seed + 1), T)
                t0 = time.time()
                est = bdmc.forward_ais(key, model, data, num_steps=T, num_runs=args.chains, progress=False)
                row = {"data": data_name, "fit": fit, "num_steps": T, "num_chains": args.chains,
                       "value": est.value, "mean_single": est.mean_single, "stderr_single": est.stderr_single,
                       "runs": [float(r) for r in np.asarray(est.runs)], "seconds": est.seconds,
                       "wall_seconds": time.time() - t0, "seed": args.seed}
                rows.append(row)
                append_row(rows_path, row)  # stamped with its provenance
                print(f"data {data_name:10s} fit {fit:10s} T={T:6d}: {est.value:9.1f} "
                      f"(single {est.mean_single:.1f} ± {est.stderr_single:.1f}) {est.seconds:.0f}s", flush=True)
    write_table(rows, args.out / "table.md", args.chains)
    write_folder("cross_model", written_to=args.out)


def write_table(rows, path: Path, chains: int) -> None:
    """Markdown table at the largest T reached for every cell, with the paper's numbers beside ours."""
    best = {}
    for r in rows:
        cell = (r["data"], r["fit"])
        if r["num_chains"] == chains and (cell not in best or r["num_steps"] > best[cell]["num_steps"]):
            best[cell] = r
    lines = ["| data \\ fit | " + " | ".join(LABELS[m] for m in MODELS) + " |", "|---" * (len(MODELS) + 1) + "|"]
    for d in MODELS:
        cells = []
        for f in MODELS:
            r, own = best.get((d, f)), best.get((d, d))
            if r is None:
                cells.append("-")
                continue
            diff = "" if f == d or own is None else f" ({own['value'] - r['value']:.1f})"
            pdiff = "" if f == d else f" ({PAPER[d][d] - PAPER[d][f]:.1f})"
            cells.append(f"{r['value']:.1f}{diff}; paper {PAPER[d][f]:.1f}{pdiff}")
        lines.append(f"| **{LABELS[d]}** | " + " | ".join(cells) + " |")
    trend = ["", "Convergence in T (log-mean-exp over chains):", "",
             "| data | fit | " + " | ".join(f"T={t}" for t in sorted({r['num_steps'] for r in rows})) + " |",
             "|---|---|" + "---|" * len({r['num_steps'] for r in rows})]
    for d in MODELS:
        for f in MODELS:
            vals = {r["num_steps"]: r["value"] for r in rows if (r["data"], r["fit"]) == (d, f)}
            trend.append(f"| {d} | {f} | " + " | ".join(
                f"{vals[t]:.1f}" if t in vals else "-" for t in sorted({r['num_steps'] for r in rows})) + " |")
    write_text(path, "\n".join(lines + trend) + "\n")


if __name__ == "__main__":
    main()
