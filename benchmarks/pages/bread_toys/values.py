"""The values of ``bread_toys/bread_toys.md``, from ``bread_toys_sweep.csv`` and ``bread_toys.json``
(``benchmarks/bread_toys.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def _sweep(folder: Path) -> dict:
    table = pd.read_csv(folder / "bread_toys_sweep.csv")
    lines = ["| toy | T | J | B | B / J | E_fwd[log w] | log Z | E_rev[log w] |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.toy} | {r.num_distributions} | {r.J:.4g} | {r.B:.4g} | {r.B / r.J:.3g} | "
              f"{r.log_w_forward:.4f} | {r.log_z:.4f} | {r.log_w_reverse:.4f} |" for r in table.itertuples()]
    ordered = (table["log_w_forward"] <= table["log_z"]) & (table["log_z"] <= table["log_w_reverse"])
    return {"j_below_b": bool((table["J"] <= table["B"]).all()), "sandwiched": bool(ordered.all()),
            "sweep": "\n".join(lines)}


def values(folder: Path) -> dict:
    """The run's settings and one table per section: BARRIER's readings of T, the sweep over T, exact B against
    simulated chains, the spread over random targets, and J and B at T = 100."""
    folder = Path(folder)
    rows = json.loads((folder / "bread_toys.json").read_text())
    s = rows["settings"]
    barrier = ["| reading of T | J @ T=100 (paper 1.65) | J @ T=1000 (paper 1.085) | B @ T=1000 (paper 1.184) |",
               "|---|---|---|---|"]
    barrier += [f"| {r['reading']} | {r['J@100']:.5f} | {r['J@1000']:.5f} | {r['B@1000']:.5f} |"
                for r in rows["barrier"]["readings"]]
    chains = ["| toy | T | exact B | mean B-hat | stderr | z | exact E_fwd[log w] | simulated | exact E_rev[log w] "
              "| simulated |", "|---|---|---|---|---|---|---|---|---|---|"]
    chains += [f"| {r['toy']} | {r['T']} | {r['B']:.4f} | {r['b_hat_mean']:.4f} | {r['b_hat_stderr']:.4f} | "
               f"{(r['b_hat_mean'] - r['B']) / r['b_hat_stderr']:+.2f} | {r['log_w_forward']:.4f} | "
               f"{r['simulated_forward']:.4f} | {r['log_w_reverse']:.4f} | {r['simulated_reverse']:.4f} |"
               for r in rows["monte_carlo"]]
    spread = ["| toy | statistic | mean | min | max | paper | rank |", "|---|---|---|---|---|---|---|"]
    spread += [f"| {r['toy']} | {r['statistic']} | {r['mean']:.4g} | {r['min']:.4g} | {r['max']:.4g} | "
               f"{r['paper']} | {r['below']}/{r['draws']} |" for r in rows["spread"]]
    fig4 = ["| toy | J @ T=100 | B @ T=100 |", "|---|---|---|"]
    fig4 += [f"| {r['toy']} | {r['J']:.4f} | {r['B']:.4f} |" for r in rows["fig4"]]
    return {"command": "python benchmarks/bread_toys.py" + (" --quick" if s["quick"] else "") + f" --seed {s['seed']}",
            "draws": s["draws"], "pairs": s["pairs"], "max_t": s["max_t"], "python": s["python"],
            "numpy": s["numpy"], "mode_mass": rows["barrier"]["mode_mass"], "barrier": "\n".join(barrier),
            "chains": "\n".join(chains), "spread": "\n".join(spread), "fig4": "\n".join(fig4),
            "seconds": rows["seconds"], **_sweep(folder)}
