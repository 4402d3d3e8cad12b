"""Which check of ``bdmc.audit`` catches which bug: the whole audit run on deliberate bugs and on correct models.

Extends ``check_power.py`` (each check on its own) to the audit as a user runs it: one call of
:func:`bdmc.auditing.audit` per (bug, seed), every check at its share of the audit's level (0.01, Bonferroni
over the statistical checks), each bug built as a subclass or wrapper here (never a flag in the library); the
bug classes of ``check_power.py`` are imported from it.

- **kernel**: the Gibbs conditional of beta given s2 with 10% too much covariance (``WideKernelLR``), given
  to the audit as the sampler (so it is also the AIS transition).
- **simulator**: every Gaussian draw of linear regression's simulator with 1.1 times its variance
  (``ScaledLR``); the multivariate-normal prior sampler with transposed eigenvectors (``TransposedCG``, the
  WebPPL bug of BREAD Sec. 5.2.2). The density and the model's own Gibbs kernel are right.
- **density**: +0.5 nats per case in the log-likelihood (``OffsetLR``); the log-likelihood's noise variance
  10% too large (``NoiseLR``). Both wrapped so they have no conditionals (``NoConditionals``), as a program
  in a PPL has none: the audit then runs the forward-simulation simulator check. The sampler is bdmc's MALA
  with the audit's pilot step (bdmc's NUTS, the default, cost 100-120 s an audit here, mostly Geweke's
  10,000 NUTS chains).
- **NUTS**: bdmc's NUTS with 10 times the step size the audit's pilot picks; NumPyro's NUTS with 2 warm-up
  (adaptation) transitions instead of the budget's.
- **correct** models (the audit's false-alarm rate): linear regression with its Gibbs kernel, the correlated
  Gaussian with its Gibbs kernel, linear regression without conditionals under MALA, and under NumPyro's NUTS
  with the budget's warm-up.

The NUTS rows (and the NumPyro control) run at most ``--nuts-seeds`` seeds and last: they cost the most.

Each finished audit appends one JSON row to ``rows.jsonl`` (every check's verdict, statistic, level and
numbers); a rerun skips the (bug, seed) pairs already there.

    python benchmarks/audit_power.py                       # everything (resumes)
    python benchmarks/audit_power.py --only correct --seeds 1 --time-one   # one audit's cost
    python benchmarks/audit_power.py --render     # re-render the pages from rows.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_power import MODELS, NoiseLR, OffsetLR, ScaledLR, TransposedCG, WideKernelLR  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, write_text  # noqa: E402

import bdmc  # noqa: E402
from bdmc.auditing import Budget, audit, resolve_sampler  # noqa: E402
from bdmc.auditing.run import ADAPTIVE_THIN  # noqa: E402
from bdmc.checks.samplers import NumPyroNUTS  # noqa: E402
from bdmc.kernels import NUTS  # noqa: E402

bdmc.enable_x64()

LEVEL = 0.01
OUT = Path(__file__).resolve().parent / "results" / "audit"
# Affordable on the shared 2-core machine (about 20-60 s an audit, compilation included), with power where the
# checks have it: Geweke at 10,000 chains (check_power.py's setting), SBC at 100 data sets of 49 draws. The
# SBC thinning of a fixed kernel comes from the audit's pilot (sbc_thin=None); NumPyro's NUTS keeps
# ADAPTIVE_THIN. Rows written before the pilot existed (the Gibbs rows' seeds 0-4) ran at thin 2.
BUDGET = Budget(triples=16, simulator_latents=32, simulator_data=32, simulator_prior=1000,
                sbc_replications=100, sbc_draws=49, sbc_warmup=100, sbc_thin=None,
                geweke_samples=10_000, geweke_steps=10, sandwich_steps=(10, 100), sandwich_runs=16,
                evidence_steps=100, evidence_runs=16, evidence_draws=0)
STEP_FACTOR = 10.0  # the too-large NUTS step: this times the pilot's
FEW_WARMUP = 2  # NumPyro's NUTS adaptation transitions of the warm-up bug


@dataclasses.dataclass(frozen=True)
class NoConditionals:
    """A model seen through the four methods of the Model contract only (no conditionals, no kernel of its own),
    as a program in a PPL is: the audit runs the forward-simulation simulator check and bdmc's NUTS."""

    base: Any

    def sample_prior(self, key):
        return self.base.sample_prior(key)

    def sample_data(self, key, latent):
        return self.base.sample_data(key, latent)

    def log_prior(self, latent):
        return self.base.log_prior(latent)

    def log_likelihood(self, latent, data):
        return self.base.log_likelihood(latent, data)


LR, CG = MODELS["linear-regression"], MODELS["correlated-gaussian"]
LR_FIELDS, CG_FIELDS = dataclasses.asdict(LR), dataclasses.asdict(CG)

# name -> (kind, model name, what the audit is given)
BUGS = {
    "correct (LR, Gibbs)": ("correct", "linear-regression", "its Gibbs kernel"),
    "correct (CG, Gibbs)": ("correct", "correlated-gaussian", "its Gibbs kernel"),
    "correct (LR, no conditionals, MALA)": ("correct", "linear-regression", "MALA (pilot step)"),
    "correct (LR, NumPyro NUTS)": ("correct", "linear-regression", f"NumPyro's NUTS, {BUDGET.sbc_warmup} warm-up"),
    "kernel conditional variance +10%": ("kernel", "linear-regression", "the wide Gibbs kernel"),
    "simulator variance x1.1": ("simulator", "linear-regression", "its Gibbs kernel"),
    "MVN sampler with transposed eigenvectors": ("simulator", "correlated-gaussian", "its Gibbs kernel"),
    "log-likelihood constant +0.5 per case": ("density", "linear-regression", "MALA (pilot step)"),
    "log-likelihood noise variance x1.1 (density only)": ("density", "linear-regression",
                                                          "MALA (pilot step)"),
    f"NUTS step size x{STEP_FACTOR:g}": ("NUTS", "linear-regression", f"bdmc's NUTS, {STEP_FACTOR:g} x pilot step"),
    f"NUTS with {FEW_WARMUP} warm-up steps": ("NUTS", "linear-regression", f"NumPyro's NUTS, {FEW_WARMUP} warm-up"),
}
CHECKS = ("simulator-density", "sbc", "geweke", "bdmc")


@functools.cache
def model_of(bug: str):
    """The model under audit (cached: one instance per bug, so compiled programs are reused across seeds)."""
    return {
        "correct (LR, Gibbs)": LR,
        "correct (CG, Gibbs)": CG,
        "correct (LR, no conditionals, MALA)": NoConditionals(LR),
        "correct (LR, NumPyro NUTS)": LR,
        "kernel conditional variance +10%": LR,
        "simulator variance x1.1": ScaledLR(**LR_FIELDS, factor=1.1),
        "MVN sampler with transposed eigenvectors": TransposedCG(**CG_FIELDS),
        "log-likelihood constant +0.5 per case": NoConditionals(OffsetLR(**LR_FIELDS)),
        "log-likelihood noise variance x1.1 (density only)": NoConditionals(NoiseLR(**LR_FIELDS)),
        f"NUTS step size x{STEP_FACTOR:g}": NoConditionals(LR),
        f"NUTS with {FEW_WARMUP} warm-up steps": LR,
    }[bug]


@functools.cache
def wide_kernel():
    return WideKernelLR(**LR_FIELDS).default_kernel()


@functools.cache
def numpyro_nuts(bug: str):
    # One object per bug: NumPyroNUTS compares by identity, so a new one per seed would recompile SBC.
    return NumPyroNUTS(model_of(bug), num_warmup=FEW_WARMUP if bug.startswith("NUTS with") else BUDGET.sbc_warmup,
                       thin=ADAPTIVE_THIN if BUDGET.sbc_thin is None else BUDGET.sbc_thin)


def sampler_of(bug: str, key):
    """What the audit is told to audit (a name, a kernel or a sampler object)."""
    model = model_of(bug)
    if bug.startswith("kernel"):
        return wide_kernel()
    if "NumPyro NUTS" in bug or bug.startswith("NUTS with"):
        return numpyro_nuts(bug)
    if BUGS[bug][2].startswith("MALA"):
        return "mala"
    if bug.startswith("NUTS step"):
        # The audit's own pilot (the same key the audit uses for it), then the step made STEP_FACTOR times larger.
        pilot = resolve_sampler(jax.random.fold_in(key, 100), model, "nuts").kernel
        return NUTS(model, step_size=STEP_FACTOR * pilot.step_size)
    return "auto"


def numbers(check) -> dict:
    """The numbers a check's verdict rests on, from its details and table."""
    d, out = check.details, {}
    if check.name == "simulator-density" and check.table:
        if d.get("form") == "conditional-vs-joint":
            out["worst_violation"] = d.get("worst")
        else:
            out["min_p"] = float(min(r["p_value"] for r in check.table))
            out["rejected"] = int(sum(bool(r.get("fired")) for r in check.table))
    elif check.name == "sbc":
        out["min_gamma"] = float(min(q["gamma"] for q in d["quantities"])) if d.get("quantities") else None
        out["miscalibrated"] = list(d.get("miscalibrated", []))
        out["median_ess"] = d.get("median_ess")
        out["worst_median_ess"] = d.get("worst_median_ess")
        out["autocorrelated"] = d.get("autocorrelated")
        out["thin"] = d.get("thin")
        pilot = d.get("thinning") or {}
        out["thin_automatic"] = pilot.get("automatic")
        out["pilot_ess_per_draw"] = pilot.get("ess_per_draw")
    elif check.name == "geweke":
        out["worst_abs_z"] = abs(float(d["worst_z"])) if "worst_z" in d else None
        out["threshold"] = d.get("threshold")
        out["worst"] = str(d.get("worst"))
    elif check.name == "bdmc":
        out["crossing"] = d["alarm"].get("crossing")
        out["p_bound"] = d["alarm"].get("p_bound")
        out["b_hat"] = d["b_hat"][-1]
    elif check.name == "evidence":
        out["certified"] = d.get("certified")
        out["lower"] = d.get("lower")
    return out


def run_one(bug: str, seed: int) -> dict:
    key = jax.random.key(seed)
    began = time.perf_counter()
    result = audit(key, model_of(bug), sampler=sampler_of(bug, key), budget=BUDGET, level=LEVEL, name=bug)
    kind, model, given = BUGS[bug]
    return {"bug": bug, "kind": kind, "model": model, "sampler": given, "audited_sampler": result.sampler,
            "seed": seed, "verdict": result.verdict, "seconds": time.perf_counter() - began,
            "level_per_check": result.settings["level_per_check"],
            "checks": {c.name: {"verdict": c.verdict, "level": c.level, "statistic": c.statistic, **numbers(c)}
                       for c in result.checks}}


def read_rows(path: Path) -> list[dict]:
    rows, seen = [], set()
    for row in load_rows(path):
        if (row["bug"], row["seed"]) not in seen:  # the first row of a (bug, seed) counts
            seen.add((row["bug"], row["seed"]))
            rows.append(row)
    return rows


def plan(args) -> list[tuple[str, int]]:
    bugs = [b for b in BUGS if not args.only or args.only in b]
    nuts = [b for b in bugs if "NUTS" in b]
    cheap = [b for b in bugs if b not in nuts]
    # Cheap bugs first at their seeds, then the correct models' extra seeds, then NUTS: a cut-short run has
    # every cheap row.
    first = [(b, s) for b in cheap for s in range(min(args.seeds, args.correct_seeds if BUGS[b][0] == "correct"
                                                      else args.seeds))]
    extra = [(b, s) for b in cheap if BUGS[b][0] == "correct" for s in range(args.seeds, args.correct_seeds)]
    return first + extra + [(b, s) for b in nuts for s in range(args.nuts_seeds)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per bug")
    parser.add_argument("--correct-seeds", type=int, default=10, help="seeds per correct model")
    parser.add_argument("--nuts-seeds", type=int, default=3, help="seeds per NUTS row (bug or control)")
    parser.add_argument("--only", default="", help="run only the bugs whose name contains this")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--time-one", action="store_true", help="time one audit twice (cold, then warm) and stop")
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("audit")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / "rows.jsonl"
    if args.time_one:
        bug = next(b for b in BUGS if not args.only or args.only in b)
        for seed in (1000, 1001):
            row = run_one(bug, seed)
            print(f"{bug} seed {seed}: {row['seconds']:.1f} s, verdict {row['verdict']}", flush=True)
            print({k: v["verdict"] for k, v in row["checks"].items()}, flush=True)
        return
    write_text(args.out / "settings.json", json.dumps(
        {"budget": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(BUDGET).items()},
         "level": LEVEL, "seeds": args.seeds, "correct_seeds": args.correct_seeds,
         "nuts_seeds": args.nuts_seeds,
         "step_factor": STEP_FACTOR, "few_warmup": FEW_WARMUP, "adaptive_thin": ADAPTIVE_THIN,
         "note": "sbc_thin null: a fixed kernel's SBC thinning is chosen by the audit's pilot (each row records "
                 "it under checks.sbc.thin); rows without it ran at thin 2, before the pilot existed",
         "bdmc_version": bdmc.__version__}, indent=2))
    done = {(r["bug"], r["seed"]) for r in read_rows(rows_path)}
    todo = [(b, s) for b, s in plan(args) if (b, s) not in done]
    print(f"{len(todo)} audits to run ({len(done)} rows already in {rows_path})", flush=True)
    for bug, seed in todo:
        try:
            row = run_one(bug, seed)
        except Exception as err:  # noqa: BLE001 - logged, no row written: a rerun retries it
            print(f"{bug} seed {seed}: FAILED TO RUN: {type(err).__name__}: {err}", flush=True)
            continue
        append_row(rows_path, row)  # stamped with its provenance
        print(f"{bug} seed {seed}: {row['verdict']} in {row['seconds']:.0f} s  "
              f"{ {k: v['verdict'] for k, v in row['checks'].items()} }", flush=True)
    write_folder("audit", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
