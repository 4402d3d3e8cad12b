"""Prior normalization on Stan programs: the calibration regression written correctly, and the same program with
the half-normal on ``sigma`` (a ``<lower=0>`` parameter) given ``normal_lpdf`` alone, the commonest lost
normalizer (its prior integrates to 1/2: log 2 = 0.693 nats low). ``--seeds`` independent checks per program.

    python benchmarks/prior_normalization_stan.py --seeds 3    # results/prior_normalization/rows.jsonl, table.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration_programs as cp  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402
from bdmc.checks.prior_normalization import prior_normalization  # noqa: E402

bdmc.enable_x64()

OUT = Path(__file__).resolve().parent / "results" / "prior_normalization"
STEPS, RUNS, LEVEL = 100, 16, 0.01


def programs():
    missing = cp.STAN["regression"].replace(" - normal_lccdf(0 | 0, 1)", "")
    data = {"n": cp.N_REG, "x": cp.X_REG, "y": np.zeros(cp.N_REG)}
    return {"regression (normalized half-normal)": (cp.stan_program("regression"), 0.0),
            "regression, half-normal without its log 2": (
                bdmc.ppl.from_stan(missing, data=data, observed="y", simulate=cp.simulate_regression,
                                   name="regression-no-normalizer"), -np.log(2.0))}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("prior_normalization")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "rows.jsonl"
    commit, clean = tree_state()
    done = {(r["program"], r["seed"]) for r in load_rows(path)}
    for name, (model, truth) in programs().items():
        for seed in range(args.seeds):
            if (name, seed) in done:
                continue
            load, t0 = os.getloadavg()[0], time.perf_counter()
            r = prior_normalization(jax.random.key(seed), model, num_steps=STEPS, num_runs=RUNS, level=LEVEL)
            row = {"program": name, "seed": seed, "truth": truth, "verdict": r.verdict, "estimate": r.estimate,
                   "interval": [r.interval_low, r.interval_high],
                   "certified": [r.certified_low, r.certified_high], "forward_mean": r.forward_mean,
                   "reverse_mean": r.reverse_mean, "num_steps": STEPS, "num_runs": RUNS, "level": LEVEL,
                   "seconds": time.perf_counter() - t0, "commit": commit, "clean_tree": clean,
                   "time": time.time(), "load_before": load}
            append_row(path, row)
            print(f"{name:45s} seed {seed}  {r.summary()}", flush=True)
    write_folder("prior_normalization")  # renders table.md from the rows
    print((OUT / "table.md").read_text())


if __name__ == "__main__":
    main()
