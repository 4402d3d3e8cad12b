"""One ``bdmc bench`` sweep three ways: in-process, on Dask threads in this process, on Dask worker processes.

The sweep is :func:`bdmc.experiments.bench.run_bench` (what ``bdmc bench`` runs) with the same seed, model,
estimators and knobs each time; only ``client`` changes:

* ``in-process`` -- ``client=None``: the (estimator, knob) cells run one after another here.
* ``threads``    -- ``bdmc.experiments.bench.connect("local")``: a LocalCluster of threads in this process
                    (what ``bdmc bench --scheduler local`` starts).
* ``processes``  -- ``LocalCluster(n_workers=--workers, threads_per_worker=1)``: separate worker processes,
                    each started with XLA's and OpenMP's thread pools at one thread (``--worker-threads``).

bdmc's compile caches are emptied before each mode, so every mode compiles its programs (the worker
processes compile their own). Each mode writes its rows to its own store under ``--store`` as they finish.
The rows are then compared with the in-process ones column by column, timing columns aside. Results:
``results/scale/dask.json``, and the page ``results/scale/dask.md`` rendered from it. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import pandas as pd

import bdmc
from bdmc.experiments import bench

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

RESULTS = Path(__file__).resolve().parent / "results" / "scale"
TIMING = ["seconds", "seconds_batch", "compile_seconds"]
MODES = ("in-process", "threads", "processes")
KNOBS = {"ais": [10, 100, 1000], "rev-ais": [10, 100, 1000], "smc": [1, 3, 10], "shme": [1, 3, 10],
         "lw": [100, 10000], "hme": [100, 10000]}


def worker_env(threads: int) -> dict[str, str]:
    """Environment of a worker process: XLA's Eigen pool and OpenMP at ``threads`` threads."""
    flags = "--xla_cpu_multi_thread_eigen=false" if threads == 1 else ""
    return {"XLA_FLAGS": flags, "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads)}


def start(mode: str, workers: int, worker_threads: int):
    """(client, seconds to start it) for ``mode``; no client in-process."""
    if mode == "in-process":
        return None, 0.0
    t0 = time.perf_counter()
    if mode == "threads":
        client = bench.connect("local")
    else:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               env=worker_env(worker_threads))
        client = Client(cluster)
    client.wait_for_workers(1)
    return client, time.perf_counter() - t0


def close(client) -> None:
    if client is None:
        return
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def run_mode(mode: str, args, store: Path) -> tuple[pd.DataFrame, dict]:
    """The sweep under one mode; its table and timings (wall, start, first row, rows in finishing order)."""
    bdmc.clear_caches()
    shutil.rmtree(store, ignore_errors=True)
    client, start_s = start(mode, args.workers, args.worker_threads)
    t0, finished = time.perf_counter(), []
    load = os.getloadavg()
    try:
        workers = len(client.scheduler_info()["workers"]) if client is not None else 0
        on_row = lambda row: finished.append((row["estimator"], row["knob"], time.perf_counter() - t0))  # noqa: E731
        table = bench.run_bench(jax.random.key(args.seed), model_of(args), estimators=list(args.knobs),
                                knobs=args.knobs, trials=args.trials, truth_steps=args.truth_steps,
                                truth_runs=args.truth_runs, out=store, client=client, on_row=on_row)
        wall = time.perf_counter() - t0
    finally:
        close(client)
    stored = pd.read_csv(store / bench.CSV_NAME)
    return table, {"mode": mode, "workers": workers, "start_seconds": start_s, "sweep_seconds": wall,
                   "first_row_seconds": finished[0][2] if finished else None,
                   "finish_order": [[e, k, t] for e, k, t in finished], "rows_in_store": len(stored),
                   "store_order": [[e, int(k)] for e, k in zip(stored["estimator"], stored["knob"], strict=False)],
                   "compute_seconds": float(table["seconds_batch"].sum() + table["compile_seconds"].sum()),
                   "compile_seconds": float(table["compile_seconds"].sum()), "load_before": list(load),
                   "load_after": list(os.getloadavg())}


def compare(reference: pd.DataFrame, other: pd.DataFrame) -> dict:
    """Whether ``other`` has the reference's rows (timing aside), and the largest numeric difference."""
    a, b = reference.drop(columns=TIMING), other.drop(columns=TIMING)
    try:
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        identical = True
    except AssertionError:
        identical = False
    numeric = a.select_dtypes("number").columns
    diff = (a[numeric] - b[numeric]).abs().max().max()
    trials = max(max(abs(x - y) for x, y in zip(json.loads(p), json.loads(q), strict=False))
                 for p, q in zip(a["trial_estimates"], b["trial_estimates"], strict=False))
    return {"identical": identical, "max_abs_diff": float(diff), "max_abs_diff_trials": float(trials)}


def model_of(args):
    return bdmc.models.LinearRegression(n=args.n)


def source_info() -> dict:
    """Which bdmc ran: its path, the commit of its checkout and whether its src/ had uncommitted edits."""
    import bdmc

    root = Path(bdmc.__file__).resolve().parents[2]
    git = lambda *a: subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    return {"bdmc_path": str(Path(bdmc.__file__).parent), "commit": git("rev-parse", "--short", "HEAD"),
            "modified_in_src": git("status", "--porcelain", "--", "src").splitlines()}


def machine_info() -> dict:
    import dask
    import distributed

    return {"cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__, "dask": dask.__version__,
            "distributed": distributed.__version__, "bdmc": bdmc.__version__, "x64": bool(jax.config.jax_enable_x64)}


def parse_knobs(text: str) -> dict[str, list[int]]:
    """``"ais=10,100;smc=1"`` -> ``{"ais": [10, 100], "smc": [1]}``."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(";"))):
        name, _, values = item.partition("=")
        out[name.strip()] = [int(v) for v in values.split(",") if v.strip()]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--knobs", type=parse_knobs, default=KNOBS,
                    help="estimators and knob values, e.g. 'ais=10,100;smc=1,3' (default: six estimators)")
    ap.add_argument("--n", type=int, default=20, help="data cases of LinearRegression (default 20, the paper's)")
    ap.add_argument("--trials", type=int, default=25, help="trials per cell (default 25)")
    ap.add_argument("--truth-steps", type=int, default=1000, help="T of the AIS beside the closed form (1000)")
    ap.add_argument("--truth-runs", type=int, default=16, help="chains of that AIS (default 16)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the processes mode (default 2)")
    ap.add_argument("--worker-threads", type=int, default=1, help="XLA/OpenMP threads per worker (default 1)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ", ".join(MODES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--store", type=Path, default=None, help="where the modes' bench stores go (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="directory for dask.json (the page, dask.md, is "
                    "rendered in benchmarks/results/scale only)")
    ap.add_argument("--render", "--report", dest="report", action="store_true",
                    help="only re-render the pages of benchmarks/results/scale from their JSON")
    args = ap.parse_args(argv)
    if args.report:
        write_folder("scale")
        return
    modes = [m.strip() for m in args.modes.split(",")]
    if "in-process" not in modes or set(modes) - set(MODES):
        ap.error(f"--modes must include in-process (the reference) and be among {', '.join(MODES)}")
    run(args, [m for m in MODES if m in modes])


def run(args, modes: list[str]) -> None:
    from rich.console import Console

    console, load_start = Console(width=None if sys.stdout.isatty() else 200), os.getloadavg()
    root = args.store or Path(tempfile.mkdtemp(prefix="bdmc-dask-sweep-"))
    tables, timings = {}, []
    for mode in modes:
        with console.status(f"sweep: {mode} ..."):
            tables[mode], timing = run_mode(mode, args, root / mode)
        if mode != "in-process":
            timing["same"] = compare(tables["in-process"], tables[mode])
        timings.append(timing)
        console.print(f"{mode}: sweep {timing['sweep_seconds']:.1f} s, first row {timing['first_row_seconds']:.1f} s"
                      + (f", rows identical: {timing['same']['identical']}" if "same" in timing else ""))
    out = {"settings": {"n": args.n, "trials": args.trials, "knobs": args.knobs, "truth_steps": args.truth_steps,
                        "truth_runs": args.truth_runs, "workers": args.workers,
                        "worker_threads": args.worker_threads, "seed": args.seed, "modes": modes},
           "timings": timings, "rows": tables["in-process"].drop(columns=["trial_estimates"]).to_dict("records"),
           "load_start": list(load_start), "load_end": list(os.getloadavg()), "machine": machine_info(),
           "source": source_info(), "provenance": stamp()}
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "dask.json", json.dumps(out, indent=2, default=float))
    console.print(f"wrote {args.out / 'dask.json'}")
    for page in write_folder("scale", written_to=args.out):
        console.print(f"rendered {page}")


if __name__ == "__main__":
    main()
