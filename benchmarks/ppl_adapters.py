"""One regression, five implementations: built-in, NumPyro, PyMC, Stan and WebPPL give the same BDMC ground truth.

The conjugate regression of ``bdmc.models.LinearRegression`` (n = 20, cubic design, tau = 0.1, s2 ~ IG(1, 1))
is written in each PPL. One data set and its exact latent are simulated from the built-in model and mapped to
each adapter's unconstrained latent; forward and reverse AIS with the same HMC kernel settings then sandwich
log p(y) in each implementation. The table reports both bounds, their distance to the closed form, and the
seconds per 1,000 chain-steps (compilation excluded) of each, side by side in one run.

    python benchmarks/ppl_adapters.py                     # T = 3000, 32 chains (a few minutes)
    python benchmarks/ppl_adapters.py --steps 500 --chains 16 --skip stan
    python benchmarks/ppl_adapters.py --skip numpyro,pymc,stan --out /tmp/webppl   # WebPPL beside built-in

``--nhefs`` measures cost instead, on the BREAD paper's NHEFS linear regression (1,566 rows, 5 inputs): seconds
per 1,000 chain-steps of HMC (10 leapfrog steps) in NumPyro, PyMC, Stan in-process (``backend="native"``,
one thread and ``--stan-threads``; the shipped program with ``normal_id_glm_lpdf``, and the appendix's
``normal_lpdf(y | x * beta + alpha, ...)``), Stan through httpstan's helper process and WebPPL, and the
in-process path's first build (shim and program compiled into an empty cache):

    python benchmarks/ppl_adapters.py --nhefs --steps 200 --chains 32

``--small-cost`` measures the cost on the 20-case regression above, where the data are too small to hide a
per-evaluation overhead: seconds per 1,000 chain-steps of forward AIS with HMC (10 leapfrog steps) in NumPyro
and Stan in-process (one thread; ``--stan-threads``; the likelihood as ``normal_id_glm_lpdf``), the contenders
alternating over ``--repeats`` runs (compilation and a warm-up run excluded), and microseconds per chain of one
value and gradient alone (for Stan also at a lambda new to every call, which builds a model object each time):

    python benchmarks/ppl_adapters.py --small-cost --steps 1000 --chains 32 --repeats 15 --stan-threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc
from bdmc.kernels import HMC
from bdmc.models import LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

BUILTIN = LinearRegression()
X = np.asarray(BUILTIN.design)

STAN_PROGRAM = """
data { int N; matrix[N, 4] x; vector[N] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { vector[4] beta; real<lower=0> s2; }
model {
  target += inv_gamma_lpdf(s2 | 1, 1);
  target += normal_lpdf(beta | 0, sqrt(0.1 * s2));
  target += bdmc_lambda * normal_lpdf(y | x * beta, sqrt(s2));
}
"""

# The same density with the likelihood as Stan's GLM function, whose gradient is analytic (no tape node per row).
STAN_GLM_PROGRAM = STAN_PROGRAM.replace("normal_lpdf(y | x * beta, sqrt(s2))",
                                        "normal_id_glm_lpdf(y | x, 0, beta, sqrt(s2))")


def numpyro_model():
    import numpyro
    import numpyro.distributions as dist

    def regression(x, y=None):
        s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)

    return bdmc.ppl.from_numpyro(regression, X, observed="y")


def pymc_model():
    import pymc as pm

    with pm.Model() as regression:
        s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0)
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(0.1 * s2), shape=X.shape[1])
        pm.Normal("y", X @ beta, pm.math.sqrt(s2), observed=np.zeros(X.shape[0]))
    return bdmc.ppl.from_pymc(regression)


def stan_model(program=STAN_PROGRAM, **options):
    def simulate(rng, params=None):
        if params is None:
            s2 = 1.0 / rng.gamma(1.0)
            params = {"s2": s2, "beta": rng.normal(0.0, np.sqrt(0.1 * s2), X.shape[1])}
        y = X @ np.asarray(params["beta"]) + np.sqrt(params["s2"]) * rng.normal(size=X.shape[0])
        return params, {"y": y}

    return bdmc.ppl.from_stan(program, data={"N": X.shape[0], "x": X, "y": np.zeros(X.shape[0])},
                              observed="y", simulate=simulate, **options)


WEBPPL_PROGRAM = """
var model = function(data) {
  var g = sample(Gamma({shape: 1, scale: 1}));  // the precision 1 / s2: s2 ~ IG(1, 1)
  var s2 = 1 / g;
  var beta = sample(DiagCovGaussian({mu: zeros([4, 1]), sigma: T.mul(ones([4, 1]), Math.sqrt(0.1 * s2))}));
  var n = data.y.length;
  observe(DiagCovGaussian({mu: T.dot(Matrix(data.x), beta), sigma: T.mul(ones([n, 1]), Math.sqrt(s2))}),
          Vector(data.y));
};
model
"""


def webppl_model():
    # WebPPL has no inverse gamma: the program samples the precision, whose log is -log s2 (same density).
    return bdmc.ppl.from_webppl(WEBPPL_PROGRAM, {"x": X, "y": np.zeros(X.shape[0])}, observed="y")


def implementations(y, latent, skip):
    """(name, model, data, exact latent) for each implementation, the same data and latent in each's format."""
    beta, log_s2 = np.asarray(latent["beta"]), float(latent["log_s2"])
    out = [("built-in", BUILTIN, y, latent)]
    if "numpyro" not in skip:
        out.append(("NumPyro", numpyro_model(), {"y": y}, {"s2": jnp.asarray(log_s2), "beta": jnp.asarray(beta)}))
    if "pymc" not in skip:
        model = pymc_model()
        out.append(("PyMC", model, {"y": y}, {"s2_log__": jnp.asarray(log_s2), "beta": jnp.asarray(beta)}))
    if "stan" not in skip:
        model = stan_model()
        out.append(("Stan", model, {"y": y}, jnp.asarray(model.unconstrain({"beta": beta, "s2": np.exp(log_s2)}))))
    if "webppl" not in skip:
        out.append(("WebPPL", webppl_model(), {"y": y}, jnp.asarray(np.concatenate([[-log_s2], beta]))))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--chains", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", default="", help="comma-separated: numpyro, pymc, stan, webppl")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ppl_adapters"))
    parser.add_argument("--nhefs", action="store_true", help="cost per chain-step on the NHEFS regression")
    parser.add_argument("--stan-threads", type=int, default=2, help="threads of the second in-process Stan row")
    parser.add_argument("--small-cost", action="store_true", help="cost per chain-step on the 20-case regression")
    parser.add_argument("--repeats", type=int, default=5, help="--small-cost: timed runs of each contender")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("ppl_adapters")
        return
    if args.nhefs:
        return nhefs_cost(args)
    if args.small_cost:
        return small_cost(args)
    y, latent = bdmc.simulate(jax.random.key(args.seed), BUILTIN)
    exact = float(BUILTIN.exact_log_marginal(y))
    rows = []
    for name, model, data, x0 in implementations(y, latent, set(args.skip.split(","))):
        kernel = HMC(model, step_size=0.05, num_integration_steps=10)
        k1, k2 = jax.random.split(jax.random.key(args.seed + 1))
        fwd = bdmc.forward_ais(k1, model, data, num_steps=args.steps, num_runs=args.chains, kernel=kernel,
                               progress=False)
        rev = bdmc.reverse_ais(k2, model, data, exact_latent=x0, num_steps=args.steps, num_runs=args.chains,
                               kernel=kernel, progress=False)
        chain_steps = args.steps * args.chains
        row = {"implementation": name, "forward": fwd.value, "forward_se": fwd.stderr, "reverse": rev.value,
               "reverse_se": rev.stderr, "truth": 0.5 * (fwd.value + rev.value), "exact": exact,
               "seconds_per_1000_chain_steps": 1000 * (fwd.seconds + rev.seconds) / (2 * chain_steps),
               "compile_seconds": fwd.compile_seconds + rev.compile_seconds, **stamp()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    write(rows, args)
    write_folder("ppl_adapters", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


def write(rows, args) -> None:
    """Store the rows (``rows.json``); the pages are rendered from them."""
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "rows.json", json.dumps(rows, indent=1) + "\n")


NHEFS_WEBPPL_PROGRAM = """
var model = function(data) {
  // WebPPL has no inverse gamma: the precisions 1 / sigma_sq and 1 / scale_sq, each Gamma(1, 1).
  var sigma_sq = 1 / sample(Gamma({shape: 1, scale: 1}));
  var scale_sq = 1 / sample(Gamma({shape: 1, scale: 1}));
  var alpha = sample(Gaussian({mu: 0, sigma: Math.sqrt(scale_sq)}));
  var k = data.x[0].length, n = data.y.length;
  var beta = sample(DiagCovGaussian({mu: zeros([k, 1]), sigma: T.mul(ones([k, 1]), Math.sqrt(scale_sq))}));
  var mean = T.add(T.dot(Matrix(data.x), beta), T.mul(ones([n, 1]), alpha));
  observe(DiagCovGaussian({mu: mean, sigma: T.mul(ones([n, 1]), Math.sqrt(sigma_sq))}), Vector(data.y));
};
model
"""


def appendix_likelihood_program() -> str:
    """The shipped NHEFS program with the appendix's ``normal_lpdf(y | x * beta + alpha, ...)`` in place of
    ``normal_id_glm_lpdf``: the same density, autodiff through the matrix product instead of analytic gradients."""
    from bdmc.realdata.stan_models import LINEAR_REGRESSION_PROGRAM

    glm = "normal_id_glm_lpdf(y | x, alpha, beta, sqrt(sigma_sq))"
    assert glm in LINEAR_REGRESSION_PROGRAM
    return LINEAR_REGRESSION_PROGRAM.replace(glm, "normal_lpdf(y | x * beta + alpha, sqrt(sigma_sq))")


def nhefs_models(x, skip, stan_threads):
    """(name, model) of the NHEFS regression in each implementation (the BREAD paper's Appendix C model)."""
    from bdmc.realdata import models, pymc_models
    from bdmc.realdata.stan_models import LINEAR_REGRESSION_PROGRAM, linear_regression_simulator

    def stan(program=LINEAR_REGRESSION_PROGRAM, **options):
        data = {"N": x.shape[0], "K": x.shape[1], "x": x, "y": np.zeros(x.shape[0])}
        return bdmc.ppl.from_stan(program, data=data, observed="y", simulate=linear_regression_simulator(x),
                                  name="nhefs-linear-regression", **options)

    out = []
    if "numpyro" not in skip:
        out.append(("NumPyro", models.linear_regression(x)))
    if "pymc" not in skip:
        out.append(("PyMC", pymc_models.linear_regression(x)))
    if "stan" not in skip:
        out.append(("Stan in-process", stan()))
        out.append(("Stan in-process, the appendix's likelihood", stan(appendix_likelihood_program())))
        if stan_threads > 1:
            out.append((f"Stan in-process, {stan_threads} threads", stan(num_threads=stan_threads)))
        out.append(("Stan via httpstan", stan(backend="httpstan")))
    if "webppl" not in skip:
        data = {"x": x.tolist(), "y": np.zeros(x.shape[0])}
        out.append(("WebPPL", bdmc.ppl.from_webppl(NHEFS_WEBPPL_PROGRAM, data, observed="y")))
    return out


def first_build_seconds(x) -> float:
    """Seconds to compile the shim and the NHEFS program into an empty cache and load them."""
    from bdmc.realdata.stan_models import LINEAR_REGRESSION_PROGRAM

    before = os.environ.get("BDMC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="bdmc_cold_cache_") as tmp:
        os.environ["BDMC_CACHE_DIR"] = tmp
        try:
            start = time.perf_counter()
            model = bdmc.ppl.from_stan(LINEAR_REGRESSION_PROGRAM, observed="y", data={
                "N": x.shape[0], "K": x.shape[1], "x": x, "y": np.zeros(x.shape[0])})
            _ = model.dim  # reading it builds the program
            return time.perf_counter() - start
        finally:
            if before is None:
                os.environ.pop("BDMC_CACHE_DIR")
            else:
                os.environ["BDMC_CACHE_DIR"] = before


def nhefs_cost(args) -> None:
    from bdmc.datasets import load_nhefs

    real = load_nhefs()
    x, y = np.asarray(real["x"]), np.asarray(real["y"])
    skip = set(args.skip.split(","))
    rows = []
    for name, model in nhefs_models(x, skip, args.stan_threads):
        slow = "httpstan" in name or name == "WebPPL"  # about 20-30 s per 1,000 chain-steps
        steps = max(5, args.steps // 20) if slow else args.steps
        kernel = HMC(model, step_size=0.01, num_integration_steps=10)
        res = bdmc.forward_ais(jax.random.key(args.seed), model, {"y": jnp.asarray(y)}, num_steps=steps,
                               num_runs=args.chains, kernel=kernel, progress=False)
        row = {"implementation": name, "chains": args.chains, "steps": steps, "log_ml_lower": res.value,
               "seconds_per_1000_chain_steps": 1000 * res.seconds / (steps * args.chains),
               "compile_seconds": res.compile_seconds, **stamp()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    first = first_build_seconds(x) if "stan" not in skip else None
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"rows": rows, "first_build_seconds": first}
    write_text(args.out / "nhefs_cost.json", json.dumps(summary, indent=1) + "\n")
    base = next((r for r in rows if r["implementation"] == "NumPyro"), rows[0])
    lines = [f"NHEFS linear regression (N = {x.shape[0]}, K = {x.shape[1]}), forward AIS with HMC (step 0.01, 10 "
             f"leapfrog steps), {args.chains} chains; compilation excluded. Machine: {os.cpu_count()} CPU cores.", "",
             "| implementation | steps | s per 1,000 chain-steps | ratio to NumPyro | JAX compile s |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['implementation']} | {r['steps']} | {r['seconds_per_1000_chain_steps']:.3f} | "
                     f"{r['seconds_per_1000_chain_steps'] / base['seconds_per_1000_chain_steps']:.1f}x | "
                     f"{r['compile_seconds']:.1f} |")
    if first is not None:
        lines += ["", f"First build of the in-process Stan program (shim and program compiled into an empty cache, "
                      f"then loaded): {first:.1f} s."]
    print("\n".join(lines))
    write_folder("ppl_adapters", written_to=args.out)  # nhefs_cost.md, from its template


def gradient_loop(model, data, latents, *, new_lambda: bool = False, value_only: bool = False, calls: int = 200):
    """A compiled loop of ``calls`` values and gradients of ``log f(x; lam)`` over the batch ``latents``, at
    ``lam = 0.5`` or (``new_lambda``) at a lambda new to every call, or of values alone (``value_only``);
    returns ``run() -> seconds per call and chain``. It times the model's own evaluation, without the kernel and
    the annealing around it."""
    from bdmc.contracts.model import log_density

    def grad(xs, lam):
        if value_only:
            values = jax.vmap(lambda x: log_density(model, x, data, lam))(xs)
            return values, jax.tree.map(lambda x: jnp.broadcast_to(values.reshape((-1,) + (1,) * (x.ndim - 1)),
                                                                   x.shape), xs)
        return jax.vmap(jax.value_and_grad(lambda x: log_density(model, x, data, lam)))(xs)

    @jax.jit
    def loop(xs):
        def body(i, carry):
            xs, total = carry
            lam = 0.25 + 0.5 * i / calls if new_lambda else 0.5
            value, g = grad(xs, lam)  # the next point depends on this gradient: no call is hoisted or dropped
            return jax.tree.map(lambda x, d: x + 1e-9 * d, xs, g), total + jnp.sum(value)
        return jax.lax.fori_loop(0, calls, body, (xs, 0.0))

    chains = jax.tree.leaves(latents)[0].shape[0]
    jax.block_until_ready(loop(latents))  # compile

    def run() -> float:
        start = time.perf_counter()
        jax.block_until_ready(loop(latents))
        return (time.perf_counter() - start) / (calls * chains)
    return run


def small_cost(args) -> None:
    """Seconds per 1,000 chain-steps on the 20-case regression, contenders interleaved; ``small_cost.json``."""
    y, _ = bdmc.simulate(jax.random.key(args.seed), BUILTIN)
    data = {"y": jnp.asarray(y)}
    stan = stan_model()
    contenders = [("NumPyro", numpyro_model()), ("Stan in-process", stan),
                  ("Stan in-process, normal_id_glm_lpdf", stan_model(STAN_GLM_PROGRAM))]
    if args.stan_threads > 1:
        contenders.append((f"Stan in-process, {args.stan_threads} threads", stan_model(num_threads=args.stan_threads)))

    def run(model):
        kernel = HMC(model, step_size=0.05, num_integration_steps=10)
        return bdmc.forward_ais(jax.random.key(args.seed + 1), model, data, num_steps=args.steps,
                                num_runs=args.chains, kernel=kernel, progress=False)

    def row(measure, name, repeat, **fields):
        out = {"measure": measure, "implementation": name, "repeat": repeat, "chains": args.chains, **fields,
               "loadavg": list(os.getloadavg()), **stamp()}
        print(json.dumps(out), flush=True)
        return out

    compile_seconds = {name: run(model).compile_seconds for name, model in contenders}  # and a warm-up run
    keys = jax.random.split(jax.random.key(args.seed + 2), args.chains)
    loops = [("value and gradient", name, gradient_loop(model, data, jax.vmap(model.sample_prior)(keys)))
             for name, model in contenders]
    # The same at a lambda new to every call: Stan builds a model object per lambda.
    loops.append(("value and gradient, a new lambda per call", "Stan in-process",
                  gradient_loop(stan, data, jax.vmap(stan.sample_prior)(keys), new_lambda=True)))
    loops.append(("value alone", "Stan in-process",
                  gradient_loop(stan, data, jax.vmap(stan.sample_prior)(keys), value_only=True)))
    rows = []
    for repeat in range(args.repeats):
        # Alternate the order, so that no contender always runs right after the same other one.
        for name, model in contenders if repeat % 2 == 0 else contenders[::-1]:
            res = run(model)
            rows.append(row("forward AIS", name, repeat, steps=args.steps, log_ml_lower=res.value,
                            seconds=res.seconds, compile_seconds=compile_seconds[name],
                            seconds_per_1000_chain_steps=1000 * res.seconds / (args.steps * args.chains)))
        for measure, name, timed in loops if repeat % 2 == 0 else loops[::-1]:
            rows.append(row(measure, name, repeat, microseconds_per_chain=1e6 * timed()))
    write_text(args.out / "small_cost.json", json.dumps({"rows": rows}, indent=1) + "\n")
    write_folder("ppl_adapters", written_to=args.out)  # small_cost.md, from its template
    if (args.out / "small_cost.md").exists():
        print((args.out / "small_cost.md").read_text())


if __name__ == "__main__":
    main()
