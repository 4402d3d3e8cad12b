"""The BDMC paper's VB "hint" experiment (Sec. 6.4): random restarts against a start at the generating latent.

For each of the paper's three models (clustering, low rank, binary attributes) at paper size, on the very data set
of ``bdmc bench`` (``benchmarks/results/bench-<model>``: simulated from the seed in its ``bench.json`` with the
bench's key stream, checked by recomputing that bench's smallest LW row bit for bit) and scored against the ground
truth stored there (the average of forward and reverse AIS):

- random restarts: ``--restarts`` mean-field coordinate-ascent runs from the model's random ``vb_init``, vmapped in
  one compiled call; every restart's final bound is recorded. The keys are those of the bench's first VB trial at
  the same number of restarts, so with 100 restarts and the bench's stopping rule the best bound must equal that
  trial's stored estimate (checked, recorded as ``bench_vb_trial0``);
- hinted: one run started at the latent that generated the data (``init_from_latent`` of the model's ``vb``
  module: q(z) a point mass at z for clustering and binary, the means at U, V for low rank), in one compiled call;

both with the stopping rule of :func:`bdmc.estimators.variational_bayes` (``--tol`` nats over ``--patience``
sweeps, at most ``--max-iterations`` sweeps). The paper found the random restarts reach the hinted optimum or a
slightly better one, so the gap to the truth is the approximation's, not local optima's. Bounds are reported plain
(VB, a lower bound on log p(y)) and with the symmetry correction (VB+sym, a heuristic, not a bound). Seconds are
wall time of the compiled call, compilation excluded (reported beside it), on whatever machine ran it.

One JSON row per model is appended to ``OUT/rows.jsonl`` as it finishes (a rerun skips the models already there
with the same settings) and ``OUT/table.md`` is rewritten from the rows:

    python benchmarks/vb_hint.py --restarts 100 --out benchmarks/results/vb_hint
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pandas as pd

import bdmc
from bdmc.estimators.vb import coordinate_ascent, symmetry_correction, variational_bayes
from bdmc.experiments.bench import ESTIMATORS, run_key
from bdmc.experiments.scoring import DATA_TAG
from bdmc.models import REGISTRY
from bdmc.models.binary_attributes import vb as binary_vb
from bdmc.models.clustering import vb as clustering_vb
from bdmc.models.low_rank import vb as low_rank_vb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp  # noqa: E402

bdmc.enable_x64()  # float64, as the bench's truth and VB rows

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("clustering", "low-rank", "binary")
LABELS = {"clustering": "Clustering", "low-rank": "Low rank", "binary": "Binary"}
HINTS = {"clustering": clustering_vb.init_from_latent, "low-rank": low_rank_vb.init_from_latent,
         "binary": binary_vb.init_from_latent}
QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
SETTINGS = ("restarts", "tol", "patience", "max_iterations")
# The stopping rule ``bdmc bench`` ran VB with: variational_bayes's defaults.
BENCH_RULE = {k: v.default for k, v in inspect.signature(variational_bayes).parameters.items()
              if k in ("tol", "patience", "max_iterations")}


def bench_problem(name: str, bench_dir: Path):
    """The bench's model, data, generating latent, key, stored truth and table, checked to be its data set.

    The data are ``simulate(fold_in(key, DATA_TAG), model)`` as in ``bdmc bench``; the check recomputes the
    bench's smallest LW row (its key is a function of the seed, the name and the knob) and requires its trial
    estimates to match the stored ones, which they do only on the same data.
    """
    stored = json.loads((bench_dir / "bench.json").read_text())
    settings = stored["settings"]
    model = REGISTRY[name](**json.loads(settings["model_options"]))
    if type(model).__name__ != settings["model"] or settings["data"] != "simulated":
        raise SystemExit(f"{bench_dir}: a {settings['model']} bench on {settings['data']} data, not {name}'s")
    key = jax.random.wrap_key_data(np.asarray(json.loads(settings["seed"]), np.uint32))
    data, latent = bdmc.simulate(jax.random.fold_in(key, DATA_TAG), model)
    table = pd.read_csv(bench_dir / "bench.csv")
    lw = table[table["estimator"] == "lw"].sort_values("knob").iloc[0]
    est = ESTIMATORS["lw"](run_key(key, "lw", int(lw["knob"])), model, data, num_proposals=int(lw["knob"]),
                           num_runs=int(lw["trials"]))
    mismatch = float(np.max(np.abs(np.asarray(est.runs) - np.asarray(json.loads(lw["trial_estimates"])))))
    if not mismatch <= 1e-6:
        raise SystemExit(f"{name}: LW at knob {lw['knob']} differs from {bench_dir}/bench.csv by {mismatch:.3g} nats:"
                         " not the bench's data set (or LW changed since)")
    return model, data, latent, key, stored["truth"], table, mismatch


def _compiled(fn, *args):
    """``fn`` compiled for ``args``, and the seconds compiling took."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - start


def _timed(compiled, *args):
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return jax.tree.map(np.asarray, out), time.perf_counter() - start


def run_model(name: str, args) -> dict:
    """One row: every random restart's bound, the hinted run, the truth and the cross-checks."""
    bench_dir = args.bench_root / f"bench-{name}"
    model, data, latent, key, truth, table, mismatch = bench_problem(name, bench_dir)
    rule = {"tol": args.tol, "patience": args.patience, "max_iterations": args.max_iterations}

    def restarts(keys, data):
        def one(k):
            _, bound, iterations = coordinate_ascent(model, data, model.vb_init(k, data), **rule)
            return bound, iterations

        return jax.vmap(one)(keys)

    def hinted(params, data):
        _, bound, iterations = coordinate_ascent(model, data, params, **rule)
        return model.vb_bound(params, data), bound, iterations

    # The keys of the bench's first VB trial at this many restarts (variational_bayes splits runs, then restarts).
    vb_rows = table[(table["estimator"] == "vb") & (table["knob"] == args.restarts)]
    trials = int(vb_rows.iloc[0]["trials"]) if len(vb_rows) else 1
    keys = jax.random.split(jax.random.split(run_key(key, "vb", args.restarts), trials)[0], args.restarts)
    compiled, random_compile = _compiled(restarts, keys, data)
    (bounds, iterations), random_seconds = _timed(compiled, keys, data)
    start = HINTS[name](model, latent, data)
    compiled, hinted_compile = _compiled(hinted, start, data)
    (hinted_start, hinted_bound, hinted_iterations), hinted_seconds = _timed(compiled, start, data)

    best, hint = float(np.max(bounds)), float(hinted_bound)
    correction = symmetry_correction(model)
    bench_trial0 = float(json.loads(vb_rows.iloc[0]["trial_estimates"])[0]) if len(vb_rows) else None
    if bench_trial0 is not None and rule != BENCH_RULE:
        bench_trial0 = None  # the bench ran another stopping rule: its restarts end elsewhere
    if bench_trial0 is not None and abs(best - bench_trial0) > 1e-6 * abs(best):
        raise SystemExit(f"{name}: best of {args.restarts} restarts {best:.6f} differs from the bench's first VB "
                         f"trial at {args.restarts} restarts ({bench_trial0:.6f}): the restarts are not the bench's")
    return {
        "model": name, "model_options": dataclasses.asdict(model), "bench": str(bench_dir),
        "data_check_lw_max_abs": mismatch, **{k: getattr(args, k) for k in SETTINGS},
        "truth": truth["value"], "truth_forward": truth["forward"], "truth_reverse": truth["reverse"],
        "symmetry_correction": correction,
        "random_best": best, "random_best_sym": best + correction,
        "random_quantiles": {f"{q:g}": float(np.quantile(bounds, q)) for q in QUANTILES},
        "random_bounds": [float(b) for b in bounds],
        "random_reaching_hinted": int(np.sum(bounds >= hint - args.tol)),
        "random_iterations_mean": float(np.mean(iterations)), "random_iterations_max": int(np.max(iterations)),
        "random_at_cap": int(np.sum(iterations >= args.max_iterations)),
        "random_seconds": random_seconds, "random_compile_seconds": random_compile,
        "bench_vb_trial0": bench_trial0,
        "hinted_start": float(hinted_start), "hinted": hint, "hinted_sym": hint + correction,
        "hinted_iterations": int(hinted_iterations), "hinted_seconds": hinted_seconds,
        "hinted_compile_seconds": hinted_compile,
        "random_minus_hinted": best - hint, "truth_minus_random_best": truth["value"] - best,
        "truth_minus_hinted": truth["value"] - hint,
        "jax_version": jax.__version__, "x64": bool(jax.config.jax_enable_x64), **stamp(),
    }


def surprises(row: dict) -> list[str]:
    """What would be a bug or would contradict the paper: a VB bound above the truth, the hint above the restarts."""
    out = []
    top = max(row["random_best"], row["hinted"])
    if top > row["truth"]:
        out.append(f"a VB bound ({top:.3f}) above the truth ({row['truth']:.3f}): a bug, or a truth that is off")
    if row["random_minus_hinted"] < -row["tol"]:
        out.append(f"the hinted bound is {-row['random_minus_hinted']:.3f} nats above the best random restart")
    if row["random_at_cap"] or row["hinted_iterations"] >= row["max_iterations"]:
        out.append(f"runs stopped at the iteration cap ({row['random_at_cap']} restarts, hinted "
                   f"{row['hinted_iterations']} sweeps)")
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=100, help="random restarts per model (one vmapped call)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    parser.add_argument("--tol", type=float, default=BENCH_RULE["tol"],
                        help="stop when the bound rose less than this (nats) over --patience sweeps")
    parser.add_argument("--patience", type=int, default=BENCH_RULE["patience"])
    parser.add_argument("--max-iterations", type=int, default=BENCH_RULE["max_iterations"])
    parser.add_argument("--bench-root", type=Path, default=ROOT / "benchmarks" / "results",
                        help="folder holding bench-<model>/bench.json and bench.csv")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "vb_hint")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("vb_hint")
        return
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    if not names or set(names) - set(MODELS) or args.restarts < 1:
        parser.error(f"--models must name some of {', '.join(MODELS)} and --restarts must be at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    rows = load_rows(rows_path)
    done = {(r["model"],) + tuple(r[k] for k in SETTINGS) for r in rows}
    for name in names:
        if (name,) + tuple(getattr(args, k) for k in SETTINGS) in done:
            print(f"{name}: done, skipped", flush=True)
            continue
        row = run_model(name, args)
        rows.append(row)
        append_row(rows_path, row)
        q, diff = row["random_quantiles"], round(row["random_minus_hinted"], 3) + 0.0
        print(f"{name}: truth {row['truth']:.3f}; best of {row['restarts']} random {row['random_best']:.3f} "
              f"(median {q['0.5']:.3f}, min {q['0']:.3f}; {row['random_reaching_hinted']} reach the hint); hinted "
              f"{row['hinted']:.3f} from {row['hinted_start']:.3f} in {row['hinted_iterations']} sweeps; random - "
              f"hinted {diff:+.3f}; +sym {row['random_best_sym']:.3f} / {row['hinted_sym']:.3f}; "
              f"{row['random_seconds']:.2f} s (+{row['random_compile_seconds']:.1f} s compile) random, "
              f"{row['hinted_seconds']:.2f} s (+{row['hinted_compile_seconds']:.1f} s) hinted", flush=True)
        for line in surprises(row):
            print(f"  NOTE {name}: {line}", flush=True)
    write_folder("vb_hint", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
