"""Forward-AIS throughput: bdmc vs TensorFlow Probability (JAX substrate) vs a hand-written NumPy loop.

All run the same algorithm on ``bdmc.models.LinearRegression()`` (paper defaults), data from
``bdmc.simulate(jax.random.key(0), model)``: chains start at prior draws of the unconstrained latent
(beta, log_s2); each step adds ``(lam_t - lam_{t-1}) * sum(log_lik)`` to the log-weight, then takes one HMC
transition (identity mass, step size 0.05, 10 leapfrog steps) targeting ``log_prior + lam_t * sum(log_lik)``.

* bdmc  -- ``bdmc.forward_ais`` with ``bdmc.kernels.HMC`` (BlackJAX HMC in a compiled ``lax.scan``).
* TFP   -- ``tfp.mcmc.sample_annealed_importance_chain`` + ``HamiltonianMonteCarlo`` in one ``jax.jit`` call.
           Its schedule is hard-wired linear (beta = (i + 1) / num_steps), so it is compared with bdmc on
           ``bdmc.schedules.linear``. "TFP (refreshed)" recomputes the cached HMC results at each new beta.
* NumPy -- Python loop over steps, NumPy over chains, analytic gradient (asserted against ``jax.grad``).

A step is a transition (T distributions give T - 1); throughput is chains * (T - 1) / seconds. "Run" seconds
exclude compilation (median, or ``--stat best``, of ``--repeats`` warm calls interleaved round-robin);
"cold" seconds are the first call's wall time, compilation included. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from scipy.special import gammaln

import bdmc
from bdmc.contracts.estimate import log_mean_exp, log_mean_exp_stderr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

STEP_SIZE, LEAPFROG = 0.05, 10
RESULTS = Path(__file__).resolve().parent / "results" / "ais_throughput"


# ----------------------------------------------------------------------------------------------- NumPy
class NumpyLinReg:
    """Log prior / summed log likelihood of LinearRegression and their analytic gradients, over chains."""

    def __init__(self, model, data):
        self.X, self.y = np.asarray(model.design), np.asarray(data)
        self.tau, self.h0, self.k0 = model.tau, model.h0, model.k0
        self.n, self.p = self.X.shape
        self.c_prior = self.h0 * np.log(self.k0) - gammaln(self.h0) - 0.5 * self.p * np.log(2 * np.pi * self.tau)
        self.c_lik = -0.5 * self.n * np.log(2 * np.pi)

    def parts(self, beta, ls2):
        """(log_prior, log_lik, d lp/d beta, d lp/d ls2, d ll/d beta, d ll/d ls2) for beta (C, p), ls2 (C,)."""
        e = np.exp(-ls2)
        bb = np.einsum("cj,cj->c", beta, beta)
        r = self.y - beta @ self.X.T
        rr = np.einsum("ci,ci->c", r, r)
        lp = self.c_prior - (self.h0 + 0.5 * self.p) * ls2 - self.k0 * e - 0.5 * e * bb / self.tau
        ll = self.c_lik - 0.5 * self.n * ls2 - 0.5 * e * rr
        gp_ls2 = -self.h0 - 0.5 * self.p + self.k0 * e + 0.5 * e * bb / self.tau
        gl_ls2 = 0.5 * e * rr - 0.5 * self.n
        return lp, ll, -beta * (e / self.tau)[:, None], gp_ls2, (r @ self.X) * e[:, None], gl_ls2


def check_gradient(model, data, num_points=5, seed=0):
    """Assert the hand-written value and gradient match bdmc's log_density and jax.grad of it."""
    nm, rng = NumpyLinReg(model, data), np.random.default_rng(seed)
    beta, ls2 = rng.normal(size=(num_points, model.p)), rng.normal(size=num_points)
    lp, ll, gpb, gps, glb, gls = nm.parts(beta, ls2)
    for lam in (0.0, 0.37, 1.0):
        # used within this iteration only, so the loop variable is the one meant
        f = lambda b, s: bdmc.contracts.log_density(model, {"beta": b, "log_s2": s}, data, lam)  # noqa: E731, B023
        val, (gb, gs) = jax.vmap(jax.value_and_grad(f, argnums=(0, 1)))(jnp.asarray(beta), jnp.asarray(ls2))
        for mine, ref in [(lp + lam * ll, val), (gpb + lam * glb, gb), (gps + lam * gls, gs)]:
            np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-9)


def numpy_ais(model, data, init, path, seed):
    """Forward AIS with hand-written HMC; returns (log-weights, mean acceptance, last-step acceptance).

    The state is (beta, ls2) plus the cached ``parts`` at it: prior and likelihood terms and gradients are
    kept apart, so a new lambda costs nothing and each transition needs exactly LEAPFROG gradients.
    """
    nm, rng, eps = NumpyLinReg(model, data), np.random.default_rng(seed), STEP_SIZE
    x = (np.array(init["beta"]), np.array(init["log_s2"]))
    x = x + nm.parts(*x)  # (beta, ls2, lp, ll, gp_beta, gp_ls2, gl_beta, gl_ls2)
    logw, accs = np.zeros(len(x[1])), []
    for lam_from, lam in zip(path[:-1], path[1:], strict=False):
        logw += (lam - lam_from) * x[3]
        grad = lambda z: (z[4] + lam * z[6], z[5] + lam * z[7])  # noqa: E731, B023 (used in this step only)
        neg_h = lambda z, mb, ms: z[2] + lam * z[3] - 0.5 * (np.einsum("cj,cj->c", mb, mb) + ms**2)  # noqa: E731, B023
        mb, ms = rng.normal(size=x[0].shape), rng.normal(size=x[1].shape)
        h0, (gb, gs), y = neg_h(x, mb, ms), grad(x), x
        mb, ms = mb + 0.5 * eps * gb, ms + 0.5 * eps * gs
        for i in range(LEAPFROG):
            b, s = y[0] + eps * mb, y[1] + eps * ms
            y = (b, s) + nm.parts(b, s)
            (gb, gs), w = grad(y), eps if i < LEAPFROG - 1 else 0.5 * eps
            mb, ms = mb + w * gb, ms + w * gs
        with np.errstate(invalid="ignore", over="ignore"):
            log_ratio = np.nan_to_num(neg_h(y, mb, ms) - h0, nan=-np.inf)
            accs.append(float(np.mean(np.minimum(1.0, np.exp(log_ratio)))))
        ok = np.log(rng.uniform(size=log_ratio.shape)) < log_ratio
        x = tuple(np.where(ok.reshape(ok.shape + (1,) * (new.ndim - 1)), new, old)
                  for new, old in zip(y, x, strict=False))
    return logw, float(np.mean(accs)), accs[-1]


# ------------------------------------------------------------------------------------------------- TFP
def make_tfp_ais(model, data, num_steps, refresh=False):
    """A jitted ``(seed, beta0, log_s2_0) -> (ais_weights, last-step acceptance)`` for all chains at once.

    Stock TFP HMC reuses the log-density and gradient cached at the last *accepted* state, computed under an
    older beta, so its MH test is not for the current intermediate density. ``refresh=True`` recomputes
    them at the current beta before every transition (one extra gradient, like bdmc's BlackJAX kernel).
    """
    from tensorflow_probability.substrates import jax as tfp

    class RefreshedHMC(tfp.mcmc.HamiltonianMonteCarlo):
        def one_step(self, state, previous_results, seed=None):
            return super().one_step(state, self.bootstrap_results(state), seed=seed)

    hmc = RefreshedHMC if refresh else tfp.mcmc.HamiltonianMonteCarlo

    def batched(lam):
        # used within this iteration only, so the loop variable is the one meant
        f = lambda b, s: bdmc.contracts.log_density(model, {"beta": b, "log_s2": s}, data, lam)  # noqa: E731, B023
        return jax.vmap(f)

    @jax.jit
    def run(seed, beta0, ls0):
        _, weights, results = tfp.mcmc.sample_annealed_importance_chain(
            num_steps=num_steps, proposal_log_prob_fn=batched(0.0), target_log_prob_fn=batched(1.0),
            current_state=[beta0, ls0], seed=seed,
            make_kernel_fn=lambda tlp: hmc(tlp, STEP_SIZE, LEAPFROG))
        return weights, jnp.mean(results.inner_results.is_accepted.astype(weights.dtype))

    return run


# -------------------------------------------------------------------------------------------- harness
def timed(fn):
    """(fn(), wall seconds) with all JAX work finished."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def cold_record(name, schedule, chains, steps, logw, cold, compile_s, acc_mean, acc_last):
    """What the first (cold) call tells: the estimate, acceptance and cold timing."""
    return {"implementation": name, "schedule": schedule, "chains": chains, "steps": steps,
            "log_z": log_mean_exp(logw), "stderr": log_mean_exp_stderr(logw), "acceptance_mean": acc_mean,
            "acceptance_last": acc_last, "cold_seconds": cold, "compile_seconds": compile_s,
            "chain_steps_per_sec_cold": chains * steps / cold}


def finish(rec, runs, calls, stat):
    """Add the warm timings (``stat`` of ``runs``) to a cold record."""
    run = min(runs) if stat == "best" else statistics.median(runs)
    if rec["compile_seconds"] is None:  # TFP: no separate compile timer, so cold minus a warm call
        rec["compile_seconds"] = max(rec["cold_seconds"] - run, 0.0)
    return {**rec, "run_seconds": run, "run_seconds_all": runs, "call_seconds_all": calls,
            "chain_steps_per_sec": rec["chains"] * rec["steps"] / run}


# Each bench_* makes the cold call and returns (cold record, warm(i) -> (run seconds, whole-call seconds)).
def bench_bdmc(model, data, path, schedule, chains):
    kernel = bdmc.kernels.HMC(model, step_size=STEP_SIZE, num_integration_steps=LEAPFROG)
    call = lambda i: bdmc.forward_ais(jax.random.key(100 + i), model, data, num_runs=chains,  # noqa: E731
                                      kernel=kernel, schedule=path, progress=False)
    bdmc.clear_caches()  # bdmc reuses its compiled chunk across schedules; clear it so "cold" really is cold
    first, cold = timed(lambda: call(0))
    acc = first.details.info.acceptance
    rec = cold_record("bdmc", schedule, chains, len(path) - 1, first.runs, cold, first.compile_seconds,
                      float(acc.mean()), float(acc[-1]))

    def warm(i):
        est, t = timed(lambda: call(i + 1))
        return est.seconds, t  # the engine's own loop time, and the whole forward_ais call
    return rec, warm


def bench_tfp(model, data, init, steps, chains, refresh=False):
    run = make_tfp_ais(model, data, steps, refresh)
    call = lambda i: run(jax.random.PRNGKey(200 + i), init["beta"], init["log_s2"])  # noqa: E731
    (logw, acc), cold = timed(lambda: call(0))
    rec = cold_record("TFP (refreshed)" if refresh else "TFP", "linear (built in)", chains, steps,
                      np.asarray(logw), cold, None, None, float(acc))
    return rec, lambda i: (timed(lambda: call(i + 1))[1],) * 2


def bench_numpy(model, data, init, path, schedule, chains):
    init = jax.tree.map(np.asarray, init)
    call = lambda i: numpy_ais(model, data, init, path, seed=300 + i)  # noqa: E731
    (logw, acc_mean, acc_last), cold = timed(lambda: call(0))
    rec = cold_record("NumPy", schedule, chains, len(path) - 1, logw, cold, 0.0, acc_mean, acc_last)
    return rec, lambda i: (timed(lambda: call(i + 1))[1],) * 2


def machine_info():
    import blackjax
    import tensorflow_probability as tfp_pkg

    return {"cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__, "devices": str(jax.devices()),
            "tfp": tfp_pkg.__version__, "blackjax": blackjax.__version__, "numpy": np.__version__,
            "bdmc": bdmc.__version__, "x64": bool(jax.config.jax_enable_x64)}


def ratios(rows):
    by = {(r["implementation"], r["schedule"].split()[0]): r for r in rows}
    pairs = {"bdmc/TFP (linear schedule)": (by[("bdmc", "linear")], by[("TFP", "linear")]),
             "bdmc/TFP-refreshed (linear)": (by[("bdmc", "linear")], by[("TFP (refreshed)", "linear")]),
             "bdmc/NumPy (sigmoidal schedule)": (by[("bdmc", "sigmoidal")], by[("NumPy", "sigmoidal")])}
    return {name: {"run": a["chain_steps_per_sec"] / b["chain_steps_per_sec"],
                   "cold": a["chain_steps_per_sec_cold"] / b["chain_steps_per_sec_cold"]}
            for name, (a, b) in pairs.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chains", type=int, default=1000, help="number of AIS chains (default 1000)")
    ap.add_argument("--steps", type=int, default=1000, help="number of distributions T on the path (default 1000)")
    ap.add_argument("--repeats", type=int, default=3, help="warm timed calls per implementation (default 3)")
    ap.add_argument("--stat", choices=("median", "best"), default="median",
                    help="how to summarize the warm repeats (default median)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 100 chains x 100 steps, 1 repeat (*_quick.*)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON results (and, in "
                    "benchmarks/results/ais_throughput, the rendered pages)")
    ap.add_argument("--render", action="store_true", help="only re-render the pages from the stored JSON")
    args = ap.parse_args(argv)
    if args.render:
        write_folder("ais_throughput")
        return
    if args.quick:
        args.chains, args.steps, args.repeats = 100, 100, 1
    console, chains = Console(width=None if sys.stdout.isatty() else 200), args.chains

    model = bdmc.models.LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    exact = float(model.exact_log_marginal(data))
    check_gradient(model, data)
    console.print("[green]hand-written NumPy gradient matches jax.grad of bdmc.contracts.log_density[/green]")
    sigmoidal, linear = bdmc.schedules.sigmoidal(args.steps), bdmc.schedules.linear(args.steps)
    # Prior draws for TFP and NumPy; this also warms up the (eager, per-shape) sampler bdmc calls internally,
    # so no implementation's cold time includes it.
    init = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), chains))

    benches = [
        ("bdmc, sigmoidal", lambda: bench_bdmc(model, data, sigmoidal, "sigmoidal", chains)),
        ("bdmc, linear", lambda: bench_bdmc(model, data, linear, "linear", chains)),
        ("TFP, linear", lambda: bench_tfp(model, data, init, args.steps - 1, chains)),
        ("TFP refreshed, linear", lambda: bench_tfp(model, data, init, args.steps - 1, chains, refresh=True)),
        ("NumPy, sigmoidal", lambda: bench_numpy(model, data, init, sigmoidal, "sigmoidal", chains)),
    ]
    colds = []
    for label, fn in benches:
        with console.status(f"cold call: {label} ..."):
            colds.append(fn())
    # Warm repeats go round-robin over the implementations, so drifting background load hits all alike.
    timings = [([], []) for _ in benches]
    for i in range(args.repeats):
        for (label, _), (_, warm), (runs, calls) in zip(benches, colds, timings, strict=False):
            with console.status(f"repeat {i + 1}/{args.repeats}: {label} ..."):
                run_s, call_s = warm(i)
            runs.append(run_s)
            calls.append(call_s)
    rows = [finish(rec, runs, calls, args.stat) for (rec, _), (runs, calls) in zip(colds, timings, strict=False)]

    out = {
        "settings": {"model": "LinearRegression()", "chains": chains, "steps": args.steps - 1,
                     "distributions": args.steps, "repeats": args.repeats, "statistic": args.stat,
                     "step_size": STEP_SIZE, "leapfrog_steps": LEAPFROG, "data_key": 0},
        "machine": machine_info(), "exact_log_z": exact, "results": rows, "ratios": ratios(rows),
        "provenance": stamp(),
    }
    for name, v in out["ratios"].items():
        console.print(f"{name}: {v['run']:.2f}x (compile excluded), {v['cold']:.2f}x (compile included)")

    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / ("ais_throughput_quick" if args.quick else "ais_throughput")  # smoke runs never overwrite
    write_text(stem.with_suffix(".json"), json.dumps(out, indent=2))
    console.print(f"wrote {stem.with_suffix('.json')}")
    for page in write_folder("ais_throughput", written_to=args.out):  # a trial run into another --out has none
        console.print(f"rendered {page}")


if __name__ == "__main__":
    main()
