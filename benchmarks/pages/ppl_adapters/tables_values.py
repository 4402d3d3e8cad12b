"""The tables of ``nhefs_cost.md`` and ``stan_program_forms.md``, rendered from ``nhefs_cost.json`` and
``stan_program_forms.json`` as ``benchmarks/ppl_adapters.py --nhefs-cost`` and ``benchmarks/stan_program_forms.py``
write them."""

from __future__ import annotations

import json
from pathlib import Path


def nhefs_table(summary: dict) -> str:
    """Seconds per 1,000 chain-steps of each implementation and its ratio to NumPyro's (the first row if none)."""
    rows = summary["rows"]
    base = next((r for r in rows if r["implementation"] == "NumPyro"), rows[0])
    lines = ["| implementation | steps | s per 1,000 chain-steps | ratio to NumPyro | JAX compile s |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['implementation']} | {r['steps']} | {r['seconds_per_1000_chain_steps']:.3f} | "
                     f"{r['seconds_per_1000_chain_steps'] / base['seconds_per_1000_chain_steps']:.1f}x | "
                     f"{r['compile_seconds']:.1f} |")
    return "\n".join(lines)


def forms_table(rows: list[dict]) -> str:
    """Microseconds per chain of the shipped and the appendix's Stan program forms, and their largest gaps."""
    lines = ["| model | shipped form | appendix's form | speed-up | largest relative gap (value, gradient) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['shipped_us']:.1f} | {r['appendix_us']:.1f} | {r['speedup']:.1f}x | "
                     f"{r['max_relative_value_gap']:.1e}, {r['max_relative_gradient_gap']:.1e} |")
    return "\n".join(lines)


def values(folder: Path) -> dict:
    """``nhefs_chains``, ``nhefs_table``, ``nhefs_first_build_s`` and ``forms_table`` from the stored JSON.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/ppl_adapters`` or a copy of it).

    Returns
    -------
    dict
    """
    summary = json.loads((folder / "nhefs_cost.json").read_text())
    (chains,) = {r["chains"] for r in summary["rows"]}
    return {"nhefs_chains": chains, "nhefs_table": nhefs_table(summary),
            "nhefs_first_build_s": summary["first_build_seconds"],
            "forms_table": forms_table(json.loads((folder / "stan_program_forms.json").read_text()))}
