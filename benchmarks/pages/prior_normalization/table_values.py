"""The values of ``prior_normalization``'s table: the prior-normalization check on two Stan programs."""

from __future__ import annotations

from pathlib import Path

from pages.tables import rows


def table(stored: list[dict]) -> str:
    """One line per row: the true log integral, the estimate, its intervals and the verdict."""
    lines = ["| program | true log integral | seed | estimate | t-interval | Markov-certified | verdict | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in stored:
        lines.append(f"| {r['program']} | {r['truth']:+.3f} | {r['seed']} | {r['estimate']:+.3f} | "
                     f"[{r['interval'][0]:+.3f}, {r['interval'][1]:+.3f}] | "
                     f"[{r['certified'][0]:+.2f}, {r['certified'][1]:+.2f}] | {r['verdict']} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """The check's settings (every row records them; from the first) and ``table``."""
    stored = rows(folder)
    first = stored[0]
    return {"steps": first["num_steps"], "runs": first["num_runs"], "level": first["level"], "table": table(stored)}
