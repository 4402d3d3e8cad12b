"""The textbook regression bdmc used to refuse, run as a user writes it, against its exact evidence.

The NumPyro program ``beta ~ Normal(0, 10)`` (5 coefficients), ``sigma ~ HalfNormal(10)``,
``y ~ Normal(X beta, sigma)`` on the first 100 cases of NHEFS in natural units (sex, age in years, race,
smoking years, quitting; weight gain in kg). Before divergences were rejections, ``bdmc.forward_ais`` stopped
at step 1 on every seed (an HMC trajectory from a prior draw overflowed to NaN). Its exact log p(y) is one
quadrature: given sigma, ``y ~ N(0, sigma^2 I + 100 X X^T)``, integrated against the half-normal.

    python benchmarks/textbook_regression.py          # T = 1,000 and 10,000, 5 seeds, 32 runs

Writes ``benchmarks/results/textbook_regression/rows.jsonl`` (one row per setting and seed, resumable) and the
table to ``README.md`` beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc
from bdmc.datasets.loaders import load_nhefs
from bdmc.errors import OptionError
from bdmc.exact import regression_half_normal_scale_log_marginal
from bdmc.experiments.store import settings_diff
from bdmc.files import to_jsonable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp, write_text  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).parent / "results" / "textbook_regression"


def regression(X, y=None):
    import numpyro
    import numpyro.distributions as dist

    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("cases", X.shape[0]):
        numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


def problem(n: int = 100):
    data = load_nhefs(standardize=False)
    X, y = np.asarray(data.arrays["x"])[:n], np.asarray(data.arrays["y"])[:n]
    return X, y


def exact_log_evidence(X, y) -> float:
    return regression_half_normal_scale_log_marginal(y, X, prior_sd=10.0, sigma_scale=10.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="1000,10000")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("textbook_regression")
        return
    X, y = problem()
    truth = exact_log_evidence(X, y)
    model = bdmc.ppl.from_numpyro(regression, X=jnp.asarray(X), observed="y")
    data = {"y": jnp.asarray(y)}
    settings = {"num_runs": args.runs, "exact": truth}
    rows_path, settings_path = OUT / "rows.jsonl", OUT / "settings.json"
    saved = json.loads(settings_path.read_text())["settings"] if settings_path.exists() else settings
    diffs = settings_diff(saved, settings, ("num_runs",))
    if diffs:  # the rows of another run's settings are not resumed
        raise OptionError(f"{OUT} holds a run with other settings ({'; '.join(diffs)}); delete its rows.jsonl and "
                          "settings.json to start again")
    done = {(r["num_steps"], r["seed"], r["direction"]) for r in load_rows(rows_path)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"exact log p(y) = {truth:.4f}")
    for T in (int(t) for t in args.steps.split(",")):
        for seed in range(args.seeds):
            if (T, seed, "forward") in done:
                continue
            began = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=T, num_runs=args.runs,
                                       progress=False)
            row = {"num_steps": T, "seed": seed, "direction": "forward", "exact": truth, "value": est.value,
                   "stderr": est.stderr, "error": est.value - truth,
                   "within_3se": abs(est.value - truth) <= 3 * est.stderr, "divergences": est.divergences,
                   "divergence_rate": est.divergence_rate, "weight_ess": est.weight_ess, "khat": est.khat,
                   "warned": [str(w.message).split(":")[0] + ": " + type(w.message).__name__ for w in caught],
                   "acceptance": float(np.mean(est.details.info.acceptance)),
                   "preconditioner": est.settings.get("preconditioner"),
                   "seconds": time.perf_counter() - began, **stamp(), "commit": commit, "load": os.getloadavg()[0],
                   "time": datetime.datetime.now().isoformat(timespec="seconds")}
            append_row(rows_path, to_jsonable(row))
            write_text(settings_path, json.dumps({"settings": settings}, indent=2) + "\n")
            print(f"T={T:6d} seed {seed}: {est.value:10.4f} ± {est.stderr:.4f} (exact {truth:.4f}, error "
                  f"{row['error']:+.4f}), divergences {est.divergences} ({est.divergence_rate:.2%}), ESS "
                  f"{est.weight_ess:.1f}, k-hat {est.khat:.2f}, {row['seconds']:.1f} s", flush=True)
    rows = load_rows(rows_path)
    lines = [f"# The textbook regression: 5 coefficients, N(0, 10) priors, sigma ~ HalfNormal(10), NHEFS's first "
             f"100 cases in natural units ({args.runs} runs per estimate)", "",
             "Command: `python benchmarks/textbook_regression.py`. Before divergences became rejections every "
             "seed stopped at step 1 with NonFiniteLogDensityError (NaN at a rejected HMC proposal). Exact log p(y) "
             f"by quadrature over sigma: {truth:.4f}. Forward AIS with the defaults (pilot-tuned, preconditioned "
             "HMC); one row per seed.", "",
             "| T | seed | estimate ± stderr | error | within 3 stderr | divergences | weight ESS | k-hat | seconds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['num_steps']:,} | {r['seed']} | {r['value']:.3f} ± {r['stderr']:.3f} | "
                     f"{r['error']:+.3f} | {'yes' if r['within_3se'] else 'no'} | {r['divergences']} "
                     f"({r['divergence_rate']:.2%}) | {r['weight_ess']:.1f} | {r['khat']:.2f} | {r['seconds']:.1f} |")
    print("\n".join(lines))  # a summary on the console; the page is rendered from its template
    write_folder("textbook_regression")


if __name__ == "__main__":
    main()
