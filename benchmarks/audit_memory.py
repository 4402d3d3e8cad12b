"""Memory over a long process: the resident set size after each of many audits (or sandwiches) in one process.

A notebook user audits a few models an afternoon, a calibration sweep hundreds: each audit builds its program
afresh (a new model object, as re-running a notebook cell does) and compiles dozens of programs for it. Before
``audit(..., release=True)`` (``bdmc.caching.release_compiled`` and the adapters' ``release``), every one of them
stayed in bdmc's and JAX's caches for as long as the process lived.

One process per invocation (a fresh interpreter: never a fork after JAX has started) runs ``--audits`` audits of
the calibration's regression program (``calibration_programs.py``) in one PPL under its own NUTS, at a tiny stated
budget (the compiled programs, not the budget, are what stays in memory), or ``--sandwiches`` calls of
``bdmc.sandwich`` on the built-in linear regression. After each audit (each tenth sandwich) it appends a row with
the RSS (``/proc/self/statm``), the seconds, the commit, the load and the time; ``--no-release`` measures the
audits as they were (``release=False``).

    python benchmarks/audit_memory.py --ppl numpyro --audits 100
    python benchmarks/audit_memory.py --ppl stan --audits 100
    python benchmarks/audit_memory.py --ppl numpyro --audits 20 --no-release      # the growth before the fix
    python benchmarks/audit_memory.py --sandwiches 1000
    python benchmarks/audit_memory.py --render
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, stamp  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "audit_memory"
PPLS = {"numpyro": "NumPyro", "pymc": "PyMC", "stan": "Stan"}
# The audit's budget here: every check runs and compiles, on a few data sets.
TINY = {"sbc_replications": 8, "sbc_draws": 10, "sbc_warmup": 30, "geweke_samples": 20, "sandwich_steps": (5, 10),
        "sandwich_runs": 2, "evidence_steps": 10, "evidence_runs": 2, "prior_runs": 2, "prior_steps": 10}


def rss_mb() -> float:
    """The process's resident set size now, in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_audits(ppl: str, count: int, *, release: bool, out: Path) -> None:
    import calibration_programs
    import jax

    import bdmc
    from bdmc.auditing import Budget, audit

    bdmc.enable_x64()
    budget = dataclasses.replace(Budget.quick(), **TINY)
    for index in range(count):
        began = time.perf_counter()
        model = calibration_programs.program(PPLS[ppl], "regression")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            verdict = audit(jax.random.key(index), model, budget=budget, release=release).verdict
        del model
        gc.collect()
        append_row(out / "rows.jsonl", {"kind": "audit", "ppl": ppl, "release": release, "index": index,
                                        "rss_mb": rss_mb(), "seconds": time.perf_counter() - began,
                                        "verdict": verdict, "budget": TINY, **stamp()})
        print(f"{ppl} audit {index}: {rss_mb():.0f} MB", flush=True)


def run_sandwiches(count: int, *, out: Path) -> None:
    import jax

    import bdmc

    bdmc.enable_x64()
    began = time.perf_counter()
    for index in range(count):
        model = bdmc.models.LinearRegression()  # a new object each call, as a user's loop makes it
        data, latent = bdmc.simulate(jax.random.key(index), model)
        bdmc.sandwich(jax.random.key(index), model, data, latent, steps=[10, 30], num_runs=4, progress=False)
        if index % 10 == 9:
            gc.collect()
            append_row(out / "rows.jsonl", {"kind": "sandwich", "ppl": None, "release": None, "index": index,
                                            "rss_mb": rss_mb(), "seconds": time.perf_counter() - began,
                                            "verdict": None, "budget": {"steps": [10, 30], "num_runs": 4},
                                            **stamp()})
            print(f"sandwich {index + 1}: {rss_mb():.0f} MB", flush=True)
            began = time.perf_counter()


def plot(folder: Path) -> Path:
    """``audit_memory.png``: RSS against audits (each PPL, with and without release) and against sandwiches."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from harness.store import load_rows

    rows = load_rows(folder / "rows.jsonl")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    series: dict[tuple, list] = {}
    for r in rows:
        series.setdefault((r["kind"], r["ppl"], r["release"]), []).append((r["index"] + 1, r["rss_mb"] / 1024))
    for (kind, ppl, release), points in sorted(series.items(), key=str):
        x, y = zip(*points, strict=True)
        if kind == "audit":
            left.plot(x, y, "-" if release else "--", label=f"{PPLS[ppl]}, {'release' if release else 'no release'}")
        else:
            right.plot(x, y, "-o", ms=2, label="bdmc.sandwich, linear regression")
    left.set(xlabel="audits in one process", ylabel="resident set size (GB)", title="Audits")
    right.set(xlabel="sandwiches in one process", ylabel="resident set size (GB)", title="Sandwiches")
    for ax in (left, right):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = folder / "audit_memory.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ppl", choices=list(PPLS))
    parser.add_argument("--audits", type=int, default=100)
    parser.add_argument("--no-release", action="store_true", help="audit(..., release=False): before the fix")
    parser.add_argument("--sandwiches", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="only re-render the page from the stored rows")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sandwiches:
        run_sandwiches(args.sandwiches, out=args.out)
    elif args.ppl:
        run_audits(args.ppl, args.audits, release=not args.no_release, out=args.out)
    elif not args.render:
        parser.error("give --ppl (with --audits), --sandwiches N or --render")
    plot(args.out)
    write_folder("audit_memory", results=args.out.parent)


if __name__ == "__main__":
    main()
