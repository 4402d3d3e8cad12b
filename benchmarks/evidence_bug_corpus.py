"""Evidence bugs from the wild (``bug_corpus/evidence_bugs.py``), and which of bdmc's checks catches each.

For K data sets simulated from the correct regression program (``evidence_bugs.correct``), each bug's mutated
estimator and the two correct controls give a ``log p(y)`` (with their stated ± where they state one). Then:

- **check-estimate**: one ``bdmc.check_estimate`` per data set with the latent that simulated it (AIS, T = 1,000,
  32 runs per direction, level 0.01); every estimator's value is judged against the same runs
  (``EstimateCheck.for_value``). Caught: the verdict is "too high" or "too low"; the row says after how many data
  sets it first was, and in how many of the K.
- **calibrate**: ``bdmc.calibrate_estimator`` on the same data sets (truth: the sandwich); caught when its verdict
  is "miscalibrated" at its level; the row says after how many data sets (its verdict at K = 2, 5, 10, 20, ...).
- **compare**: ``bdmc.compare`` of the program the estimator runs on against the correct program, on the first
  data set; it runs bdmc's own estimators, so it sees program bugs only (a gate refusing, or log BF away from 0),
  never a bug in another tool's arithmetic.

    python benchmarks/evidence_bug_corpus.py --datasets 50
    python benchmarks/evidence_bug_corpus.py --render
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "bug_corpus"))
import evidence_bugs  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state, write_text  # noqa: E402

import bdmc  # noqa: E402

bdmc.enable_x64()

OUT = HERE / "results" / "evidence_bug_corpus"
LEVEL = 0.01
KEY = jax.random.key(0)  # data set i is simulated from fold_in(KEY, i), by every part alike


def estimators() -> dict:
    """Every estimator of the corpus by name: the two correct controls, then each bug's mutation."""
    out = {name: make() for name, make in evidence_bugs.CONTROLS.items()}
    out.update({bug.name: bug.estimator() for bug in evidence_bugs.BUGS})
    return out


def check_rows(path: Path, num_datasets: int) -> None:
    """Per data set: bdmc's check runs once, every estimator's value judged against them."""
    commit, clean = tree_state()
    done = {r["seed"] for r in load_rows(path)}
    model = evidence_bugs.program_model()
    tools = estimators()
    for seed in range(num_datasets):
        if seed in done:
            continue
        data, latent = bdmc.simulate(jax.random.fold_in(KEY, seed), model)
        load_before, began = os.getloadavg()[0], time.perf_counter()
        values = {}
        for name, run in tools.items():
            t0 = time.perf_counter()
            value, stderr = run(data, seed=seed)
            values[name] = {"value": value, "stderr": stderr, "seconds": time.perf_counter() - t0}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = bdmc.check_estimate(jax.random.fold_in(jax.random.fold_in(KEY, seed), 2), model, data,
                                       values["laplace-is"]["value"], exact_latent=latent, level=LEVEL,
                                       progress=False)
        for v in values.values():
            stated = v["stderr"] if np.isfinite(v["stderr"]) and v["stderr"] > 0 else None
            judged = base.for_value(v["value"], stderr=stated) if np.isfinite(v["value"]) else None
            v.update({"verdict": judged.verdict if judged else "non-finite", "tier": judged.tier if judged else None,
                      "error": v["value"] - base.estimate})
        row = {"seed": seed, "data": evidence_bugs.numpy_data(data)["y"].tolist(), "estimate": base.estimate,
               "certified_lower": base.certified_lower, "certified_upper": base.certified_upper,
               "calibrated_lower": base.calibrated_lower, "calibrated_upper": base.calibrated_upper,
               "tools": values, "level": LEVEL, "seconds": time.perf_counter() - began, "commit": commit,
               "clean_tree": clean, "time": time.time(), "load_before": load_before,
               "load_after": os.getloadavg()[0]}
        append_row(path, row)
        print(f"data set {seed:3d}: bdmc {base.estimate:9.3f} in [{base.certified_lower:.3f}, "
              f"{base.certified_upper:.3f}]  " + "  ".join(f"{k} {v['error']:+.2f} {v['verdict']}"
                                                        for k, v in values.items()), flush=True)


def calibrate_rows(path: Path, num_datasets: int) -> None:
    """Every estimator through ``bdmc.calibrate_estimator`` on the same data sets (one truth per data set, shared
    by every estimator through the rows file)."""
    commit, clean = tree_state()
    model = evidence_bugs.program_model()
    for name, run in estimators().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = bdmc.calibrate_estimator(KEY, model, run, num_datasets=num_datasets, label=name, level=LEVEL,
                                              path=path, progress=False)
        print(f"calibrate {name:22s}: {result.verdict} (bias {result.bias:+.3f}, {len(result.rows)} data sets)",
              flush=True)
    # The library's rows name no commit: stamp the new ones, as every benchmark row is.
    stamped = [r if "commit" in r else {**r, "commit": commit, "clean_tree": clean, "time": time.time(),
                                        "load": os.getloadavg()[0]} for r in load_rows(path)]
    write_text(path, "".join(json.dumps(r) + "\n" for r in stamped))


def compare_rows(path: Path) -> None:
    """``bdmc.compare`` of each program bug's program against the correct program, on data set 0."""
    commit, clean = tree_state()
    done = {r["bug"] for r in load_rows(path)}
    correct = evidence_bugs.program_model()
    data, _ = bdmc.simulate(jax.random.fold_in(KEY, 0), correct)
    for bug in evidence_bugs.BUGS:
        if bug.kind != "program" or bug.name in done:
            continue
        began, load = time.perf_counter(), os.getloadavg()[0]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = bdmc.compare(jax.random.fold_in(KEY, 3), evidence_bugs.program_model(bug.program), correct,
                                      data, level=LEVEL, names=(bug.name, "correct"), progress=False)
            outcome = {"refused": "", "lower": result.lower, "upper": result.upper, "estimate": result.estimate}
        except bdmc.BDMCError as err:
            outcome = {"refused": f"{type(err).__name__}: {err}"}
        row = {"bug": bug.name, **outcome, "seconds": time.perf_counter() - began, "commit": commit,
               "clean_tree": clean, "time": time.time(), "load_before": load, "load_after": os.getloadavg()[0]}
        append_row(path, row)
        print(f"compare {bug.name}: {outcome}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=50)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("evidence_bug_corpus")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    check_rows(args.out / "check_rows.jsonl", args.datasets)
    calibrate_rows(args.out / "calibrate_rows.jsonl", args.datasets)
    compare_rows(args.out / "compare_rows.jsonl")
    write_folder("evidence_bug_corpus", written_to=args.out)


if __name__ == "__main__":
    main()
