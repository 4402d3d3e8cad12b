"""Paired per-image comparison of two `bdmc generative` runs of the same models, data and budgets.

    python benchmarks/generative_paired.py benchmarks/results/generative/run-gan \
        benchmarks/results/generative/run-gan-engine

For every unit (split, estimator, budget) both runs hold, prints each run's mean over images and the mean of
the per-image differences (second minus first) with its standard error across images: two runs that differ
only in their random keys should differ by a few standard errors at most; estimators that use no randomness
(KDE) should agree exactly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def load(folder: Path) -> dict:
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    return {(r.get("model"), r.get("split"), r.get("estimator"), r.get("budget")): r for r in rows}


def main(first: str, second: str) -> None:
    old, new = load(Path(first)), load(Path(second))
    for key in sorted(set(old) & set(new), key=str):
        for field in ("per_image", "gap", "means"):
            a = np.array(old[key].get(field) or [], float)
            b = np.array(new[key].get(field) or [], float)
            if not a.size or a.size != b.size:
                continue
            d = b - a
            se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else 0.0
            print(f"{key[0]} {key[1]:6s} {key[2]:13s} T={key[3]:6} {field:9s} first {a.mean():9.2f}  second "
                  f"{b.mean():9.2f}  paired second-first {d.mean():+8.3f} ± {se:.3f}  max|d| {np.abs(d).max():.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
