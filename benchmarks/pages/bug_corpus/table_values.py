"""The values of ``bug_corpus``'s table: per planted bug, the power of the check that should see it."""

from __future__ import annotations

from pathlib import Path

from bug_corpus.corpus import ADAPTER, BDMC, BUGS, GEWEKE, PRIOR, SBC, SIM
from pages.tables import clopper_pearson, rows

CHECKS = (ADAPTER, SIM, PRIOR, SBC, GEWEKE, BDMC)


def table(stored: list[dict]) -> str:
    """One line per bug of the corpus, then the correct twins' false alarms and the rows' commits."""
    def count(program, variant, check):
        cell = [r for r in stored if r["program"] == program and r["variant"] == variant and check in r["checks"]]
        return sum(r["checks"][check]["verdict"] == "fail" for r in cell), len(cell)

    def fmt(fired, n):
        lo, hi = clopper_pearson(fired, n)
        return f"{fired}/{n} ({lo:.2f}-{hi:.2f})"

    def twin_alarms(program):
        cells = [(c, *count(program, "correct", c)) for c in CHECKS]
        return "; ".join(f"{c} {f}/{n}" for c, f, n in cells if n) or "-"

    def any_fired(program, variant):
        """Seeds where some check fired, over the seeds that ran every set of checks run on this program."""
        mine = [r for r in stored if r["program"] == program and r["variant"] == variant]
        sets = {r.get("set", "sampler-free") for r in mine}
        by_seed = {}
        for r in mine:
            ran, fired = by_seed.get(r["seed"], (set(), False))
            by_seed[r["seed"]] = (ran | {r.get("set", "sampler-free")},
                                  fired or any(c["verdict"] == "fail" for c in r["checks"].values()))
        complete = [fired for ran, fired in by_seed.values() if ran == sets]
        return sum(complete), len(complete)

    lines = [f"{len(stored)} rows; produced by `python benchmarks/bug_corpus/power.py --render` from `rows.jsonl`. "
             "Fired / seeds with its 95% Clopper-Pearson interval; each check at its share of the audit's level "
             "0.01 (`Budget.quick()`); `adapter`: the PPL adapter refused the program on loading; 'any check': the "
             "seeds where at least one check that ran fired.", "",
             "| PPL | bug | check named | its power | other checks that fired | any check | correct twin's false "
             "alarms |",
             "|---|---|---|---|---|---|---|"]
    for b in BUGS:
        named = [f"{c} {fmt(*count(b.key, 'bug', c))}" for c in b.checks if count(b.key, "bug", c)[1]]
        others = [f"{c} {f}/{n}" for c in CHECKS if c not in b.checks
                  for f, n in [count(b.key, "bug", c)] if n and f]
        lines.append(f"| {b.ppl} | {b.bug_class} (`{b.key}`) | {', '.join(b.checks)} | "
                     f"{'; '.join(named) or 'not run'} | {'; '.join(others) or 'none'} | "
                     f"{fmt(*any_fired(b.key, 'bug'))} | {twin_alarms(b.twin)} |")
    fired = [sum(r["checks"][c]["verdict"] == "fail" for r in stored if r["variant"] == "correct" and c in r["checks"])
             for c in CHECKS]
    tried = [sum(c in r["checks"] for r in stored if r["variant"] == "correct") for c in CHECKS]
    twins = sorted({b.twin for b in BUGS})
    lines += ["", f"Correct twins ({len(twins)} programs), all seeds together: "
              + "; ".join(f"{c} {f}/{n}" for c, f, n in zip(CHECKS, fired, tried, strict=True) if n) + "."]
    commits = sorted({r["commit"] for r in stored})
    clean = all(r["clean_tree"] is not False for r in stored)
    lines.append(f"Commits: {', '.join(commits)}; clean trees: {clean}.")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the corpus table of ``table.md``."""
    return {"table": table(rows(folder))}
