"""The values of ``suite_timing/README.md``: one line per stored run of a test suite, from ``rows.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def minutes(seconds: float) -> str:
    """``613`` -> ``10 min 13 s``, as docs/contributing.md and .ci/run write a suite's time."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s"


def latest(stored: list[dict]) -> dict[str, dict]:
    """The last stored green run of each suite (no test failed or erred): what docs/contributing.md and .ci/run
    quote."""
    return {r["suite"]: r for r in stored if not r.get("failed") and not r.get("errors")}


def _count(value) -> str:
    return "not recorded" if value is None else f"{value:,}"


def _flag(value) -> str:
    return {True: "yes", False: "no", None: "not recorded"}[value]


def table(stored: list[dict]) -> str:
    last = {id(r) for r in latest(stored).values()}
    lines = ["| suite | command | tests (passed, skipped, failed, errors) | time | workers | fresh clone, empty caches "
             "| commit | clean tree | date | load | how | quoted by the docs |", "|" + "---|" * 12]
    for r in stored:
        counts = ", ".join(_count(r[k]) for k in ("passed", "skipped", "failed", "errors"))
        load = "not recorded" if r["load"] is None else f"{r['load']:.1f}"
        lines.append(f"| {r['suite']} | `{r['command']}` | {_count(r['tests'])} ({counts}) | {minutes(r['seconds'])} | "
                     f"{r['workers']} | {_flag(r['fresh_clone_empty_caches'])} | {r['commit']} | "
                     f"{_flag(r['clean_tree'])} | {r['date'] or 'not recorded'} | {load} | {r['how']} | "
                     f"{'yes' if id(r) in last else 'no'} |")
    return "\n".join(lines)


def notes(stored: list[dict]) -> str:
    found = [f"- {r['suite']} at {r['commit']}: {r['note']}." for r in stored if r.get("note")]
    return "\n".join(["Notes:", "", *found]) if found else "No run carries a note."


def values(folder: Path) -> dict:
    """``runs`` (rows stored), ``suites`` (how many suites), ``table`` and ``notes``."""
    stored = rows(folder)
    return {"runs": len(stored), "suites": len({r["suite"] for r in stored}), "table": table(stored),
            "notes": notes(stored)}
