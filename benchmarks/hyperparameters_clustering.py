"""Evidence for the default hyperparameters of ``bdmc.models.clustering.Clustering``.

The BDMC paper fixes sigma_theta and sigma_n "such that the posterior captures most of the structure but is
not concentrated on a single explanation". Only the ratio sigma_theta / sigma_n matters for the posterior of
the assignments, so sigma_n = 1 and sigma_theta runs over a grid. For each value, data sets of the paper's
size (N = 50, D = 25, K = 10) are simulated; collapsed Gibbs chains start at the exact sample (the latent
that generated the data, an exact posterior draw) and run long. From the thinned posterior samples:

- ``ARI``: mean adjusted Rand index of the sampled partition against the true one (structure captured);
- ``P(true)``: fraction of samples whose partition is exactly the true one (1 = a single explanation);
- ``uncertain pairs``: fraction of the pairs ever co-clustered whose co-clustering probability is in
  (0.05, 0.95);
- ``uncertain points``: fraction of points with some partner whose co-clustering probability is in (0.1, 0.9);
- ``occupied``: mean number of non-empty clusters (true value in brackets).

One row per value and data set is appended to ``results/hyperparameters_clustering/rows.jsonl`` as it finishes
(stamped with commit, clean tree, date, load and machine); a rerun skips the data sets already stored at the same
sweeps, chains and thinning, and renders the folder's ``README.md`` (templates in
``pages/hyperparameters_clustering/``). A run at other settings than the documented ones stores rows only where
``--out`` names a folder (a trial never mixes into the results folder; it gets no page).

    python benchmarks/hyperparameters_clustering.py                    # grid 0.2 ... 1.0
    python benchmarks/hyperparameters_clustering.py --grid 1.1 1.2 1.5 2.0 3.0
    python benchmarks/hyperparameters_clustering.py --grid 1.2 --datasets 1 --chains 2 --sweeps 20 --out /tmp/hp
    python benchmarks/hyperparameters_clustering.py --render
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from harness.pages import write_folder
from harness.store import append_row, load_rows

import bdmc
from bdmc.models.clustering import Clustering

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

NAME = "hyperparameters_clustering"
OUT = Path(__file__).resolve().parent / "results" / NAME
GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
DEFAULTS = {"chains": 8, "sweeps": 2000, "thin": 10}  # the settings the page shows (data set d: keys d, 1000 + d)


def pair_matrix(z):
    return z[:, None] == z[None, :]


def adjusted_rand(z, truth):
    """ARI from pair counts (each unordered pair once)."""
    n = z.shape[0]
    upper = jnp.triu(jnp.ones((n, n), bool), 1)
    a_, b_ = pair_matrix(z) & upper, pair_matrix(truth) & upper
    both = jnp.sum(a_ & b_)
    only_a, only_b = jnp.sum(a_ & ~b_), jnp.sum(~a_ & b_ & upper)
    neither = jnp.sum(upper) - both - only_a - only_b
    num = 2.0 * (both * neither - only_a * only_b)
    den = (both + only_a) * (only_a + neither) + (both + only_b) * (only_b + neither)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 1.0)


def run_chains(key, model, data, latent, *, chains, sweeps, thin):
    """Collapsed Gibbs from the exact sample; returns co-clustering probabilities and per-sample summaries."""
    kernel = model.default_kernel()

    def one(k):
        def body(z, kk):
            z, _ = kernel(kk, z, data, 1.0)
            return z, z["z"]

        return jax.lax.scan(body, latent, jax.random.split(k, sweeps))[1][::thin]

    zs = jax.jit(jax.vmap(one))(jax.random.split(key, chains)).reshape(-1, model.n)
    truth = latent["z"]
    co = jnp.mean(jax.vmap(pair_matrix)(zs), axis=0)
    ari = jax.vmap(adjusted_rand, (0, None))(zs, truth)
    exact = jax.vmap(lambda z: jnp.all(pair_matrix(z) == pair_matrix(truth)))(zs)
    occupied = jax.vmap(lambda z: jnp.sum(jnp.any(jax.nn.one_hot(z, model.k) > 0, axis=0)))(zs)
    return np.asarray(co), np.asarray(ari), np.asarray(exact), np.asarray(occupied)


def summarize(co, ari, exact, occupied, truth):
    n = co.shape[0]
    off = ~np.eye(n, dtype=bool)
    ever = (co > 0) & off
    uncertain_pairs = np.mean(((co > 0.05) & (co < 0.95))[ever])
    uncertain_points = np.mean(np.any((co > 0.1) & (co < 0.9) & off, axis=1))
    true_occupied = len(np.unique(truth))
    return {"ARI": ari.mean(), "P(true)": exact.mean(), "uncertain pairs": uncertain_pairs,
            "uncertain points": uncertain_points, "occupied": occupied.mean(), "true occupied": true_occupied}


def line(sigma_theta: float, rows: list[dict], seconds: float) -> str:
    """One value's line of the printed table: the means over its data sets."""
    mean = {key: np.mean([r[key] for r in rows]) for key in ("ARI", "P(true)", "uncertain pairs",
                                                             "uncertain points", "occupied", "true occupied")}
    return (f"| {sigma_theta:g} | {mean['ARI']:.3f} | {mean['P(true)']:.3f} | {mean['uncertain pairs']:.3f} | "
            f"{mean['uncertain points']:.3f} | {mean['occupied']:.2f} ({mean['true occupied']:.1f}) |"
            f"  <!-- {seconds:.0f} s -->")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--chains", type=int, default=DEFAULTS["chains"])
    parser.add_argument("--sweeps", type=int, default=DEFAULTS["sweeps"])
    parser.add_argument("--thin", type=int, default=DEFAULTS["thin"])
    parser.add_argument("--grid", type=float, nargs="*", default=GRID)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"folder of rows.jsonl and the page (default benchmarks/results/{NAME}/; a run at "
                             "other settings than the documented ones stores rows only with --out)")
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    args = parser.parse_args(argv)
    out = args.out or OUT
    if args.render:
        print("\n".join(map(str, write_folder(NAME, written_to=out))))
        return
    run = {"chains": args.chains, "sweeps": args.sweeps, "thin": args.thin}
    store = args.out is not None or run == DEFAULTS
    stored = load_rows(out / "rows.jsonl") if store else []
    base = Clustering()
    print(f"N={base.n} D={base.dim} K={base.k} sigma_noise=1; {args.datasets} data sets x {args.chains} chains x "
          f"{args.sweeps} sweeps from the exact sample (thin {args.thin})"
          + ("" if store else "  (trial settings: rows not stored; name --out to keep them)") + "\n")
    print("| sigma_theta | ARI | P(true) | uncertain pairs | uncertain points | occupied (true) |")
    print("|---|---|---|---|---|---|")
    for sigma_theta in args.grid:
        model = replace(base, sigma_theta=float(sigma_theta), sigma_noise=1.0)
        rows, start = [], time.perf_counter()
        for d in range(args.datasets):
            done = [r for r in stored if r["sigma_theta"] == float(sigma_theta) and r["dataset"] == d
                    and all(r[k] == v for k, v in run.items())]
            if done:  # stored by an earlier run at the same settings
                rows.append(done[0])
                continue
            began = time.perf_counter()
            data, latent = bdmc.simulate(jax.random.key(d), model)
            out_d = run_chains(jax.random.key(1000 + d), model, data, latent,
                               chains=args.chains, sweeps=args.sweeps, thin=args.thin)
            row = {"sigma_theta": float(sigma_theta), "sigma_noise": 1.0, "dataset": d, **run,
                   **{k: float(v) for k, v in summarize(*out_d, np.asarray(latent["z"])).items()},
                   "seconds": time.perf_counter() - began}
            if store:
                append_row(out / "rows.jsonl", row)
            rows.append(row)
        print(line(sigma_theta, rows, time.perf_counter() - start), flush=True)
    if store:
        write_folder(NAME, written_to=out)  # the results folder's page (a trial --out elsewhere: none)


if __name__ == "__main__":
    main()
