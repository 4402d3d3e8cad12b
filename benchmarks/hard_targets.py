"""Hard targets with known log Z: is any tool silently wrong?

On the eggbox and the 32-dimensional many-well (:mod:`harness.hard_problems`, each with its exact log Z and a
sampler of exact posterior draws), every tool runs at several budgets and seeds:

* ``bdmc``: tempered SMC, its certified lower bound (the estimate) and reverse tempered SMC from one exact
  posterior draw (its upper bound): the sandwich; its gap is what bdmc says of its own accuracy. ``bdmc-16``:
  the same with 16 runs each way (tempered SMC's default), each reverse run from an exact draw of its own.
* ``blackjax``: BlackJAX's adaptive tempered SMC with its HMC tuned from the particles (``peer_tools``).
* ``blackjax-ns``: BlackJAX's nested slice sampling (``blackjax.nss``), run until the live points hold less than
  1% of the evidence (on the phase transition, as in BlackJAX's example of it, less than e^-10 of it).
* ``nautilus``: one network (its default is four) and 1,000 effective draws (default 10,000: the evidence needs
  fewer), a run stopped at 10 minutes counted as failed; ``dynesty``: its defaults (``peer_tools``).

A run **misses** when its estimate is more than 1 nat from the truth, and is **flagged** when the tool itself says
it may be that far off: bdmc when its sandwich's gap exceeds 1 nat, a tool that states a ± when two of them exceed 1
nat; a tool that states none is never flagged. A miss that is not flagged is **silent**: the property shown is
that bdmc has none. Rows are appended as each run finishes (with commit, load and time) and a rerun resumes.

    python benchmarks/hard_targets.py                        # every tool, 3 seeds per budget
    python benchmarks/hard_targets.py --tools bdmc blackjax --seeds 2
    python benchmarks/hard_targets.py --render
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_tools  # noqa: E402
from harness.hard_problems import HARD_BUILDERS  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.problems import PROBLEMS  # noqa: E402
from harness.store import append_row, load_rows, stamp  # noqa: E402

bdmc.enable_x64()
OUT = Path(__file__).resolve().parent / "results" / "hard_targets"
MISS = 1.0  # nats
BUDGETS = {
    "bdmc": [(64, 100), (256, 300), (1024, 1000)],  # particles x temperatures, each way
    "bdmc-16": [(64, 100), (256, 300)],  # the same, 16 runs each way (tempered SMC's default)
    "blackjax": [256, 1024, 4096],  # particles
    "blackjax-ns": [250, 1000],  # live points
    "nautilus": [500, 2000],  # n_live (default 2,000)
    "dynesty": [500],  # nlive (default 500)
}
TOOLS = tuple(BUDGETS)
# log(Z_live / Z) below which nested sampling stops: the phase transition's trough holds almost no mass, so its
# example compresses to e^-10 (a stop at 1% quits before the spike).
NS_STOP = {"phase": -10.0}
NS_STOP_DEFAULT = float(np.log(np.expm1(0.01)))  # log Z grows by < 0.01 if the live points were added
NAUTILUS_OPTIONS = {"n_networks": 1, "n_eff": 1000, "timeout": 600.0}


def make_bdmc(problem, budget, runs: int = 1):
    """The sandwich: forward tempered SMC (the estimate) and reverse tempered SMC from exact draws, ``runs`` runs
    each way (each reverse run from an exact draw of its own)."""
    particles, temperatures = budget
    model, data = problem.model, jnp.asarray(problem.data)
    draws = problem.info["exact_draws"]

    def run(seed):
        options = {"num_steps": int(temperatures), "num_particles": int(particles), "num_runs": int(runs),
                   "progress": False}
        lower = bdmc.tempered_smc(jax.random.key(seed), model, data, **options)
        exact = {"x": jnp.asarray(draws(seed, 1)[0] if runs == 1 else draws(seed, runs))}
        upper = bdmc.reverse_tempered_smc(jax.random.key(seed + 10_000), model, data, exact_latent=exact, **options)
        return {"log_z": float(lower.value), "upper": float(upper.value), "stderr": None,
                "gap": float(upper.value - lower.value), "n_evals": int(lower.n_evals + upper.n_evals)}
    return run


def make_blackjax_ns(problem, num_live):
    """BlackJAX's nested slice sampling in one compiled loop, stopped when the live points' share of Z falls below
    the problem's ``NS_STOP``."""
    import blackjax
    from blackjax.ns.integrator import init_integrator, update_integrator

    data = jnp.asarray(problem.data)
    stop = NS_STOP.get(problem.name, NS_STOP_DEFAULT)
    algorithm = blackjax.nss(logprior_fn=problem.log_prior,
                             loglikelihood_fn=lambda x: jnp.sum(problem.log_lik(x, data)),
                             num_inner_steps=max(5, 2 * problem.dim), num_delete=max(1, num_live // 10))

    @jax.jit
    def once(key):
        k_init, key = jax.random.split(key)
        state = algorithm.init(jax.vmap(problem.sample_prior)(jax.random.split(k_init, num_live)))
        integrator = init_integrator(state.particles)

        def going(carry):
            _, integ, _, n = carry
            return (integ.logZ_live - integ.logZ > stop) & (n < 20_000)

        def step(carry):
            state, integ, key, n = carry
            key, sub = jax.random.split(key)
            state, info = algorithm.step(sub, state)
            return state, update_integrator(integ, state.particles, info.particles), key, n + 1

        _, integ, _, n = jax.lax.while_loop(going, step, (state, integrator, key, jnp.zeros((), jnp.int32)))
        return jnp.logaddexp(integ.logZ, integ.logZ_live), n

    def run(seed):
        log_z, steps = jax.block_until_ready(once(jax.random.key(seed)))
        return {"log_z": float(log_z), "stderr": None, "steps": int(steps)}
    return run


def make(tool, problem, budget):
    if tool in ("bdmc", "bdmc-16"):
        return make_bdmc(problem, budget, runs=1 if tool == "bdmc" else 16)
    if tool == "blackjax":
        return peer_tools.make_blackjax(problem, budget)
    if tool == "blackjax-ns":
        return make_blackjax_ns(problem, budget)
    if tool == "nautilus":
        return peer_tools.make_nautilus(problem, budget, **NAUTILUS_OPTIONS)
    return peer_tools.make_dynesty(problem, budget)


def judged(row: dict, truth: float) -> dict:
    """The row's error, whether it missed by more than a nat, whether the tool flagged it, and whether silently."""
    error = row["log_z"] - truth
    if row.get("gap") is not None:
        flagged = not row["gap"] <= MISS  # a NaN gap flags too
    elif row.get("stderr") is not None and np.isfinite(row["stderr"]):
        flagged = 2 * row["stderr"] > MISS
    else:
        flagged = False
    missed = not abs(error) <= MISS
    return {"error": error, "missed": missed, "flagged": flagged, "silent": missed and not flagged}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--problems", nargs="+", choices=tuple(HARD_BUILDERS), default=list(HARD_BUILDERS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("hard_targets")
        return 0
    path = args.out / "rows.jsonl"
    done = {(r["problem"], r["tool"], peer_tools.budget_label(r["budget"]), r["seed"])
            for r in (load_rows(path) if path.exists() else [])}
    for name in args.problems:
        problem = PROBLEMS.setdefault(name, HARD_BUILDERS[name]())
        runs = {(tool, peer_tools.budget_label(b)): make(tool, problem, b) for tool in args.tools
                for b in BUDGETS[tool]}
        for seed in range(args.seeds):  # tools interleaved seed by seed, so load hits them alike
            for tool in args.tools:
                for budget in BUDGETS[tool]:
                    label = peer_tools.budget_label(budget)
                    if (name, tool, label, seed) in done:
                        continue
                    load = os.getloadavg()[0]
                    began = time.perf_counter()
                    try:
                        row = runs[(tool, label)](seed)
                        failed = None
                    except Exception as error:  # a tool that crashes is a row too, not the end of the sweep
                        row, failed = {"log_z": float("nan"), "stderr": None}, f"{type(error).__name__}: {error}"
                    seconds = time.perf_counter() - began
                    row = {"problem": name, "tool": tool, "budget": budget, "seed": seed, "truth": problem.exact,
                           **row, **judged(row, problem.exact), "seconds": seconds, "failed": failed,
                           "load_before": load, "load_after": os.getloadavg()[0], "time": time.time(), **stamp()}
                    append_row(path, row)
                    mark = "SILENT MISS" if row["silent"] else ("flagged" if row["flagged"] else "")
                    print(f"{name:9s} {tool:12s} {label:>9s} seed {seed}: error {row['error']:+9.3f} "
                          f"{seconds:7.1f}s {mark}", flush=True)
    if args.out == OUT:
        write_folder("hard_targets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
