"""The values of ``audit_calibration/README.md`` about what the rows cover and where the fails came from.

Which programs (model classes) the stored audits cover and which of ``calibration_programs.py``'s they leave out;
the headline counts; and the fails by the machine their rows record (with its package versions where the row
names them), beside the chance of so many fails in one cell at the audit's level. Everything from ``rows.jsonl``
and from ``calibration_programs.py``'s list of programs and its docstring (read, not imported with any PPL).
"""

from __future__ import annotations

import ast
import re
from math import comb
from pathlib import Path

from pages.tables import shared_rows
from scipy import stats

PROGRAMS_FILE = Path(__file__).resolve().parents[2] / "calibration_programs.py"
LABELS = {"numpyro-nuts": "NumPyro's NUTS", "pymc-nuts": "PyMC's NUTS", "stan-nuts": "Stan's NUTS", "hmc": "bdmc's HMC"}
FIRST = ("regression", "hierarchical", "logistic")  # the programs of the first runs, 67 seeds each
WORDS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 12: "twelve"}


def _rows(folder: Path) -> list[dict]:
    return shared_rows(folder)


def _programs() -> tuple[list[str], dict[str, str], dict[str, str]]:
    """``calibration_programs.py``'s programs, their model classes and their docstring descriptions."""
    tree = ast.parse(PROGRAMS_FILE.read_text())
    found = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("PROGRAMS", "CLASSES"):
            found[target.id] = ast.literal_eval(node.value)
    doc = ast.get_docstring(tree)
    described = {m["name"]: re.sub(r"\s+", " ", m["text"]).strip().rstrip(";.").replace("``", "`")
                 for m in re.finditer(r"^- ``(?P<name>\w+)``: (?P<text>.*?)(?=^- ``|^\s*$)", doc + "\n\n",
                                      re.MULTILINE | re.DOTALL)}
    return list(found["PROGRAMS"]), found["CLASSES"], described


def _word(n: int) -> str:
    return WORDS.get(n, str(n))


def machine_of(row: dict) -> str:
    """The machine a row names, in the page's words."""
    machine = row.get("machine")
    if machine is None:
        return "no machine recorded"
    if "lent machine" in machine:
        return "the lent machine"
    return f"`{machine}`"


def versions_of(machine: str) -> str | None:
    found = re.search(r"\((jax [^)]*)\)", machine)
    return found.group(1) if found else None


def coverage(folder: Path) -> dict:
    rows = _rows(folder)
    programs, classes, described = _programs()
    covered = [p for p in programs if any(r["program"] == p for r in rows)]
    missing = [p for p in programs if p not in covered]
    lines = [f"- `{p}` [{classes[p]}]: {described.get(p, 'no description in calibration_programs.py')}"
             for p in covered]
    left = "; ".join(f"`{p}`, {classes[p]}" for p in missing)
    not_covered = (f"`calibration_programs.py` also holds {_word(len(missing))} programs that no stored row audits: "
                   f"{left}. These rows say nothing about the audit's false-fail rate on those model classes."
                   if missing else "Every program of `calibration_programs.py` has stored audits.")
    return {"covered_count": _word(len(covered)).capitalize(), "covered_list": "\n".join(lines),
            "not_covered": not_covered}


def headline(folder: Path) -> dict:
    rows = [r for r in _rows(folder) if r["program"] in FIRST]
    per = {s: sum(r["sampler"] == s for r in rows) for s in dict.fromkeys(r["sampler"] for r in rows)}
    cells = {(r["sampler"], r["program"]) for r in rows}
    seeds = {len({r["seed"] for r in rows if (r["sampler"], r["program"]) == c}) for c in cells}
    programs = {len({p for s, p in cells if s == sampler}) for sampler in per}
    counts = sorted(set(per.values()))
    his, los = [], []
    for sampler, n in per.items():
        fails = sum(r["verdict"] == "fail" for r in rows if r["sampler"] == sampler)
        los.append(0.0 if fails == 0 else stats.beta.ppf(0.025, fails, n - fails + 1))
        his.append(1.0 if fails == n else stats.beta.ppf(0.975, fails + 1, n - fails))
    every = all(lo <= 0.01 for lo in los)
    return {"per_sampler": " to ".join(map(str, counts)),
            "seeds_per_cell": " to ".join(map(str, sorted(seeds))),
            "programs_per_sampler": " to ".join(map(str, sorted(programs))), "cells": _word(len(cells)),
            "consistent": ("every rate consistent with the level 0.01" if every else
                           "not every rate consistent with the level 0.01"),
            "consistent_sentence": ("Every sampler's 95% interval reaches down to 0.01, so every rate is consistent "
                                    "with the stated level" if every else
                                    "Not every sampler's 95% interval reaches down to 0.01"),
            "hi_min": min(his), "hi_max": max(his)}


def added(folder: Path) -> dict:
    """The model classes added after the first runs: their audits per cell, fails and inconclusives."""
    _, classes, _ = _programs()
    rows = [r for r in _rows(folder) if r["program"] not in FIRST]
    cells = {(r["sampler"], r["program"]) for r in rows}
    per_cell = {c: sum((r["sampler"], r["program"]) == c for r in rows) for c in cells}
    counts = sorted(set(per_cell.values()))
    samplers = list(dict.fromkeys(r["sampler"] for r in rows))
    spans = {s: sorted(n for (t, _), n in per_cell.items() if t == s) for s in samplers}
    complete = [LABELS[s] for s in samplers if spans[s][0] >= 100]
    funnel = [r for r in rows if r["program"] == "funnel"]
    inconclusive = [r for r in rows if r["verdict"] == "inconclusive"]
    fails = [r for r in rows if r["verdict"] == "fail"]
    return {"added_audits": len(rows), "added_fails": len(fails),
            "added_fail_list": "; ".join(_described_fail(r) for r in fails) or "none",
            "added_per_cell": (f"{counts[0]} to {counts[-1]}" if len(counts) > 1 else str(counts[0])) if counts
            else "no",
            "added_by_sampler": "; ".join(f"{LABELS[s]} {_span(spans[s])}" for s in samplers) or "none",
            "added_complete": (" and ".join(complete) + (" reaches" if len(complete) == 1 else " reach")
                               if complete else "no sampler reaches"),
            "added_classes": "; ".join(dict.fromkeys(classes[r["program"]] for r in rows)) or "none",
            "added_inconclusive": len(inconclusive),
            "added_inconclusive_funnel": sum(r["program"] == "funnel" for r in inconclusive),
            "funnel_audits": len(funnel),
            "added_commits": ", ".join(sorted({r["commit"] for r in rows})) or "none",
            "added_from": min(r["date"] for r in rows), "added_to": max(r["date"] for r in rows),
            "added_load": f"{min(r['load_before'] for r in rows):.1f} to {max(r['load_before'] for r in rows):.1f}"}


def _described_fail(row: dict) -> str:
    """One fail: the sampler, program and seed, and each failing check with its statistic and level."""
    checks = [f"{name} ({c['statistic'].split(';')[0]}; its level {c['level']:g})"
              for name, c in row["checks"].items() if isinstance(c, dict) and c.get("verdict") == "fail"]
    return f"{LABELS[row['sampler']]} on `{row['program']}`, seed {row['seed']}, by " + " and ".join(checks)


def numpyro_machines(folder: Path) -> dict:
    rows = [r for r in _rows(folder) if r["sampler"] == "numpyro-nuts" and r["program"] in FIRST]
    lent = [r for r in rows if machine_of(r) == "the lent machine"]
    rest = [r for r in rows if machine_of(r) != "the lent machine"]
    fails_lent = [r for r in lent if r["verdict"] == "fail"]
    fails_rest = [r for r in rest if r["verdict"] == "fail"]
    here = [r for r in rest if r.get("machine") is not None]
    k, n, m = len(fails_lent) + len(fails_rest), len(rows), len(lent)
    seeds = sorted({r["seed"] for r in lent})
    # Each fail equally likely in any of the sampler's audits: all of them among the lent machine's.
    chance = comb(m, k) / comb(n, k) if k else 1.0
    versions = sorted({versions_of(r["machine"]) for r in lent} - {None})
    fail_programs = sorted({r["program"] for r in fails_lent + fails_rest})
    regression = [r for r in rows if r["program"] == "regression"]
    reg_fails = sum(r["verdict"] == "fail" for r in regression)
    sbc_fails = sum(r["checks"].get("sbc", {}).get("verdict") == "fail" for r in regression)
    sbc_level = next(r["checks"]["sbc"]["level"] for r in regression if "sbc" in r["checks"])
    sim = [r for r in fails_lent + fails_rest if r["checks"]["simulator-density"]["verdict"] == "fail"]
    sbc_machines = {machine_of(r) for r in fails_lent + fails_rest
                    if r["checks"].get("sbc", {}).get("verdict") == "fail"}
    sbc_where = (f"Every SBC fail of NumPyro's NUTS came on {sbc_machines.pop()}." if len(sbc_machines) == 1 else
                 "NumPyro's NUTS failed SBC on more than one machine." if sbc_machines else "")
    cell_fails: dict[tuple[str, str], int] = {}
    for r in _rows(folder):
        cell = r["sampler"], r["program"]
        cell_fails[cell] = cell_fails.get(cell, 0) + (r["verdict"] == "fail")
    worst = max(cell_fails.values()) == cell_fails.get(("numpyro-nuts", "regression"))
    twins = [t for r in sim for t in _rows(folder) if t["sampler"] != "numpyro-nuts" and t["ppl"] == r["ppl"]
             and (t["program"], t["seed"]) == (r["program"], r["seed"])
             and t["checks"]["simulator-density"]["verdict"] == "fail"]
    return {"np_fails": len(fails_lent) + len(fails_rest), "np_lent_fails": len(fails_lent), "np_lent_audits": m,
            "np_rest_fails": len(fails_rest), "np_rest_audits": len(rest), "np_here_audits": len(here),
            "np_unrecorded_audits": len(rest) - len(here), "np_lent_versions": ", ".join(versions) or "not recorded",
            "np_lent_seeds": f"{seeds[0]} to {seeds[-1]}", "np_all_lent_chance": chance,
            "np_fail_programs": ", ".join(fail_programs), "np_reg_fails": reg_fails,
            "np_reg_audits": len(regression),
            "np_reg_tail": float(stats.binom.sf(reg_fails - 1, len(regression), 0.01)),
            "np_sbc_fails": sbc_fails, "np_sbc_level": sbc_level,
            "np_sbc_tail": float(stats.binom.sf(sbc_fails - 1, len(regression), sbc_level)),
            "np_sim_seeds": ", ".join(str(r["seed"]) for r in sim), "np_sbc_where": sbc_where,
            "np_reg_rank": "the worst" if worst else "one",
            "np_sim_twins": "; ".join(f"{LABELS[t['sampler']]} at seed {t['seed']} on {machine_of(t)}"
                                      for t in twins) or "none"}


def _fail(folder, sampler, check):
    """The one fail of ``sampler`` by ``check`` on the first three programs (the added classes' fails are listed
    by :func:`added`): its row and the check's record."""
    (row,) = [r for r in _rows(folder) if r["sampler"] == sampler and r["verdict"] == "fail"
              and r["program"] in FIRST and r["checks"].get(check, {}).get("verdict") == "fail"]
    return row, row["checks"][check]


def fail_details(folder: Path) -> dict:
    stan, stan_check = _fail(folder, "stan-nuts", "prior-normalization")
    pymc, pymc_check = _fail(folder, "pymc-nuts", "simulator-density")
    hmc_sim, hmc_sim_check = _fail(folder, "hmc", "simulator-density")
    hmc_gw, hmc_gw_check = _fail(folder, "hmc", "geweke")
    statistics = int(re.search(r"over (\d+) statistics", hmc_gw_check["statistic"]).group(1))
    independent = float(stats.norm.ppf((1 + 0.5 ** (1 / statistics)) / 2))
    zs = sorted(r["checks"]["geweke"]["worst_abs_z"] for r in _rows(folder)
                if r["sampler"] == "hmc" and r["checks"].get("geweke", {}).get("worst_abs_z") is not None)
    median = (zs[(len(zs) - 1) // 2] + zs[len(zs) // 2]) / 2
    reading = ("no sign of a test that rejects too often: at most" if median <= independent else
               "above")
    return {"stan_fail_program": stan["program"], "stan_fail_seed": stan["seed"],
            "stan_fail_stat": stan_check["statistic"],
            "pymc_fail_program": pymc["program"], "pymc_fail_seed": pymc["seed"],
            "pymc_sim_tests": int(re.search(r"over (\d+) tests", pymc_check["statistic"]).group(1)),
            "hmc_sim_seed": hmc_sim["seed"], "hmc_sim_p": hmc_sim_check["min_p"],
            "hmc_gw_seed": hmc_gw["seed"], "hmc_gw_statistics": statistics,
            # The median of the largest |z| of that many independent standard normals.
            "geweke_independent_median": independent, "geweke_reading": reading}


def values(folder: Path) -> dict:
    """The page's coverage, headline, NumPyro-by-machine and fail-detail values."""
    return {**coverage(folder), **headline(folder), **added(folder), **numpyro_machines(folder),
            **fail_details(folder)}


def _span(counts) -> str:
    return f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]} to {counts[-1]}"
