"""The values of ``check_estimate_level``'s table: ``check_estimate``'s false verdicts on exact log Z values."""

from __future__ import annotations

from pathlib import Path

from pages.tables import clopper_pearson, rows


def table(stored: list[dict]) -> str:
    """Per model: false verdicts on the exact value, how often a shifted value is flagged, the certified width."""
    first = stored[0]
    shifts = [float(s) for s in first["shifted"]]
    lines = [f"{len(stored)} rows; produced by `python benchmarks/check_estimate_level.py --render` from "
             f"`rows.jsonl`. Level {first['level']}; AIS at T = {first['num_steps']}, {first['num_runs']} runs per "
             "direction.", "",
             "| model | seeds | false verdicts on the exact value | rate (95% interval) | "
             + " | ".join(f"flagged at {s:+g} nats" for s in shifts) + " | median certified width |",
             "|---" * (5 + len(shifts)) + "|"]
    for name in dict.fromkeys(r["model"] for r in stored):
        cell = [r for r in stored if r["model"] == name]
        wrong = sum(r["verdict"] != "consistent" for r in cell)
        lo, hi = clopper_pearson(wrong, len(cell))
        flagged = [sum(r["shifted"][f"{s:+g}"] == ("too high" if s > 0 else "too low") for r in cell)
                   for s in shifts]
        widths = sorted(r["certified_upper"] - r["certified_lower"] for r in cell)
        lines.append(f"| {name} | {len(cell)} | {wrong} | {wrong / len(cell):.3f} ({lo:.4f}-{hi:.4f}) | "
                     + " | ".join(f"{f}/{len(cell)}" for f in flagged) + f" | {widths[len(widths) // 2]:.2f} |")
    lines.append(f"\nCommits: {', '.join(sorted({r['commit'] for r in stored}))}; clean trees: "
                 f"{all(r['clean_tree'] for r in stored)}.")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown of ``table.md`` (the settings, as every row records them, come from the first)."""
    return {"table": table(rows(folder))}
