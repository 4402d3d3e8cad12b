"""Numbers of evidence.md, recomputed from evidence.csv (tests/test_results_pages.py re-renders the page)."""

import json
from pathlib import Path

import pandas as pd

CENSUS = Path(__file__).resolve().parents[2] / "data" / "posteriordb" / "census.json"


def _table(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "evidence.csv")


def _census() -> dict:
    return {r["posterior"]: r for r in json.loads(CENSUS.read_text())["posteriors"]}


def _ran(table):
    return table[table["lower"].notna()]


def _num(x, fmt=".2f"):
    return "-" if pd.isna(x) else format(float(x), fmt)


def _reason_kind(status: str) -> str:
    return status.split(":")[0].split(" (")[0]


def values(folder: Path) -> dict:
    """Every number and pre-rendered table of evidence.md, from ``folder/evidence.csv`` and the census."""
    table, census = _table(folder), _census()
    ran = _ran(table)
    crossed = ran[ran["status"] == "crossed"]
    ran = ran[ran["status"] != "crossed"]  # no interval: listed apart
    narrow = ran[ran["width"] <= 0.5]
    exact = ran[ran["exact"].notna()]
    with_draws = [n for n, r in census.items() if r["has_reference_draws"]]
    in_46 = table[table["posterior"].isin(with_draws)]
    ran_46 = _ran(in_46)
    rows = ["| posterior | status | lower | upper | width | estimate | exact | lower rule | upper rule | draws "
            "check | rounds | s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in ran.sort_values("posterior").iterrows():
        check = "-" if pd.isna(r["draws_check_passed"]) else ("passed" if bool(r["draws_check_passed"]) else "FAILED")
        rows.append(f"| {r['posterior']} | {r['status']} | {_num(r['lower'])} | {_num(r['upper'])} | "
                    f"{_num(r['width'])} | {_num(r['estimate'])} | {_num(r['exact'])} | {r['lower_rule']} | "
                    f"{r['upper_rule']} | {check} | {int(r['rounds'])} | {_num(r['seconds'], '.0f')} |")
    reasons = table[table["lower"].isna()]["status"].map(_reason_kind).value_counts()
    reason_rows = ["| reason | posteriors | of them with reference draws |", "|---|---|---|"]
    for kind, count in reasons.items():
        names = table[table["lower"].isna() & (table["status"].map(_reason_kind) == kind)]["posterior"]
        reason_rows.append(f"| {kind} | {count} | {sum(n in with_draws for n in names)} |")
    improper = table[table["status"].str.startswith("improper prior")]
    improper_list = ", ".join(f"{p} ({s.split(': ', 1)[1]})" for p, s in zip(improper["posterior"],
                                                                               improper["status"], strict=True))
    held = [f"{r['posterior']} ({r['exact']:.3f} in [{r['lower']:.3f}, {r['upper']:.3f}])"
            for _, r in exact.iterrows() if bool(r["contains_exact"])]
    missed = [r["posterior"] for _, r in exact.iterrows() if not bool(r["contains_exact"])]
    wide = ran[ran["width"] > 0.5]
    reference = ~ran["draws_source"].fillna("").str.contains("NUTS")  # else posteriordb's reference draws
    ran_reference, ran_nuts = ran[reference], ran[~reference]
    settings = json.loads((folder / "evidence_settings.json").read_text())["settings"]
    loads = [r["load"] for r in (json.loads(line) for line in (folder / "evidence.jsonl").read_text().splitlines()
                                 if line.strip()) if r["posterior"] in set(ran["posterior"])]
    return {
        "ev_budget": settings["max_seconds"], "ev_tolerance": settings["tolerance"], "ev_level": settings["level"],
        "ev_load_min": min(loads), "ev_load_max": max(loads),
        "ev_rows": len(table), "ev_ran": len(ran), "ev_narrow": len(narrow),
        "ev_median_seconds": float(ran["seconds"].median()), "ev_max_seconds": float(ran["seconds"].max()),
        "ev_with_draws": len(with_draws), "ev_ran_46": len(ran_46), "ev_narrow_46": int((ran_46["width"] <= 0.5).sum()),
        "ev_improper_46": int(in_46["status"].str.startswith("improper prior").sum()),
        "ev_exact_known": len(exact), "ev_exact_held": len(held), "ev_exact_list": "; ".join(held) or "none",
        "ev_exact_missed": ", ".join(missed) or "none",
        "ev_wide_list": "; ".join(f"{p} ({w:.2f} nats: {n})" for p, w, n in zip(
            wide["posterior"], wide["width"], wide["note"].fillna(""), strict=True)) or "none",
        "ev_ran_reference": len(ran_reference), "ev_narrow_reference": int((ran_reference["width"] <= 0.5).sum()),
        "ev_ran_nuts": len(ran_nuts), "ev_narrow_nuts": int((ran_nuts["width"] <= 0.5).sum()),
        "ev_median_seconds_reference": float(ran_reference["seconds"].median()) if len(ran_reference) else float("nan"),
        "ev_crossed": len(crossed),
        "ev_crossed_list": "; ".join(
            f"{r['posterior']} (lower {r['lower']:.2f} above upper {r['upper']:.2f}; draws: {r['draws_source']}; "
            f"their check {'passed' if bool(r['draws_check_passed']) else 'FAILED'})" for _, r in crossed.iterrows())
        or "none",
        "ev_table": "\n".join(rows), "ev_reasons": "\n".join(reason_rows), "ev_improper_list": improper_list,
        "ev_commits": ", ".join(sorted(set(table["commit"].dropna().astype(str)))),
    }
