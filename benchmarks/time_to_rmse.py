"""Time for forward AIS or SMC to reach 10-nat and 1-nat RMSE on the BDMC paper's models, against BDMC ground truth.

For one simulated data set per model (paper sizes: N = 50, D = 25):

1. Ground truth: forward and reverse AIS at ``--truth-steps`` intermediate distributions; accepted only if the
   two combined estimates agree within ``--truth-tol`` nats (BDMC paper, Sec. 6.4), and then taken as their
   average.
2. For each knob value in ``--steps`` (intermediate distributions T for ``--method ais``, MCMC moves per data
   case for ``--method smc``, with ``--particles`` per run): ``--trials`` independent runs, batched as chains
   of one compiled run. RMSE of the single-run estimates against the truth; error of their log-mean-exp combination.
   Times: the batch's wall time (compile excluded), the same amortized per trial, and the wall time of one
   run on its own (one chain), which is what the paper's timings measure.
3. Stops after the first T whose single-run RMSE is below 1 nat.

Rows are appended to ``benchmarks/results/<method>_rmse_<model>.jsonl`` as they finish; rerunning with the
same settings resumes. The summary goes to ``<method>_rmse_<model>.md``.

    python benchmarks/time_to_rmse.py --model clustering
    python benchmarks/time_to_rmse.py --model low-rank --steps 10,30,100,300,1000
    python benchmarks/time_to_rmse.py --model clustering --method smc --steps 1,2,5,10,20,50
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path

import jax
import numpy as np
from rich.console import Console

import bdmc
from bdmc.models import REGISTRY

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

RESULTS = Path(__file__).resolve().parent / "results"
# Time to get below 10 nats RMSE on the paper's hardware (BDMC paper, Sec. 6.4), and the RMSE reached.
PAPER = {("ais", "clustering"): (37.8, 7.0), ("ais", "low-rank"): (1.6, 8.6), ("ais", "binary"): (16.5 * 60, 7.5),
         ("smc", "clustering"): (9.7, 4.6), ("smc", "binary"): (20.5 * 60, 11.9)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(REGISTRY))
    ap.add_argument("--method", choices=["ais", "smc"], default="ais")
    ap.add_argument("--steps", default=None, help="knob values (default: T = 10..10000, or 1..100 moves for smc)")
    ap.add_argument("--particles", type=int, default=1)
    ap.add_argument("--trials", type=int, default=25)
    ap.add_argument("--truth-steps", type=int, default=30000)
    ap.add_argument("--truth-chains", type=int, default=16)
    ap.add_argument("--truth-tol", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.steps is None:
        args.steps = "10,30,100,300,1000,3000,10000" if args.method == "ais" else "1,2,5,10,20,50,100"
    console = Console()

    model = REGISTRY[args.model]()
    key = jax.random.key(args.seed)
    k_data, k_truth, k_runs = jax.random.split(key, 3)
    data, latent = bdmc.simulate(k_data, model)
    settings = {"model": args.model, "method": args.method, "particles": args.particles,
                "options": _options(model), "seed": args.seed, "trials": args.trials,
                "truth_steps": args.truth_steps, "truth_chains": args.truth_chains}
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / f"{args.method}_rmse_{args.model}.jsonl"
    done = _load(log_path, settings)

    truth_row = done.get("truth")
    if truth_row is None:
        console.print(f"ground truth: forward and reverse AIS, T = {args.truth_steps}, {args.truth_chains} chains")
        kf, kr = jax.random.split(k_truth)
        common = dict(num_steps=args.truth_steps, num_runs=args.truth_chains)
        fwd = bdmc.forward_ais(kf, model, data, **common)
        rev = bdmc.reverse_ais(kr, model, data, exact_latent=latent, **common)
        truth_row = {"kind": "truth", "settings": settings, "forward": fwd.value, "forward_stderr": fwd.stderr,
                     "reverse": rev.value, "reverse_stderr": rev.stderr, "gap": rev.value - fwd.value,
                     "truth": 0.5 * (fwd.value + rev.value), "seconds": fwd.seconds + rev.seconds,
                     "n_evals": fwd.n_evals + rev.n_evals}
        _append(log_path, truth_row)
    console.print(f"ground truth {truth_row['truth']:.3f} (forward {truth_row['forward']:.3f}, reverse "
                  f"{truth_row['reverse']:.3f}, gap {truth_row['gap']:.3f} nats, {truth_row['seconds']:.1f} s)")
    if not abs(truth_row["gap"]) <= args.truth_tol:
        console.print(f"[bold red]forward and reverse AIS disagree by {truth_row['gap']:.2f} nats > "
                      f"{args.truth_tol}: no ground truth, nothing scored. Raise --truth-steps.[/]")
        return 1
    truth = truth_row["truth"]

    rows = [done[T] for T in sorted(k for k in done if k != "truth")]
    for T in (int(s) for s in args.steps.split(",")):
        if T in done:
            continue
        if rows and rows[-1]["rmse_single"] < 1.0:
            break
        kT = jax.random.fold_in(k_runs, T)
        batch = _lower(args, model, data, kT, T, args.trials)
        one = _lower(args, model, data, jax.random.fold_in(kT, 1), T, 1)
        err = batch.runs - truth
        row = {"kind": "run", "settings": settings, "num_steps": T, "mean_single": float(np.mean(batch.runs)),
               "rmse_single": float(np.sqrt(np.mean(err**2))), "combined": batch.value,
               "combined_error": batch.value - truth, "batch_seconds": batch.seconds,
               "per_trial_seconds": batch.seconds / args.trials, "single_run_seconds": one.seconds,
               "compile_seconds": batch.compile_seconds, "evals_per_trial": batch.n_evals // args.trials}
        _append(log_path, row)
        rows.append(row)
        console.print(f"T={T:>6}  mean {row['mean_single']:.2f}  RMSE {row['rmse_single']:.2f}  combined error "
                      f"{row['combined_error']:+.2f}  batch {row['batch_seconds']:.2f} s  one run "
                      f"{row['single_run_seconds']:.3f} s", highlight=False)

    summary = _summary(args.method, args.model, truth_row, rows)
    (args.out / f"{args.method}_rmse_{args.model}.md").write_text(summary)
    print(summary)
    return 0


def _lower(args, model, data, key, knob, trials):
    """``trials`` independent lower-bound runs at one knob value, batched in one compiled run."""
    if args.method == "ais":
        return bdmc.forward_ais(key, model, data, num_steps=knob, num_runs=trials, progress=False)
    return bdmc.smc(key, model, data, num_moves=knob, num_particles=args.particles, num_runs=trials,
                    progress=False)


def _summary(method, name, truth_row, rows) -> str:
    knob = "T" if method == "ais" else "moves/case"
    particles = truth_row["settings"]["particles"]
    title = "forward AIS" if method == "ais" else f"SMC ({particles} particle{'s' * (particles > 1)})"
    lines = [f"# {title} accuracy against time: {name}", "",
             f"Ground truth {truth_row['truth']:.3f} nats (forward {truth_row['forward']:.3f} ± "
             f"{truth_row['forward_stderr']:.3f}, reverse {truth_row['reverse']:.3f} ± "
             f"{truth_row['reverse_stderr']:.3f}, gap {truth_row['gap']:.3f} nats at T = "
             f"{truth_row['settings']['truth_steps']}, {truth_row['settings']['truth_chains']} chains each).", "",
             f"| {knob} | mean single | RMSE single | combined error | batch s | per trial s | one run s | evals/trial |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['num_steps']} | {r['mean_single']:.2f} | {r['rmse_single']:.2f} | "
                     f"{r['combined_error']:+.2f} | {r['batch_seconds']:.2f} | {r['per_trial_seconds']:.3f} | "
                     f"{r['single_run_seconds']:.3f} | {r['evals_per_trial']:,} |")
    lines.append("")
    for target in (10.0, 1.0):
        hit = next((r for r in rows if r["rmse_single"] < target), None)
        if hit is None:
            lines.append(f"- RMSE < {target:g} nats: not reached.")
            continue
        text = (f"- RMSE < {target:g} nats: {knob} = {hit['num_steps']} (RMSE {hit['rmse_single']:.2f}), one run "
                f"{hit['single_run_seconds']:.3f} s, {hit['batch_seconds']:.2f} s for all {hit['settings']['trials']} trials batched")
        if target == 10.0 and (method, name) in PAPER:
            paper_s, paper_rmse = PAPER[(method, name)]
            text += (f"; the paper needed {paper_s:g} s (RMSE {paper_rmse}) for one run: "
                     f"{paper_s / max(hit['single_run_seconds'], 1e-9):.0f}x less time here")
        lines.append(text + ".")
    lines += ["", f"Machine: {platform.processor() or platform.machine()}, {jax.device_count()} JAX device(s), "
              f"jax {jax.__version__}, bdmc {bdmc.__version__}, python {sys.version.split()[0]}. Times exclude "
              "compilation (reported separately in the JSONL)."]
    return "\n".join(lines) + "\n"


def _options(model) -> dict:
    import dataclasses

    return {f.name: getattr(model, f.name) for f in dataclasses.fields(model)}


def _load(path: Path, settings: dict) -> dict:
    """Rows of an earlier run with the same settings, keyed by T (and "truth")."""
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if json.dumps(row["settings"], sort_keys=True, default=str) != json.dumps(settings, sort_keys=True,
                                                                                      default=str):
                continue
            done["truth" if row["kind"] == "truth" else row["num_steps"]] = row
    return done


def _append(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row, default=_jsonable) + "\n")


def _jsonable(x):
    if isinstance(x, (np.generic,)):
        return x.item()
    if isinstance(x, tuple):
        return list(x)
    return str(x)


if __name__ == "__main__":
    raise SystemExit(main())
