"""Runs split across devices (``bdmc.shard_runs``) against the same calls on one device, side by side.

On a CPU the devices are XLA's host devices: this script starts JAX with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (``--devices``, default the machine's cores), as a user
would, so that each device runs its share of the chains on a core of its own. Every repeat runs each call on one
device and then within ``bdmc.shard_runs()``, alternating, so that load hits both alike; every row holds the call,
the devices, its seconds, the largest difference of its runs from the one-device call's on the same key, the
load and the time. A first call of each (compilation included) is stored apart from the warm ones.

    python benchmarks/sharding.py                 # 7 warm repeats of each call
    python benchmarks/sharding.py --render
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path


def _arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--render", action="store_true", help="re-render the page from the stored rows and stop")
    return parser.parse_args(argv)


# Before anything starts JAX (the harness's stamps read the backend): its host devices are fixed when its CPU
# backend comes up. XLA also writes the compiled steps of every run (its "run_steps" programs) as text into a
# folder of this process's own, so that their collectives can be counted; XLA makes it, the run removes it.
DUMP = Path(tempfile.gettempdir()) / f"bdmc-sharding-hlo-{os.getpid()}"
if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [
        os.environ.get("XLA_FLAGS"), f"--xla_force_host_platform_device_count={_arguments().devices}",
        f"--xla_dump_to={DUMP}", "--xla_dump_hlo_as_text", "--xla_dump_hlo_module_re=.*run_steps.*"]))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, write_text  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "sharding"


def calls(bdmc, jax):
    """The calls timed: a long forward AIS and a tempered SMC, many runs each, on the built-in linear regression
    (20 cases: each step's work per chain is small); and forward AIS on 10^5 cases, where it is large."""
    model = bdmc.models.LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    big = bdmc.models.LinearRegression(n=100_000)
    big_data, _ = bdmc.simulate(jax.random.key(0), big)
    return {
        "forward AIS, T = 1,000, 256 runs": lambda key: bdmc.forward_ais(
            key, model, data, num_steps=1000, num_runs=256, tune="off", progress=False),
        "tempered SMC, 8 runs x 256 particles, T = 100": lambda key: bdmc.tempered_smc(
            key, model, data, num_runs=8, num_particles=256, num_steps=100, progress=False),
        "forward AIS, 10^5 cases, T = 100, 16 runs": lambda key: bdmc.forward_ais(
            key, big, big_data, num_steps=100, num_runs=16, tune="off", progress=False),
    }


def main() -> None:
    args = _arguments()
    if args.render:
        write_folder("sharding")
        return
    import jax
    import numpy as np

    import bdmc

    bdmc.enable_x64()
    if len(jax.devices()) != args.devices:
        raise SystemExit(f"JAX shows {len(jax.devices())} devices, not {args.devices}: was it started already?")
    rows_path = OUT / "rows.jsonl"
    write_text(rows_path, "")  # a run replaces the last one's rows (nothing here resumes)
    timed = calls(bdmc, jax)

    def one(name, call, key, repeat, split):
        began, used = time.perf_counter(), time.process_time()  # processor time: how many cores a call kept busy
        if split:
            with bdmc.shard_runs():
                est = call(key)
        else:
            est = call(key)
        seconds = time.perf_counter() - began
        return est, {"call": name, "devices": args.devices if split else 1, "repeat": repeat, "seconds": seconds,
                     "processor_seconds": time.process_time() - used,
                     "compiled": bool(est.compiled), "value": float(est.value), "cpu_count": os.cpu_count()}

    for repeat in range(args.repeats + 1):  # repeat 0: the first calls
        for name, call in timed.items():
            key = jax.random.key(repeat)
            alone, row_alone = one(name, call, key, repeat, split=False)
            split, row_split = one(name, call, key, repeat, split=True)
            difference = float(np.max(np.abs(np.asarray(split.runs) - np.asarray(alone.runs))))
            for row in (row_alone, row_split):
                append_row(rows_path, {**row, "max_difference": difference})
            print(f"{repeat} {name}: one device {row_alone['seconds']:.3f} s, {args.devices} devices "
                  f"{row_split['seconds']:.3f} s, runs differ by {difference:.1e}", flush=True)
    # The collectives each compiled program of steps holds (one program per call and placement; a program over
    # one device has none): what a split run's devices synchronize on inside its loop of steps.
    collectives = [{"program": path.name.split(".")[1], "all_reduce": text.count(" all-reduce("),
                    "all_gather": text.count(" all-gather("),
                    "devices": int(m.group(1)) if (m := re.search(r"num_partitions=(\d+)", text)) else 1}
                   for path in sorted(DUMP.glob("*after_optimizations.txt")) if (text := path.read_text())]
    shutil.rmtree(DUMP, ignore_errors=True)
    write_text(OUT / "collectives.jsonl", "")
    for row in collectives:
        append_row(OUT / "collectives.jsonl", row)
    write_folder("sharding")


if __name__ == "__main__":
    main()
