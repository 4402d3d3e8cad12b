"""Numbers quoted by README.md, recomputed from the rows (tests/test_results_pages.py checks them)."""

import time
from pathlib import Path

from pages.evidence_bug_corpus.table_values import corpus
from pages.tables import rows


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote, computed from the rows stored in ``folder``."""
    records = {r["name"]: r for r in corpus(folder)}
    bugs = [r for r in records.values() if r["kind"] != "control"]
    checks = rows(folder, "check_rows.jsonl")
    calibrated = rows(folder, "calibrate_rows.jsonl")
    out = {"datasets": len(checks), "bugs": len(bugs),
           "check_caught": sum(r["check_flagged"] > 0 for r in bugs),
           "check_first_max": max(r["check_first"] or 0 for r in bugs),
           "check_rate_min": min(r["check_flagged"] for r in bugs),
           "calibrate_caught": sum(r["calibrate"] == "miscalibrated" for r in bugs),
           "calibrate_first_max": max(r["calibrate_first"] or 0 for r in bugs),
           "laplace_flagged": records["laplace-is"]["check_flagged"],
           "smc_flagged": records["tempered-smc"]["check_flagged"],
           "smc_error": records["tempered-smc"]["error"],
           "undecided": sum(r["tools"]["laplace-is"]["verdict"] == "undecided" for r in checks),
           "controls_calibrated": sum(r["calibrate"] != "miscalibrated" for r in records.values()
                                      if r["kind"] == "control"),
           "truncation_error": records["truncation"]["error"],
           "dropped_error": records["dropped-constants"]["error"],
           "load_min": min(r["load_before"] for r in checks), "load_max": max(r["load_after"] for r in checks),
           "calibrate_commit": ", ".join(sorted({r["commit"] for r in calibrated})),
           "began": time.strftime("%H:%M", time.gmtime(min(r["time"] for r in checks))),
           "ended": time.strftime("%H:%M UTC on %Y-%m-%d", time.gmtime(max(r["time"] for r in checks)))}
    compared = {r["bug"]: r for r in rows(folder, "compare_rows.jsonl")}
    out["dropped_bf_lower"] = compared["dropped-constants"]["lower"]
    out["dropped_bf_upper"] = compared["dropped-constants"]["upper"]
    return out
