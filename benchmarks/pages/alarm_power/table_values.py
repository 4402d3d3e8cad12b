"""The values of ``alarm_power``'s table: per model and variance factor, how often the alarm fired."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pages.tables import clopper_pearson, rows


def table(stored: list[dict]) -> str:
    """Per (model, factor): runs, alarms with a 95% interval on the firing rate, and the pooled crossings."""
    frame = pd.DataFrame([{"model": r["model"], "factor": r["factor"], "fired": r["fired"],
                           "crossing": r["pooled_crossing"]} for r in stored])
    summary = frame.groupby(["model", "factor"]).agg(runs=("fired", "size"), fired=("fired", "sum"),
                                                     largest_crossing=("crossing", "max"),
                                                     median_crossing=("crossing", "median")).reset_index()
    lines = ["| model | variance factor | runs | alarms at 1% | 95% interval | median pooled crossing (nats) | "
             "largest (nats) |",
             "|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        low, high = clopper_pearson(int(r.fired), int(r.runs))
        lines.append(f"| {r.model} | {r.factor:g} | {r.runs} | {r.fired} | {low:.2f} to {high:.2f} | "
                     f"{r.median_crossing:+.2f} | {r.largest_crossing:+.2f} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown table of ``table.md``."""
    return {"table": table(rows(folder))}
