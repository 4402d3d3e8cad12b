"""An evidence table for posteriordb: every posterior gets a two-sided interval on log p(y), or a named reason.

Every one of posteriordb's 147 posteriors has a row of ``benchmarks/results/posteriordb/evidence.csv``:

- a posterior ported here (``benchmarks/posteriordb_models.py``, its port checked against the Stan program's log
  density) runs :func:`bdmc.evidence` on its data: forward runs for the certified lower side, reverse runs from
  posteriordb's reference draws (or, where it ships none, 10,000 NUTS draws in 4 chains) for the upper side,
  escalated until the interval is narrower than ``--tolerance`` or ``--max-seconds`` is spent;
- any other posterior gets the reason from the census (``benchmarks/data/posteriordb/census.json``, by
  ``benchmarks/posteriordb_census.py``): an improper prior (log p(y) does not exist), an ODE, or no port here.

    python benchmarks/posteriordb_evidence.py                    # all 147; ported ones run (resumes)
    python benchmarks/posteriordb_evidence.py --names sblrc-blr  # some
    python benchmarks/posteriordb_evidence.py --scheduler none   # one after another in this process

The ported posteriors run as a Dask sweep (``--scheduler local``: two worker processes on this machine; or the
address of a running scheduler, ``docs/cluster.md``); each finished row is appended to ``evidence.jsonl`` at once, so an
interrupted sweep resumes. ``evidence.csv`` and the page ``evidence.md`` are written from those rows.
"""

from __future__ import annotations

import argparse
import datetime
import json
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
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, write_text  # noqa: E402
from posteriordb import exact_log_evidence  # noqa: E402
from posteriordb_models import DATA_DIR, POSTERIORS, load  # noqa: E402

import bdmc  # noqa: E402
from bdmc.files import to_jsonable  # noqa: E402

OUT = Path(__file__).parent / "results" / "posteriordb"
CENSUS = DATA_DIR / "census.json"
COLUMNS = ["posterior", "status", "lower", "upper", "estimate", "width", "exact", "contains_exact", "lower_rule",
           "upper_rule", "upper_rests_on", "draws_source", "draws_check_passed", "bracket", "method", "rounds",
           "num_steps", "num_runs", "seconds", "note", "commit"]
NOT_PORTED = "not ported: no NumPyro port of its Stan program here"
NOT_RUN = "not run: ported, but the sweep was stopped before it (rerun the command to resume)"
# Why the posteriors without a port have none (the rest: NOT_PORTED).
WHY_NOT_PORTED = {
    **{name: "not ported: over 1,000 parameters (beyond this table's per-posterior budget)" for name in (
        "lsat_data-lsat_model", "mnist-nn_rbm1bJ100", "mnist_100-nn_rbm1bJ10", "ovarian-logistic_regression_rhs",
        "prideprejudice_chapter-ldaK5", "prideprejudice_paragraph-ldaK5", "prostate-logistic_regression_rhs")},
    **{name: "not ported: the program's own Stan functions (an epidemic renewal model) have no port here"
       for name in ("ecdc0401-covid19imperial_v2", "ecdc0401-covid19imperial_v3", "ecdc0501-covid19imperial_v2",
                    "ecdc0501-covid19imperial_v3")},
    **{name: "not ported: a port is written, but its check against Stan cannot run yet (its gamma(0.001, 0.001)-type "
             "prior overflows at the prior draws the check's adapter step takes)"
       for name in ("surgical_data-surgical_model", "seeds_data-seeds_model")},
    "rstan_downloads-prophet": "not ported: prophet's trend and seasonality functions have no port here",
    "synthetic_grid_RBF_kernels-kronecker_gp": "not ported: a Kronecker-structured GP with its own Stan functions",
    "state_wide_presidential_votes-hierarchical_gp": "not ported: a hierarchical GP with its own Stan functions",
    "iohmm_reg_simulated-iohmm_reg": (
        "not a density of the data: the program's forward algorithm weights the transitions by the previous state's "
        "index, so its target is not a normalized density of y (no per-case port can match it up to a constant)"),
}


def census() -> list[dict]:
    """posteriordb's 147 posteriors with the census's reason (None: log p(y) exists and is computable)."""
    doc = json.loads(CENSUS.read_text())
    return doc["posteriors"] if isinstance(doc, dict) else doc


def reference_draws(entry, data_json):
    """posteriordb's reference draws as the port's constrained sites, an ArviZ InferenceData with their chains
    (10 of 1,000 draws), or None when posteriordb has none."""
    import arviz as az

    path = DATA_DIR / entry.name / "draws.npz"
    if not path.exists():
        return None
    chains = int(json.loads((DATA_DIR / entry.name / "info.json").read_text()).get("reference_chains", 1))
    sites = entry.latents(dict(np.load(path)), entry.args(data_json))
    return az.from_dict(posterior={k: np.asarray(v).reshape((chains, -1) + np.shape(v)[1:]) for k, v in sites.items()})


def run_posterior(name: str, settings: dict) -> dict:
    """One ported posterior's interval (a row); runs in a Dask worker."""
    jax.config.update("jax_enable_x64", True)
    entry = POSTERIORS[name]
    data_json, _, _ = load(name)
    model = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data_json))
    data = {k: jnp.asarray(v) for k, v in entry.observations(data_json).items()}
    began = time.perf_counter()
    draws = reference_draws(entry, data_json)
    if draws is None:  # no reference posterior: NUTS draws as many as posteriordb's references hold (10,000)
        draws = bdmc.intervals.nuts_draws(jax.random.key(settings["seed"] + 1), model, data, num_chains=4,
                                          num_draws=settings["nuts_draws"] // 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the row states what the warnings said (the draws' check, the status)
        result = bdmc.evidence(jax.random.key(settings["seed"]), model, data, draws=draws,
                               tolerance=settings["tolerance"], level=settings["level"],
                               max_seconds=settings["max_seconds"], progress=False)
    exact = exact_log_evidence(name, data_json)
    last = result.rounds[-1]
    return {"posterior": name, "status": result.status, "lower": result.lower.value, "upper": result.upper.value,
            "estimate": result.estimate, "width": result.width, "exact": exact,
            "contains_exact": None if exact is None else result.contains(exact), "lower_rule": result.lower.rule,
            "upper_rule": result.upper.rule, "upper_rests_on": result.upper_rests_on,
            "draws_source": result.draws.get("source"),
            "draws_check_passed": result.draws.get("check", {}).get("passed"), "bracket": result.bracket,
            "method": result.method, "rounds": len(result.rounds), "num_steps": last.num_steps,
            "num_runs": last.num_runs, "seconds": time.perf_counter() - began, "note": result.note}


def reason_row(record: dict) -> dict:
    """The row of a posterior that does not run here: its reason as the status."""
    reason = record.get("reason") or ""
    if reason.startswith("prior unclear"):  # the census's four, each read by hand: proper (its test says why)
        reason = ""
    if reason.startswith("ODE") and record["posterior"] in POSTERIORS:
        reason += (" (ported, not run: each density evaluation solves the ODE and, for the gradient, its adjoint; "
                   "beyond this table's per-posterior budget)")
    return {"posterior": record["posterior"], "status": reason or WHY_NOT_PORTED.get(record["posterior"], NOT_PORTED)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", nargs="+", default=None)
    parser.add_argument("--tolerance", type=float, default=0.5)
    parser.add_argument("--level", type=float, default=0.01)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="each posterior's escalation budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nuts-draws", type=int, default=10000,
                        help="NUTS draws (4 chains) where posteriordb holds no reference draws")
    parser.add_argument("--scheduler", default="local",
                        help="local (two Dask worker processes here), none (one after another here), or an address")
    parser.add_argument("--render", action="store_true", help="re-render the table and page from the rows and stop")
    args = parser.parse_args()
    rows_path = OUT / "evidence.jsonl"
    if args.render:
        finish(rows_path)
        return
    settings = {"tolerance": args.tolerance, "level": args.level, "max_seconds": args.max_seconds, "seed": args.seed,
                "nuts_draws": args.nuts_draws}
    settings_path = OUT / "evidence_settings.json"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if settings_path.exists() and load_rows(rows_path):
        saved = json.loads(settings_path.read_text())
        if saved.get("settings", saved) != settings:
            raise SystemExit(f"{rows_path} holds rows of other settings ({settings_path}); delete both to start again")
    write_text(settings_path, json.dumps({"settings": settings, "commit": commit}, indent=2) + "\n")
    # A posterior recorded as not ported runs once it has a port.
    done = {r["posterior"] for r in load_rows(rows_path)
            if not (r["status"].startswith(("not ported", "not a density")) and r["posterior"] in POSTERIORS)}
    records = [r for r in census() if args.names is None or r["posterior"] in args.names]

    def save(row: dict) -> None:
        row.update({"commit": commit, "load": os.getloadavg()[0],
                    "time": datetime.datetime.now().isoformat(timespec="seconds")})
        append_row(rows_path, to_jsonable(row, nonfinite="string"))
        print(f"{row['posterior']}: {row['status']}"
              + (f" [{row['lower']:.3f}, {row['upper']:.3f}] ({row['seconds']:.0f} s)" if "lower" in row else ""),
              flush=True)

    to_run = []
    for record in records:
        if record["posterior"] in done:
            continue
        if record["posterior"] in POSTERIORS and not record.get("reason"):
            to_run.append(record["posterior"])
        else:
            save(reason_row(record))
    # Cheapest first (reference draws need no NUTS run; then by parameter count), so that a sweep stopped early
    # holds as many rows as it can.
    size = {r["posterior"]: r.get("num_parameters") or 10**6 for r in records}
    to_run.sort(key=lambda name: (not (DATA_DIR / name / "draws.npz").exists(), size[name], name))
    run_all(to_run, settings, args.scheduler, save)
    finish(rows_path)


def run_all(names: list[str], settings: dict, scheduler: str, save) -> None:
    """Run the ported posteriors, on Dask unless ``scheduler`` is "none"; each row is saved as it finishes."""
    def failed(name, err):
        traceback.print_exception(err)
        return {"posterior": name, "status": f"error: {type(err).__name__}: {err}"[:300]}

    if scheduler == "none":
        for name in names:
            try:
                save(run_posterior(name, settings))
            except Exception as err:  # a refused posterior is a result: recorded, and the sweep goes on
                save(failed(name, err))
        return
    from dask.distributed import Client, LocalCluster, as_completed

    if scheduler == "local":
        # Worker processes, not threads: NumPyro's effect handlers are global state, so two programs traced at once
        # in one process see each other's sites. The workers import the ports from benchmarks/.
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                 os.environ.get("PYTHONPATH")]))
        client = Client(LocalCluster(n_workers=min(2, os.cpu_count() or 1), threads_per_worker=1, processes=True,
                                     dashboard_address=None))
    else:
        client = Client(scheduler)
    try:
        futures = {client.submit(run_posterior, name, settings, pure=False): name for name in names}
        for future in as_completed(futures):
            try:
                save(future.result())
            except Exception as err:  # as above
                save(failed(futures[future], err))
    finally:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()


def finish(rows_path: Path) -> None:
    """evidence.csv from the rows (the last row of each posterior), and the page."""
    latest = {}
    for row in load_rows(rows_path):
        latest[row["posterior"]] = row
    for record in census():  # a sweep stopped before a ported posterior ran: said so, not left out
        latest.setdefault(record["posterior"], {"posterior": record["posterior"], "status": NOT_RUN})
        if latest[record["posterior"]]["status"].startswith("not ported") and record["posterior"] in POSTERIORS:
            latest[record["posterior"]] = {"posterior": record["posterior"], "status": NOT_RUN}  # ported since
        elif latest[record["posterior"]]["status"] == NOT_PORTED and record["posterior"] in WHY_NOT_PORTED:
            latest[record["posterior"]] = {"posterior": record["posterior"],
                                           "status": WHY_NOT_PORTED[record["posterior"]]}  # its reason, said since
    table = pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in latest.values()], columns=COLUMNS)
    write_text(OUT / "evidence.csv", table.to_csv(index=False))
    write_folder("posteriordb")


def interval_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that ran (a lower bound was computed)."""
    return table[table["lower"].notna()]


if __name__ == "__main__":
    warnings.filterwarnings("ignore", category=FutureWarning)
    main()
