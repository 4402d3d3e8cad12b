"""Evidence for the default variances of LowRank: how spread out is the posterior at paper size?

For each noise level sigma_n (sigma_u = sigma_v = 1), simulate data sets at the paper's size (N=50, D=25,
K=5), run the model's Gibbs kernel from the exact posterior sample (the latent that generated the data,
so no burn-in is needed), and summarize the posterior of the singular values of U V and of its row space
against the truth.

One row per noise level and data set is appended to ``results/hyperparameters_low_rank/rows.jsonl`` as it finishes
(stamped with commit, clean tree, date, load and machine); a rerun skips the data sets already stored at the same
sweeps and seed, and renders the folder's ``README.md`` (templates in ``pages/hyperparameters_low_rank/``). A run at
other settings than the documented ones stores rows only where ``--out`` names a folder (a trial there gets no page).

    python3 benchmarks/hyperparameters_low_rank.py              # --sweeps 3000 --datasets 4 --seed 0
    python3 benchmarks/hyperparameters_low_rank.py --sigma-n 1 --sweeps 50 --datasets 1 --out /tmp/hp
    python3 benchmarks/hyperparameters_low_rank.py --render
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import numpy as np
from harness.pages import write_folder
from harness.store import append_row, load_rows

import bdmc
from bdmc.models.low_rank import LowRank

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

NAME = "hyperparameters_low_rank"
OUT = Path(__file__).resolve().parent / "results" / NAME
DEFAULTS = {"sweeps": 3000, "seed": 0, "thin": 10, "burn": 0.2}  # the settings the page shows


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sigma-n", type=float, nargs="+", default=[0.5, 1.0, 2.0, 3.0, 4.0])
    parser.add_argument("--sweeps", type=int, default=DEFAULTS["sweeps"])
    parser.add_argument("--datasets", type=int, default=4)
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    parser.add_argument("--out", type=Path, default=None,
                        help=f"folder of rows.jsonl and the page (default benchmarks/results/{NAME}/; a run at "
                             "other settings than the documented ones stores rows only with --out)")
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    args = parser.parse_args(argv)
    out = args.out or OUT
    if args.render:
        print("\n".join(map(str, write_folder(NAME, written_to=out))))
        return
    run = {"sweeps": args.sweeps, "seed": args.seed, "thin": DEFAULTS["thin"], "burn": DEFAULTS["burn"]}
    store = args.out is not None or run == DEFAULTS
    stored = load_rows(out / "rows.jsonl") if store else []
    print("sigma_n | rel. sd of singular values (largest..smallest), mean over data sets | "
          "subspace err | fit err | min s_true/noise edge"
          + ("" if store else "  (trial settings: rows not stored; name --out to keep them)"))
    for sn in args.sigma_n:
        model = LowRank(sigma_n=sn)
        edge = sn * (np.sqrt(model.n) + np.sqrt(model.d))  # spectral norm of the noise matrix
        rows = []
        for i in range(args.datasets):
            done = [r for r in stored if r["sigma_n"] == sn and r["dataset"] == i
                    and all(r[k] == v for k, v in run.items())]
            if done:  # stored by an earlier run at the same settings
                rows.append(done[0])
                continue
            began = time.perf_counter()
            key = jax.random.fold_in(jax.random.key(args.seed), i)
            true_prod, prods = posterior_draws(key, model, args.sweeps, thin=run["thin"])
            prods = np.asarray(prods)
            r = summarize(np.asarray(true_prod), prods[int(len(prods) * run["burn"]):], model.k)
            row = {"sigma_n": sn, "dataset": i, **run, "s_rel_sd": [float(x) for x in r["s_rel_sd"]],
                   "subspace_err": float(r["subspace_err"]), "fit_err": float(r["fit_err"]),
                   "s_true": [float(x) for x in r["s_true"]], "noise_edge": float(edge),
                   "smallest_over_edge": float(r["s_true"][-1] / edge), "seconds": time.perf_counter() - began}
            if store:
                append_row(out / "rows.jsonl", row)
            rows.append(row)
        rel = np.mean([r["s_rel_sd"] for r in rows], axis=0)
        sub = np.mean([r["subspace_err"] for r in rows])
        fit = np.mean([r["fit_err"] for r in rows])
        smin = np.mean([r["smallest_over_edge"] for r in rows])
        print(f"{sn:7.2f} | " + " ".join(f"{x:.3f}" for x in rel) + f" | {sub:.3f} | {fit:.3f} | {smin:.2f}",
              flush=True)
    if store:
        write_folder(NAME, written_to=out)  # the results folder's page (a trial --out elsewhere: none)


if __name__ == "__main__":
    main()
