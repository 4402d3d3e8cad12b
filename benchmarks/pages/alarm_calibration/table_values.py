"""The values of ``alarm_calibration``'s table: per model and method, the alarm's false-alarm rate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pages.tables import clopper_pearson, rows


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, method) and over all: sandwiches, alarms, warnings, the old rule's firings, largest crossing."""
    out = []
    groups = list(frame.groupby(["model", "method"], sort=False)) + [(("all", "all"), frame)]
    for (model, method), g in groups:
        n = len(g)
        rec = {"model": model, "method": method, "sandwiches": n}
        for col, name in (("fired", "alarm"), ("warned", "falling warning"), ("old_rule", "old z rule")):
            k = int(g[col].sum())
            lo, hi = clopper_pearson(k, n)
            rec[f"{name}"] = k
            rec[f"{name} rate (95% CI)"] = f"{k / n:.4f} [{lo:.4f}, {hi:.4f}]"
        rec["largest pooled crossing (nats)"] = round(float(g["crossing"].max()), 2)
        out.append(rec)
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame) -> str:
    head = "| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns) + "\n"
    return head + "".join("| " + " | ".join(str(v) for v in r) + " |\n" for r in table.itertuples(index=False))


def values(folder: Path) -> dict:
    """``table``: the Markdown table of ``table.md``."""
    return {"table": markdown(summarize(pd.DataFrame(rows(folder)))).rstrip("\n")}
