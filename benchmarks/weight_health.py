"""Calibrate the weight-health warning: how often it warns when the ± is right, and stays silent when it is not.

Every forward and reverse AIS estimate reports its weights' effective sample size and PSIS k-hat, and warns
(``UntrustedStderrWarning``) when k-hat > 0.7 or the ESS is below max(4, runs / 8)
(``bdmc.contracts.weight_health``). On
models with an exact log p(y), over many seeds, chain lengths T from too short to ample and 16 or 64 runs:

- false warnings: the share of estimates within one stderr of the truth that warn;
- misses: the share of estimates one nat or more from the truth that stay silent;
- and, beside them, how often the estimate is within 2 and 3 stderr, warned or not.

    python benchmarks/weight_health.py            # 40 seeds per cell (about 10 minutes on 2 cores)
    python benchmarks/weight_health.py --quick    # 8 seeds

Rows go to ``benchmarks/results/weight_health/rows.jsonl`` (``quick/`` for ``--quick``), resumable; the table
to ``README.md`` beside them.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pandas as pd

import bdmc
from bdmc.contracts.weight_health import untrusted
from bdmc.errors import RunHealthWarning
from bdmc.experiments.store import RunStore
from bdmc.kernels import HMC
from bdmc.models import GaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import stamp  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).parent / "results" / "weight_health"


def problems():
    gm = GaussianMean(n=20, dim=5)
    lr = LinearRegression()
    return {"gaussian-mean (HMC)": (gm, HMC(gm, step_size=0.1, num_integration_steps=5),
                                    lambda d: float(gm.exact_log_marginal(d))),
            "linear-regression (HMC)": (lr, HMC(lr, step_size=0.05, num_integration_steps=10),
                                        lambda d: float(lr.exact_log_marginal(d)))}


def run(args) -> pd.DataFrame:
    out = OUT / ("quick" if args.quick else "")
    store = RunStore(out, jsonl_name="rows.jsonl", key=("problem", "direction", "num_steps", "num_runs", "seed"),
                     settings={"steps": args.steps, "runs": args.runs}, compare=("steps", "runs"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for seed in range(args.seeds):
        for name, (model, kernel, exact) in problems().items():
            data, latent = bdmc.simulate(jax.random.key(10_000 + seed), model)
            truth = exact(data)
            for T in args.steps:
                for runs in args.runs:
                    for direction in ("forward", "reverse"):
                        if store.has((name, direction, T, runs, seed)):
                            continue
                        key = jax.random.key(seed)
                        common = dict(num_steps=T, num_runs=runs, kernel=kernel, tune="off", progress=False)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RunHealthWarning)
                            est = (bdmc.forward_ais(key, model, data, **common) if direction == "forward" else
                                   bdmc.reverse_ais(key, model, data, exact_latent=latent, **common))
                        error = est.value - truth
                        store.append({"problem": name, "direction": direction, "num_steps": T, "num_runs": runs,
                                      "seed": seed, "exact": truth, "value": est.value, "stderr": est.stderr,
                                      "error": error, "weight_ess": est.weight_ess, "khat": est.khat,
                                      "warned": est.stderr_warning is not None, **stamp(), "commit": commit,
                                      "time": datetime.datetime.now().isoformat(timespec="seconds"),
                                      "load": os.getloadavg()[0]})
        print(f"seed {seed} done", flush=True)
    return pd.DataFrame(store.rows)


def summarize(rows: pd.DataFrame, quick: bool) -> str:
    rows = rows.assign(z=np.abs(rows["error"]) / rows["stderr"], off=np.abs(rows["error"]) >= 1.0)
    # The warning by today's rule, from the stored ESS and k-hat (rows keep what their run saw).
    rows["warned"] = [untrusted(float(e), float(k) if k is not None else float("nan"), int(n)) is not None
                      for e, k, n in zip(rows["weight_ess"], rows["khat"], rows["num_runs"])]
    rows["within"] = rows["z"] <= 1.0

    def cell(g):
        within, off = g[g["within"]], g[g["off"]]
        return pd.Series({
            "estimates": len(g),
            "within 1 stderr": len(within),
            "false warnings": f"{within['warned'].mean():.2f}" if len(within) else "-",
            "1 nat or more off": len(off),
            "misses": f"{(~off['warned']).mean():.2f}" if len(off) else "-",
            "within 3 stderr (silent)": f"{(g[~g['warned']]['z'] <= 3).mean():.2f}" if (~g["warned"]).any() else "-",
            "within 3 stderr (warned)": f"{(g[g['warned']]['z'] <= 3).mean():.2f}" if g["warned"].any() else "-",
        })

    by_runs = rows.groupby(["num_runs", "direction"]).apply(cell, include_groups=False)
    overall = cell(rows)
    seeds = rows["seed"].nunique()
    steps = ", ".join(str(t) for t in sorted(rows["num_steps"].unique()))
    head = (f"# Weight health: the ± warning calibrated on exact models ({seeds} seeds per cell"
            f"{', quick settings' if quick else ''}; T = {steps})\n\n")
    text = ("Command: `python benchmarks/weight_health.py" + (" --quick" if quick else "") + "`. Forward and "
            "reverse AIS (HMC, fixed step sizes, no pilot) on the Gaussian-mean model (5 dimensions, 20 cases) and "
            "the paper's linear regression, each seed its own simulated data set. An estimate *warns* when its "
            "weights' k-hat exceeds 0.7 or their ESS is below 4 or an eighth of the runs, whichever is larger "
            "(the rule chosen from the second table). *False "
            "warnings*: the share of estimates within one stderr of the exact log p(y) that warn. *Misses*: the "
            "share of estimates one nat or more off that stay silent. Rows: `rows.jsonl`.\n\n")
    table = _markdown(by_runs.reset_index())
    total = (f"\n\nAll cells: {int(overall['estimates'])} estimates; false warnings {overall['false warnings']} of "
             f"{int(overall['within 1 stderr'])} within one stderr; misses {overall['misses']} of "
             f"{int(overall['1 nat or more off'])} one nat or more off.\n")
    return head + text + table + total + "\n" + _rules(rows)


def _rules(rows: pd.DataFrame) -> str:
    """The same two rates for other thresholds, computed from the stored ESS and k-hat (64 runs, where k-hat exists)."""
    rows = rows[rows["num_runs"] >= 25]
    khat = rows["khat"].astype(float).fillna(-np.inf)
    ess, n = rows["weight_ess"].astype(float), rows["num_runs"]
    rules = {"k-hat > 0.7 or ESS < max(4, n / 8) (the rule)": (khat > 0.7) | (ess < np.maximum(4, n / 8)),
             "k-hat > 0.7 or ESS < 4": (khat > 0.7) | (ess < 4),
             "k-hat > 0.5 or ESS < 4": (khat > 0.5) | (ess < 4),
             "k-hat > 0.7 only": khat > 0.7,
             "ESS < 4 only": ess < 4,
             "ESS < n / 8 only": ess < n / 8,
             "k-hat > 0.7 or ESS < n / 6": (khat > 0.7) | (ess < n / 6)}
    lines = ["Other thresholds on the same estimates (64 runs, so k-hat is estimated):", "",
             "| rule | direction | false warnings | misses |", "|---|---|---|---|"]
    for name, warned in rules.items():
        for direction in ("forward", "reverse"):
            pick = rows["direction"] == direction
            within, off = pick & rows["within"], pick & rows["off"]
            fw = warned[within].mean() if within.any() else float("nan")
            miss = (~warned[off]).mean() if off.any() else float("nan")
            lines.append(f"| {name} | {direction} | {fw:.2f} ({int(within.sum())}) | {miss:.2f} ({int(off.sum())}) |")
    return "\n".join(lines) + "\n"


def _markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    args.seeds = args.seeds or (8 if args.quick else 40)
    args.steps, args.runs = [10, 30, 100, 300], [16, 64]
    rows = run(args)
    page = summarize(rows, args.quick)
    (OUT / ("quick" if args.quick else "") / "README.md").write_text(page)
    print(page)


if __name__ == "__main__":
    main()
