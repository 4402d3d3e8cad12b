"""Forward-AIS throughput: bdmc vs TensorFlow Probability (JAX substrate) vs a hand-written NumPy loop.

All three run the same algorithm on ``bdmc.models.LinearRegression()`` (paper defaults) with data from
``bdmc.simulate(jax.random.key(0), model)``: chains start at prior draws of the unconstrained latent
(beta, log_s2); each step adds ``(lam_t - lam_{t-1}) * sum(log_likelihood)`` to the log-weight and then
takes one HMC transition (identity mass, fixed step size, fixed leapfrog count) that leaves
``log_prior + lam_t * sum(log_likelihood)`` invariant.

* bdmc   -- ``bdmc.forward_ais`` with ``bdmc.kernels.HMC`` (BlackJAX HMC inside a compiled ``lax.scan``).
* TFP    -- ``tfp.mcmc.sample_annealed_importance_chain`` + ``tfp.mcmc.HamiltonianMonteCarlo``, in one
            ``jax.jit`` call for all chains. Its schedule is hard-wired linear (beta = (i + 1) / num_steps),
            so it is compared with bdmc on ``bdmc.schedules.linear``.
* NumPy  -- a Python loop over steps, vectorized over chains, with the analytic gradient (checked against
            ``jax.grad`` of ``bdmc.models.log_density`` at start-up).

"Steps" are transitions: a path of T distributions has T - 1 of them. Throughput is chains * (T - 1) /
seconds. "Run" seconds exclude compilation (median of ``--repeats`` warm calls); "cold" seconds are the wall
time of the first call in a fresh process, compilation included.

Usage: ``python benchmarks/ais_throughput.py [--chains 1000] [--steps 1000] [--repeats 3] [--quick]``.
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
from rich.table import Table
from scipy.special import gammaln

import bdmc
from bdmc.core import engine
from bdmc.core.estimate import log_mean_exp, log_mean_exp_stderr

STEP_SIZE, LEAPFROG = 0.05, 10
RESULTS = Path(__file__).resolve().parent / "results"


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
        """(log_prior, log_lik, d log_prior / d(beta, ls2), d log_lik / d(beta, ls2)) for beta (C, p), ls2 (C,)."""
        e = np.exp(-ls2)
        bb = np.einsum("cj,cj->c", beta, beta)
        r = self.y - beta @ self.X.T
        rr = np.einsum("ci,ci->c", r, r)
        lp = self.c_prior - (self.h0 + 0.5 * self.p) * ls2 - self.k0 * e - 0.5 * e * bb / self.tau
        ll = self.c_lik - 0.5 * self.n * ls2 - 0.5 * e * rr
        gp = (-beta * (e / self.tau)[:, None], -self.h0 - 0.5 * self.p + self.k0 * e + 0.5 * e * bb / self.tau)
        gl = ((r @ self.X) * e[:, None], 0.5 * e * rr - 0.5 * self.n)
        return lp, ll, gp, gl


def check_gradient(model, data, num_points=5, seed=0):
    """Assert the hand-written value and gradient match bdmc's log_density and jax.grad of it."""
    nm, rng = NumpyLinReg(model, data), np.random.default_rng(seed)
    beta, ls2 = rng.normal(size=(num_points, model.p)), rng.normal(size=num_points)
    lp, ll, gp, gl = nm.parts(beta, ls2)
    for lam in (0.0, 0.37, 1.0):
        f = lambda b, s: bdmc.models.log_density(model, {"beta": b, "log_s2": s}, data, lam)  # noqa: E731
        val, (gb, gs) = jax.vmap(jax.value_and_grad(f, argnums=(0, 1)))(jnp.asarray(beta), jnp.asarray(ls2))
        np.testing.assert_allclose(lp + lam * ll, val, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(gp[0] + lam * gl[0], gb, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(gp[1] + lam * gl[1], gs, rtol=1e-9, atol=1e-9)


def numpy_ais(model, data, init, path, seed):
    """Forward AIS with hand-written HMC; returns (log-weights, mean acceptance, last-step acceptance).

    The log prior and log likelihood (and their gradients) are cached separately at the current state, so a
    new lambda costs nothing: each transition needs exactly LEAPFROG gradient evaluations.
    """
    nm, rng = NumpyLinReg(model, data), np.random.default_rng(seed)
    beta, ls2 = np.array(init["beta"]), np.array(init["log_s2"])
    lp, ll, gp, gl = nm.parts(beta, ls2)
    logw, accs = np.zeros(len(ls2)), []
    for lam_from, lam in zip(path[:-1], path[1:]):
        logw += (lam - lam_from) * ll
        mb, ms = rng.normal(size=beta.shape), rng.normal(size=ls2.shape)
        h0 = lp + lam * ll - 0.5 * (np.einsum("cj,cj->c", mb, mb) + ms**2)
        b, s = beta, ls2
        mb, ms = mb + 0.5 * STEP_SIZE * (gp[0] + lam * gl[0]), ms + 0.5 * STEP_SIZE * (gp[1] + lam * gl[1])
        for i in range(LEAPFROG):
            b, s = b + STEP_SIZE * mb, s + STEP_SIZE * ms
            lp_n, ll_n, gp_n, gl_n = nm.parts(b, s)
            eps = STEP_SIZE if i < LEAPFROG - 1 else 0.5 * STEP_SIZE
            mb, ms = mb + eps * (gp_n[0] + lam * gl_n[0]), ms + eps * (gp_n[1] + lam * gl_n[1])
        h1 = lp_n + lam * ll_n - 0.5 * (np.einsum("cj,cj->c", mb, mb) + ms**2)
        with np.errstate(invalid="ignore", over="ignore"):
            log_ratio = np.where(np.isnan(h1), -np.inf, h1 - h0)
            accs.append(float(np.mean(np.minimum(1.0, np.exp(log_ratio)))))
        ok = np.log(rng.uniform(size=ls2.shape)) < log_ratio
        beta, ls2 = np.where(ok[:, None], b, beta), np.where(ok, s, ls2)
        lp, ll = np.where(ok, lp_n, lp), np.where(ok, ll_n, ll)
        gp = (np.where(ok[:, None], gp_n[0], gp[0]), np.where(ok, gp_n[1], gp[1]))
        gl = (np.where(ok[:, None], gl_n[0], gl[0]), np.where(ok, gl_n[1], gl[1]))
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
        f = lambda b, s: bdmc.models.log_density(model, {"beta": b, "log_s2": s}, data, lam)  # noqa: E731
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


def record(name, schedule, chains, steps, logw, runs, cold, compile_s, acc_mean, acc_last, calls=None):
    run = statistics.median(runs)
    return {
        "implementation": name, "schedule": schedule, "chains": chains, "steps": steps,
        "log_z": log_mean_exp(logw), "stderr": log_mean_exp_stderr(logw),
        "acceptance_mean": acc_mean, "acceptance_last": acc_last,
        "run_seconds": run, "run_seconds_all": runs, "call_seconds_all": calls or runs,
        "cold_seconds": cold, "compile_seconds": compile_s,
        "chain_steps_per_sec": chains * steps / run, "chain_steps_per_sec_cold": chains * steps / cold,
    }


def bench_bdmc(model, data, path, schedule, chains, repeats):
    kernel = bdmc.kernels.HMC(model, step_size=STEP_SIZE, num_integration_steps=LEAPFROG)
    call = lambda i: bdmc.forward_ais(jax.random.key(100 + i), model, data, num_chains=chains,  # noqa: E731
                                      kernel=kernel, schedule=path, progress=False)
    engine._CACHE.clear()  # bdmc reuses its compiled chunk across schedules; clear it so "cold" really is cold
    first, cold = timed(lambda: call(0))
    warm = [timed(lambda: call(i + 1)) for i in range(repeats)]
    acc = first.details.info.acceptance
    return record("bdmc", schedule, chains, len(path) - 1, first.runs, [w.seconds for w, _ in warm], cold,
                  first.compile_seconds, float(acc.mean()), float(acc[-1]), calls=[t for _, t in warm])


def bench_tfp(model, data, init, steps, chains, repeats, refresh=False):
    run = make_tfp_ais(model, data, steps, refresh)
    call = lambda i: run(jax.random.PRNGKey(200 + i), init["beta"], init["log_s2"])  # noqa: E731
    (logw, acc), cold = timed(lambda: call(0))
    runs = [timed(lambda: call(i + 1))[1] for i in range(repeats)]
    return record("TFP (refreshed)" if refresh else "TFP", "linear (built in)", chains, steps, np.asarray(logw), runs, cold,
                  cold - statistics.median(runs), None, float(acc))


def bench_numpy(model, data, init, path, schedule, chains, repeats):
    init = jax.tree.map(np.asarray, init)
    (logw, acc_mean, acc_last), cold = timed(lambda: numpy_ais(model, data, init, path, seed=300))
    runs = [timed(lambda: numpy_ais(model, data, init, path, seed=301 + i))[1] for i in range(repeats)]
    return record("NumPy", schedule, chains, len(path) - 1, logw, runs, cold, 0.0, acc_mean, acc_last)


def machine_info():
    import blackjax
    import tensorflow_probability as tfp_pkg

    return {
        "cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
        "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
        "python": platform.python_version(), "jax": jax.__version__, "jax_devices": [str(d) for d in jax.devices()],
        "tfp": tfp_pkg.__version__, "blackjax": blackjax.__version__, "numpy": np.__version__,
        "bdmc": bdmc.__version__, "x64": bool(jax.config.jax_enable_x64),
    }


def ratios(rows):
    by = {(r["implementation"], r["schedule"]): r for r in rows}
    pairs = {"bdmc/TFP (linear schedule)": (by[("bdmc", "linear")], by[("TFP", "linear (built in)")]),
             "bdmc/TFP-refreshed (linear)": (by[("bdmc", "linear")], by[("TFP (refreshed)", "linear (built in)")]),
             "bdmc/NumPy (sigmoidal schedule)": (by[("bdmc", "sigmoidal")], by[("NumPy", "sigmoidal")])}
    return {name: {"run": a["chain_steps_per_sec"] / b["chain_steps_per_sec"],
                   "cold": a["chain_steps_per_sec_cold"] / b["chain_steps_per_sec_cold"]}
            for name, (a, b) in pairs.items()}


HEAD = ["implementation", "schedule", "log Z ± stderr", "z vs exact", "accept mean/last", "run s", "cold s",
        "compile s", "chain-steps/s", "chain-steps/s (cold)"]


def cells(r, exact):
    mean = "-" if r["acceptance_mean"] is None else f"{r['acceptance_mean']:.3f}"
    return [r["implementation"], r["schedule"], f"{r['log_z']:.4f} ± {r['stderr']:.4f}",
            f"{(r['log_z'] - exact) / r['stderr']:+.2f}", f"{mean} / {r['acceptance_last']:.3f}",
            f"{r['run_seconds']:.3f}", f"{r['cold_seconds']:.3f}", f"{r['compile_seconds']:.3f}",
            f"{r['chain_steps_per_sec']:,.0f}", f"{r['chain_steps_per_sec_cold']:,.0f}"]


def write_markdown(path, out):
    s, exact = out["settings"], out["exact_log_z"]
    lines = [
        "# Forward-AIS throughput: bdmc vs TFP vs NumPy", "",
        f"LinearRegression (paper defaults), {s['chains']} chains x {s['steps'] + 1} distributions "
        f"({s['steps']} transitions), HMC step size {s['step_size']}, {s['leapfrog_steps']} leapfrog steps, "
        f"identity mass. Run seconds: {s['statistic']} of {s['repeats']} warm calls. Exact log Z = {exact:.4f}.", "",
        "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD),
        *["| " + " | ".join(cells(r, exact)) + " |" for r in out["results"]], "",
        "| ratio | run (compile excluded) | cold (compile included) |", "|---|---|---|",
        *[f"| {k} | {v['run']:.2f} | {v['cold']:.2f} |" for k, v in out["ratios"].items()], "",
        "Machine: " + ", ".join(f"{k}={v}" for k, v in out["machine"].items()), "",
    ]
    path.write_text("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chains", type=int, default=1000, help="number of AIS chains (default 1000)")
    ap.add_argument("--steps", type=int, default=1000, help="number of distributions T on the path (default 1000)")
    ap.add_argument("--repeats", type=int, default=3, help="warm timed calls per implementation; median reported")
    ap.add_argument("--quick", action="store_true", help="smoke run: 100 chains x 100 distributions, 1 repeat (writes *_quick.*)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON and markdown results")
    args = ap.parse_args(argv)
    if args.quick:
        args.chains, args.steps, args.repeats = 100, 100, 1
    console, chains = Console(width=None if sys.stdout.isatty() else 200), args.chains

    model = bdmc.models.LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    exact = float(model.exact_log_marginal(data))
    check_gradient(model, data)
    console.print("[green]hand-written NumPy gradient matches jax.grad of bdmc.models.log_density[/green]")
    sigmoidal, linear = bdmc.schedules.sigmoidal(args.steps), bdmc.schedules.linear(args.steps)
    # Prior draws for TFP and NumPy; this also warms up the (eager, per-shape) sampler bdmc calls internally,
    # so no implementation's cold time includes it.
    init = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), chains))

    rows = []
    for label, fn in [
        ("bdmc, sigmoidal", lambda: bench_bdmc(model, data, sigmoidal, "sigmoidal", chains, args.repeats)),
        ("bdmc, linear", lambda: bench_bdmc(model, data, linear, "linear", chains, args.repeats)),
        ("TFP, linear", lambda: bench_tfp(model, data, init, args.steps - 1, chains, args.repeats)),
        ("TFP refreshed, linear", lambda: bench_tfp(model, data, init, args.steps - 1, chains, args.repeats, True)),
        ("NumPy, sigmoidal", lambda: bench_numpy(model, data, init, sigmoidal, "sigmoidal", chains, args.repeats)),
    ]:
        with console.status(f"running {label} ..."):
            rows.append(fn())

    out = {
        "settings": {"model": "LinearRegression()", "chains": chains, "steps": args.steps - 1,
                     "distributions": args.steps, "repeats": args.repeats, "statistic": "median",
                     "step_size": STEP_SIZE, "leapfrog_steps": LEAPFROG, "data_key": 0},
        "machine": machine_info(), "exact_log_z": exact, "results": rows, "ratios": ratios(rows),
    }
    table = Table(title=f"Forward AIS, {chains} chains x {args.steps} distributions; exact log Z = {exact:.4f}")
    for h in HEAD:
        table.add_column(h, justify="left" if h in ("implementation", "schedule") else "right")
    for r in rows:
        table.add_row(*cells(r, exact))
    console.print(table)
    for name, v in out["ratios"].items():
        console.print(f"{name}: {v['run']:.2f}x (compile excluded), {v['cold']:.2f}x (compile included)")

    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / ("ais_throughput_quick" if args.quick else "ais_throughput")  # smoke runs never overwrite
    stem.with_suffix(".json").write_text(json.dumps(out, indent=2))
    write_markdown(stem.with_suffix(".md"), out)
    console.print(f"wrote {stem.with_suffix('.json')} and {stem.with_suffix('.md')}")


if __name__ == "__main__":
    main()
