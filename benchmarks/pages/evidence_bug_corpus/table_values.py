"""The values of ``evidence_bug_corpus``'s table: for each estimator (two correct controls, then each bug's
mutation) which of check-estimate, calibrate and compare caught it, and after how many data sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pages.tables import rows

from bdmc.calibration import Calibration

PREFIXES = (1, 2, 3, 5, 10, 20, 50)
LEVEL = 0.01


def _calibration(frame: pd.DataFrame, label: str, k: int) -> Calibration:
    cell = frame[frame["label"] == label].sort_values("seed").head(k).reset_index(drop=True)
    return Calibration(label=label, rows=cell, level=LEVEL)


def corpus(folder: Path) -> list[dict]:
    """One record per estimator: its errors and what each check said."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bug_corpus"))
    import evidence_bugs

    checks = rows(folder, "check_rows.jsonl")
    frame = pd.DataFrame(rows(folder, "calibrate_rows.jsonl"))
    for column in ("log_z", "stderr", "truth", "truth_lower", "truth_upper", "error"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    compared = {r["bug"]: r for r in rows(folder, "compare_rows.jsonl")}
    bugs = {b.name: b for b in evidence_bugs.BUGS}
    out = []
    for name in checks[0]["tools"]:
        verdicts = [r["tools"][name] for r in checks]
        flagged = [i for i, v in enumerate(verdicts) if v["verdict"] in ("too high", "too low")]
        tiers = sorted({verdicts[i]["tier"] for i in flagged})
        full = _calibration(frame, name, len(checks))
        first_cal = next((k for k in PREFIXES if k <= len(full.rows)
                          and _calibration(frame, name, k).verdict == "miscalibrated"), None)
        bug = bugs.get(name)
        out.append({"name": name, "kind": "control" if bug is None else bug.kind,
                    "reported": "correct" if bug is None else bug.reported,
                    "error": float(np.median([v["error"] for v in verdicts])), "datasets": len(verdicts),
                    "check_flagged": len(flagged), "check_first": flagged[0] + 1 if flagged else None,
                    "check_undecided": sum(v["verdict"] == "undecided" for v in verdicts),
                    "check_tiers": tiers, "calibrate": full.verdict, "calibrate_first": first_cal,
                    "calibrate_bias": full.bias, "compare": compared.get(name)})
    return out


def _compare_cell(record) -> str:
    if record["kind"] != "program":
        return "not applicable: compare runs bdmc's estimators, not the tool's"
    row = record["compare"]
    if row is None:
        return "not run"
    if row["refused"]:
        return "refused: " + row["refused"].split(":")[1].strip().split(" (in")[0]
    return (f"not refused; log BF against the correct twin in [{row['lower']:.2f}, {row['upper']:.2f}] "
            "(seen only with a twin)")


def table(folder: Path) -> str:
    lines = ["| estimator | bug from the wild | median error (nats) | check-estimate: flagged (first at data set; "
             "tiers) | undecided | calibrate: verdict (first flagged after k data sets) | compare |", "|---" * 7 + "|"]
    for r in corpus(folder):
        first = f"first at {r['check_first']}; {', '.join(r['check_tiers'])}" if r["check_flagged"] else "never"
        cal = r["calibrate"] + (f" (after {r['calibrate_first']})" if r["calibrate_first"] else "")
        lines.append(f"| {r['name']} | {r['reported']} | {r['error']:+.2f} | {r['check_flagged']}/{r['datasets']} "
                     f"({first}) | {r['check_undecided']} | {cal} | {_compare_cell(r)} |")
    stored = rows(folder, "check_rows.jsonl")
    lines.append(f"\nCommits: {', '.join(sorted({r['commit'] for r in stored}))}; clean trees: "
                 f"{all(r['clean_tree'] for r in stored)}; produced by `python benchmarks/evidence_bug_corpus.py "
                 "--render`.")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``table``: the Markdown of ``table.md``."""
    return {"table": table(folder)}
