"""The BREAD paper's representation study (Sec. 5.2.1, Fig. 2): collapsed vs uncollapsed matrix factorization.

Matrix factorization with N = 50, K = 5, D = 25 and every hyperparameter 1, written in NumPyro, PyMC and Stan
in both representations (:mod:`bdmc.realdata.factorization`). One simulated data set and exact sample are
shared by every condition. For each PPL x representation, BREAD (paired forward / reverse AIS) estimates the
bound B-hat on the Jeffreys divergence at several chain lengths T, with its stderr and the seconds it took
(compile excluded). A random-walk Metropolis kernel runs on the NumPyro version of both representations too.

The paper's own samplers: Stan's NUTS (bdmc's NUTS on the in-process Stan density, ``--kernels nuts``) and
WebPPL's single-site Metropolis-Hastings (``SingleSiteMH``: one uniformly chosen coordinate per step, redrawn
from its N(0, 1) prior, accepted by the tempered density; ``--kernels ssmh``) on the WebPPL programs of
:mod:`bdmc.realdata.webppl_models` and, to separate steps from WebPPL's cost per evaluation, on NumPyro's.

Kernels (fixed per representation, identical for every PPL of it):

- HMC with 10 leapfrog steps; step size and diagonal inverse mass from a BlackJAX window adaptation
  (``--adapt-steps`` steps, target acceptance 0.8) on the NumPyro posterior (lambda = 1), started at the exact
  sample. The mass is mapped to each PPL's latent layout (Stan's is column-major).
- Random-walk Metropolis with isotropic scale ``2.38 / sqrt(d) * sqrt(mean posterior variance)``, the
  posterior variances being the adapted inverse mass (the usual optimal-scaling rule).

Every condition of a representation and kernel uses the same PRNG key, but each PPL draws the forward
chains' prior samples with its own sampler (NumPyro's, PyMC's, the Stan program's numpy simulator), so the
curves against T of different PPLs agree in distribution (within the stderr), not number for number.

Results are appended to ``results.csv`` as each (condition, T) finishes; a rerun skips finished rows.

    python benchmarks/representation_study.py                      # see README.md for the time
    python benchmarks/representation_study.py --ppls numpyro --steps 10,100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# XLA's multi-threaded Eigen runtime deadlocked (0% CPU, forever) in the collapsed model's vmapped Cholesky
# on this shared 2-core machine; single-threaded Eigen runs it. Set before JAX starts; an explicit XLA_FLAGS wins.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bdmc  # noqa: E402
from bdmc.contracts.model import log_density  # noqa: E402
from bdmc.kernels import HMC, NUTS, RandomWalkMH, SingleSiteMH  # noqa: E402
from bdmc.realdata import factorization as fz  # noqa: E402
from bdmc.realdata import webppl_models as wm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

OUT = Path(__file__).resolve().parent / "results" / "representation"
COLUMNS = ["ppl", "representation", "kernel", "num_steps", "num_chains", "b_hat", "b_hat_stderr", "seconds",
           "n_evals", "alarm", "kernel_settings"]
PROVENANCE = ["commit", "clean_tree", "date", "load", "machine"]  # harness.store.stamp()'s fields
COLUMNS += PROVENANCE
LEAPFROG = 10


def parse_list(text, cast=int):
    return [cast(t) for t in str(text).split(",") if t.strip()]


def adapt(representation, shared, *, num_steps, key):
    """Step size and diagonal inverse mass (as factors-shaped arrays) from window adaptation at lambda = 1."""
    import blackjax
    from jax.flatten_util import ravel_pytree

    model = fz.build(representation, "numpyro")
    latent = fz.latent_from_factors("numpyro", representation, shared.U, shared.V)
    target = lambda x: log_density(model, x, shared.data, 1.0)  # noqa: E731
    adaptation = blackjax.window_adaptation(blackjax.hmc, target, is_mass_matrix_diagonal=True,
                                            num_integration_steps=LEAPFROG)
    (_, params), info = adaptation.run(key, latent, num_steps=num_steps)
    _, unravel = ravel_pytree(latent)
    mass = unravel(jnp.asarray(params["inverse_mass_matrix"]))
    accept = float(np.mean(np.asarray(info.info.acceptance_rate)[-num_steps // 4:]))
    variance = float(np.mean(np.asarray(params["inverse_mass_matrix"])))
    dim = int(np.size(params["inverse_mass_matrix"]))
    return {"step_size": float(params["step_size"]),
            "mass_U": None if mass.get("U") is None else np.asarray(mass["U"]).tolist(),
            "mass_V": np.asarray(mass["V"]).tolist(),
            "adapt_acceptance_tail": accept, "dim": dim, "mean_posterior_variance": variance,
            "rwm_scale": 2.38 / np.sqrt(dim) * np.sqrt(variance)}


def build_model(rep, ppl):
    return wm.webppl_factorization(rep) if ppl == "webppl" else fz.build(rep, ppl)


def exact_latent(ppl, rep, shared):
    if ppl == "webppl":
        return jnp.asarray(wm.webppl_latent(rep, np.asarray(shared.U), np.asarray(shared.V)))
    return fz.latent_from_factors(ppl, rep, shared.U, shared.V)


def make_kernel(kind, model, ppl, representation, settings, *, tree_depth=6):
    if kind == "rwm":
        return RandomWalkMH(model, scale=settings["rwm_scale"])
    if kind == "ssmh":  # WebPPL's MH: one uniformly chosen coordinate per step, redrawn from its N(0, 1) prior
        return SingleSiteMH(model, proposal="independent", loc=0.0, scale=1.0, order="random")
    mass_U = None if settings["mass_U"] is None else np.asarray(settings["mass_U"])
    flat = fz.latent_from_factors(ppl, representation, mass_U, np.asarray(settings["mass_V"]))
    if isinstance(flat, dict):
        from jax.flatten_util import ravel_pytree

        flat = ravel_pytree(flat)[0]
    if kind == "nuts":
        return NUTS(model, step_size=settings["step_size"], inverse_mass=tuple(np.asarray(flat).tolist()),
                    max_tree_depth=tree_depth)
    return HMC(model, step_size=settings["step_size"], num_integration_steps=LEAPFROG,
               inverse_mass=tuple(np.asarray(flat).tolist()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="10,30,100,300,1000,3000",
                    help="T for HMC on the uncollapsed model in NumPyro and PyMC")
    ap.add_argument("--collapsed-steps", default="10,30,100,300",
                    help="T for HMC on the collapsed model in NumPyro and PyMC (a step costs far more)")
    ap.add_argument("--stan-steps", default="10,30,100,300", help="T for HMC in Stan, both representations")
    ap.add_argument("--rwm-steps", default="100,1000,10000,30000", help="T for random-walk Metropolis, uncollapsed")
    ap.add_argument("--rwm-collapsed-steps", default="100,300,1000,3000",
                    help="T for random-walk Metropolis, collapsed")
    ap.add_argument("--ssmh-steps", default="100,1000,10000,100000",
                    help="T (single-site updates) for single-site MH in NumPyro, both representations")
    ap.add_argument("--webppl-steps", default="100,300,1000,3000",
                    help="T (single-site updates) for single-site MH in WebPPL, both representations")
    ap.add_argument("--nuts-steps", default="10,30,100", help="T for NUTS in Stan, both representations")
    ap.add_argument("--tree-depth", type=int, default=6, help="NUTS's largest tree depth (2^depth gradients)")
    ap.add_argument("--chains", type=int, default=8, help="chain pairs per T")
    ap.add_argument("--ppls", default="numpyro,pymc,stan,webppl")
    ap.add_argument("--representations", default="collapsed,uncollapsed")
    ap.add_argument("--kernels", default="hmc,rwm,ssmh,nuts",
                    help="hmc: NumPyro, PyMC, Stan; rwm: NumPyro; ssmh: NumPyro, WebPPL; nuts: Stan")
    ap.add_argument("--adapt-steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = ap.parse_args(argv)
    if args.render:
        write_folder("representation")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    csv = args.out / "results.csv"
    done = set()
    if csv.exists():
        head, *body = csv.read_text().splitlines()
        if head.split(",") == COLUMNS[:-len(PROVENANCE)]:  # rows from before the provenance columns: left empty
            write_text(csv, "\n".join([",".join(COLUMNS)] + [line + "," * len(PROVENANCE) for line in body]) + "\n")
        old = pd.read_csv(csv)
        done = {(r.ppl, r.representation, r.kernel, int(r.num_steps), int(r.num_chains)) for r in old.itertuples()}

    key = jax.random.key(args.seed)
    k_data, k_adapt, k_runs = jax.random.split(key, 3)
    shared = fz.simulate_shared(k_data)
    settings_path = args.out / "settings.json"
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    if settings.get("seed") != args.seed or settings.get("adapt_steps") != args.adapt_steps:
        settings = {"seed": args.seed, "adapt_steps": args.adapt_steps, "leapfrog": LEAPFROG,
                    "platform": platform.platform(), "python": sys.version.split()[0],
                    "jax": jax.__version__}
    for rep in parse_list(args.representations, str):
        if rep not in settings:
            t0 = time.perf_counter()
            settings[rep] = adapt(rep, shared, num_steps=args.adapt_steps, key=jax.random.fold_in(k_adapt, len(rep)))
            s = settings[rep]
            print(f"{rep}: HMC step {s['step_size']:.4g}, adaptation acceptance {s['adapt_acceptance_tail']:.2f}, "
                  f"RWM scale {s['rwm_scale']:.4g} ({time.perf_counter() - t0:.1f} s)", flush=True)
            write_text(settings_path, json.dumps(settings, indent=1))

    for rep in parse_list(args.representations, str):
        exact = {}
        for kind in parse_list(args.kernels, str):
            for ppl in parse_list(args.ppls, str):
                if ppl not in KERNEL_PPLS[kind]:
                    continue
                if kind == "ssmh":
                    steps = args.webppl_steps if ppl == "webppl" else args.ssmh_steps
                elif kind == "nuts":
                    steps = args.nuts_steps
                elif kind == "rwm":
                    steps = args.rwm_collapsed_steps if rep == "collapsed" else args.rwm_steps
                elif ppl == "stan":
                    steps = args.stan_steps
                else:
                    steps = args.collapsed_steps if rep == "collapsed" else args.steps
                steps = parse_list(steps)
                todo = [T for T in steps if (ppl, rep, kind, T, args.chains) not in done]
                if not todo:
                    continue
                model = build_model(rep, ppl)
                if ppl not in exact:
                    exact[ppl] = exact_latent(ppl, rep, shared)
                kernel = make_kernel(kind, model, ppl, rep, settings[rep], tree_depth=args.tree_depth)
                run_key = jax.random.fold_in(k_runs, REP_INDEX[rep] * 10 + KIND_INDEX[kind])
                for T in todo:
                    res = bdmc.bread(run_key, model, shared.data, exact[ppl], steps=[T], num_runs=args.chains,
                                     kernel=kernel, progress=False)
                    r = res.table.iloc[0]
                    desc = {"hmc": f"step={settings[rep]['step_size']:.4g},L={LEAPFROG},diag-mass",
                            "nuts": f"step={settings[rep]['step_size']:.4g},depth<={args.tree_depth},diag-mass",
                            "ssmh": "one random site per step,prior proposal N(0;1)",
                            "rwm": f"scale={settings[rep]['rwm_scale']:.4g}"}[kind]
                    row = {"ppl": ppl, "representation": rep, "kernel": kind, "num_steps": T,
                           "num_chains": args.chains, "b_hat": float(r["b_hat"]),
                           "b_hat_stderr": float(r["b_hat_stderr"]), "seconds": float(r["seconds"]),
                           "n_evals": int(r["n_evals"]), "alarm": bool(r["alarm"]), "kernel_settings": desc,
                           **stamp()}
                    line = pd.DataFrame([row], columns=COLUMNS).to_csv(header=not csv.exists(), index=False)
                    write_text(csv, (csv.read_text() if csv.exists() else "") + line)  # old rows kept byte for byte
                    print(f"{ppl:8s} {rep:12s} {kind:4s} T={T:6d}  B-hat {row['b_hat']:10.3f} ± "
                          f"{row['b_hat_stderr']:7.3f}  {row['seconds']:8.2f} s", flush=True)
    plot(pd.read_csv(csv), args.out / "representation.png")
    return 0
    write_folder("representation", written_to=args.out)


REP_INDEX = {"collapsed": 1, "uncollapsed": 2}
KIND_INDEX = {"hmc": 1, "rwm": 2, "ssmh": 3, "nuts": 4}
KERNEL_PPLS = {"hmc": ("numpyro", "pymc", "stan"), "rwm": ("numpyro",), "ssmh": ("numpyro", "webppl"),
               "nuts": ("stan",)}
STYLE = {"numpyro": "-", "pymc": "--", "stan": ":", "webppl": "-."}
COLOR = {("collapsed", "hmc"): "C0", ("uncollapsed", "hmc"): "C3", ("collapsed", "rwm"): "C2",
         ("uncollapsed", "rwm"): "C1", ("collapsed", "ssmh"): "C4", ("uncollapsed", "ssmh"): "C5",
         ("collapsed", "nuts"): "C9", ("uncollapsed", "nuts"): "C6"}


def plot(frame, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for (ppl, rep, kind), g in frame.groupby(["ppl", "representation", "kernel"]):
        g = g.sort_values("num_steps")
        y = np.maximum(g["b_hat"].to_numpy(), 1e-3)
        label = f"{rep} {kind.upper()} ({ppl})"
        for ax, x in zip(axes, (g["num_steps"], g["seconds"]), strict=False):
            ax.errorbar(x, y, yerr=g["b_hat_stderr"], ls=STYLE[ppl], color=COLOR[(rep, kind)], marker="o", ms=3,
                        capsize=2, label=label)
    for ax, xlabel in zip(axes, ("MCMC steps T", "seconds (forward + reverse, compile excluded)"), strict=False):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("B-hat (bound on Jeffreys divergence, nats)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_title("(a) against MCMC steps")
    axes[1].set_title("(b) against running time")
    axes[1].legend(fontsize=7, loc="lower left")
    fig.suptitle("Matrix factorization N=50, K=5, D=25: collapsed vs uncollapsed")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


if __name__ == "__main__":
    sys.exit(main())
