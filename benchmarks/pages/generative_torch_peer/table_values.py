"""The values of ``generative_torch_peer``'s tables: AIS on a decoder, bdmc against a PyTorch peer.

``table.md`` is rendered from ``rows.jsonl``; ``quiet/table.md`` from ``quiet/rows.jsonl`` (a run on a machine
with nothing else running).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pages.tables import rows


def table(stored: list[dict]) -> str:
    """Per (architecture, T, images, dtype) where both tools ran: their median seconds, compile time and means."""
    lines = ["| architecture | T | images | bdmc s (median) | torch s (median) | torch / bdmc | bdmc compile s | "
             "bdmc mean | torch mean |", "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["architecture"], r["num_steps"], r["images"], r["dtype"]) for r in stored})
    for key in keys:
        sel = [r for r in stored if (r["architecture"], r["num_steps"], r["images"], r["dtype"]) == key]
        b = [r for r in sel if r["tool"] == "bdmc"]
        t = [r for r in sel if r["tool"] == "torch"]
        if not b or not t:
            continue
        arch, steps, n, dtype = key
        bs, ts = np.median([r["seconds"] for r in b]), np.median([r["seconds"] for r in t])
        lines.append(f"| {arch} ({dtype}) | {steps} | {n} | {bs:.2f} | {ts:.2f} | {ts / bs:.1f} | "
                     f"{max(r['compile_seconds'] for r in b):.1f} | {np.mean([r['mean'] for r in b]):.1f} | "
                     f"{np.mean([r['mean'] for r in t]):.1f} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table`` (of ``rows.jsonl``) and ``quiet_table`` (of ``quiet/rows.jsonl``)."""
    folder = Path(folder)
    return {"table": table(rows(folder)), "quiet_table": table(rows(folder / "quiet"))}
