"""Calibrate the weight-health warning: how often it warns when the ± is right, and stays silent when it is not.

Every forward and reverse AIS estimate reports its weights' effective sample size and PSIS k-hat, and warns
(``UntrustedStderrWarning``) when k-hat > 0.7 or the ESS is below max(4, runs / 8)
(``bdmc.contracts.weight_health``). On
models with an exact log p(y), over many seeds, chain lengths T from too short to ample and 16 or 64 runs, each
row stores one estimate with its error, ESS and k-hat. The page chooses a rule among candidates on the even seeds
and scores it on the odd ones (``benchmarks/pages/weight_health/values.py``):

- false warnings: the share of estimates within one stderr of the truth that warn;
- misses: the share of estimates one nat or more from the truth that stay silent;
- and, beside them, how often the estimate is within 3 stderr, warned or not.

    python benchmarks/weight_health.py            # 40 seeds per cell (about 10 minutes on 2 cores)
    python benchmarks/weight_health.py --quick    # 8 seeds

Rows go to ``benchmarks/results/weight_health/rows.jsonl`` (``quick/`` for ``--quick``), resumable; the page is
printed, and ``README.md`` is rendered from its template with the numbers that
``benchmarks/pages/weight_health/values.py`` computes from the rows (``tests/test_results_pages.py`` checks it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax

import bdmc
from bdmc.errors import OptionError, RunHealthWarning
from bdmc.experiments.store import settings_diff
from bdmc.files import to_jsonable
from bdmc.kernels import HMC
from bdmc.models import GaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import folder_values, render, templates, write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp, write_text  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).parent / "results" / "weight_health"


def problems():
    gm = GaussianMean(n=20, dim=5)
    lr = LinearRegression()
    return {"gaussian-mean (HMC)": (gm, HMC(gm, step_size=0.1, num_integration_steps=5),
                                    lambda d: float(gm.exact_log_marginal(d))),
            "linear-regression (HMC)": (lr, HMC(lr, step_size=0.05, num_integration_steps=10),
                                        lambda d: float(lr.exact_log_marginal(d)))}


def run(args) -> None:
    out = OUT / ("quick" if args.quick else "")
    settings = {"steps": args.steps, "runs": args.runs}
    rows_path, settings_path = out / "rows.jsonl", out / "settings.json"
    saved = json.loads(settings_path.read_text())["settings"] if settings_path.exists() else settings
    diffs = settings_diff(saved, settings, ("steps", "runs"))
    if diffs:  # the rows of another run's settings are not resumed
        raise OptionError(f"{out} holds a run with other settings ({'; '.join(diffs)}); delete its rows.jsonl and "
                          "settings.json to start again")
    done = {(r["problem"], r["direction"], r["num_steps"], r["num_runs"], r["seed"]) for r in load_rows(rows_path)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for seed in range(args.seeds):
        for name, (model, kernel, exact) in problems().items():
            data, latent = bdmc.simulate(jax.random.key(10_000 + seed), model)
            truth = exact(data)
            for T in args.steps:
                for runs in args.runs:
                    for direction in ("forward", "reverse"):
                        if (name, direction, T, runs, seed) in done:
                            continue
                        key = jax.random.key(seed)
                        common = dict(num_steps=T, num_runs=runs, kernel=kernel, tune="off", progress=False)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RunHealthWarning)
                            est = (bdmc.forward_ais(key, model, data, **common) if direction == "forward" else
                                   bdmc.reverse_ais(key, model, data, exact_latent=latent, **common))
                        error = est.value - truth
                        row = {"problem": name, "direction": direction, "num_steps": T, "num_runs": runs,
                               "seed": seed, "exact": truth, "value": est.value, "stderr": est.stderr,
                               "error": error, "weight_ess": est.weight_ess, "khat": est.khat,
                               "warned": est.stderr_warning is not None, **stamp(), "commit": commit,
                               "time": datetime.datetime.now().isoformat(timespec="seconds"),
                               "load": os.getloadavg()[0]}
                        append_row(rows_path, to_jsonable(row))
                        write_text(settings_path, json.dumps({"settings": settings}, indent=2) + "\n")
        print(f"seed {seed} done", flush=True)


def summary(folder: Path) -> str:
    """The page as ``benchmarks/pages/weight_health/`` renders it from the rows in ``folder`` (a ``--quick`` run's
    folder too, whose page is printed, not stored)."""
    template = templates("weight_health")[Path("README.md")]
    return render(template, folder_values("weight_health", folder))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("weight_health")
        return
    args.seeds = args.seeds or (8 if args.quick else 40)
    args.steps, args.runs = [10, 30, 100, 300], [16, 64]
    run(args)
    print(summary(OUT / ("quick" if args.quick else "")))  # the page, rendered from the rows just written
    write_folder("weight_health")


if __name__ == "__main__":
    main()
