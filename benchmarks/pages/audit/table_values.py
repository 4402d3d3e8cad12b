"""The values of ``audit``'s table: per planted bug, which of the audit's checks fired and how often."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pages.tables import clopper_pearson, rows

CHECKS = ("simulator-density", "sbc", "geweke", "bdmc")
# The table's row order: audit_power.py's BUGS (correct models first, then each kind of bug). A bug the rows hold
# that is not named here follows, in the rows' order.
ORDER = ("correct (LR, Gibbs)", "correct (CG, Gibbs)", "correct (LR, no conditionals, MALA)",
         "correct (LR, NumPyro NUTS)", "kernel conditional variance +10%", "simulator variance x1.1",
         "MVN sampler with transposed eigenvectors", "log-likelihood constant +0.5 per case",
         "log-likelihood noise variance x1.1 (density only)", "NUTS step size x10", "NUTS with 2 warm-up steps")


def first_rows(stored: list[dict]) -> list[dict]:
    """The first row of each (bug, seed): a rerun's duplicate does not count."""
    seen, out = set(), []
    for row in stored:
        if (row["bug"], row["seed"]) not in seen:
            seen.add((row["bug"], row["seed"]))
            out.append(row)
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return f"{np.median(values):.3g}" if values else "-"


def table(stored: list[dict], *, level: float, last_steps: int) -> str:
    """Rows = bugs, columns = checks (``fired / seeds``, median statistic), the audit's failure rate."""
    head = ("| bug | audited sampler | simulator-density | SBC | Geweke | BDMC alarm | B-hat at T = "
            f"{last_steps} (median) | audit fails | 95% CI |")
    lines = [head, "|" + "---|" * 9]
    stat = {"simulator-density": None, "sbc": "min_gamma", "geweke": "worst_abs_z", "bdmc": "crossing"}
    for bug in dict.fromkeys([*ORDER, *(r["bug"] for r in stored)]):
        mine = [r for r in stored if r["bug"] == bug]
        if not mine:
            continue
        cells = []
        for name in CHECKS:
            got = [r["checks"].get(name, {}) for r in mine]
            ran = [g for g in got if g.get("verdict") in ("pass", "fail", "inconclusive")]
            if not ran:
                cells.append("not run")
                continue
            fired = sum(g["verdict"] == "fail" for g in ran)
            unsure = sum(g["verdict"] == "inconclusive" for g in ran)
            key = stat[name] or ("worst_violation" if "worst_violation" in ran[0] else "min_p")
            extra = ""
            if name == "sbc":
                thins = sorted({g.get("thin", 2) for g in ran})  # rows before the pilot existed: thin 2
                ess = _median([g.get('worst_median_ess') for g in ran])
                extra = f", thin {'/'.join(map(str, thins))}, worst ESS {ess}"
            cells.append(f"{'**' if fired else ''}{fired}/{len(ran)}{'**' if fired else ''}"
                         f"{f' (+{unsure} inconclusive)' if unsure else ''} "
                         f"({key.replace('_', ' ')} {_median([g.get(key) for g in ran])}{extra})")
        b_hat = _median([r["checks"].get("bdmc", {}).get("b_hat") for r in mine])
        fails = sum(r["verdict"] == "fail" for r in mine)
        unsure = sum(r["verdict"] == "inconclusive" for r in mine)
        lo, hi = clopper_pearson(fails, len(mine))
        lines.append(f"| {bug} | {mine[0]['sampler']} | " + " | ".join(cells) +
                     f" | {b_hat} | {fails}/{len(mine)}{f' (+{unsure} inconclusive)' if unsure else ''} | "
                     f"[{lo:.2f}, {hi:.2f}] |")
    correct = [r for r in stored if r["kind"] == "correct"]
    if correct:
        fails = sum(r["verdict"] == "fail" for r in correct)
        unsure = sum(r["verdict"] == "inconclusive" for r in correct)
        lo, hi = clopper_pearson(fails, len(correct))
        lines += ["", f"Correct models pooled (the audit's false-alarm rate at level {level:g}): "
                      f"{fails}/{len(correct)} audits fail, 95% Clopper-Pearson interval [{lo:.3f}, {hi:.3f}]; "
                      f"{unsure} inconclusive."]
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the bugs' table of ``table.md``, at the level and budget of ``settings.json``."""
    settings = json.loads((Path(folder) / "settings.json").read_text())
    return {"table": table(first_rows(rows(folder)), level=settings["level"],
                           last_steps=settings["budget"]["sandwich_steps"][-1])}
