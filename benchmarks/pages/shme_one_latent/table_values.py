"""The values of ``shme_one_latent``'s table: SHME from one exact latent, per way of running it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows


def ways_table(stored: list[dict], level: float) -> str:
    """One line per way (in the rows' order): the ratio's mean, d's spread, the first block, the alarm's rate."""
    lines = ["| SHME | data sets | E[p(y)/Z_hat] (1 if unbiased for 1/Z) | mean d | sd of d across data sets | "
             "median stderr | lowest d | d < -3 stderr | first block (median, max cases) | "
             "its posterior spread (median, max nats) | rounds at the posterior | "
             f"alarm at {level} (95% interval) | median seconds |",
             "|---" * 13 + "|"]
    for way in dict.fromkeys(r["way"] for r in stored):
        cell = [r for r in stored if r["way"] == way]
        d = np.array([r["d"] for r in cell])
        se = np.array([r["stderr"] for r in cell])
        ratio = np.exp(-d)
        fired = sum(r["alarm"] for r in cell)
        lo, hi = clopper_pearson(fired, len(cell))
        blocks = np.array([r["first_block"] for r in cell])
        spread = np.array([r["first_block_spread"] for r in cell])
        rounds = np.array([r["disperse_steps"] for r in cell])
        lines.append(
            f"| {way} | {len(cell)} | {ratio.mean():.3f} +- {ratio.std(ddof=1) / np.sqrt(len(cell)):.3f} | "
            f"{d.mean():+.3f} | {d.std(ddof=1):.3f} | {np.median(se):.3f} | {d.min():+.2f} | "
            f"{int(np.sum(d < -3 * se))}/{len(cell)} | {int(np.median(blocks))}, {blocks.max()} | "
            f"{np.median(spread):.2f}, {spread.max():.2f} | {int(np.median(rounds))} | "
            f"{fired}/{len(cell)} ({lo:.3f}-{hi:.3f}) | {np.median([r['seconds'] for r in cell]):.2f} |")
    return "\n".join(lines)


def blocks_table(stored: list[dict]) -> str:
    """Per block size b: the posterior spread of the block's log-likelihood over the data sets."""
    per_seed = {r["seed"]: r["block_spreads"] for r in stored}
    lines = ["| b | median sd (nats) | 90th percentile |", "|---|---|---|"]
    for b in next(iter(per_seed.values())):
        spreads = np.array([s[b] for s in per_seed.values()])
        lines.append(f"| {b} | {np.median(spreads):.2f} | {np.quantile(spreads, 0.9):.2f} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """The settings every row records (from the first), the data sets, both tables and the rows' commits."""
    stored = rows(folder)
    first = stored[0]
    return {"data_sets": len({r["seed"] for r in stored}), "runs": first["num_runs"],
            "particles": first["num_particles"], "moves": first["num_moves"],
            "ways_table": ways_table(stored, first["level"]), "blocks_table": blocks_table(stored),
            "commits": ", ".join(sorted({r["commit"] for r in stored})),
            "clean_trees": all(r["clean_tree"] for r in stored)}
