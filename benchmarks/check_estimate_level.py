"""The false-verdict rate of ``bdmc.check_estimate`` over many seeds, and its power against values a few nats off.

Per seed: a data set simulated from the model (its latent known, so both of bdmc's bounds are certified), one
``check_estimate`` call given the exact ``log p(y)`` (closed form), then ``EstimateCheck.for_value`` on the same
bounds for values 1, 3, 6, 10 and 30 nats above and below it. A verdict on the exact value other than
"consistent" is a false verdict: the stated level (0.01 here) bounds its probability. The rate comes with its
Clopper-Pearson 95% interval; the shifted values give the power at each distance.

Models with a closed-form evidence: ``LinearRegression(n=20, degree=2)`` and ``GaussianMean(n=10, dim=3)``,
AIS with each model's own kernel at T = 100, 16 runs per direction (reduced from the check's default T = 1,000).

    python benchmarks/check_estimate_level.py --seeds 200
    python benchmarks/check_estimate_level.py --render
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import jax

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402
from bdmc.checks.sandwich import exact_log_marginal_or_none  # noqa: E402

bdmc.enable_x64()

OUT = HERE / "results" / "check_estimate_level"
LEVEL = 0.01
SHIFTS = (-30.0, -10.0, -6.0, -3.0, -1.0, 1.0, 3.0, 6.0, 10.0, 30.0)
MODELS = {"linear regression": lambda: bdmc.models.LinearRegression(n=20, degree=2),
          "Gaussian mean": lambda: bdmc.models.GaussianMean(n=10, dim=3)}
NUM_STEPS, NUM_RUNS = 100, 16


def run(path: Path, seeds: int) -> None:
    commit, clean = tree_state()
    done = {(r["model"], r["seed"]) for r in load_rows(path)}
    models = {name: build() for name, build in MODELS.items()}
    for seed in range(seeds):
        for name, model in models.items():
            if (name, seed) in done:
                continue
            key = jax.random.key(seed)
            data, latent = bdmc.simulate(jax.random.fold_in(key, 1), model)
            exact = float(exact_log_marginal_or_none(model, data))
            load_before, began = os.getloadavg()[0], time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check = bdmc.check_estimate(jax.random.fold_in(key, 2), model, data, exact, exact_latent=latent,
                                            level=LEVEL, num_steps=NUM_STEPS, num_runs=NUM_RUNS, progress=False)
            shifted = {f"{s:+g}": check.for_value(exact + s).verdict for s in SHIFTS}
            row = {"model": name, "seed": seed, "exact": exact, "verdict": check.verdict, "lower": check.lower,
                   "upper": check.upper, "certified_lower": check.certified_lower,
                   "certified_upper": check.certified_upper, "method": check.method, "shifted": shifted,
                   "num_steps": NUM_STEPS, "num_runs": NUM_RUNS, "level": LEVEL,
                   "seconds": time.perf_counter() - began, "commit": commit, "clean_tree": clean, "time": time.time(),
                   "load_before": load_before, "load_after": os.getloadavg()[0]}
            append_row(path, row)
            print(f"{name:18s} seed {seed:3d}: {check.verdict:10s} exact {exact:9.3f} in "
                  f"[{check.certified_lower:9.3f}, {check.certified_upper:9.3f}]  {row['seconds']:.1f}s", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("check_estimate_level")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    run(path, args.seeds)
    write_folder("check_estimate_level", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
