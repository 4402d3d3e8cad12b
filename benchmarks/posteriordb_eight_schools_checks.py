"""Both new checks on posteriordb's eight-schools program as published: prior normalization and check_estimate.

posteriordb's ``eight_schools_noncentered`` writes every density with ``~`` (which drops each term that does not
depend on a parameter) and puts ``tau ~ cauchy(0, 5)`` on ``real<lower=0> tau`` (a half-Cauchy that misses its
log 2). Its density is therefore not normalized, and its "evidence" is not log p(y): a Bayes factor against
another program would be off by the constants it dropped. Two programs are checked:

- **as published**: posteriordb's program, with only the likelihood's ``~`` made annealable as
  ``target += bdmc_lambda * normal_lupdf(y | theta, sigma)`` (``_lupdf`` drops what ``~`` drops);
- **normalized**: the same model with ``target += ..._lpdf`` everywhere and the half-Cauchy's
  ``- cauchy_lccdf(0 | 0, 5)``.

For each: ``bdmc.checks.prior_normalization`` (the prior's log integral, from the simulator's exact draws; the
dropped constants predict it independently: mu's ``log(5 sqrt(2 pi))``, tau's ``log(5 pi)`` less the half's
``log 2``, and 8 x ``log sqrt(2 pi)`` of theta_trans), and ``bdmc.check_estimate`` of the exact log p(y) of the
schools' data (one quadrature, ``bdmc.exact.hierarchical_normal_log_marginal``) against the program's own
bounds (on real data: the certified lower bound only). The published program's bounds sit far above the true
evidence, so the true value is called "too low" *for that program*: its number is not log p(y).

    python benchmarks/posteriordb_eight_schools_checks.py --seeds 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402
from bdmc.checks.prior_normalization import prior_normalization  # noqa: E402
from bdmc.exact import hierarchical_normal_log_marginal  # noqa: E402

bdmc.enable_x64()

SOURCE = HERE / "data" / "posteriordb" / "eight_schools-eight_schools_noncentered"
OUT = HERE / "results" / "posteriordb_checks"
LEVEL = 0.01
C = 0.5 * math.log(2 * math.pi)
# The prior's log integral as published: the constants `~` drops (positive: they were negative terms), less log 2.
PREDICTED = {"as published": (C + math.log(5.0)) + (math.log(5.0) + math.log(math.pi)) + 8 * C - math.log(2.0),
             "normalized": 0.0}


def published_program() -> str:
    code = (SOURCE / "model.stan").read_text()
    code = code.replace("array[J] real<lower=0> sigma; // std of estimated effect",
                        "array[J] real<lower=0> sigma; // std of estimated effect\n"
                        "  real<lower=0, upper=1> bdmc_lambda;")
    code = code.replace("y ~ normal(theta, sigma);", "target += bdmc_lambda * normal_lupdf(y | theta, sigma);")
    assert "bdmc_lambda" in code and "y ~" not in code
    return code


NORMALIZED = """
data { int<lower=0> J; array[J] real y; array[J] real<lower=0> sigma; real<lower=0, upper=1> bdmc_lambda; }
parameters { vector[J] theta_trans; real mu; real<lower=0> tau; }
transformed parameters { vector[J] theta = theta_trans * tau + mu; }
model {
  target += normal_lpdf(theta_trans | 0, 1);
  target += bdmc_lambda * normal_lpdf(y | theta, sigma);
  target += normal_lpdf(mu | 0, 5);
  target += cauchy_lpdf(tau | 0, 5) - cauchy_lccdf(0 | 0, 5);
}
"""


def simulate(sigma):
    def draw(rng, params=None):
        p = dict(params or {})
        p.setdefault("theta_trans", rng.normal(size=len(sigma)))
        p.setdefault("mu", float(5.0 * rng.normal()))
        p.setdefault("tau", float(abs(5.0 * rng.standard_cauchy())))
        theta = np.asarray(p["theta_trans"]) * p["tau"] + p["mu"]
        return p, {"y": theta + sigma * rng.normal(size=len(sigma))}
    return draw


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("posteriordb_checks")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    done = {(r["program"], r["seed"]) for r in load_rows(path)}
    commit, clean = tree_state()
    data_json = json.loads((SOURCE / "data.json").read_text())
    y, sigma = np.asarray(data_json["y"], float), np.asarray(data_json["sigma"], float)
    exact = hierarchical_normal_log_marginal(y, sigma, mu_sd=5.0, tau_cauchy_scale=5.0)
    stan_data = {"J": len(y), "y": y, "sigma": sigma}
    programs = {"as published": published_program(), "normalized": NORMALIZED}
    for name, code in programs.items():
        model = bdmc.ppl.from_stan(code, data=stan_data, observed="y", simulate=simulate(sigma),
                                   name=f"eight-schools-{name.replace(' ', '-')}")
        for seed in range(args.seeds):
            if (name, seed) in done:
                continue
            load_before, began = os.getloadavg()[0], time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prior = prior_normalization(jax.random.key(seed), model, level=LEVEL)
                middle = time.perf_counter()
                check = bdmc.check_estimate(jax.random.key(1000 + seed), model, {"y": jax.numpy.asarray(y)}, exact,
                                            level=LEVEL, progress=False)
            row = {"program": name, "seed": seed, "predicted_log_integral": PREDICTED[name],
                   "prior": {"verdict": prior.verdict, "estimate": prior.estimate,
                             "interval": [prior.interval_low, prior.interval_high],
                             "certified": [prior.certified_low, prior.certified_high],
                             "num_steps": prior.num_steps, "num_runs": prior.num_runs},
                   "exact_log_evidence": exact,
                   "check_estimate": {"verdict": check.verdict, "lower": check.lower,
                                      "certified_lower": check.certified_lower, "method": check.method,
                                      "num_steps": check.num_steps, "num_runs": check.num_runs},
                   "prior_seconds": middle - began, "check_seconds": time.perf_counter() - middle,
                   "commit": commit, "clean_tree": clean, "time": time.time(), "load_before": load_before,
                   "load_after": os.getloadavg()[0]}
            append_row(path, row)
            print(f"{name:13s} seed {seed}: prior log integral {prior.estimate:+.3f} "
                  f"[{prior.interval_low:+.3f}, {prior.interval_high:+.3f}] (predicted {PREDICTED[name]:+.3f}), "
                  f"{prior.verdict}; exact log p(y) {exact:.3f} vs lower bound {check.lower:.3f} "
                  f"(certified {check.certified_lower:.3f}): {check.verdict}", flush=True)
    write_folder("posteriordb_checks", written_to=args.out)


if __name__ == "__main__":
    main()
