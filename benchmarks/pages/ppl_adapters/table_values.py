"""The values of ``ppl_adapters``'s table: one model through every PPL adapter, against the built-in one."""

from __future__ import annotations

import json
from pathlib import Path


def table(stored: list[dict]) -> str:
    """One line per implementation: both bounds, their mean against the closed form and the built-in, the cost."""
    base = next(r for r in stored if r["implementation"] == "built-in")
    lines = ["| implementation | forward (lower) | reverse (upper) | ground truth (mean) | truth - closed form | "
             "truth - built-in | s per 1,000 chain-steps | ratio to built-in | compile s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in stored:
        lines.append(
            f"| {r['implementation']} | {r['forward']:.3f} ± {r['forward_se']:.3f} | {r['reverse']:.3f} ± "
            f"{r['reverse_se']:.3f} | {r['truth']:.3f} | {r['truth'] - r['exact']:+.3f} | "
            f"{r['truth'] - base['truth']:+.3f} | {r['seconds_per_1000_chain_steps']:.4f} | "
            f"{r['seconds_per_1000_chain_steps'] / base['seconds_per_1000_chain_steps']:.1f}x | "
            f"{r['compile_seconds']:.1f} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``exact`` (the closed-form log p(y)) and ``table``, from ``rows.json``."""
    stored = json.loads((Path(folder) / "rows.json").read_text())
    return {"exact": stored[0]["exact"], "table": table(stored)}
