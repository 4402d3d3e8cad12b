"""The mixture bracket (Ji, Shen & West, Sec. 4.2, context 1) against a BDMC sandwich on the same data.

Data are simulated from the collapsed normal-inverse-Wishart mixture itself (``bdmc.models.niw_mixture``; the
priors of ``benchmarks/bracketing_mixture.py``: tau = 0.1, IW(4, I), pi ~ Dir(1/k)), so the labels that
generated them are an exact posterior sample and forward/reverse AIS with the tempered collapsed Gibbs sweep
sandwich log p(D). The bracket uses z-only posterior draws from independent collapsed Gibbs runs at lam = 1:

    U1/L1 sym     label-symmetrized q (cross-fitted U, q for L fitted with no pseudo-count)
    U1/L1 paper   unsymmetrized q fitted in-sample with no pseudo-count (the paper's literal estimate)
    U1 crossfit   unsymmetrized, cross-fitted (pseudo-count 0.5 / k per label)

The data set is the first seed whose simulated clusters all hold at least ``--min-frac`` of the points (so
that the k! relabellings are distinct modes); the selection looks at the simulated labels, see the README.

    python benchmarks/bracketing_bdmc.py [--n 300] [--k 3] [--steps 100,1000,4000] [--chains 16] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc

jax.config.update("jax_cpu_enable_async_dispatch", False)
from bdmc.bracketing import align_labels, bracket  # noqa: E402
from bdmc.models.niw_mixture import NIWMixture  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms


def pick_data(model, seed, min_frac, tries=200):
    for s in range(seed, seed + tries):
        data, latent = bdmc.simulate(jax.random.key(s), model)
        counts = np.bincount(np.asarray(latent["z"]), minlength=model.k)
        if counts.min() >= min_frac * model.n:
            return s, data, latent, counts
    raise SystemExit(f"no seed in {tries} tries gives clusters of at least {min_frac} n")


def gibbs_runs(key, model, data, *, runs, sweeps, burn):
    """Independent collapsed Gibbs runs at lam = 1 from uniform random labels: z draws (runs, sweeps - burn, n)."""

    def one(kk):
        k0, ks = jax.random.split(kk)
        z0 = jax.random.randint(k0, (model.n,), 0, model.k).astype(jnp.int32)

        def step(z, k_):
            z = model.sweep(k_, {"z": z}, data, 1.0)["z"]
            return z, z

        return jax.lax.scan(step, z0, jax.random.split(ks, sweeps))[1][burn:]

    return jax.jit(jax.vmap(one))(jax.random.split(key, runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--steps", default="100,1000,4000")
    ap.add_argument("--chains", type=int, default=16)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--sweeps", type=int, default=2500)
    ap.add_argument("--burn", type=int, default=500)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--min-frac", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/bracketing")
    ap.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = ap.parse_args()
    if args.render:
        write_folder("bracketing")
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"mixture_bdmc_k{args.k}_n{args.n}"
    model = NIWMixture(n=args.n, dim=2, k=args.k)
    seed, data, latent, counts = pick_data(model, args.seed, args.min_frac)
    print(f"data seed {seed}, cluster sizes {counts.tolist()}", flush=True)
    log_joint = lambda th: model.log_density(th, data, 1.0)  # noqa: E731  log p(z, D)

    # --- bracket from independent Gibbs runs
    t0 = time.perf_counter()
    z = np.asarray(gibbs_runs(jax.random.key(seed + 1000), model, data, runs=args.runs, sweeps=args.sweeps,
                              burn=args.burn))
    gibbs_seconds = time.perf_counter() - t0
    fam = {"z": ("categorical", args.k)}
    brackets = []
    for r in range(args.runs):
        kb = jax.random.fold_in(jax.random.key(seed + 2000), r)
        draws = {"z": z[r]}
        sym = bracket(draws, log_joint, family=fam, key=kb, num_draws=args.draws, labels="z",
                      pseudo_count=0.5 / args.k)
        paper = bracket(draws, log_joint, family=fam, key=kb, num_draws=args.draws, fit="same", pseudo_count=0.0)
        cross = bracket(draws, log_joint, family=fam, key=kb, num_draws=args.draws, pseudo_count=0.5 / args.k)
        rec = {"U1_sym": sym.upper.value, "U1_sym_se": sym.upper.stderr, "L1_sym": sym.lower.value,
               "L1_sym_se": sym.lower.stderr, "U1_paper": paper.upper.value, "U1_paper_se": paper.upper.stderr,
               "L1_paper": paper.lower.value, "L1_paper_se": paper.lower.stderr,
               "U1_crossfit_unsym": cross.upper.value, "U1_crossfit_unsym_se": cross.upper.stderr,
               # fraction of labels that alignment to the run's consensus labelling changes (0: no switching)
               "label_switch_fraction": float(np.mean(align_labels(draws, labels="z")["z"] != z[r]))}
        brackets.append(rec)
        print(json.dumps(rec), flush=True)
    bracket_seconds = time.perf_counter() - t0

    # --- BDMC sandwich
    rows = []
    res = bdmc.sandwich(jax.random.key(seed + 3000), model, data, latent,
                        steps=[int(s) for s in args.steps.split(",")], num_runs=args.chains, progress=False,
                        on_row=lambda row: print(json.dumps({c: row[c] for c in ("num_steps", "direction", "value",
                                                                                 "stderr", "seconds")}), flush=True))
    tab = res.table
    for _, row in tab.iterrows():
        rows.append({c: (float(row[c]) if isinstance(row[c], (float, np.floating, int, np.integer)) else str(row[c]))
                     for c in ("num_steps", "direction", "value", "stderr", "mean_single", "gap", "seconds")})
    last = tab[tab["num_steps"] == tab["num_steps"].max()]
    lower = float(last[last["direction"] == "forward"]["value"].iloc[0])
    upper = float(last[last["direction"] == "reverse"]["value"].iloc[0])
    summary = {"settings": vars(args), "data_seed": seed, "cluster_sizes": counts.tolist(),
               "log_k_factorial": math.lgamma(args.k + 1), "gibbs_seconds": gibbs_seconds,
               "bracket_seconds": bracket_seconds, "sandwich": {"lower": lower, "upper": upper, "rows": rows},
               "brackets": brackets, "provenance": stamp()}
    for c in brackets[0]:
        v = np.asarray([b[c] for b in brackets], dtype=float)
        summary[c + "_mean"], summary[c + "_sd"] = float(v.mean()), float(v.std(ddof=1))
    write_text(out / f"{stem}.json", json.dumps(summary, indent=1))
    write_folder("bracketing", written_to=args.out)


if __name__ == "__main__":
    main()
