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
from harness.store import append_row, load_rows  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

MODELS = ("clustering", "low-rank", "binary")


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
    write_folder("cross_model", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
