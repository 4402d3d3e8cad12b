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
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402

bdmc.enable_x64()

OUT = HERE / "results" / "evidence_bug_corpus"
LEVEL = 0.01


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
        data, latent = bdmc.simulate(jax.random.key(seed), model)
        load_before, began = os.getloadavg()[0], time.perf_counter()
        values = {}
        for name, run in tools.items():
            t0 = time.perf_counter()
            value, stderr = run(data, seed=seed)
            values[name] = {"value": value, "stderr": stderr, "seconds": time.perf_counter() - t0}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = bdmc.check_estimate(jax.random.fold_in(jax.random.key(seed), 1), model, data,
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


if __name__ == "__main__":
    main()
