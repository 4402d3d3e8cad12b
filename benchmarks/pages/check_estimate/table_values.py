"""The values of ``check_estimate``'s table: other tools' log Z values judged by ``bdmc.check_estimate``."""

from __future__ import annotations

from pathlib import Path

from pages.tables import rows


def table(stored: list[dict]) -> str:
    """One line per (problem, config): the certified interval, the exact value, each value's error and verdict."""
    lines = ["| problem | bdmc's certified interval | exact | config | values | errors | verdicts | wrong |",
             "|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["problem"] for r in stored):
        for config in dict.fromkeys(r["config"] for r in stored if r["problem"] == name):
            cell = [r for r in stored if r["problem"] == name and r["config"] == config]
            first = cell[0]
            hi = f"{first['certified_upper']:.2f}" if first["two_sided"] else "(one-sided)"
            verdicts = {v: sum(r["verdict"] == v for r in cell) for v in dict.fromkeys(r["verdict"] for r in cell)}
            lines.append(f"| {name} | [{first['certified_lower']:.2f}, {hi}] | {first['exact']:.2f} | {config} | "
                         f"{', '.join(format(r['value'], '.2f') for r in cell)} | "
                         f"{', '.join(format(r['error'], '+.2f') for r in cell)} | "
                         f"{', '.join(f'{k} {v}' for k, v in verdicts.items())} | "
                         f"{sum(r['wrong_verdict'] for r in cell)} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``values_judged`` (rows stored) and ``table`` (per problem and config)."""
    stored = rows(folder)
    return {"values_judged": len(stored), "table": table(stored)}
