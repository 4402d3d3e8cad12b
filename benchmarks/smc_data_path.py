"""SMC over data cases (BDMC paper, Alg. 2) and its SHME twin (Alg. 3): the budget at which each is accurate.

Two problems with ``log p(y)`` known:

* ``regression``: the peers' conjugate linear regression (n = 200, d = 10, closed form); SHME starts from an
  exact posterior draw of its Gaussian posterior.
* ``sblrc``: posteriordb's ``sblrc-blr`` (100 real cases, 5 coefficients with N(0, 10^2) priors, a half-normal
  noise scale), ``log p(y)`` by quadrature over the scale (``bdmc.exact``); SHME starts from an exact
  posterior draw: the log scale by inverse CDF on a grid of 40,001 points over +-12 of its posterior sds,
  the coefficients from their Gaussian given it.

SHME's upper-bound guarantee averages over the exact draw as well as the run, so each seed's run starts from
a draw of its own (``numpy.random.default_rng(seed)``).

Each row is ONE run (``num_runs=1``) of ``bdmc.smc`` or ``bdmc.shme`` with its defaults (the data-path pilot
choosing the path, the step sizes and the preconditioner, all frozen before the run) at a budget of
``particles x moves per step``, seeds 0..R-1 in turn, so the first seed's call compiles and the others are
warm: its error against ``log p(y)``, its wall seconds, and the pilot's choices. ``previous pilot`` rows run
the pilot as it was before it tuned the kernel (32 particles, ``max_substeps=64, steer=False, mass="identity",
moves_target=None``): the before. ``default`` rows give every step the budget's moves with a 32-particle pilot
(the default until the pilot chose moves per step); ``moves`` rows add moves where one move leaves a particle
correlated with where it began, still with a 32-particle pilot (the default until its particles followed the
run's); ``auto`` rows run today's default, a pilot of the run's particles (32 to 256).
Rows are appended as they finish; a rerun resumes.

    python benchmarks/smc_data_path.py                    # every problem, budget and estimator, 10 seeds
    python benchmarks/smc_data_path.py --render
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc
from bdmc.core.smc_pilot import DataPathPilot

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness.store import append_row, load_rows, stamp  # noqa: E402

bdmc.enable_x64()
OUT = HERE / "results" / "smc_data_path"
# (estimator, particles, moves, pilot) per problem; "previous" is the pilot before it tuned the kernel.
BUDGETS = {
    "regression": [("smc", 256, 1, "previous"), ("smc", 256, 1, "default"), ("smc", 1024, 1, "default"),
                   ("smc", 4096, 1, "default"), ("shme", 256, 1, "default"), ("shme", 1024, 1, "default"),
                   ("shme", 4096, 1, "default"), ("smc", 1024, 3, "default"), ("shme", 1024, 3, "default"),
                   ("smc", 4096, 3, "default"), ("shme", 4096, 3, "default"), ("smc", 8192, 3, "default"),
                   ("shme", 8192, 3, "default")],
    "sblrc": [("smc", 256, 1, "previous"), ("smc", 256, 1, "default"), ("smc", 256, 5, "default"),
              ("smc", 1024, 5, "default"), ("shme", 256, 1, "default"), ("shme", 256, 5, "default"),
              ("shme", 1024, 5, "default"), ("shme", 256, 20, "default"), ("shme", 256, 1, "moves"),
              ("shme", 1024, 1, "moves"), ("smc", 256, 1, "moves"), ("smc", 1024, 1, "moves"),
              ("shme", 256, 1, "auto"), ("shme", 1024, 1, "auto"), ("smc", 256, 1, "auto"), ("smc", 1024, 1, "auto")],
}
BUDGETS["regression"] += [("smc", 1024, 1, "moves"), ("shme", 1024, 1, "moves"), ("smc", 4096, 1, "moves"),
                          ("shme", 4096, 1, "moves"), ("smc", 1024, 1, "auto"), ("shme", 1024, 1, "auto"),
                          ("smc", 4096, 1, "auto"), ("shme", 4096, 1, "auto"), ("shme", 8192, 1, "auto")]
# "auto": today's default, the pilot's particles following the run's (32 to 256) and choosing each step's moves;
# "moves": the same with the 32-particle pilot it had first; "default": the default before it chose moves (the
# budget's moves at every step: the label of the rows taken then); "previous": the pilot before it tuned the
# kernel. Every run pilots anew (reuse=False, as before pilots were reused): a seed's error includes its pilot's.
PILOTS = {"auto": DataPathPilot(reuse=False), "moves": DataPathPilot(num_particles=32, reuse=False),
          "default": DataPathPilot(num_particles=32, moves_target=None, reuse=False),
          "previous": DataPathPilot(num_particles=32, max_substeps=64, steer=False, mass="identity", moves_target=None,
                                    reuse=False)}


def regression():
    """(model, data, log p(y), exact posterior draw by seed) of the peers' regression."""
    import peer_problems

    problem = peer_problems.get_problem("regression")
    info = problem.info
    X, y = info["design_matrix"], np.asarray(problem.data)
    cov = np.linalg.inv(X.T @ X / info["noise_sd"] ** 2 + np.eye(info["dim"]) / info["prior_sd"] ** 2)
    mean = cov @ X.T @ y / info["noise_sd"] ** 2

    def draw(seed):
        return {"x": jnp.asarray(np.random.default_rng(seed).multivariate_normal(mean, cov))}
    return problem.model, jnp.asarray(problem.data), float(problem.exact), draw


def generating_latent():
    """The coefficients that drew the regression's data (``harness.problems`` draws them first from
    ``default_rng(data_seed)``, scaled by the prior sd)."""
    import peer_problems

    info = peer_problems.get_problem("regression").info
    return {"x": jnp.asarray(info["prior_sd"] * np.random.default_rng(info["data_seed"]).standard_normal(info["dim"]))}


def sblrc():
    """(model, data, log p(y), exact posterior draw by seed) of posteriordb's sblrc-blr."""
    import posteriordb

    entry, model, data, data_json, _, _ = posteriordb.build("sblrc-blr")
    X, y = np.asarray(data_json["X"], float), np.asarray(data_json["y"], float)

    def draw(seed):
        beta, sigma = blr_posterior_draw(np.random.default_rng(seed), X, y, prior_sd=10.0, sigma_scale=10.0)
        return model.unconstrain({"beta": jnp.asarray(beta), "sigma": jnp.asarray(sigma)})
    return model, data, float(posteriordb.exact_log_evidence("sblrc-blr", data_json)), draw


def blr_posterior_draw(rng, X, y, *, prior_sd: float, sigma_scale: float, points: int = 40_001):
    """One draw from the posterior of ``beta ~ N(0, prior_sd^2 I)``, ``sigma ~ HalfNormal(sigma_scale)``,
    ``y ~ N(X beta, sigma^2 I)``: log sigma by inverse CDF on a grid (its density from the Gaussian marginal of
    y given sigma), then beta given sigma from its Gaussian conditional.

    Returns
    -------
    (beta, sigma)
    """
    n, d = X.shape
    eigvals, eigvecs = np.linalg.eigh(prior_sd**2 * X @ X.T)
    eigvals = np.maximum(eigvals, 0.0)
    proj = eigvecs.T @ y

    def log_density(log_sigma):  # of log sigma: the marginal likelihood, the prior, the Jacobian
        var = eigvals[None, :] + np.exp(2 * log_sigma)[:, None]
        sigma = np.exp(log_sigma)
        return (-0.5 * (np.sum(np.log(var), 1) + np.sum(proj**2 / var, 1)) - 0.5 * (sigma / sigma_scale) ** 2
                + log_sigma)

    coarse = np.linspace(math.log(sigma_scale) - 15, math.log(sigma_scale) + 6, 4001)
    dens = log_density(coarse)
    w = np.exp(dens - dens.max())
    mean = np.sum(w * coarse) / w.sum()
    sd = math.sqrt(np.sum(w * (coarse - mean) ** 2) / w.sum())
    grid = np.linspace(mean - 12 * sd, mean + 12 * sd, points)
    dens = log_density(grid)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (np.exp(dens[1:] - dens.max()) + np.exp(dens[:-1] - dens.max())))])
    log_sigma = float(np.interp(rng.uniform() * cdf[-1], cdf, grid))
    sigma = math.exp(log_sigma)
    precision = X.T @ X / sigma**2 + np.eye(d) / prior_sd**2
    cov = np.linalg.inv(precision)
    beta = rng.multivariate_normal(cov @ X.T @ y / sigma**2, cov)
    return beta, sigma


PROBLEMS = {"regression": regression, "sblrc": sblrc}


def one_run(problem: str, estimator: str, particles: int, moves: int, pilot: str, seed: int, loaded) -> dict:
    model, data, exact, draw = loaded
    fn = bdmc.smc if estimator == "smc" else bdmc.shme
    extra = {"exact_latent": draw(seed)} if estimator == "shme" else {}
    tune = PILOTS[pilot]
    began = time.perf_counter()
    est = fn(jax.random.key(seed), model, data, num_particles=particles, num_moves=moves, num_runs=1, tune=tune,
             progress=False, **extra)
    wall = time.perf_counter() - began
    s = est.settings
    return {"problem": problem, "estimator": estimator, "particles": particles, "moves": moves, "pilot": pilot,
            "seed": seed, "log_z": float(est.value), "exact": exact, "error": float(est.value) - exact,
            "wall_seconds": wall, "run_seconds": float(est.seconds), "n_evals": int(est.n_evals),
            "path_steps": s.get("path_steps"), "data_pilot_seconds": s.get("data_pilot_seconds"),
            "data_pilot_acceptance": s.get("data_pilot_acceptance"), "step_sizes": s.get("step_sizes"),
            "preconditioner": s.get("preconditioner"),
            "acceptance_last10": float(np.mean(np.asarray(est.details.info.acceptance)[-10:])),
            "moves_per_step": s.get("moves_per_step"),
            "exact_draw": "posterior draw, default_rng(seed)" if estimator == "shme" else None,
            "cold": seed == 0, **stamp()}


def run(out: Path, seeds: int, problems) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rows.jsonl"
    done = {(r["problem"], r["estimator"], r["particles"], r["moves"], r["pilot"], r["seed"])
            for r in load_rows(path)}
    for problem in problems:
        loaded = None
        for estimator, particles, moves, pilot in BUDGETS[problem]:
            for seed in range(seeds):
                if (problem, estimator, particles, moves, pilot, seed) in done:
                    continue
                loaded = PROBLEMS[problem]() if loaded is None else loaded
                row = one_run(problem, estimator, particles, moves, pilot, seed, loaded)
                append_row(path, row)
                print(f"{problem} {estimator} {particles}x{moves} {pilot} seed {seed}: error {row['error']:+.3f} "
                      f"in {row['wall_seconds']:.1f} s ({row['path_steps']} steps)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="only re-render the page from the stored rows")
    args = parser.parse_args(argv)
    from harness.pages import write_folder

    if not args.render:
        run(args.out, args.seeds, args.problems)
    write_folder("smc_data_path", written_to=args.out)
    if (args.out / "README.md").exists():
        print((args.out / "README.md").read_text())


if __name__ == "__main__":
    main()
