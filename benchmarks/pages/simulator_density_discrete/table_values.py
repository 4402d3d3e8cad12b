"""The values of ``simulator_density_discrete``'s table: ``simulator_density`` on discrete families, per PPL."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pages.tables import clopper_pearson, rows

VARIANTS = ("correct", "wrong rate", "wrong rate / 10")
TENTH = "wrong rate / 10"


def _interval(k, n):
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:.3f} ({lo:.3f}-{hi:.3f})"


def _sizes_text(stored) -> str:
    """The sizes of the rows, and which PPLs ran at each (the defaults 64 x 64 unless reduced)."""
    by_size: dict[tuple, list] = {}
    for r in stored:
        if "num_latents" in r:
            by_size.setdefault((r["num_latents"], r["num_data"]), [])
            if r["ppl"] not in by_size[(r["num_latents"], r["num_data"])]:
                by_size[(r["num_latents"], r["num_data"])].append(r["ppl"])
    if len(by_size) == 1:
        ((a, b),) = by_size
        return f"num_latents = {a}, num_data = {b}"
    return "; ".join(f"num_latents = {a}, num_data = {b} ({', '.join(ppls)})"
                     for (a, b), ppls in sorted(by_size.items(), reverse=True))


def _fired_summary(stored, top=3) -> str:
    counts = Counter(t.split(" (case ")[0] + (" (a case)" if " (case " in t else "") for r in stored
                     for t in r.get("fired", []))
    return "; ".join(f"{t} x{n}" for t, n in counts.most_common(top)) or "-"


def table(stored: list[dict]) -> str:
    """One line per (PPL, family): false alarms on the correct program, catches of each wrong simulator, time."""
    lines = ["| PPL | family | correct seeds | false alarms | rate (95% interval), level 0.01 | tests fired on "
             "correct | wrong simulator | caught | power (95% interval) | a tenth of the error | caught | "
             "power (95% interval) | median s per call (first call, compiling) | not checked |", "|---" * 14 + "|"]
    for ppl, family in dict.fromkeys((r["ppl"], r["family"]) for r in stored):
        cell = [r for r in stored if (r["ppl"], r["family"]) == (ppl, family)]
        refused = [r for r in cell if r["verdict"] == "refused"]
        errors = [r for r in cell if r["verdict"] == "error"]
        ok = [r for r in cell if r["verdict"] in ("consistent", "inconsistent")]
        if refused and not ok:
            lines.append(f"| {ppl} | {family} | refused by the adapter: {refused[0]['error'][:200]} |" + " |" * 11)
            continue
        by = {v: [r for r in ok if r["variant"] == v] for v in VARIANTS}
        flagged = {v: sum(r["verdict"] == "inconsistent" for r in by[v]) for v in VARIANTS}
        # what the wrong simulator got wrong, as its rows record it
        wrong = {v: next((r["wrong"] for r in cell if r["variant"] == v), "-") for v in VARIANTS}
        rate = {v: _interval(flagged[v], len(by[v])) if by[v] else "-" for v in VARIANTS}

        seconds = sorted(r["seconds"] for r in ok if r["seed"] > 0) or [float("nan")]
        first = max((r["seconds"] for r in ok if r["seed"] == 0), default=float("nan"))
        not_checked = sorted({n.split(":")[0] for r in ok for n in r.get("not_checked", [])})
        notes = "; ".join(not_checked) or "-"
        if errors:
            notes += f"; {len(errors)} calls raised ({errors[0]['error'][:120]})"
        if refused:
            notes += f"; refused: {refused[0]['error'][:120]}"
        lines.append(
            f"| {ppl} | {family} | {len(by['correct'])} | {flagged['correct']} | {rate['correct']} | "
            f"{_fired_summary([r for r in by['correct'] if r['verdict'] == 'inconsistent'])} | "
            f"{wrong['wrong rate']} | {flagged['wrong rate']}/{len(by['wrong rate'])} | "
            f"{rate['wrong rate']} | {wrong[TENTH]} | {flagged[TENTH]}/{len(by[TENTH])} | {rate[TENTH]} | "
            f"{seconds[len(seconds) // 2]:.2f} ({first:.0f}) | {notes} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """The rows' count, level, sizes, commits and tree states, and ``table``."""
    stored = rows(folder)
    return {"rows": len(stored), "level": stored[0]["level"], "sizes": _sizes_text(stored), "table": table(stored),
            "commits": ", ".join(sorted({r["commit"] for r in stored})),
            "clean_trees": all(r["clean_tree"] for r in stored),
            "check_files_clean": all(r.get("check_files_clean") for r in stored)}
