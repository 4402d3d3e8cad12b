"""Preconditioning from the pilot, before and after: regressions whose posterior scales differ by 10^3.

Each problem is a conjugate regression ``y ~ N(X beta, s2 I)``, ``beta_j ~ N(0, s2 v_j)``, ``s2 ~ IG(h0, k0)``
(exact log p(y) in closed form: ``bdmc.exact.linear_regression_log_marginal`` on the design scaled by
``sqrt(v_j)``), whose design has an intercept, a covariate in large units (sd 31.6 around a mean of 100, so
intercept and slope are strongly correlated) and one in small units (sd 0.0316): the coefficients' posterior
standard deviations differ by a factor of 10^3 (about 0.005, 0.5 and 5 times sigma). Each prior standard
deviation ``sqrt(v_j)`` is ``prior_ratio`` (30) times its coefficient's approximate posterior one: weakly
informative in every coordinate, as a user's priors in natural units are. Data are simulated from the prior,
one data set per seed, and every kernel runs the BDMC sandwich at T = 1,000 with the pilot's frozen choices:

- ``hmc-identity``: HMC with a pilot-tuned step size and no mass matrix (before);
- ``hmc-diagonal`` / ``hmc-dense``: HMC whose inverse mass at each lambda is the pilot's fit (after);
- ``imh``: independent Metropolis-Hastings from the pilot's fitted Student-t (PyMC SMC's kernel, frozen).

Rows (one per kernel and data set, written as they finish, resumable) go to
``benchmarks/results/preconditioning/rows.jsonl`` (``quick/`` for ``--quick``); the summary table to
``README.md`` beside them.

    python benchmarks/preconditioning.py            # 8 data sets, T = 1,000, 16 runs (about 10 minutes on 2 cores)
    python benchmarks/preconditioning.py --quick    # 2 data sets, T = 300
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import bdmc
from bdmc.errors import OptionError
from bdmc.exact import linear_regression_log_marginal
from bdmc.experiments.store import settings_diff
from bdmc.files import to_jsonable
from bdmc.kernels import HMC, IndependentMH

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp, write_text  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).parent / "results" / "preconditioning"
LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class ScaledRegression:
    """The conjugate regression of the module docstring; the design is fixed by ``seed``."""

    n: int = 40
    prior_ratio: float = 30.0
    h0: float = 3.0
    k0: float = 2.0
    seed: int = 0

    @property
    def design(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        big = 100.0 + 10**1.5 * rng.standard_normal(self.n)
        small = 10**-1.5 * rng.standard_normal(self.n)
        return np.column_stack([np.ones(self.n), big, small])

    @property
    def prior_sd(self) -> np.ndarray:
        """Per coefficient (in units of sigma): ``prior_ratio`` times the approximate posterior sd."""
        X = self.design
        return self.prior_ratio * np.sqrt(np.diag(np.linalg.inv(X.T @ X)))

    def sample_prior(self, key):
        k1, k2 = jax.random.split(key)
        s2 = self.k0 / jax.random.gamma(k1, self.h0)
        beta = jnp.sqrt(s2) * jnp.asarray(self.prior_sd) * jax.random.normal(k2, (3,))
        return {"beta": beta, "log_s2": jnp.log(s2)}

    def sample_data(self, key, latent):
        X = jnp.asarray(self.design)
        return X @ latent["beta"] + jnp.exp(0.5 * latent["log_s2"]) * jax.random.normal(key, (self.n,))

    def log_prior(self, latent):
        beta, log_s2 = latent["beta"], latent["log_s2"]
        s2 = jnp.exp(log_s2)
        v = s2 * jnp.asarray(self.prior_sd) ** 2
        lp_beta = jnp.sum(-0.5 * beta**2 / v - 0.5 * jnp.log(2 * jnp.pi * v))
        # s2 ~ IG(h0, k0) on log s2 (with the Jacobian s2).
        lp_s2 = (self.h0 * jnp.log(self.k0) - jax.scipy.special.gammaln(self.h0) - self.h0 * log_s2
                 - self.k0 / s2)
        return lp_beta + lp_s2

    def log_likelihood(self, latent, data):
        X = jnp.asarray(self.design)
        s2 = jnp.exp(latent["log_s2"])
        r = data - X @ latent["beta"]
        return -0.5 * r**2 / s2 - 0.5 * (LOG_2PI + latent["log_s2"])

    def exact(self, data) -> float:
        scaled = self.design * self.prior_sd  # beta_j = sqrt(v_j) b_j with b ~ N(0, s2 I)
        return float(linear_regression_log_marginal(data, scaled, tau=1.0, h0=self.h0, k0=self.k0))


def kernels(model):
    return {
        "hmc-identity": (HMC(model, num_integration_steps=10), bdmc.core.pilot.Pilot(mass="identity")),
        "hmc-diagonal": (HMC(model, num_integration_steps=10), bdmc.core.pilot.Pilot(mass="diagonal")),
        "hmc-dense": (HMC(model, num_integration_steps=10), bdmc.core.pilot.Pilot(mass="dense")),
        "imh": (IndependentMH(model), bdmc.core.pilot.Pilot(mass="dense")),
    }


def run(args) -> pd.DataFrame:
    out = OUT / ("quick" if args.quick else "")
    settings = {"num_steps": args.steps, "num_runs": args.runs}
    rows_path, settings_path = out / "rows.jsonl", out / "settings.json"
    saved = json.loads(settings_path.read_text())["settings"] if settings_path.exists() else settings
    diffs = settings_diff(saved, settings, ("num_steps", "num_runs"))
    if diffs:  # the rows of another run's settings are not resumed
        raise OptionError(f"{out} holds a run with other settings ({'; '.join(diffs)}); delete its rows.jsonl and "
                          "settings.json to start again")
    done = {(r["kernel"], int(r["seed"])) for r in load_rows(rows_path)}
    commit = os.popen("git rev-parse --short HEAD").read().strip()
    for seed in range(args.seeds):
        model = ScaledRegression(seed=seed)
        data, exact_latent = bdmc.simulate(jax.random.key(1000 + seed), model)
        truth = model.exact(data)
        for name, (kernel, pilot) in kernels(model).items():  # interleaved: every kernel on each data set in turn
            if (name, seed) in done:
                continue
            key = jax.random.key(seed)
            began = time.perf_counter()
            lower = bdmc.forward_ais(key, model, data, num_steps=args.steps, num_runs=args.runs, kernel=kernel,
                                     tune=pilot, progress=False)
            upper = bdmc.reverse_ais(key, model, data, exact_latent=exact_latent, num_steps=args.steps,
                                     num_runs=args.runs, kernel=kernel, tune=pilot, progress=False)
            row = {"kernel": name, "seed": seed, "num_steps": args.steps, "num_runs": args.runs, "exact": truth,
                   "lower": lower.value, "lower_stderr": lower.stderr, "upper": upper.value,
                   "upper_stderr": upper.stderr, "gap": upper.value - lower.value,
                   "lower_z": (lower.value - truth) / lower.stderr if lower.stderr > 0 else float("nan"),
                   "lower_within_3se": abs(lower.value - truth) <= 3 * lower.stderr,
                   "acceptance": float(np.mean(lower.details.info.acceptance)),
                   "divergence_rate": lower.divergence_rate, "weight_ess": lower.weight_ess,
                   "seconds": time.perf_counter() - began, **stamp(), "commit": commit,
                   "load": os.getloadavg()[0], "time": datetime.datetime.now().isoformat(timespec="seconds")}
            append_row(rows_path, to_jsonable(row))
            write_text(settings_path, json.dumps({"settings": settings}, indent=2) + "\n")
            print(f"seed {seed} {name:13s} exact {truth:9.3f} lower {lower.value:9.3f} ± {lower.stderr:.3f} "
                  f"upper {upper.value:9.3f} gap {row['gap']:7.3f} acc {row['acceptance']:.2f} "
                  f"{row['seconds']:.1f}s", flush=True)
    return pd.DataFrame(load_rows(rows_path))


def summarize(rows: pd.DataFrame, quick: bool) -> str:
    order = ["hmc-identity", "hmc-diagonal", "hmc-dense", "imh"]
    table = rows.groupby("kernel").agg(data_sets=("seed", "nunique"), median_gap=("gap", "median"),
                                      max_gap=("gap", "max"), gap_under_0_2=("gap", lambda g: float(np.mean(g < 0.2))),
                                      lower_within_3se=("lower_within_3se", "mean"),
                                      acceptance=("acceptance", "mean"), seconds=("seconds", "median"))
    errors = rows.assign(err=rows["lower"] - rows["exact"]).groupby("kernel")["err"].median()
    table.insert(5, "median_lower_error", errors)
    table = table.reindex([k for k in order if k in table.index])
    steps, runs = int(rows["num_steps"].iloc[0]), int(rows["num_runs"].iloc[0])
    head = (f"# Preconditioning from the pilot: regressions whose posterior scales differ by 10^3 "
            f"(T = {steps:,}, {runs} runs{', quick settings' if quick else ''})\n\n")
    body = ("Command: `python benchmarks/preconditioning.py" + (" --quick" if quick else "") + "`. Per kernel, over "
            "data sets simulated from the prior: the BDMC gap (reverse minus forward AIS, nats), the share of data "
            "sets with a gap under 0.2 nat, the share whose forward estimate lies within 3 stderr of the exact "
            "log p(y), the median forward error (nats), the mean acceptance and the median seconds for both "
            "directions (pilots included). Rows: `rows.jsonl` beside this page.\n\n")
    return head + body + _markdown(table) + "\n"


def _markdown(table: pd.DataFrame) -> str:
    cols = [table.index.name or ""] + list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name, *row in table.itertuples():
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join([str(name)] + cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("preconditioning")
        return
    args.seeds = args.seeds or (2 if args.quick else 8)
    args.steps = args.steps or (300 if args.quick else 1000)
    rows = run(args)
    print(summarize(rows, args.quick))  # a summary on the console; the page is rendered from its template
    write_folder("preconditioning")


if __name__ == "__main__":
    main()
