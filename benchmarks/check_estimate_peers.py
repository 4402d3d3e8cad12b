"""``bdmc.check_estimate`` on other tools' log Z: PyMC's and BlackJAX's SMC on the peers' problems, one
configuration known to be biased among them, and what the check says of each value against the exact answer.

Problems (``peer_problems.py``): the three linear-Gaussian ones (regression, correlated, narrow) have data drawn
from their own prior with a seeded generator, so the latent that generated them is known and both bounds are
certified; eight schools (real data) gets the certified lower bound only. Every problem has an exact log Z.

Configurations, each run with ``--seeds`` seeds:

- ``pymc-2000``: ``pymc.sample_smc(draws=2000)``, PyMC's default population;
- ``pymc-100``: PyMC's SMC with 100 draws;
- ``blackjax-1024``: BlackJAX's adaptive tempered SMC, 1,024 particles, HMC tuned from the particles
  (``peer_tools.blackjax_smc_fn``, the peers benchmark's setting);
- ``blackjax-fixed-256`` (known biased): the same with a fixed identity-mass HMC (step 0.05, 10 leapfrog steps),
  the setting of the first peers runs, which missed the narrow problem by about 6 nats
  (``results/peers/superseded/``).

bdmc's bounds are computed once per problem (``check_estimate`` with ``method="tempered-smc"``, T = 100 with
its default 32 particles and the pilot's temperatures, 16 runs per direction, level 0.01) and every value is
judged against them
(``EstimateCheck.for_value``). A verdict is *wrong* when it says "too high" of a value at or below the exact
log Z, or "too low" of one at or above it.

    python benchmarks/check_estimate_peers.py --seeds 3          # rows in results/check_estimate/rows.jsonl
    python benchmarks/check_estimate_peers.py --render
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_problems  # noqa: E402
import peer_tools  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402

bdmc.enable_x64()

OUT = Path(__file__).resolve().parent / "results" / "check_estimate"
PROBLEMS = ("regression", "correlated", "narrow", "schools")
CONFIGS = ("pymc-2000", "pymc-100", "blackjax-1024", "blackjax-fixed-256")
LEVEL, STEPS, RUNS = 0.01, 100, 16


def exact_latent(problem):
    """The latent that generated a linear-Gaussian problem's data (its generator's first draws), else None."""
    info = problem.info
    if "prior_sd" not in info or "design_matrix" not in info:
        return None
    seed = info.get("data_seed")
    if seed is None:
        return None
    rng = np.random.default_rng(seed)
    return {"x": jnp.asarray(info["prior_sd"] * rng.standard_normal(info["dim"]))}


def blackjax_fixed_fn(problem, num_particles, step_size=0.05, num_steps=10, num_mcmc_steps=10):
    """BlackJAX's adaptive tempered SMC with a fixed identity-mass HMC: the known-biased configuration."""
    import functools

    import blackjax
    from blackjax.smc import resampling

    data = jnp.asarray(problem.data)
    loglik = lambda x: jnp.sum(problem.log_lik(x, data))  # noqa: E731
    step = functools.partial(blackjax.hmc.build_kernel(), num_integration_steps=num_steps)
    params = {"step_size": jnp.full((1,), step_size), "inverse_mass_matrix": jnp.ones((1, problem.dim))}
    smc = blackjax.adaptive_tempered_smc(problem.log_prior, loglik, step, blackjax.hmc.init, params,
                                         resampling.systematic, 0.5, num_mcmc_steps=num_mcmc_steps)

    @jax.jit
    def run(key):
        k_init, key = jax.random.split(key)
        state = smc.init(jax.vmap(problem.sample_prior)(jax.random.split(k_init, num_particles)))

        def body(carry):
            state, key, log_z = carry
            key, sub = jax.random.split(key)
            state, info = smc.step(sub, state)
            return state, key, log_z + info.log_likelihood_increment

        return jax.lax.while_loop(lambda c: c[0].tempering_param < 1, body, (state, key, jnp.zeros(())))[2]

    return lambda seed: {"log_z": float(run(jax.random.key(seed)))}


def runner(config, problem):
    if config.startswith("pymc"):
        return peer_tools.make("pymc", problem, int(config.split("-")[1]))
    if config == "blackjax-1024":
        return peer_tools.make("blackjax", problem, 1024)
    return blackjax_fixed_fn(problem, 256)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("check_estimate")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    commit, clean = tree_state()
    done = {(r["problem"], r["config"], r["seed"]) for r in load_rows(path)}
    for name in args.problems:
        problem = peer_problems.get_problem(name)
        model, data = problem.model, jnp.asarray(problem.data)
        latent = exact_latent(problem)
        began = time.perf_counter()
        budget = {"num_steps": STEPS, "num_particles": None}
        base = bdmc.check_estimate(jax.random.key(0), model, data, float(problem.exact), exact_latent=latent,
                                   method="tempered-smc", num_runs=RUNS, level=LEVEL, progress=False, **budget)
        bdmc_seconds = time.perf_counter() - began
        print(f"{name}: bdmc's certified interval [{base.certified_lower:.2f}, {base.certified_upper:.2f}] "
              f"(exact {problem.exact:.2f}; {bdmc_seconds:.1f} s)", flush=True)
        for config in args.configs:
            run = runner(config, problem)
            for seed in range(args.seeds):
                if (name, config, seed) in done:
                    continue
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = run(seed)["log_z"]
                seconds = time.perf_counter() - t0
                if not np.isfinite(value):
                    verdict, judged = "tool returned a non-finite value", None
                else:
                    judged = base.for_value(value)
                    verdict = judged.verdict
                error = value - problem.exact
                wrong = (verdict == "too high" and error <= 0) or (verdict == "too low" and error >= 0)
                row = {"problem": name, "config": config, "seed": seed, "value": value, "exact": problem.exact,
                       "error": error, "verdict": verdict, "wrong_verdict": bool(wrong),
                       "two_sided": latent is not None, "lower": base.lower, "upper": base.upper,
                       "certified_lower": base.certified_lower, "certified_upper": base.certified_upper,
                       "bdmc_method": base.method, "bdmc_steps": budget["num_steps"],
                       "bdmc_particles": budget["num_particles"] or 32, "bdmc_runs": RUNS, "level": LEVEL,
                       "bdmc_seconds": bdmc_seconds, "tool_seconds": seconds, "commit": commit,
                       "clean_tree": clean, "time": time.time(), "load_before": load,
                       "load_after": os.getloadavg()[0]}
                append_row(path, row)
                print(f"  {config:20s} seed {seed}  log Z {value:10.3f}  error {error:+8.3f}  {verdict}",
                      flush=True)
    write_folder("check_estimate", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
