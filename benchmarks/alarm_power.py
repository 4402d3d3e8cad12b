"""How large a simulator bug the BDMC bug alarm catches: its firing rate against the size of a variance error.

The bug is a simulator whose Gaussian draws have the wrong variance (the data and the exact latent), while the
model's density is right, so the "exact" posterior sample is not one. (BREAD's WebPPL bug, paper Sec. 5.2.2, was
another simulator bug: a multivariate-normal sampler with transposed eigenvectors; ``check_power.py`` and
``bug_corpus/`` have it.) Here every Gaussian draw of the simulator has its variance multiplied by
``factor``; data and latent come from the buggy simulator, and the sandwich (forward and reverse AIS at
T = 10, 100, 1000) is computed with the correct model. Reverse AIS then starts from the wrong distribution,
and the alarm can fire only if that costs more nats than chance allows: the crossing is at most about
KL(wrong || posterior), which is tiny for a 10% error on these data sets.

    python benchmarks/alarm_power.py                       # all models, factors 1.1, 1.5, 2, 4, 5 seeds
    python benchmarks/alarm_power.py --models linear-regression --seeds 20
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

import jax

import bdmc
from bdmc.models import REGISTRY, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

# Every Gaussian variance of each model's simulator.
VARIANCE_FIELDS = {"clustering": ("sigma_theta", "sigma_noise"), "low-rank": ("sigma_u", "sigma_v", "sigma_n"),
                   "binary": ("sigma_a", "sigma_n")}


class _BuggyLinearRegression(LinearRegression):
    """LinearRegression whose simulator draws every Gaussian with ``factor`` times the variance."""

    factor: float = 1.0

    def sample_prior(self, key):
        latent = super().sample_prior(key)
        return {**latent, "beta": latent["beta"] * math.sqrt(self.factor)}

    def sample_data(self, key, latent):
        inflated = {**latent, "log_s2": latent["log_s2"] + math.log(self.factor)}
        return super().sample_data(key, inflated)


def buggy_simulator(name: str, factor: float):
    """The model ``name`` with its simulator's Gaussian variances multiplied by ``factor``."""
    model = REGISTRY[name]()
    if name == "linear-regression":
        buggy = _BuggyLinearRegression(**dataclasses.asdict(model))
        object.__setattr__(buggy, "factor", factor)
        return model, buggy
    changes = {f: getattr(model, f) * math.sqrt(factor) for f in VARIANCE_FIELDS[name]}
    return model, dataclasses.replace(model, **changes)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="linear-regression,clustering,low-rank,binary")
    parser.add_argument("--factors", default="1.1,1.5,2,4")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", default="10,100,1000")
    parser.add_argument("--chains", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/alarm_power"))
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("alarm_power")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    rows = load_rows(rows_path)
    done = {(r["model"], r["factor"], r["seed"]) for r in rows}
    steps = [int(s) for s in args.steps.split(",")]
    for name in args.models.split(","):
        for factor in [float(f) for f in args.factors.split(",")]:
            model, buggy = buggy_simulator(name, factor)
            for seed in range(args.seeds):
                if (name, factor, seed) in done:
                    continue
                start = time.perf_counter()
                data, latent = bdmc.simulate(jax.random.key(seed), buggy)
                result = bdmc.sandwich(jax.random.key(10_000 + seed), model, data, latent, steps=steps,
                                       num_runs=args.chains, progress=False)
                table = result.table
                per_t = []
                for T, g in table.groupby("num_steps"):
                    value = dict(zip(g["direction"], g["value"], strict=False))
                    per_t.append({"T": int(T), "forward": value["forward"], "reverse": value["reverse"],
                                  "pair_p_bound": float(g["alarm_p"].min())})
                verdict = result.verdict  # today's alarm: every lower bound against every upper, pooled, at 1%
                row = {"model": name, "factor": factor, "seed": seed, "fired": verdict.fired,
                       "pooled_crossing": verdict.crossing, "p_bound": verdict.p_bound, "alpha": verdict.alpha,
                       "per_T": per_t, "chains": args.chains, "seconds": time.perf_counter() - start}
                append_row(rows_path, row)  # stamped with its provenance
                print(f"{name:18s} factor {factor:4.1f} seed {seed}: fired={row['fired']} "
                      f"pooled crossing {verdict.crossing:+.2f} nats ({row['seconds']:.0f} s)", flush=True)
    write_folder("alarm_power", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
