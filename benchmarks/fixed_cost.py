"""Fixed cost of a warm estimator call: host work outside the compiled run, measured over many small runs.

Sweeps of many small runs (benchmarks, calibration studies, SBC) pay a call's fixed cost every time. For each
estimator call below, on a small model, the script makes ``--calls`` warm calls (compiled programs reused)
with different keys and records the wall time of the whole Python call and the engine's own seconds for
the compiled run (``Estimate.details.seconds``). Fixed cost = wall - engine, median over calls. A pilot-tuned
call's pilot is compiled work too; it is reported in its own column, not counted as fixed cost.

    python benchmarks/fixed_cost.py            # writes benchmarks/results/fixed_cost/fixed_cost.{json,md}
    python benchmarks/fixed_cost.py --render   # only re-renders the page from the stored rows

The page's "before" columns are ``fixed_cost_before.json``: the same script run with an earlier bdmc imported
(``PYTHONPATH=<a clone at that commit>/src python benchmarks/fixed_cost.py --out DIR``, then
``DIR/fixed_cost.json`` copied there); every run records the commit bdmc was imported from (``bdmc_src``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import jax

import bdmc
from bdmc.core.pilot import Pilot
from bdmc.kernels import HMC
from bdmc.models import GaussianMean, LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import bdmc_source, stamp, write_text  # noqa: E402

bdmc.enable_x64()

RESULTS = Path(__file__).resolve().parent / "results" / "fixed_cost"


def cases():
    """(label, callable(key) -> Estimate) for the calls measured."""
    lin = LinearRegression()
    lin_data, lin_latent = bdmc.simulate(jax.random.key(0), lin)
    gm = GaussianMean(n=20, dim=5)
    gm_data, _ = bdmc.simulate(jax.random.key(0), gm)
    hmc = HMC(lin, step_size=0.05, num_integration_steps=10)
    fresh = Pilot(reuse=False)
    # 10^6 data values: a warm call's host work on large data (its checks and digests of the data's values).
    big = GaussianMean(n=100_000, dim=10)
    big_data = jax.numpy.asarray(bdmc.simulate(jax.random.key(0), big).data)
    return [
        ("forward_ais T=30, 1 run (Gibbs)", lambda k: bdmc.forward_ais(k, lin, lin_data, num_steps=30, num_runs=1)),
        ("forward_ais T=30, 1 run (HMC, tune off)",
         lambda k: bdmc.forward_ais(k, lin, lin_data, num_steps=30, num_runs=1, kernel=hmc, tune="off")),
        ("forward_ais T=30, 1 run (HMC, pilot-tuned)",
         lambda k: bdmc.forward_ais(k, lin, lin_data, num_steps=30, num_runs=1, kernel=hmc, tune="pilot")),
        ("forward_ais T=30, 1 run (HMC, a new pilot every call)",
         lambda k: bdmc.forward_ais(k, lin, lin_data, num_steps=30, num_runs=1, kernel=hmc, tune=fresh)),
        ("tempered_smc T=30, 16 particles (defaults: HMC, pilot-tuned)",
         lambda k: bdmc.tempered_smc(k, lin, lin_data, num_steps=30, num_particles=16, num_runs=1)),
        ("reverse_ais T=30, 1 run (Gibbs)",
         lambda k: bdmc.reverse_ais(k, lin, lin_data, exact_latent=lin_latent, num_steps=30, num_runs=1)),
        ("smc, 1 run of 1 particle (Gibbs)", lambda k: bdmc.smc(k, gm, gm_data, num_runs=1)),
        ("forward_ais T=30, 16 runs (Gibbs)", lambda k: bdmc.forward_ais(k, gm, gm_data, num_steps=30, num_runs=16)),
        ("forward_ais T=30, 1 run (Gibbs), 10^6 data values",
         lambda k: bdmc.forward_ais(k, big, big_data, num_steps=30, num_runs=1)),
        ("tempered_smc T=30, 16 particles (defaults), 10^6 data values",
         lambda k: bdmc.tempered_smc(k, big, big_data, num_steps=30, num_particles=16, num_runs=1)),
    ]


def measure(fn, calls: int) -> dict:
    for i in range(3):  # compile and warm up
        fn(jax.random.key(10_000 + i))
    walls, engines, pilots = [], [], []
    for i in range(calls):
        start = time.perf_counter()
        est = fn(jax.random.key(i))
        walls.append(time.perf_counter() - start)
        engines.append(est.details.seconds)
        pilots.append(float(est.settings.get("pilot_seconds", 0.0)) - float(est.settings.get(
            "pilot_compile_seconds", 0.0)))
    fixed = [w - e - p for w, e, p in zip(walls, engines, pilots, strict=False)]
    return {"calls": calls, "wall_ms": 1e3 * statistics.median(walls),
            "engine_ms": 1e3 * statistics.median(engines), "pilot_ms": 1e3 * statistics.median(pilots),
            "fixed_ms": 1e3 * statistics.median(fixed),
            "fixed_ms_p90": 1e3 * sorted(fixed)[int(0.9 * (len(fixed) - 1))]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="warm calls per case (default 200)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--render", action="store_true", help="only re-render the page from the stored rows")
    args = ap.parse_args(argv)
    if args.render:
        write_folder("fixed_cost")
        return 0
    load_before = os.getloadavg()
    rows = [{"case": label, **measure(fn, args.calls)} for label, fn in cases()]
    out = {"rows": rows, "load_before": load_before, "load_after": os.getloadavg(),
           "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "jax": jax.__version__,
                       "bdmc": bdmc.version.__version__}, "provenance": stamp(), "bdmc_src": bdmc_source()}
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "fixed_cost.json", json.dumps(out, indent=2))
    for page in write_folder("fixed_cost", written_to=args.out):  # a trial run into another --out has no page
        print(page.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
