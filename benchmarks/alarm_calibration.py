"""False-alarm rate of the run-level bug alarm on correct models, over many seeded sandwiches.

Each seed simulates a data set and its exact latent from the model and runs one full sandwich (forward and
reverse AIS at T = 2, 10, 100, 1000, SMC and SHME at 1, 3, 10 moves per case, or forward and reverse tempered
SMC at T = 2, 10, 30 temperatures) with the model's default kernel. The run-level verdict
(``SandwichResult.verdict``: every lower bound against every upper bound, pooled) is recorded with the
uncertified falling-forward warning and, for comparison, the per-pair rule the verdict replaced (a mean per-
pair gap more than 5 standard errors below zero at some T). The alarm's stated level is 0.01 (Markov's
inequality); the table gives each rate with a 95% Clopper-Pearson interval.

Rows are appended to ``rows.jsonl`` as each sandwich finishes, each with its sandwich table, so the verdict can
be recomputed from the data (``alarm_from_table``); a rerun resumes.

    python benchmarks/alarm_calibration.py                    # 4 models x {AIS, SMC}, 300 seeds each
    python benchmarks/alarm_calibration.py --seeds 20 --out /tmp/cal   # a quick look
    python benchmarks/alarm_calibration.py --methods tempered-smc --seeds 250   # tempered pair: 1,000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax

import bdmc
from bdmc.models import FiniteMixture, GaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, write_text  # noqa: E402

bdmc.enable_x64()

MODELS = {
    "gaussian-mean weak (n=3, dim=1, noise 5)": GaussianMean(n=3, dim=1, noise_std=5.0),
    "gaussian-mean (n=20, dim=5)": GaussianMean(n=20, dim=5),
    "finite-mixture (n=6, k=3)": FiniteMixture(n=6, k=3),
    "linear-regression (n=20, p=4)": LinearRegression(),
}
METHODS = {"ais": (2, 10, 100, 1000), "smc": (1, 3, 10), "tempered-smc": (2, 10, 30)}
PARTICLE_METHODS = ("smc", "tempered-smc")
OLD_Z = 5.0  # the dropped per-pair rule


def one(model, method: str, seed: int, *, chains: int, particles: int) -> dict:
    start = time.perf_counter()
    res = bdmc.sandwich(jax.random.key(seed), model, steps=METHODS[method], num_runs=chains, method=method,
                        num_particles=particles if method in PARTICLE_METHODS else 1, progress=False)
    v = res.verdict
    table = res.table[["method", "num_steps", "direction", "value", "mean_single", "stderr_single", "num_runs"]]
    fwd = res.table[res.table["direction"] == "forward"]
    z = fwd["gap_single"] / fwd["gap_single_stderr"]
    old = bool(((fwd["gap_single"] < 0) & ((fwd["gap_single_stderr"] == 0) | (z < -OLD_Z))).any())
    return {"fired": bool(v.fired), "p_bound": v.p_bound, "crossing": v.crossing, "warned": bool(v.warned),
            "worst_lower": v.worst.lower, "worst_upper": v.worst.upper, "worst_nats": v.worst.nats,
            "old_rule": old, "seconds": time.perf_counter() - start, "table": table.to_dict("list")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=300, help="Sandwiches per model and method.")
    parser.add_argument("--chains", type=int, default=16)
    parser.add_argument("--particles", type=int, default=4, help="Particles per SMC / SHME run.")
    parser.add_argument("--methods", default="ais,smc")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/alarm_calibration"))
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("alarm_calibration")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    done = set()
    if path.exists():
        lines = path.read_text().splitlines(keepends=True)
        good = [ln for ln in lines if ln.endswith("\n")]
        if len(good) != len(lines):  # a line cut by an interruption is dropped and recomputed
            write_text(path, "".join(good))
        done = {(r["model"], r["method"], r["seed"]) for r in map(json.loads, good)}
    for method in args.methods.split(","):
        for name, model in MODELS.items():
            for seed in range(args.seeds):
                if (name, method, seed) in done:
                    continue
                row = {"model": name, "method": method, "seed": seed, "chains": args.chains,
                       "particles": args.particles if method in PARTICLE_METHODS else 1,
                       "steps": list(METHODS[method]),
                       **one(model, method, seed, chains=args.chains, particles=args.particles)}
                append_row(path, row)  # stamped with its provenance, one synced line
                if row["fired"]:
                    print(f"alarm: {name} {method} seed {seed}: crossing {row['crossing']:.2f}", flush=True)
            print(f"{method} {name}: {args.seeds} sandwiches done", flush=True)
    write_folder("alarm_calibration", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
