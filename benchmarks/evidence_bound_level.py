"""Certified bounds from independent runs (``bdmc.intervals.bounds``): their measured level and width.

On two built-in models with closed-form evidence, ``GaussianMean()`` and ``LinearRegression()`` (their default,
natural settings: 20 cases each), one simulated data set per model. Per model and chain length T (10 and 100,
short enough that single runs spread: by about 5 nats at T = 10, 1 nat at T = 100), three calls, each of
``32 * seeds`` runs split into ``seeds`` groups of 32 (the first 16 of a group give the n = 16 bounds):

- ``bdmc.forward_ais``: ``log Z_i``, for the lower rules (min-of-runs, the k-th smallest run for k = n/8 and n/4,
  and Markov, the level split equally over them, the tightest taken: ``bdmc.intervals.bounds.certified_lower``);
- ``bdmc.reverse_ais`` with ``exact_latent`` a batch of independent exact posterior draws, one per run (drawn
  in closed form: the conjugate posteriors below): ``log U_i``, for the upper rules (their mirror images, the
  level split the same way: ``certified_upper(..., independent=True)``);
- ``bdmc.reverse_ais`` with one exact posterior draw per group, shared by its runs (what a simulated data set's
  one exact latent gives): only Markov holds, at the whole level (``certified_upper(..., independent=False)``).
  Max-of-runs on these runs, as if they were independent, is recorded as a contrast.

Per (model, T, n, a) one row: for each side and rule, how many groups' bounds fall on the wrong side of the exact
``log p(y)`` (the measured level, at most a up to binomial noise for a rule that holds) and the distribution of
the slack (distance of the bound to the exact value, positive on the bound's side): the width of each rule.

    python benchmarks/evidence_bound_level.py --seeds 4000
    python benchmarks/evidence_bound_level.py --render
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np
from scipy.special import gammaln

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows  # noqa: E402

import bdmc  # noqa: E402
from bdmc.errors import RunError  # noqa: E402
from bdmc.intervals.bounds import certified_lower, certified_upper  # noqa: E402

bdmc.enable_x64()

NAME = "evidence_bound_level"
OUT = HERE / "results" / NAME
MODELS = {"Gaussian mean": bdmc.models.GaussianMean, "linear regression": bdmc.models.LinearRegression}
STEPS, RUNS, LEVELS = (10, 100), (16, 32), (0.01, 0.05)
DATA_SEED = 0
LOG_2PI = float(np.log(2 * np.pi))


# ------------------------------------------------------------------------------ exact posteriors, closed form


class GaussianMeanPosterior:
    """``mu | y ~ N(m, I / precision)``: precision ``1/prior_std^2 + n/noise_std^2``."""

    def __init__(self, model, data):
        y = np.asarray(data, dtype=np.float64)
        self.precision = 1 / model.prior_std**2 + model.n / model.noise_std**2
        self.mean = (model.prior_mean / model.prior_std**2 + y.sum(0) / model.noise_std**2) / self.precision
        self.dim = model.dim

    def draw(self, rng, size: int) -> dict:
        return {"mu": self.mean + rng.standard_normal((size, self.dim)) / np.sqrt(self.precision)}

    def log_density(self, latent) -> float:
        z = np.asarray(latent["mu"]) - self.mean
        return float(np.sum(-0.5 * self.precision * z**2 + 0.5 * np.log(self.precision) - 0.5 * LOG_2PI))


class LinearRegressionPosterior:
    """Normal-inverse-gamma: ``s2 | y ~ IG(h0 + n/2, k0 + (y'y - m'Am)/2)``, ``beta | s2, y ~ N(m, s2 A^-1)``
    with ``A = X'X + I/tau``, ``m = A^-1 X'y``; the latent holds ``log s2`` (Jacobian ``s2``)."""

    def __init__(self, model, data):
        X, y = np.asarray(model.design), np.asarray(data, dtype=np.float64)
        self.A = X.T @ X + np.eye(model.p) / model.tau
        self.m = np.linalg.solve(self.A, X.T @ y)
        self.shape = model.h0 + 0.5 * model.n
        self.scale = model.k0 + 0.5 * (y @ y - self.m @ self.A @ self.m)
        self.chol_cov = np.linalg.cholesky(np.linalg.inv(self.A))
        self.p = model.p

    def draw(self, rng, size: int) -> dict:
        s2 = self.scale / rng.gamma(self.shape, size=size)
        beta = self.m + np.sqrt(s2)[:, None] * (rng.standard_normal((size, self.p)) @ self.chol_cov.T)
        return {"beta": beta, "log_s2": np.log(s2)}

    def log_density(self, latent) -> float:
        ls2, beta = float(latent["log_s2"]), np.asarray(latent["beta"])
        log_ig = self.shape * np.log(self.scale) - gammaln(self.shape) - self.shape * ls2 - self.scale * np.exp(-ls2)
        r = beta - self.m
        log_beta = (-0.5 * np.exp(-ls2) * r @ self.A @ r - 0.5 * self.p * ls2
                    + 0.5 * np.linalg.slogdet(self.A)[1] - 0.5 * self.p * LOG_2PI)
        return float(log_ig + log_beta)


POSTERIORS = {"Gaussian mean": GaussianMeanPosterior, "linear regression": LinearRegressionPosterior}


def check_posterior(model, data, posterior, exact: float, rng) -> float:
    """Bayes' rule at a few posterior draws, ``log p(theta) + log p(y | theta) - log p(theta | y) = log p(y)``:
    the largest error, which must be round-off (the closed-form posterior is the model's own)."""
    draws = posterior.draw(rng, 5)
    errors = []
    for i in range(5):
        latent = jax.tree.map(lambda x, i=i: x[i], draws)
        joint = float(model.log_prior(latent)) + float(np.sum(model.log_likelihood(latent, data)))
        errors.append(abs(joint - posterior.log_density(latent) - exact))
    worst = max(errors)
    if worst > 1e-8:
        raise RunError(f"the closed-form posterior of {type(model).__name__} disagrees with Bayes' rule by {worst}")
    return worst


# ------------------------------------------------------------------------------------------------- the runs


def quiet(fn, *args, **kwargs):
    """A run without its run-health warnings: short chains warn by design here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def slack_summary(slack: np.ndarray) -> dict:
    """How far bounds sit from the exact value, positive on their side (a failure is a negative slack)."""
    return {"failures": int(np.sum(slack < 0)), "mean": float(np.mean(slack)), "median": float(np.median(slack)),
            "sd": float(np.std(slack, ddof=1)), "min": float(np.min(slack))}


def cells(lower_runs, upper_runs, shared_runs, exact: float, level: float) -> dict:
    """Every rule's bounds over the groups (one row of runs each), summarized against the exact value."""
    lower = [certified_lower(r, level=level) for r in lower_runs]
    upper = [certified_upper(r, level=level, independent=True) for r in upper_runs]
    shared = [certified_upper(r, level=level, independent=False) for r in shared_runs]
    assumed = [certified_upper(r, level=level, independent=True) for r in shared_runs]  # not valid: a contrast
    out = {}
    for side, bounds, sign in (("lower", lower, -1.0), ("upper", upper, 1.0), ("upper, shared start", shared, 1.0)):
        failures = sum(not b.holds(exact) for b in bounds)
        cell = {"taken": slack_summary(sign * (np.array([b.value for b in bounds]) - exact)),
                "chosen": {rule: sum(b.rule == rule for b in bounds) for rule in bounds[0].candidates}}
        if cell["taken"]["failures"] != failures:
            raise RunError(f"{side}: holds() and the slack disagree ({failures} vs {cell['taken']['failures']})")
        for rule in bounds[0].candidates:
            cell[rule] = slack_summary(sign * (np.array([b.candidates[rule] for b in bounds]) - exact))
        out[side] = cell
    out["upper, shared start"]["max-of-runs, as if independent"] = slack_summary(
        np.array([b.candidates["max-of-runs"] for b in assumed]) - exact)
    return out


def spread(runs: np.ndarray, exact: float) -> dict:
    d = runs - exact
    return {"mean": float(d.mean()), "sd": float(d.std(ddof=1)), "min": float(d.min()), "max": float(d.max())}


def run_model(path: Path, name: str, steps: int, seeds: int, done: set) -> None:
    if all((name, steps, n, a, seeds) in done for n in RUNS for a in LEVELS):
        return
    model = MODELS[name]()
    key = jax.random.fold_in(jax.random.key(DATA_SEED), steps)
    data, _ = bdmc.simulate(jax.random.key(DATA_SEED), model)  # the same data set at every T
    exact = float(model.exact_log_marginal(data))
    posterior = POSTERIORS[name](model, data)
    rng = np.random.default_rng([DATA_SEED, steps])
    bayes_error = check_posterior(model, data, posterior, exact, rng)
    total = max(RUNS) * seeds
    own = posterior.draw(rng, total)
    one = jax.tree.map(lambda x: np.repeat(x, max(RUNS), axis=0), posterior.draw(rng, seeds))
    load, began = os.getloadavg()[0], time.perf_counter()
    options = dict(num_steps=steps, num_runs=total, progress=False)
    forward = quiet(bdmc.forward_ais, jax.random.fold_in(key, 1), model, data, **options)
    reverse = quiet(bdmc.reverse_ais, jax.random.fold_in(key, 2), model, data, exact_latent=own, **options)
    shared = quiet(bdmc.reverse_ais, jax.random.fold_in(key, 3), model, data, exact_latent=one, **options)
    seconds = time.perf_counter() - began
    groups = [e.runs.reshape(seeds, max(RUNS)) for e in (forward, reverse, shared)]
    for n in RUNS:
        for a in LEVELS:
            if (name, steps, n, a, seeds) in done:
                continue
            row = {"model": name, "model_repr": repr(model), "num_steps": steps, "num_runs": n, "level": a,
                   "seeds": seeds, "exact": exact, "data_seed": DATA_SEED, "kernel": forward.settings["kernel"],
                   "posterior_check": bayes_error,
                   "run_spread": {"forward": spread(groups[0][:, :n], exact),
                                  "reverse": spread(groups[1][:, :n], exact),
                                  "reverse, shared start": spread(groups[2][:, :n], exact)},
                   "cells": cells(*(g[:, :n] for g in groups), exact, a),
                   "run_seconds": seconds, "load_before": load, "load_after": os.getloadavg()[0]}
            append_row(path, row)
            c = row["cells"]
            print(f"{name:18s} T={steps:3d} n={n} a={a}: lower fails {c['lower']['taken']['failures']}, upper "
                  f"{c['upper']['taken']['failures']}, shared {c['upper, shared start']['taken']['failures']} of "
                  f"{seeds}; mean slack {c['lower']['taken']['mean']:.2f} / {c['upper']['taken']['mean']:.2f} / "
                  f"{c['upper, shared start']['taken']['mean']:.2f} nats  ({seconds:.1f}s of runs)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=4000, help="groups of 32 runs per model and T")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder(NAME)
        return
    path = args.out / "rows.jsonl"
    done = {(r["model"], r["num_steps"], r["num_runs"], r["level"], r["seeds"]) for r in load_rows(path)}
    for name in MODELS:
        for steps in STEPS:
            run_model(path, name, steps, args.seeds, done)
    write_folder(NAME, written_to=args.out)  # a trial --out elsewhere renders no page
    if (args.out / "README.md").exists():
        print((args.out / "README.md").read_text())


if __name__ == "__main__":
    main()
