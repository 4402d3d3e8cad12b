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

Rows go to ``benchmarks/results/weight_health/rows.jsonl`` (``quick/`` for ``--quick``), resumable; the tables are
printed, and the page ``README.md`` is rendered from its template with the numbers that
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
import numpy as np
import pandas as pd

import bdmc
from bdmc.contracts.weight_health import untrusted
from bdmc.errors import OptionError, RunHealthWarning
from bdmc.experiments.store import settings_diff
from bdmc.files import to_jsonable
from bdmc.kernels import HMC
from bdmc.models import GaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
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


def run(args) -> pd.DataFrame:
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
    return pd.DataFrame(load_rows(rows_path))


# Short names of the second table's rules (benchmarks/pages/weight_health/values.py names its values with them).
RULE_NAMES = {"k-hat > 0.7 or ESS < max(4, n / 8) (the rule)": "rule", "k-hat > 0.7 or ESS < 4": "k7e4",
              "k-hat > 0.5 or ESS < 4": "k5e4", "k-hat > 0.7 only": "k7", "ESS < 4 only": "e4",
              "ESS < n / 8 only": "e8", "k-hat > 0.7 or ESS < n / 6": "k7e6"}


def q(name: str, text) -> str:
    """The text of a number the page quotes (``name``: its value in benchmarks/pages/weight_health/values.py)."""
    return str(text)


def summarize(rows: pd.DataFrame, quick: bool) -> str:
    rows = rows.assign(z=np.abs(rows["error"]) / rows["stderr"], off=np.abs(rows["error"]) >= 1.0)
    # The warning by today's rule, from the stored ESS and k-hat (rows keep what their run saw).
    rows["warned"] = [untrusted(float(e), float(k) if k is not None else float("nan"), int(n)) is not None
                      for e, k, n in zip(rows["weight_ess"], rows["khat"], rows["num_runs"], strict=False)]
    rows["within"] = rows["z"] <= 1.0

    def cell(g, prefix):
        within, off = g[g["within"]], g[g["off"]]
        return pd.Series({
            "estimates": q(f"{prefix}_estimates", len(g)),
            "within 1 stderr": q(f"{prefix}_within", len(within)),
            "false warnings": q(f"{prefix}_fw", f"{within['warned'].mean():.2f}" if len(within) else "-"),
            "1 nat or more off": q(f"{prefix}_off", len(off)),
            "misses": q(f"{prefix}_miss", f"{(~off['warned']).mean():.2f}" if len(off) else "-"),
            "within 3 stderr (silent)": q(f"{prefix}_z3s", f"{(g[~g['warned']]['z'] <= 3).mean():.2f}"
                                          if (~g["warned"]).any() else "-"),
            "within 3 stderr (warned)": q(f"{prefix}_z3w", f"{(g[g['warned']]['z'] <= 3).mean():.2f}"
                                          if g["warned"].any() else "-"),
        })

    by_runs = pd.DataFrame({(n, d): cell(g, f"r{n}{d[0]}") for (n, d), g in rows.groupby(["num_runs", "direction"])}).T
    by_runs.index.names = ["num_runs", "direction"]
    overall = cell(rows, "all")
    seeds = q("seeds", rows["seed"].nunique())
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
    total = (f"\n\nAll cells: {overall['estimates']} estimates; false warnings {overall['false warnings']} of "
             f"{overall['within 1 stderr']} within one stderr; misses {overall['misses']} of "
             f"{overall['1 nat or more off']} one nat or more off.\n")
    return head + text + table + total + "\n" + _rules(rows, q)


def _rules(rows: pd.DataFrame, q) -> str:
    """The same two rates for other thresholds, computed from the stored ESS and k-hat (64 runs, where k-hat exists)."""
    rows = rows[rows["num_runs"] >= 25]
    (runs,) = rows["num_runs"].unique()  # the markers name the one such cell size (64)
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
            rule, d, cell = RULE_NAMES[name], direction[0], f"r{runs}{direction[0]}"
            lines.append(f"| {name} | {direction} | {q(f'{rule}_{d}_fw', f'{fw:.2f}')} "
                         f"({q(f'{cell}_within', int(within.sum()))}) | {q(f'{rule}_{d}_miss', f'{miss:.2f}')} "
                         f"({q(f'{cell}_off', int(off.sum()))}) |")
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
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("weight_health")
        return
    args.seeds = args.seeds or (8 if args.quick else 40)
    args.steps, args.runs = [10, 30, 100, 300], [16, 64]
    rows = run(args)
    print(summarize(rows, args.quick))  # a summary on the console; the page is rendered from its template
    write_folder("weight_health")


if __name__ == "__main__":
    main()
