"""The false-verdict rate of ``bdmc.check_estimate`` over many seeds, and its power, by tier.

Per seed and configuration: a data set simulated from the model (its latent known), one ``check_estimate`` call
given the exact ``log p(y)`` (closed form), then ``EstimateCheck.for_value`` on the same runs for values shifted
by ±0.5, 1, 2, 3 and 6 nats. A verdict on the exact value other than "consistent" is a false verdict: the stated
level (0.01) bounds the certified tier's rate by ``level / 2``; the calibrated tier's rate is what this counts. The
rates come with Clopper-Pearson 95% intervals; each shifted value's verdict is stored with the tier that called it.

Configurations (models with a closed-form evidence; AIS with each model's own kernel, 32 runs per direction, the
default):
``LinearRegression(n=20, degree=2)`` and ``GaussianMean(n=10, dim=3)`` at the check's default T = 1,000, and the
regression at T = 100, where AIS is further from converged.

``rows_before.jsonl`` holds the rows of the check before its tiers (Markov's inequality on each pooled side).

    python benchmarks/check_estimate_level.py --seeds 1000
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
SHIFTS = (-6.0, -3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0, 6.0)
NUM_RUNS = 32
CONFIGS = {"linear regression": (lambda: bdmc.models.LinearRegression(n=20, degree=2), 1000),
           "Gaussian mean": (lambda: bdmc.models.GaussianMean(n=10, dim=3), 1000),
           "linear regression, T = 100": (lambda: bdmc.models.LinearRegression(n=20, degree=2), 100)}


def run(path: Path, seeds: int) -> None:
    commit, clean = tree_state()
    done = {(r["model"], r["seed"]) for r in load_rows(path)}
    models = {name: (build(), steps) for name, (build, steps) in CONFIGS.items()}
    for seed in range(seeds):
        for name, (model, steps) in models.items():  # interleaved: load hits every configuration alike
            if (name, seed) in done:
                continue
            key = jax.random.key(seed)
            data, latent = bdmc.simulate(jax.random.fold_in(key, 1), model)
            exact = float(exact_log_marginal_or_none(model, data))
            load_before, began = os.getloadavg()[0], time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check = bdmc.check_estimate(jax.random.fold_in(key, 2), model, data, exact, exact_latent=latent,
                                            level=LEVEL, num_steps=steps, num_runs=NUM_RUNS, progress=False)
            shifted = {}
            for s in SHIFTS:
                again = check.for_value(exact + s)
                shifted[f"{s:+g}"] = {"verdict": again.verdict, "tier": again.tier}
            row = {"model": name, "seed": seed, "exact": exact, "verdict": check.verdict, "tier": check.tier,
                   "lower": check.lower, "upper": check.upper, "certified_lower": check.certified_lower,
                   "certified_upper": check.certified_upper, "calibrated_lower": check.calibrated_lower,
                   "calibrated_upper": check.calibrated_upper, "method": check.method, "shifted": shifted,
                   "num_steps": steps, "num_runs": NUM_RUNS, "level": LEVEL,
                   "seconds": time.perf_counter() - began, "commit": commit, "clean_tree": clean, "time": time.time(),
                   "load_before": load_before, "load_after": os.getloadavg()[0]}
            append_row(path, row)
            print(f"{name:26s} seed {seed:4d}: {check.verdict:10s} exact {exact:9.3f} in certified "
                  f"[{check.certified_lower:9.3f}, {check.certified_upper:9.3f}] calibrated "
                  f"[{check.calibrated_lower:9.3f}, {check.calibrated_upper:9.3f}]  {row['seconds']:.2f}s", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1000)
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
