"""The values of ``check_estimate_level``'s table: false verdicts on exact log Z values and power by tier, for the
check before its tiers (``rows_before.jsonl``) and after (``rows.jsonl``)."""

from __future__ import annotations

from pathlib import Path

from pages.tables import clopper_pearson, rows

AFTER_SHIFTS = ("-6", "-3", "-2", "-1", "-0.5", "+0.5", "+1", "+2", "+3", "+6")
BEFORE_SHIFTS = ("-6", "-3", "-1", "+1", "+3", "+6")


def _called(entry, shift: str) -> bool:
    """Whether a shifted value was called wrong in the right direction (old rows store the verdict alone)."""
    verdict = entry if isinstance(entry, str) else entry["verdict"]
    return verdict == ("too high" if shift.startswith("+") else "too low")


def _label(name: str, steps: int) -> str:
    return name if "T =" in name else f"{name}, T = {steps}"


def _rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} ({lo:.4f}-{hi:.4f})"


def after_table(stored: list[dict]) -> list[str]:
    lines = ["| configuration | seeds | false verdicts (95% interval) | of them calibrated | "
             + " | ".join(f"{s} nats" for s in AFTER_SHIFTS) + " | median certified lower slack | "
             "median calibrated width |", "|---" * (6 + len(AFTER_SHIFTS)) + "|"]
    for name in dict.fromkeys(r["model"] for r in stored):
        cell = [r for r in stored if r["model"] == name]
        wrong = [r for r in cell if r["verdict"] != "consistent"]
        flagged = []
        for s in AFTER_SHIFTS:
            hits = [r["shifted"][s] for r in cell if _called(r["shifted"][s], s)]
            certified = sum(h["tier"] == "certified" for h in hits)
            flagged.append(f"{len(hits)} ({certified} certified)")
        slack = sorted(r["exact"] - r["certified_lower"] for r in cell)
        width = sorted(r["calibrated_upper"] - r["calibrated_lower"] for r in cell)
        lines.append(f"| {_label(name, cell[0]['num_steps'])} | {len(cell)} | {_rate(len(wrong), len(cell))} | "
                     f"{sum(r['tier'] == 'calibrated' for r in wrong)} | " + " | ".join(flagged)
                     + f" | {slack[len(slack) // 2]:.2f} | {width[len(width) // 2]:.2f} |")
    return lines


def before_table(stored: list[dict]) -> list[str]:
    lines = ["| configuration | seeds | false verdicts (95% interval) | "
             + " | ".join(f"{s} nats" for s in BEFORE_SHIFTS) + " | median certified width |",
             "|---" * (4 + len(BEFORE_SHIFTS)) + "|"]
    for name in dict.fromkeys(r["model"] for r in stored):
        cell = [r for r in stored if r["model"] == name]
        wrong = sum(r["verdict"] != "consistent" for r in cell)
        flagged = [sum(_called(r["shifted"][s], s) for r in cell) for s in BEFORE_SHIFTS]
        widths = sorted(r["certified_upper"] - r["certified_lower"] for r in cell)
        lines.append(f"| {_label(name, cell[0]['num_steps'])} | {len(cell)} | {_rate(wrong, len(cell))} | "
                     + " | ".join(str(f) for f in flagged) + f" | {widths[len(widths) // 2]:.2f} |")
    return lines


def table(after: list[dict], before: list[dict]) -> str:
    first = after[0]
    return "\n".join([
        f"{len(after)} rows; produced by `python benchmarks/check_estimate_level.py --render` from `rows.jsonl` "
        f"and `rows_before.jsonl`. Level {first['level']}; AIS with each model's own kernel, {first['num_runs']} "
        "runs per direction.", "",
        "**After** (the certified and the calibrated tier): a shifted value's count is how often it was called "
        "wrong in its direction, and in brackets how many of those calls were the certified tier's.", "",
        *after_table(after), "",
        f"**Before** (Markov's inequality on each pooled side at level / 2, {before[0]['num_runs']} runs per "
        "direction; a shifted value's count is how often it was called wrong in its direction).", "",
        *before_table(before), "",
        f"Commits: after {', '.join(sorted({r['commit'] for r in after}))}, before "
        f"{', '.join(sorted({r['commit'] for r in before}))}; clean trees: "
        f"{all(r['clean_tree'] for r in after + before)}."])


def values(folder: Path) -> dict:
    """``table``: the Markdown of ``table.md``."""
    return {"table": table(rows(folder), rows(folder, "rows_before.jsonl"))}
