"""posteriordb as an external benchmark: bdmc on 16 posteriors people wrote, against their reference draws.

Each posterior of ``benchmarks/data/posteriordb/`` (posteriordb's Stan program, data and reference draws, with a
NumPyro port in ``benchmarks/posteriordb_models.py`` checked against the Stan program's log density by
``benchmarks/posteriordb_check.py``) runs, with bdmc's defaults:

- forward AIS (pilot-tuned, preconditioned HMC; ``--steps`` distributions, ``--runs`` runs) and SMC over data
  cases (up to ``--smc-max-cases`` cases: its cost grows as n^2): each a certified lower bound on log p(y) (the
  estimate minus b = 3 nats holds with probability 0.95), with its time;
- the bracketing upper bound (Ji, Shen and West) from 500 of posteriordb's reference draws (a Gaussian fit on
  the program's unconstrained space);
- AIS's weighted final particles against the reference posterior's means and standard deviations: per parameter
  z = (weighted mean - reference mean) / (reference sd / sqrt(weight ESS)), reported as the largest |z|;
- divergences, weight ESS and k-hat; and, where log p(y) has a closed form up to one quadrature (the Bayesian
  linear regressions and eight schools), the exact value, which the bounds must bracket.

    python benchmarks/posteriordb.py --steps 1000   # every posterior, T = 1,000, 32 runs (the two ODE models:
                                                    # T = 100, 8 runs; each evaluation solves an ODE and its adjoint)
    python benchmarks/posteriordb.py --names sblrc-blr eight_schools-eight_schools_noncentered

Rows (one per posterior, written as each finishes, resumable) go to ``benchmarks/results/posteriordb/rows.jsonl``;
the table to ``README.md`` beside them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, stamp, write_text  # noqa: E402
from posteriordb_models import DATA_DIR, POSTERIORS, load  # noqa: E402

import bdmc  # noqa: E402
from bdmc.bracketing import (
    bracket,  # noqa: E402
    posterior_draws_flat,  # noqa: E402
)
from bdmc.bracketing.families import MultivariateNormal  # noqa: E402
from bdmc.contracts.model import log_density  # noqa: E402
from bdmc.errors import OptionError  # noqa: E402
from bdmc.exact import hierarchical_normal_log_marginal, regression_half_normal_scale_log_marginal  # noqa: E402
from bdmc.experiments.store import settings_diff  # noqa: E402
from bdmc.files import to_jsonable  # noqa: E402

OUT = Path(__file__).parent / "results" / "posteriordb"
# Each density evaluation of these solves an ODE and, for its gradient, the adjoint ODE: smaller budgets, no SMC.
SMALL_BUDGET = {"hudson_lynx_hare-lotka_volterra": (100, 8), "one_comp_mm_elim_abs-one_comp_mm_elim_abs": (100, 8)}
MARKOV_B = 3.0


def exact_log_evidence(name: str, data: dict) -> float | None:
    """log p(y) where one quadrature gives it: the Bayesian linear regressions and eight schools."""
    if name in ("sblrc-blr", "sblri-blr"):
        return regression_half_normal_scale_log_marginal(np.asarray(data["y"]), np.asarray(data["X"]),
                                                         prior_sd=10.0, sigma_scale=10.0)
    if name.startswith("eight_schools"):
        return hierarchical_normal_log_marginal(np.asarray(data["y"]), np.asarray(data["sigma"]), mu_sd=5.0,
                                                tau_cauchy_scale=5.0)
    return None


def build(name: str):
    entry = POSTERIORS[name]
    data_json, reference, info = load(name)
    model = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data_json))
    data = {k: jnp.asarray(v) for k, v in entry.observations(data_json).items()}
    return entry, model, data, data_json, reference, info


def reference_latents(entry, model, data_json):
    """posteriordb's shipped reference draws on the model's unconstrained latent space (None if not shipped)."""
    path = DATA_DIR / entry.name / "draws.npz"
    if not path.exists():
        return None
    flat = dict(np.load(path))
    sites = entry.latents(flat, entry.args(data_json))
    return jax.vmap(model.unconstrain)({k: jnp.asarray(v) for k, v in sites.items()})


def particle_check(entry, model, est, reference) -> dict:
    """Weighted final particles of forward AIS against the reference means and sds (largest |z| over parameters)."""
    logw = np.asarray(est.runs)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ess = 1.0 / np.sum(w**2)
    constrained = jax.vmap(model.constrain)(est.details.latents)
    flat = entry.params({k: np.asarray(v) for k, v in constrained.items()})
    worst, names = 0.0, 0
    for name, values in flat.items():
        if name not in reference:
            continue
        values = np.asarray(values, np.float64).reshape(len(w), -1)[:, 0]
        mean = float(np.sum(w * values))
        ref_mean, ref_sd = reference[name]["mean"], reference[name]["sd"]
        if ref_sd <= 0:
            continue
        worst = max(worst, abs(mean - ref_mean) / (ref_sd / math.sqrt(ess)))
        names += 1
    return {"particles_max_abs_z": worst, "particles_compared": names, "particles_ess": float(ess)}


def run_one(name: str, args) -> dict:
    entry, model, data, data_json, reference, info = build(name)
    row = {"posterior": name, "parameters": info["n_parameters"], "cases": info["n_cases"],
           "stan_normalized": entry.stan_normalized, "stan_offset": entry.stan_offset}
    key = jax.random.key(args.seed)
    steps, runs = SMALL_BUDGET.get(name, (args.steps, args.runs))
    row.update(num_steps=steps, num_runs=runs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        began = time.perf_counter()
        ais = bdmc.forward_ais(key, model, data, num_steps=steps, num_runs=runs, progress=False)
        row.update(ais=ais.value, ais_stderr=ais.stderr, ais_certified=ais.certified(MARKOV_B),
                   ais_seconds=time.perf_counter() - began, ais_divergence_rate=ais.divergence_rate,
                   ais_weight_ess=ais.weight_ess, ais_khat=ais.khat, ais_trusted=ais.stderr_warning is None,
                   preconditioner=ais.settings.get("preconditioner"))
        row.update(particle_check(entry, model, ais, reference))
        # SMC over data cases costs O(n^2) likelihood terms; with an ODE solve in each, too many for this budget.
        if info["n_cases"] <= args.smc_max_cases and name not in SMALL_BUDGET:
            began = time.perf_counter()
            smc = bdmc.smc(jax.random.fold_in(key, 1), model, data, num_runs=args.smc_runs, progress=False)
            row.update(smc=smc.value, smc_stderr=smc.stderr, smc_certified=smc.certified(MARKOV_B),
                       smc_seconds=time.perf_counter() - began, smc_divergence_rate=smc.divergence_rate,
                       smc_particles=smc.settings.get("num_particles"))
        else:
            row.update(smc=None, smc_stderr=None, smc_certified=-math.inf, smc_seconds=None)
    row["warnings"] = sorted({type(w.message).__name__ for w in caught})
    draws = reference_latents(entry, model, data_json)
    if draws is not None:
        began = time.perf_counter()
        flat, unravel = posterior_draws_flat(draws)
        log_joint = lambda th: log_density(model, unravel(th["x"]), data, 1.0)  # noqa: E731
        br = bracket({"x": flat}, log_joint, family={"x": MultivariateNormal}, key=jax.random.fold_in(key, 2),
                     num_draws=args.bracket_draws)
        row.update(bracket_upper=br.upper.value, bracket_upper_stderr=br.upper.stderr,
                   bracket_lower=br.lower.value, bracket_seconds=time.perf_counter() - began)
    exact = exact_log_evidence(name, data_json)
    row["exact"] = exact
    if exact is not None:
        row["certified_below_exact"] = max(row["ais_certified"], row["smc_certified"]) <= exact
        row["upper_above_exact"] = row.get("bracket_upper", math.inf) >= exact - 3 * row.get("bracket_upper_stderr", 0)
    return row


def main():
    jax.config.update("jax_enable_x64", True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", nargs="+", default=None)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--smc-runs", type=int, default=4)
    parser.add_argument("--smc-max-cases", type=int, default=200, help="SMC over data cases only up to this many")
    parser.add_argument("--bracket-draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("posteriordb")
        return
    names = args.names or list(POSTERIORS)
    settings = {"steps": args.steps, "runs": args.runs, "smc_runs": args.smc_runs, "seed": args.seed,
                "bracket_draws": args.bracket_draws, "smc_max_cases": args.smc_max_cases}
    rows_path, settings_path = OUT / "rows.jsonl", OUT / "settings.json"
    saved = json.loads(settings_path.read_text())["settings"] if settings_path.exists() else settings
    diffs = settings_diff(saved, settings, ("steps", "runs", "smc_runs", "seed", "bracket_draws"))
    if diffs:  # the rows of another run's settings are not resumed
        raise OptionError(f"{OUT} holds a run with other settings ({'; '.join(diffs)}); delete its rows.jsonl and "
                          "settings.json to start again")
    done = {r["posterior"] for r in load_rows(rows_path)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    began = time.perf_counter()
    for name in names:
        if name in done:
            continue
        start = time.perf_counter()
        try:
            row = run_one(name, args)
            row["error"] = None
        except Exception as err:  # a refused model is a result here: recorded, and the run goes on
            row = {"posterior": name, "error": f"{type(err).__name__}: {err}"[:500]}
            traceback.print_exc()
        row.update({**stamp(), "seconds": time.perf_counter() - start, "commit": commit, "load": os.getloadavg()[0],
                    "time": datetime.datetime.now().isoformat(timespec="seconds")})
        append_row(rows_path, to_jsonable(row))
        write_text(settings_path, json.dumps({"settings": settings}, indent=2) + "\n")
        print(f"{name}: {row.get('error') or 'ok'} ({row['seconds']:.0f} s)", flush=True)
    print(f"total {time.perf_counter() - began:.0f} s")
    print(summarize(load_rows(rows_path), args))  # a summary on the console; the page is rendered from its template
    write_folder("posteriordb")


def summarize(rows, args) -> str:
    def f(v, fmt=".2f"):
        return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)

    ok = [r for r in rows if not r.get("error")]
    lines = [f"# posteriordb: {len(ok)} of {len(rows)} posteriors run without error (forward AIS T = {args.steps}, "
             f"{args.runs} runs; SMC over data cases, {args.smc_runs} runs, up to {args.smc_max_cases} cases)", "",
             "Command: `python benchmarks/posteriordb.py` (rows: `rows.jsonl`). Certified: the estimate minus 3 nats, "
             "a lower bound on log p(y) with probability 0.95. Upper: the bracketing bound from 500 reference draws. "
             "|z|: the largest over parameters of AIS's weighted final particles' mean against the reference mean, "
             "in reference sd / sqrt(weight ESS). Stan normalized: whether the Stan program's log density equals the "
             "port's (otherwise the constant it drops, in nats).", "",
             "| posterior | params | cases | AIS ± stderr | certified | s | SMC | s | upper | exact | |z| | div. | "
             "ESS | k-hat | Stan normalized |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['posterior']} | | | error: {r['error'][:80]} | | | | | | | | | | | |")
            continue
        stan = "yes" if r.get("stan_normalized") else (f"no ({r['stan_offset']:+.3f})" if r.get("stan_offset")
                                                       is not None else "-")
        small = r.get("num_steps", args.steps) != args.steps
        budget = f" (T = {r['num_steps']}, {r['num_runs']} runs)" if small else ""
        lines.append(
            f"| {r['posterior']} | {r['parameters']} | {r['cases']} | {f(r['ais'])} ± {f(r['ais_stderr'])}{budget}"
            f"{'' if r['ais_trusted'] else ' ?'} | {f(max(r['ais_certified'], r['smc_certified']))} | "
            f"{f(r['ais_seconds'], '.1f')} | {f(r['smc'])} | {f(r['smc_seconds'], '.1f')} | "
            f"{f(r.get('bracket_upper'))} | {f(r.get('exact'))} | {f(r['particles_max_abs_z'], '.1f')} | "
            f"{100 * (r['ais_divergence_rate'] or 0):.1f}% | {f(r['ais_weight_ess'], '.1f')} | {f(r['ais_khat'])} | "
            f"{stan} |")
    exact = [r for r in ok if r.get("exact") is not None]
    if exact:
        held = sum(bool(r["certified_below_exact"]) and bool(r["upper_above_exact"]) for r in exact)
        lines += ["", f"Where log p(y) is known ({len(exact)} posteriors), the certified lower bound lies below it and "
                  f"the bracketing upper bound above it (within 3 stderr) on {held} of {len(exact)}."]
    lines += ["", "`?`: the ± is not to be trusted (weight ESS below max(4, runs / 8) or k-hat above 0.7).", ""]
    lines += _observations(ok, rows)
    return "\n".join(lines) + "\n"


def _observations(ok, rows) -> list[str]:
    """What the table shows, each sentence computed from the rows."""
    def names(pairs):
        return ", ".join(f"{n} ({v})" for n, v in pairs) or "none"

    untrusted = [(r["posterior"], f"ESS {r['ais_weight_ess']:.1f}") for r in ok if not r["ais_trusted"]]
    diverging = [(r["posterior"], f"{100 * r['ais_divergence_rate']:.0f}%") for r in ok
                 if (r["ais_divergence_rate"] or 0) > 0.1]
    far = [(r["posterior"], f"|z| {r['particles_max_abs_z']:.1f}") for r in ok if r["particles_max_abs_z"] > 4]
    gaps = [(r["posterior"], f"{r['bracket_upper'] - r['ais']:.1f} nats") for r in ok
            if r.get("bracket_upper") is not None and r["bracket_upper"] - r["ais"] > 3]
    commits = sorted({r.get("commit") for r in rows if r.get("commit")})
    return [f"- AIS's ± not to be trusted at this budget: {names(untrusted)}.",
            f"- More than 10% of AIS's transitions diverged (rejected proposals): {names(diverging)}.",
            f"- AIS's weighted final particles more than 4 reference standard errors from a reference mean: "
            f"{names(far)}.",
            f"- AIS more than 3 nats below the bracketing upper bound (not converged at this budget, or a loose "
            f"upper bound): {names(gaps)}.",
            f"- Rows computed at commit(s) {', '.join(commits)} (a later commit changed only the ports it lists in "
            "`benchmarks/data/posteriordb/README.md`, whose rows it recomputed)."]


if __name__ == "__main__":
    main()
