"""SHME from one exact latent: its distribution over many simulated data sets against the closed form.

SHME is an upper bound on ``log p(y)`` because ``E[1/Z_hat] = 1/p(y)``, an expectation over the exact posterior
sample as well as the runs; every run starts from the one exact latent of the simulated data set, so what the
runs remember of it is shared and ``stderr`` (taken across runs) does not see it. Per data set of a conjugate
Gamma-Poisson model (30 counts, rate ~ Gamma(2, 1), ``log p(y)`` in closed form) this script runs SHME four
ways: along the pilot-chosen path or one case per step (``tune="off"``), each without dispersal
(``disperse_steps=0``, the paper's Alg. 3) and with the default dispersal (rounds of moves at the full
posterior before the first deletion), 32 runs of 32 particles, 5 HMC moves per step; and forward SMC along the
pilot's path, for the bug alarm at level 0.01 over each SMC/SHME pair. Rows record ``d = log Z_hat - log p(y)``,
its stderr, the first deletion's block and that block's log-likelihood spread under the exact posterior
(closed form), and the alarm; the table gives, per way, ``E[p(y)/Z_hat]`` (1 when the bound is right), the
spread of ``d`` from data set to data set, how often ``d`` is below -3 stderr, and the alarm's rate with its
Clopper-Pearson interval. A second table gives the closed-form spread of a first block of ``b`` cases deleted
at once from the exact latent, by ``b``.

    python benchmarks/shme_one_latent.py --seeds 200
    python benchmarks/shme_one_latent.py --render
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import gamma, poisson
from scipy.special import gammaln, polygamma

import bdmc
from bdmc.core.ais import default_kernel
from bdmc.core.smc_pilot import refine_data_path
from bdmc.kernels import repeat

HERE = Path(__file__).resolve().parent

OUT = HERE / "results" / "shme_one_latent"
NUM_MOVES, NUM_PARTICLES, NUM_RUNS, LEVEL = 5, 32, 32, 0.01
WAYS = {"pilot path, no dispersal": dict(tune="auto", disperse_steps=0),
        "pilot path, dispersal (default)": dict(tune="auto"),
        "one case per step, no dispersal": dict(tune="off", disperse_steps=0),
        "one case per step, dispersal (default)": dict(tune="off")}
BLOCKS = (1, 2, 5, 10, 20, 30)


@dataclass(frozen=True)
class GammaPoisson:
    """``n`` iid counts with rate ~ Gamma(a, rate b), the latent the log rate; conjugate, so ``log p(y)`` and the
    posterior are closed forms."""

    n: int = 30
    a: float = 2.0
    b: float = 1.0

    def sample_prior(self, key):
        return {"log_rate": jnp.log(jax.random.gamma(key, self.a) / self.b)}

    def sample_data(self, key, latent):
        return {"y": jax.random.poisson(key, jnp.exp(latent["log_rate"]), (self.n,))}

    def log_prior(self, latent):
        u = latent["log_rate"]
        return gamma.logpdf(jnp.exp(u), self.a, scale=1.0 / self.b) + u

    def log_likelihood(self, latent, data):
        return poisson.logpmf(data["y"], jnp.exp(latent["log_rate"]))

    def exact_log_marginal(self, data):
        y = np.asarray(data["y"], float)
        s = y.sum()
        return float(-gammaln(y + 1).sum() + self.a * np.log(self.b) - gammaln(self.a) + gammaln(self.a + s)
                     - (self.a + s) * np.log(self.b + self.n))

    def block_spread(self, data, cases) -> float:
        """Standard deviation of ``sum_{i in cases} log p(y_i | rate)`` under the exact posterior
        Gamma(a + S, b + n): ``S_B^2 psi'(alpha) + |B|^2 alpha / beta^2 - 2 S_B |B| / beta`` (Var log rate, Var
        rate, and Cov(log rate, rate) = 1 / beta of a gamma)."""
        y = np.asarray(data["y"], float)
        alpha, beta = self.a + y.sum(), self.b + self.n
        s_b, size = y[list(cases)].sum(), len(cases)
        var = s_b**2 * float(polygamma(1, alpha)) + size**2 * alpha / beta**2 - 2 * s_b * size / beta
        return float(np.sqrt(max(var, 0.0)))


def _harness():
    """The benchmarks' shared row store (imported when a run starts: the test suite imports this module for its
    model)."""
    sys.path.insert(0, str(HERE))
    from harness.store import append_row, load_rows, tree_state

    return append_row, load_rows, tree_state


def run(path: Path, seeds: int) -> None:
    bdmc.enable_x64()
    append_row, load_rows, tree_state = _harness()
    commit, clean = tree_state()
    done = {(r["seed"], r["way"]) for r in load_rows(path)}
    model = GammaPoisson()
    options = dict(num_moves=NUM_MOVES, num_particles=NUM_PARTICLES, num_runs=NUM_RUNS, progress=False)
    kernel = repeat(default_kernel(model), NUM_MOVES)
    for seed in range(seeds):
        if all((seed, way) in done for way in WAYS):
            continue
        key = jax.random.key(seed)
        data, latent = bdmc.simulate(jax.random.fold_in(key, 1), model)
        exact = model.exact_log_marginal(data)
        k_lower, k_upper = jax.random.fold_in(key, 2), jax.random.fold_in(key, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lower = bdmc.smc(k_lower, model, data, **options)
        pilot = refine_data_path(k_upper, model, data, kernel, num_cases=model.n).path
        first = {"auto": np.flatnonzero(pilot[-1] != pilot[-2]).tolist(), "off": [model.n - 1]}
        spreads = {str(b): model.block_spread(data, range(model.n - b, model.n)) for b in BLOCKS}
        for way, kwargs in WAYS.items():
            if (seed, way) in done:
                continue
            load_before, began = os.getloadavg()[0], time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                upper = bdmc.shme(k_upper, model, data, exact_latent=latent, **options, **kwargs)
            seconds = time.perf_counter() - began
            alarm = bdmc.bug_alarm(lower, upper, alpha=LEVEL)
            block = first[kwargs["tune"]]
            row = {"seed": seed, "way": way, "exact": exact, "value": upper.value, "stderr": upper.stderr,
                   "d": upper.value - exact, "lower": lower.value, "alarm": bool(alarm.fired),
                   "path_steps": upper.settings.get("path_steps", model.n),
                   "disperse_steps": upper.settings["disperse_steps"], "first_block": len(block),
                   "first_block_spread": model.block_spread(data, block), "block_spreads": spreads,
                   "num_moves": NUM_MOVES, "num_particles": NUM_PARTICLES, "num_runs": NUM_RUNS, "level": LEVEL,
                   "seconds": seconds, "commit": commit, "clean_tree": clean, "time": time.time(),
                   "load_before": load_before, "load_after": os.getloadavg()[0]}
            append_row(path, row)
            print(f"seed {seed:3d} {way:40s} d = {row['d']:+.3f} +- {row['stderr']:.3f}  first block "
                  f"{len(block)} (spread {row['first_block_spread']:.2f})  alarm {row['alarm']}  "
                  f"{seconds:.1f}s", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    from harness.pages import write_folder

    if args.render:
        write_folder("shme_one_latent")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    run(path, args.seeds)
    write_folder("shme_one_latent", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
