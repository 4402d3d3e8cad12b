"""Evidence for the default variances of LowRank: how spread out is the posterior at paper size?

For each noise level sigma_n (sigma_u = sigma_v = 1), simulate data sets at the paper's size (N=50, D=25,
K=5), run the model's Gibbs kernel from the exact posterior sample (the latent that generated the data,
so no burn-in is needed), and summarize the posterior of the singular values of U V and of its row space
against the truth. Usage: ``python3 benchmarks/hyperparameters_low_rank.py [--sweeps 3000 --datasets 4]``.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

import bdmc
from bdmc.models.low_rank import LowRank

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms


def posterior_draws(key, model, num_sweeps, thin):
    """Simulate (data, truth) and return Gibbs draws of U V started at the truth."""
    k_sim, k_run = jax.random.split(key)
    data, truth = bdmc.simulate(k_sim, model)
    kernel = model.default_kernel()

    def body(latent, k):
        latent, _ = kernel(k, latent, data, 1.0)
        return latent, latent["U"] @ latent["V"]

    _, prods = jax.lax.scan(body, truth, jax.random.split(k_run, num_sweeps))
    return truth["U"] @ truth["V"], prods[::thin]


def summarize(true_prod, prods, k):
    """Relative posterior spread of each singular value and the subspace error of the row space."""
    s_true = np.linalg.svd(true_prod, compute_uv=False)[:k]
    _, s, vt = np.linalg.svd(prods, full_matrices=False)
    s = s[:, :k]
    _, _, vt_true = np.linalg.svd(true_prod, full_matrices=False)
    p_true = vt_true[:k].T @ vt_true[:k]
    p_post = np.einsum("tki,tkj->tij", vt[:, :k], vt[:, :k])
    # ||P - P_true||_F^2 / (2K): 0 when the row spaces coincide, 1 when orthogonal.
    subspace = np.sum((p_post - p_true) ** 2, axis=(1, 2)) / (2 * k)
    return {
        "s_true": s_true,
        "s_mean": s.mean(0),
        "s_rel_sd": s.std(0) / s.mean(0),
        "subspace_err": subspace.mean(),
        "fit_err": np.linalg.norm(prods.mean(0) - true_prod) / np.linalg.norm(true_prod),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sigma-n", type=float, nargs="+", default=[0.5, 1.0, 2.0, 3.0, 4.0])
    parser.add_argument("--sweeps", type=int, default=3000)
    parser.add_argument("--datasets", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("sigma_n | rel. sd of singular values (largest..smallest), mean over data sets | "
          "subspace err | fit err | min s_true/noise edge")
    for sn in args.sigma_n:
        model = LowRank(sigma_n=sn)
        rows = []
        for i in range(args.datasets):
            key = jax.random.fold_in(jax.random.key(args.seed), i)
            true_prod, prods = posterior_draws(key, model, args.sweeps, thin=10)
            rows.append(summarize(np.asarray(true_prod), np.asarray(prods)[len(prods) // 5:], model.k))
        rel = np.mean([r["s_rel_sd"] for r in rows], axis=0)
        sub = np.mean([r["subspace_err"] for r in rows])
        fit = np.mean([r["fit_err"] for r in rows])
        edge = sn * (np.sqrt(model.n) + np.sqrt(model.d))  # spectral norm of the noise matrix
        smin = np.mean([r["s_true"][-1] for r in rows]) / edge
        print(f"{sn:7.2f} | " + " ".join(f"{x:.3f}" for x in rel) + f" | {sub:.3f} | {fit:.3f} | {smin:.2f}")


if __name__ == "__main__":
    main()
