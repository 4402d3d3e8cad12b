"""The values of the bracketing pages other than README.md, each rendered from the JSON beside it:
``mixture_table2[_<prior>].md`` (``benchmarks/bracketing_mixture.py``), ``mixture_bdmc_k3_n<n>.md``
(``benchmarks/bracketing_bdmc.py``) and ``regression_table1.md`` (``benchmarks/bracketing_regression.py``).

Names: ``p_<page>_<value>`` with ``<page>`` the page's stem made an identifier (``p_mixture_table2_dir1_sym``,
``p_mixture_bdmc_k3_n60_bounds``, ``p_regression_table1_table``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

NAMES = ["U3", "U2", "U1", "L1", "L2", "L3", "L4"]
BRACKETS = ("U1_sym", "L1_sym", "U1_paper", "L1_paper", "U1_crossfit_unsym")


def _ident(stem: str) -> str:
    return "p_" + re.sub(r"[^A-Za-z0-9_]", "_", stem)


def _mixture(info: dict) -> dict:
    """One prior's Table 2: each bound per k for both variants of q, and the summary per k."""
    rows = sorted(info["rows"], key=lambda r: r["k"])
    found = {"seconds": info["seconds"], "settings": str(info["settings"])}
    if "prior" in info["settings"]:
        found |= {"prior": info["settings"]["prior"], "prior_values": str(info["settings"]["prior_values"])}
    for variant in ("sym", "paper"):
        lines = ["| k | " + " | ".join(NAMES) + " |", "|---" * (len(NAMES) + 1) + "|"]
        for r in rows:
            cells = (f"{r[n + '_' + variant]:.1f} ± {r[n + '_' + variant + '_sd']:.2f}" for n in NAMES)
            lines.append(f"| {r['k']} | " + " | ".join(cells) + " |")
        found[variant] = "\n".join(lines)
    lines = ["| k | U1_sym - L1_sym | U1_paper - L1_paper | L1_sym - L1_paper | log k! | U1_paper < L1_sym (reps) |"
             " label-switch fraction | seconds |", "|---" * 8 + "|"]
    for r in rows:
        lines.append(f"| {r['k']} | {r['U1_sym'] - r['L1_sym']:.2f} | {r['U1_paper'] - r['L1_paper']:.2f} | "
                     f"{r['L1_sym'] - r['L1_paper']:.2f} | {math.lgamma(r['k'] + 1):.2f} | "
                     f"{r['per_rep_U1_paper<L1_sym']}/{r['reps']} | {r['switch_fraction']:.3f} | {r['seconds']:.0f} |")
    found["summary"] = "\n".join(lines)
    return found


def _bdmc(info: dict) -> dict:
    """One data set's brackets against its BDMC sandwich, and the sandwich's rows."""
    sandwich = info["sandwich"]
    lower, upper = sandwich["lower"], sandwich["upper"]
    mid = 0.5 * (lower + upper)
    bounds = ["| bound | mean ± sd over runs | minus sandwich midpoint |", "|---|---|---|"]
    for c in BRACKETS:
        mean, sd = info[c + "_mean"], info[c + "_sd"]
        bounds.append(f"| {c} | {mean:.2f} ± {sd:.2f} | {mean - mid:+.2f} |")
    rows = ["| T | direction | value ± se | seconds |", "|---|---|---|---|"]
    rows += [f"| {int(r['num_steps'])} | {r['direction']} | {r['value']:.2f} ± {r['stderr']:.2f} | {r['seconds']:.0f} |"
             for r in sandwich["rows"]]
    s = info["settings"]
    return {"n": s["n"], "k": s["k"], "seed": info["data_seed"], "sizes": str(info["cluster_sizes"]),
            "steps": int(max(r["num_steps"] for r in sandwich["rows"])), "lower": lower, "upper": upper,
            "chains": s["chains"], "log_k_factorial": info["log_k_factorial"], "bounds": "\n".join(bounds),
            "sandwich": "\n".join(rows)}


def _regression(info: dict) -> dict:
    """Table 1 on one data set (every bound per polynomial order) and the pass over many data sets."""
    table = ["| order | U2 | U1 | ML | L1 | L2 | L3 | L4 |", "|---|---|---|---|---|---|---|---|"]
    for r in info["rows"]:
        def cell(n, r=r):
            return f"{r[n]:.4f} ± {r[n + '_sd']:.4f}"
        table.append(f"| {r['order']} | {cell('U2')} | {cell('U1')} | {r['ML']:.4f} | {cell('L1')} | {cell('L2')} | "
                     f"{cell('L3')} | {cell('L4')} |")
    sets = ["| order | data sets | bounds > 3 se on the wrong side of ML | U1 < U2 | L2 > L3 | U2-ML | U1-ML "
            "| ML-L1 | ML-L2 | ML-L3 | ML-L4 |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in info["datasets"]:
        sets.append(f"| {r['order']} | {r['datasets']} | {r['U_below_ML'] + r['L_above_ML']} | "
                    f"{r['U1_tighter_than_U2']} | {r['L2_tighter_than_L3']} | "
                    f"{r['mean_U2_minus_ML']:.4f} | {r['mean_U1_minus_ML']:.4f} | {r['mean_ML_minus_L1']:.4f} | "
                    f"{r['mean_ML_minus_L2']:.4f} | {r['mean_ML_minus_L3']:.4f} | {r['mean_ML_minus_L4']:.4f} |")
    return {"table": "\n".join(table), "datasets": "\n".join(sets), "seconds": info["seconds"],
            "datasets_per_order": info.get("datasets_settings", info["settings"])["datasets"]}


def values(folder: Path) -> dict:
    """Every value of the folder's Table 1, Table 2 and BDMC-comparison pages, from their JSON files."""
    folder = Path(folder)
    found = {}
    for path in sorted(folder.glob("*.json")):
        if path.stem.startswith("mixture_table2"):
            page = _mixture(json.loads(path.read_text()))
        elif path.stem.startswith("mixture_bdmc_"):
            page = _bdmc(json.loads(path.read_text()))
        elif path.stem == "regression_table1":
            page = _regression(json.loads(path.read_text()))
        else:
            continue
        found |= {f"{_ident(path.stem)}_{k}": v for k, v in page.items()}
    return found
