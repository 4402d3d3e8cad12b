"""Evidence for the default hyperparameters of the binary attributes model (BDMC paper, Sec. 6).

The paper fixed pi, sigma_a and sigma_n "such that the posterior distribution captures most of the structure,
but is not concentrated on a single explanation". For each setting on a grid this script simulates data sets
at paper size (N = 50, D = 25, K = 10), runs long collapsed Gibbs chains started at the exact sample (itself
a posterior draw, so no burn-in is needed) and reports, per setting, averaged over data sets:

- ``recovered``: fraction of bits whose posterior marginal rounds to the true bit (structure captured);
- ``uncertain``: fraction of bits with posterior marginal in (0.05, 0.95) (not one explanation);
- ``entropy``: mean binary entropy of the posterior marginals, in bits;
- ``hamming``: mean number of bits (of N K = 500) in which a posterior sample differs from the exact one.

Run: ``python3 benchmarks/hyperparameters_binary_attributes.py [--sweeps 400 --datasets 3 --chains 4]``.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import entr

import bdmc
from bdmc.models.binary_attributes import BinaryAttributes

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

GRID = [(pi, sn) for pi in (0.3, 0.5) for sn in (0.7, 1.0, 1.25, 1.5, 2.0)]


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
    entropy = (entr(marg) + entr(1 - marg)) / np.log(2)
    return {
        "recovered": float(np.mean((marg > 0.5) == (z_true == 1))),
        "uncertain": float(np.mean((marg > 0.05) & (marg < 0.95))),
        "entropy": float(np.mean(entropy)),
        "hamming": float(np.mean(ham)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=400)
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sigma-a", type=float, default=1.0)
    args = parser.parse_args(argv)
    print(f"sweeps={args.sweeps} datasets={args.datasets} chains={args.chains} sigma_a={args.sigma_a} seed={args.seed}")
    print("| pi | sigma_n | recovered | uncertain | entropy (bits) | hamming (of 500) | seconds |")
    print("|---|---|---|---|---|---|---|")
    for pi, sigma_n in GRID:
        model = BinaryAttributes(pi=pi, sigma_a=args.sigma_a, sigma_n=sigma_n)
        start = time.perf_counter()
        s = summarize(*posterior_marginals(jax.random.key(args.seed), model, sweeps=args.sweeps,
                                           datasets=args.datasets, chains=args.chains))
        print(f"| {pi} | {sigma_n} | {s['recovered']:.3f} | {s['uncertain']:.3f} | {s['entropy']:.3f} | "
              f"{s['hamming']:.1f} | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
