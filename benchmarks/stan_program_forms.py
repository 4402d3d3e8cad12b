"""What a Stan gradient costs in the shipped form of each real-data likelihood against the BREAD appendix's form.

The shipped programs of ``bdmc.realdata.stan_models`` write three likelihoods in the forms Stan evaluates
fastest: the regressions through Stan's GLM functions, the mixture as a log-sum-exp over components of one
matrix product. This benchmark builds each next to the appendix's form (same data, same points), checks that
both give the same log density and gradient, and times the in-process value-and-gradient of a batch of chains
(one call per repeat, compilation excluded), reporting the ratio measured in the same run:

    python benchmarks/stan_program_forms.py            # NHEFS regressions, Pima logistic, Old Faithful mixture
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from bdmc.ppl import from_stan  # noqa: E402
from bdmc.realdata import stan_models  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

# The appendix's mixture likelihood: a normal density per case and component.
APPENDIX_MIXTURE_MODEL = """
model {
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += normal_lpdf(to_vector(mu) | 0, sqrt(scale_sq));
  target += dirichlet_lpdf(pi | rep_vector(1, K));
  {
    vector[K] log_pi = log(pi);
    vector[K] lp;
    real loglik = 0;
    for (n in 1:N) {
      for (k in 1:K) {
        lp[k] = log_pi[k] + normal_lpdf(y[n] | mu[k], sqrt(sigma_sq));
      }
      loglik += log_sum_exp(lp);
    }
    target += bdmc_lambda * loglik;
  }
}
"""


def appendix(program: str, kind: str) -> str:
    """The shipped program with the appendix's likelihood in place of the fast one."""
    if kind == "linear":
        fast, slow = ("normal_id_glm_lpdf(y | x, alpha, beta, sqrt(sigma_sq))",
                      "normal_lpdf(y | x * beta + alpha, sqrt(sigma_sq))")
    elif kind == "logistic":
        fast, slow = "bernoulli_logit_glm_lpmf(y | x, alpha, beta)", "bernoulli_logit_lpmf(y | x * beta + alpha)"
    else:
        head = program[:program.index("transformed data {")]
        return head + program[program.index("parameters {"):program.index("model {")] + APPENDIX_MIXTURE_MODEL
    assert fast in program, kind
    return program.replace(fast, slow)


def cases():
    from bdmc.datasets import load_nhefs, load_old_faithful, load_pima

    nhefs, pima = load_nhefs(), load_pima()
    faithful = np.asarray(load_old_faithful()["y"], np.float64)
    yield ("linear regression (NHEFS)", "linear", stan_models.LINEAR_REGRESSION_PROGRAM,
           {"N": len(nhefs["y"]), "K": np.shape(nhefs["x"])[1], "x": np.asarray(nhefs["x"]),
            "y": np.zeros(len(nhefs["y"]))}, {"y": jnp.asarray(nhefs["y"])})
    yield ("logistic regression (Pima)", "logistic", stan_models.LOGISTIC_REGRESSION_PROGRAM,
           {"N": len(pima["y"]), "K": np.shape(pima["x"])[1], "x": np.asarray(pima["x"]),
            "y": np.zeros(len(pima["y"]), np.int64)}, {"y": jnp.asarray(pima["y"])})
    yield ("mixture (Old Faithful, 2 components)", "mixture", stan_models.MIXTURE_PROGRAM,
           {"N": faithful.shape[0], "D": faithful.shape[1], "K": 2, "y": np.zeros(faithful.shape)},
           {"y": jnp.asarray(faithful)})


def per_chain_seconds(model, data, xs, repeats):
    f = jax.jit(jax.vmap(jax.value_and_grad(lambda x: model.log_density(x, data, 0.7))))
    out = jax.block_until_ready(f(xs))
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(xs))
    return (time.perf_counter() - start) / (repeats * xs.shape[0]), out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ppl_adapters"))
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("ppl_adapters")
        return
    rows = []
    for label, kind, program, stan_data, data in cases():
        shipped = from_stan(program, data=stan_data, observed="y")
        slow = from_stan(appendix(program, kind), data=stan_data, observed="y")
        xs = jnp.asarray(0.5 * np.random.default_rng(0).normal(size=(args.chains, shipped.dim)))
        fast_s, (v1, g1) = per_chain_seconds(shipped, data, xs, args.repeats)
        slow_s, (v2, g2) = per_chain_seconds(slow, data, xs, args.repeats)
        value_gap = float(jnp.max(jnp.abs(v1 - v2) / (1 + jnp.abs(v2))))
        grad_gap = float(jnp.max(jnp.abs(g1 - g2) / (1 + jnp.abs(g2))))
        rows.append({"model": label, "shipped_us": 1e6 * fast_s, "appendix_us": 1e6 * slow_s,
                     "speedup": slow_s / fast_s, "max_relative_value_gap": value_gap,
                     "max_relative_gradient_gap": grad_gap, **stamp()})
        print(json.dumps(rows[-1]), flush=True)
    lines = [f"Value and gradient of the log density at lambda = 0.7, {args.chains} chains per call, {args.repeats} "
             "calls, compilation excluded; microseconds per chain.", "",
             "| model | shipped form | appendix's form | speed-up | largest relative gap (value, gradient) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['shipped_us']:.1f} | {r['appendix_us']:.1f} | {r['speedup']:.1f}x | "
                     f"{r['max_relative_value_gap']:.1e}, {r['max_relative_gradient_gap']:.1e} |")
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "stan_program_forms.json", json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))
    write_folder("ppl_adapters", written_to=args.out)


if __name__ == "__main__":
    main()
