"""Time for ONE run of AIS, SMC or nested sampling to reach the BDMC paper's RMSE on its models, like for like.

For one simulated data set per model (paper sizes: N = 50, D = 25; K = 10, 5, 10):

1. Ground truth: forward and reverse AIS at ``--truth-steps`` intermediate distributions, accepted only if the two
   combined estimates agree within ``--truth-tol`` nats (BDMC paper, Sec. 6.4), then averaged. ``--truth-from``
   takes it from an earlier JSONL of the same data set and truth settings instead.
2. For each estimator (``ais``: T intermediate distributions; ``smc``: MCMC moves per data case; ``ns``: moves per
   nested-sampling step), called with its defaults plus the knob, and each knob value in its ladder:
   ``--trials`` runs batched in one call (for accuracy only) and ``--repeats`` runs of ONE chain / one SMC run /
   one nested-sampling run, each timed on its own after ``bdmc.clear_caches()``: its wall time (compilation
   included: what a first call in a process costs) and its compiled run alone (``Estimate.seconds``,
   compilation excluded). The single-run RMSE against the truth is over all trials + repeats runs.
3. An estimator stops at the first knob whose RMSE is below every target (the paper's RMSEs for that model and
   estimator, and 10 nats), or once one run takes longer than ``--budget`` seconds (compilation excluded).

Every row records ``os.getloadavg()`` before and after it. Rows are appended to
``benchmarks/results/time_to_rmse/time_to_rmse_<model>.jsonl`` as they finish; rerunning with the same settings
resumes. The folder's pages (``benchmarks/pages/time_to_rmse/``) are rendered from its rows: the summary of each
model, ``time_to_rmse_<model>.md``, and the table over every model run so far, ``time_to_rmse.md``.

    python benchmarks/time_to_rmse.py --model clustering
    python benchmarks/time_to_rmse.py --model binary --estimators ns --knobs ns=1,5 --trials ns=0 --repeats 6
    python benchmarks/time_to_rmse.py --model binary --estimators ns --knobs ns=5 --trials ns=0 --repeats 25 \
        --ns-particles 4 --truth-from benchmarks/results/time_to_rmse/time_to_rmse_binary.jsonl \
        --out benchmarks/results/time_to_rmse_ns_particles     # more live particles: a series of its own
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import time
from pathlib import Path

import jax
import numpy as np
from harness.store import append_row, load_rows, stamp
from rich.console import Console
from time_to_rmse_report import ESTIMATORS, targets, write_reports

import bdmc
from bdmc.models import REGISTRY

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

RESULTS = Path(__file__).resolve().parent / "results" / "time_to_rmse"
LADDERS = {"ais": (10, 30, 100, 300, 1000, 3000, 10000), "smc": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
           "ns": (1, 2, 5, 10, 20, 50, 100)}
TRUTH_STEPS = {"low-rank": 16000}  # else 10,000 (the paper's largest T on clustering and binary)
KEY_INDEX = {"ais": 0, "smc": 1, "ns": 2}  # fixed, so adding an estimator changes no other's keys


def main(argv=None) -> int:
    args = _parse(argv)
    console = Console()
    model = REGISTRY[args.model]()
    k_data, k_truth, k_runs = jax.random.split(jax.random.key(args.seed), 3)
    data, latent = bdmc.simulate(k_data, model)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / f"time_to_rmse_{args.model}.jsonl"
    base = {"model": args.model, "options": _options(model), "seed": args.seed}
    truth_settings = {**base, "truth_steps": args.truth_steps, "truth_runs": args.truth_runs}
    rows = load_rows(log_path)
    truth_row = _truth(args, model, data, latent, k_truth, truth_settings, rows, log_path, console)
    if truth_row is None:
        return 1
    for name in args.estimators:
        settings = {**base, "estimator": name, "trials": args.trials[name], "repeats": args.repeats}
        if name == "ns" and args.ns_particles != 2:  # the default stays out, so earlier rows still match
            settings["num_particles"] = args.ns_particles
        _sweep(args, name, model, data, k_runs, settings, truth_row["truth"], rows, log_path, console)
    print(write_reports(args.out, args.model))
    return 0


def _parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=["clustering", "low-rank", "binary"])
    ap.add_argument("--estimators", default="ais,smc,ns", help="comma-separated subset of ais,smc,ns")
    ap.add_argument("--knobs", action="append", default=[], metavar="EST=K1,K2,...",
                    help="knob ladder of one estimator (default: " + "; ".join(
                        f"{k} {','.join(map(str, v))}" for k, v in LADDERS.items()) + ")")
    ap.add_argument("--trials", action="append", default=[], metavar="N or EST=N",
                    help="batched runs per knob for the RMSE, for all or one estimator (default 25)")
    ap.add_argument("--repeats", type=int, default=3, help="timed single runs per knob (also scored)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="stop an estimator once one run takes longer than this (s, compilation excluded)")
    ap.add_argument("--truth-steps", type=int, default=None)
    ap.add_argument("--truth-runs", type=int, default=16)
    ap.add_argument("--truth-tol", type=float, default=1.0)
    ap.add_argument("--truth-from", type=Path, default=None, help="an earlier JSONL with a matching truth row")
    ap.add_argument("--ns-particles", type=int, default=2,
                    help="nested sampling's live particles (the paper's 2); another value is its own series")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.estimators = [e for e in args.estimators.split(",") if e]
    unknown = set(args.estimators) - set(ESTIMATORS)
    if unknown:
        ap.error(f"unknown estimators {sorted(unknown)}; choose from {sorted(ESTIMATORS)}")
    args.ladders = dict(LADDERS)
    for spec in args.knobs:
        name, _, values = spec.partition("=")
        args.ladders[name] = tuple(int(v) for v in values.split(","))
    trials = {name: 25 for name in ESTIMATORS}
    for spec in args.trials:
        name, _, value = spec.rpartition("=")
        for n in ([name] if name else ESTIMATORS):
            trials[n] = int(value)
    args.trials = trials
    if args.truth_steps is None:
        args.truth_steps = TRUTH_STEPS.get(args.model, 10000)
    return args


# ---------------------------------------------------------------------------------------------- ground truth


def _truth(args, model, data, latent, key, settings, rows, log_path, console):
    """The accepted ground-truth row (stored, imported or computed), or None when forward and reverse disagree."""
    row = next((r for r in rows if r["kind"] == "truth" and _same(r["settings"], settings)), None)
    if row is None and args.truth_from is not None:
        row = _import_truth(args.truth_from, settings)
        if row is not None:
            append_row(log_path, row)
            rows.append(row)
    if row is None:
        console.print(f"ground truth: forward and reverse AIS, T = {args.truth_steps}, {args.truth_runs} chains")
        row = _compute_truth(args, model, data, latent, key, settings)
        append_row(log_path, row)
        rows.append(row)
    console.print(f"ground truth {row['truth']:.3f} (forward {row['forward']:.3f}, reverse {row['reverse']:.3f}, "
                  f"gap {row['gap']:.3f} nats)", highlight=False)
    if not abs(row["gap"]) <= args.truth_tol:
        console.print(f"[bold red]forward and reverse AIS disagree by {row['gap']:.2f} nats > {args.truth_tol}: "
                      "no ground truth, nothing scored. Raise --truth-steps.[/]")
        return None
    return row


def _compute_truth(args, model, data, latent, key, settings) -> dict:
    kf, kr = jax.random.split(key)
    common = dict(num_steps=args.truth_steps, num_runs=args.truth_runs, progress=False)
    load = os.getloadavg()
    fwd = bdmc.forward_ais(kf, model, data, **common)
    rev = bdmc.reverse_ais(kr, model, data, exact_latent=latent, **common)
    return {"kind": "truth", "settings": settings, "forward": fwd.value, "forward_stderr": fwd.stderr,
            "reverse": rev.value, "reverse_stderr": rev.stderr, "gap": rev.value - fwd.value,
            "truth": 0.5 * (fwd.value + rev.value), "seconds": fwd.seconds + rev.seconds,
            "source": "computed", **_provenance(load)}


def _import_truth(path: Path, settings: dict):
    """A truth row of an earlier run (same model options, seed, truth steps and chains), re-keyed to ``settings``."""
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") != "truth":
            continue
        theirs = {k: row["settings"].get(k) for k in settings}
        if _same(theirs, settings):
            return {**row, "settings": settings, "source": str(path.name)}
    return None


# -------------------------------------------------------------------------------------------- knob sweeps


def _sweep(args, name, model, data, k_runs, settings, truth, rows, log_path, console):
    """Run one estimator up its knob ladder until every target is met or one run exceeds the budget."""
    goal = min(targets(args.model, name))
    key = jax.random.fold_in(k_runs, KEY_INDEX[name])
    for knob in args.ladders[name]:
        done = next((r for r in rows if r["kind"] == "run" and r["knob"] == knob and _same(r["settings"], settings)),
                    None)
        row = done or _run_knob(name, model, data, jax.random.fold_in(key, knob), knob, settings, truth)
        if done is None:
            append_row(log_path, row)
            rows.append(row)
        one = np.median([s["seconds"] for s in row["single"]])
        cold = np.median([s["wall_cold"] for s in row["single"]])
        console.print(f"{name:>3} knob {knob:>6}  RMSE {row['rmse']:.2f} over {len(row['runs'])} runs  one run "
                      f"{one:.3f} s (median; cold incl. compile {cold:.2f} s)  load {row['load_before'][0]:.1f}"
                      f"{'  (stored)' if done else ''}", highlight=False)
        if row["rmse"] < goal:
            break
        if one > args.budget:
            console.print(f"{name}: one run took {one:.1f} s > budget {args.budget:g} s; stopping", highlight=False)
            break


def _run_knob(name, model, data, key, knob, settings, truth) -> dict:
    """``trials`` batched runs and ``repeats`` cold single runs at one knob value, scored against ``truth``."""
    load = os.getloadavg()
    runs, batch = [], None
    if settings["trials"] > 0:
        batch = _call(name, jax.random.fold_in(key, 0), model, data, knob, settings["trials"], settings)
        runs += [float(v) for v in batch.runs]
    single = []
    for r in range(settings["repeats"]):
        bdmc.clear_caches()  # each timed run pays what a first call in a fresh process pays
        start = time.perf_counter()
        est = _call(name, jax.random.fold_in(key, 1 + r), model, data, knob, 1, settings)
        wall = time.perf_counter() - start
        single.append({"value": float(est.value), "seconds": est.seconds, "compile_seconds": est.compile_seconds,
                       "wall_cold": wall, "n_evals": int(est.n_evals)})
        runs.append(float(est.value))
    err = np.asarray(runs) - truth
    return {"kind": "run", "settings": settings, "estimator": name, "knob": knob, "runs": runs,
            "truth": truth, "rmse": float(np.sqrt(np.mean(err**2))), "mean_error": float(np.mean(err)),
            "batch_seconds": batch.seconds if batch else None,
            "batch_compile_seconds": batch.compile_seconds if batch else None, "single": single,
            **_provenance(load)}


def _call(name, key, model, data, knob, num_runs, settings):
    """The public estimator with its defaults plus the knob (and no progress bar)."""
    if name == "ais":
        return bdmc.forward_ais(key, model, data, num_steps=knob, num_runs=num_runs, progress=False)
    if name == "smc":
        return bdmc.smc(key, model, data, num_moves=knob, num_runs=num_runs, progress=False)
    return bdmc.estimators.nested_sampling(key, model, data, num_moves=knob, num_runs=num_runs,
                                           num_particles=settings.get("num_particles", 2))


# ------------------------------------------------------------------------------------------------ storage


def _provenance(load_before) -> dict:
    """Load averages before and after, time, commit and versions: what a timing depends on besides the code
    (with :func:`harness.store.stamp`'s fields; its ``commit`` is the same as this one)."""
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "src").splitlines()
    return {**stamp(), "load_before": list(load_before), "load_after": list(os.getloadavg()),
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": commit, "uncommitted_src": [line[3:] for line in dirty], "cpus": os.cpu_count(),
            "jax": jax.__version__, "bdmc": bdmc.__version__}


def _git(*args) -> str:
    """Output of a git command in this checkout ('' where git is unavailable)."""
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _options(model) -> dict:
    return {f.name: getattr(model, f.name) for f in dataclasses.fields(model)}


def _same(a: dict, b: dict) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


if __name__ == "__main__":
    raise SystemExit(main())
