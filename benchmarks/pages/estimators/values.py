"""The values of ``estimators/estimators.md``: its tables, from the rows of ``bench-<model>/`` (``bdmc bench``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

MODELS = {"clustering": "clustering", "low-rank": "low_rank", "binary": "binary"}


def _model_values(bench: Path, prefix: str) -> dict:
    """One model's ground truth and its table: each estimator at its largest knob, and its first knob under 10 nats."""
    rows = pd.read_csv(bench / "bench.csv")
    summary = pd.read_csv(bench / "summary.csv")
    lines = ["| estimator | largest knob | mean error there (nats) | RMSE there (nats) | s per trial (batch / 25) | "
             "first RMSE < 10 nats (s per trial) |", "|---|---|---|---|---|---|"]
    for estimator in rows["estimator"].unique():
        mine = rows[rows["estimator"] == estimator]
        top = mine.loc[mine["knob"].idxmax()]
        hit = summary[(summary["estimator"] == estimator) & (summary["threshold"] == 10.0)]
        first = ("not reached" if hit.empty or not bool(hit["reached"].iloc[0]) else
                 f"{hit['seconds'].iloc[0]:.3g} s (knob {int(hit['knob'].iloc[0])}, RMSE {hit['rmse'].iloc[0]:.1f})")
        lines.append(f"| {top['label']} | {int(top['knob'])} | {top['bias']:+.1f} | {top['rmse']:.1f} | "
                     f"{top['seconds']:.3g} | {first} |")
    return {f"{prefix}_truth": float(rows["truth"].iloc[-1]), f"{prefix}_table": "\n".join(lines)}


def values(folder: Path) -> dict:
    """The ground truth and table of each model, ``<model>_truth`` and ``<model>_table`` (``low_rank_...``)."""
    found = {}
    for model, prefix in MODELS.items():
        found |= _model_values(Path(folder).parent / f"bench-{model}", prefix)
    return found
