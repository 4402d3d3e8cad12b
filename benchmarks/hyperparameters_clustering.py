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

Usage: ``python benchmarks/hyperparameters_clustering.py [--datasets 3] [--chains 8] [--sweeps 2000]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

import bdmc
from bdmc.models.clustering import Clustering

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--chains", type=int, default=8)
    parser.add_argument("--sweeps", type=int, default=2000)
    parser.add_argument("--thin", type=int, default=10)
    parser.add_argument("--grid", type=float, nargs="*", default=GRID)
    args = parser.parse_args()
    base = Clustering()
    print(f"N={base.n} D={base.dim} K={base.k} sigma_noise=1; {args.datasets} data sets x {args.chains} chains x "
          f"{args.sweeps} sweeps from the exact sample (thin {args.thin})\n")
    print("| sigma_theta | ARI | P(true) | uncertain pairs | uncertain points | occupied (true) |")
    print("|---|---|---|---|---|---|")
    for sigma_theta in args.grid:
        model = replace(base, sigma_theta=float(sigma_theta), sigma_noise=1.0)
        rows, start = [], time.perf_counter()
        for d in range(args.datasets):
            data, latent = bdmc.simulate(jax.random.key(d), model)
            out = run_chains(jax.random.key(1000 + d), model, data, latent,
                             chains=args.chains, sweeps=args.sweeps, thin=args.thin)
            rows.append(summarize(*out, np.asarray(latent["z"])))
        mean = {key: np.mean([r[key] for r in rows]) for key in rows[0]}
        print(f"| {sigma_theta:g} | {mean['ARI']:.3f} | {mean['P(true)']:.3f} | {mean['uncertain pairs']:.3f} | "
              f"{mean['uncertain points']:.3f} | {mean['occupied']:.2f} ({mean['true occupied']:.1f}) |"
              f"  <!-- {time.perf_counter() - start:.0f} s -->")


if __name__ == "__main__":
    main()
