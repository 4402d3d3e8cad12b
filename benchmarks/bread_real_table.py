"""Summarize the real-data protocol runs of `benchmarks/bread_real.sh` as one markdown table.

    python benchmarks/bread_real_table.py [benchmarks/results/bread_real]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


def summarize(root: Path) -> str:
    rows = []
    for verdict_path in sorted(root.glob("*/verdict.json")):
        run = verdict_path.parent
        v = json.loads(verdict_path.read_text())
        fwd = pd.read_csv(run / "forward_consistency.csv")
        bounds = pd.read_csv(run / "bread.csv")
        runs = pd.read_csv(run / "runs.csv")
        last = bounds[bounds["S"] == bounds["S"].max()].sort_values("num_steps").iloc[-1]
        worst = fwd.iloc[fwd["relative"].idxmax()]
        seconds = runs.groupby(["condition", "num_steps"])["seconds"].first().sum()
        rows.append({
            "run": run.name,
            "fitted hyperparameters": ", ".join(f"{k} {x:.3g}" for k, x in v["hyperparameters"].items()),
            "largest climb difference (T, z)": f"{100 * worst['relative']:.0f}% (T={int(worst['num_steps'])}, "
                                               f"z={worst['z']:+.1f})",
            "forward verdict": "consistent" if v["forward_consistent"] else "**NOT consistent**",
            "reverse spread over S / gap": f"{100 * v['reverse_relative']:.0f}%",
            "reverse verdict": "no dependence on S" if v["reverse_agree"] else "**depends on S**",
            "B-hat at largest T": f"{last['b_hat']:.1f} ± {last['b_hat_stderr']:.1f} (T={int(last['num_steps'])})",
            "AIS seconds": f"{seconds:.0f}",
        })
    frame = pd.DataFrame(rows)
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/bread_real")))
