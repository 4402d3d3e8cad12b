"""Evidence for the default hyperparameters of the binary attributes model (BDMC paper, Sec. 6).

The paper fixed pi, sigma_a and sigma_n "such that the posterior distribution captures most of the structure,
but is not concentrated on a single explanation". For each setting on a grid this script simulates data sets
at paper size (N = 50, D = 25, K = 10), runs long collapsed Gibbs chains started at the exact sample (itself
a posterior draw, so no burn-in is needed) and reports, per setting, averaged over data sets:

- ``recovered``: fraction of bits whose posterior marginal rounds to the true bit (structure captured);
- ``uncertain``: fraction of bits with posterior marginal in (0.05, 0.95) (not one explanation);
- ``entropy``: mean binary entropy of the posterior marginals, in bits;
- ``hamming``: mean number of bits (of N K = 500) in which a posterior sample differs from the exact one.

One row per setting and data set is appended to ``results/hyperparameters_binary_attributes/rows.jsonl`` as
each setting finishes (stamped with commit, clean tree, date, load and machine); a rerun skips the settings
already stored at the same sweeps, data sets, chains, sigma_a and seed, and renders the folder's ``README.md``
(templates in ``pages/hyperparameters_binary_attributes/``). A run at other settings than the documented ones
stores rows only where ``--out`` names a folder (a trial never mixes into the results folder; it gets no page).

    python3 benchmarks/hyperparameters_binary_attributes.py      # --sweeps 400 --datasets 3 --chains 4 --seed 0
    python3 benchmarks/hyperparameters_binary_attributes.py --sweeps 4 --datasets 1 --chains 2 --out /tmp/hp
    python3 benchmarks/hyperparameters_binary_attributes.py --render
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from harness.pages import write_folder
from harness.store import append_row, load_rows
from scipy.special import entr

import bdmc
from bdmc.models.binary_attributes import BinaryAttributes

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

NAME = "hyperparameters_binary_attributes"
OUT = Path(__file__).resolve().parent / "results" / NAME
PI = (0.3, 0.5)
SIGMA_N = (0.3, 0.5, 0.7, 1.0, 1.25, 1.5, 2.0)
DEFAULTS = {"sweeps": 400, "datasets": 3, "chains": 4, "seed": 0, "sigma_a": 1.0}  # the settings the page shows
METRICS = ("recovered", "uncertain", "entropy", "hamming")


def posterior_marginals(key, model, *, sweeps, datasets, chains):
    """Simulate ``datasets`` data sets; run ``chains`` Gibbs chains per set from the exact Z; return marginals."""
    k_sim, k_run = jax.random.split(key)
    data, latent = jax.vmap(lambda k: bdmc.simulate(k, model))(jax.random.split(k_sim, datasets))
    z_true = latent["Z"]
    kernel = model.default_kernel()

    def one_chain(k, y, z0):
        def body(carry, kk):
            z, total, ham = carry
            z = kernel(kk, {"Z": z}, y, 1.0)[0]["Z"]
            return (z, total + z, ham + jnp.sum(z != z0, dtype=z0.dtype)), None

        init = (z0, jnp.zeros_like(z0), jnp.zeros((), z0.dtype))
        (_, total, ham), _ = jax.lax.scan(body, init, jax.random.split(k, sweeps))
        return total / sweeps, ham / sweeps

    def one_set(k, y, z0):
        return jax.vmap(one_chain, in_axes=(0, None, None))(jax.random.split(k, chains), y, z0)

    marg, ham = jax.jit(jax.vmap(one_set))(jax.random.split(k_run, datasets), data, z_true)
    return np.asarray(marg).mean(1), np.asarray(z_true), np.asarray(ham)


def summarize(marg, z_true, ham):
    """The four measures of one data set (or, given all, pooled: every data set has N K bits)."""
    entropy = (entr(marg) + entr(1 - marg)) / np.log(2)
    return {
        "recovered": float(np.mean((marg > 0.5) == (z_true == 1))),
        "uncertain": float(np.mean((marg > 0.05) & (marg < 0.95))),
        "entropy": float(np.mean(entropy)),
        "hamming": float(np.mean(ham)),
    }


def settings_of(row: dict) -> tuple:
    return (row["pi"], row["sigma_n"], row["sigma_a"], row["sweeps"], row["datasets"], row["chains"], row["seed"])


def line(rows: list[dict]) -> str:
    """One setting's line of the printed table: the means over its data sets."""
    m = {k: np.mean([r[k] for r in rows]) for k in (*METRICS, "seconds")}
    return (f"| {rows[0]['pi']} | {rows[0]['sigma_n']} | {m['recovered']:.3f} | {m['uncertain']:.3f} | "
            f"{m['entropy']:.3f} | {m['hamming']:.1f} | {m['seconds']:.0f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=DEFAULTS["sweeps"])
    parser.add_argument("--datasets", type=int, default=DEFAULTS["datasets"])
    parser.add_argument("--chains", type=int, default=DEFAULTS["chains"])
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    parser.add_argument("--sigma-a", type=float, default=DEFAULTS["sigma_a"])
    parser.add_argument("--pi", type=float, nargs="+", default=list(PI))
    parser.add_argument("--sigma-n", type=float, nargs="+", default=list(SIGMA_N))
    parser.add_argument("--out", type=Path, default=None,
                        help=f"folder of rows.jsonl and the page (default benchmarks/results/{NAME}/; a run at "
                             "other settings than the documented ones stores rows only with --out)")
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    args = parser.parse_args(argv)
    out = args.out or OUT
    if args.render:
        print("\n".join(map(str, write_folder(NAME, written_to=out))))
        return
    run = {"sweeps": args.sweeps, "datasets": args.datasets, "chains": args.chains, "seed": args.seed,
           "sigma_a": args.sigma_a}
    store = args.out is not None or run == DEFAULTS
    stored = load_rows(out / "rows.jsonl") if store else []
    print(f"sweeps={args.sweeps} datasets={args.datasets} chains={args.chains} sigma_a={args.sigma_a} seed={args.seed}"
          + ("" if store else "  (trial settings: rows not stored; name --out to keep them)"))
    print("| pi | sigma_n | recovered | uncertain | entropy (bits) | hamming (of 500) | seconds |")
    print("|---|---|---|---|---|---|---|")
    for pi in args.pi:
        for sigma_n in args.sigma_n:
            setting = (pi, sigma_n, args.sigma_a, args.sweeps, args.datasets, args.chains, args.seed)
            rows = [r for r in stored if settings_of(r) == setting]
            have = {r["dataset"] for r in rows}
            if len(have) < args.datasets:  # not stored yet (or cut short): run it, store the missing data sets
                model = BinaryAttributes(pi=pi, sigma_a=args.sigma_a, sigma_n=sigma_n)
                start = time.perf_counter()
                marg, z_true, ham = posterior_marginals(jax.random.key(args.seed), model, sweeps=args.sweeps,
                                                        datasets=args.datasets, chains=args.chains)
                seconds = time.perf_counter() - start
                new = [{"pi": pi, "sigma_n": sigma_n, **run, "dataset": d, "bits": int(z_true[d].size),
                        **summarize(marg[d], z_true[d], ham[d]), "seconds": seconds}
                       for d in range(args.datasets) if d not in have]
                for row in new if store else ():
                    append_row(out / "rows.jsonl", row)
                rows = sorted(rows + new, key=lambda r: r["dataset"])
            print(line(rows), flush=True)
    if store:
        write_folder(NAME, written_to=out)  # the results folder's page (a trial --out elsewhere: none)


if __name__ == "__main__":
    main()
