"""The values of ``scale/scale.md``, from ``scale.json`` (``benchmarks/scale.py``): the table per configuration
and the findings, sentences computed from the rows (nothing in them is typed in by hand)."""

from __future__ import annotations

import json
from pathlib import Path

MODELS = ("linear-regression", "logistic")


_HEAD = ["sweep", "model", "kernel", "N", "D", "s / chain-step", "evals / chain-step", "compile s", "warm s",
        "memory MiB", "AIS MiB", "data MiB", "accept", "load (1 min)"]


def _cells(r: dict) -> list[str]:
    return [r["sweep"], r["model"], r["kernel"], f"{r['n']:,}", str(r["latent_dim"]),
            f"{r['seconds_per_chain_step']:.3g}", f"{r['evals_per_chain_step']:.3g}", f"{r['compile_seconds']:.2f}",
            f"{r['warm_seconds']:.3f}", f"{r['memory_mib']:.1f}", f"{r['memory_ais_mib']:.1f}",
            f"{r['data_mib']:.2f}",
            f"{r['acceptance_mean']:.2f}", f"{r['load_before'][0]:.2f}"]


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def _findings(out: dict) -> list[str]:
    """Sentences computed from the results (nothing here is typed in by hand)."""
    rows, s = out["results"], out["slopes"]
    lines = []
    for model in MODELS:
        sweep = sorted((r for r in rows if r["sweep"] == "N" and r["model"] == model), key=lambda r: r["n"])
        if len(sweep) < 2:
            continue
        lo, hi, sl = sweep[0], sweep[-1], s[f"{model} vs N"]
        lines.append(
            f"- **{model}** ({lo['kernel']}): from N = {lo['n']:,} to {hi['n']:,} the seconds per chain-step go "
            f"from {lo['seconds_per_chain_step']:.3g} to {hi['seconds_per_chain_step']:.3g} "
            f"({hi['seconds_per_chain_step'] / lo['seconds_per_chain_step']:.3g}x for "
            f"{hi['n'] / lo['n']:.0f}x the data). Slope of log seconds on log N: {_fmt(sl['all'])} over all N, "
            f"{_fmt(sl['largest 3'])} over the largest three, {_fmt(sl['largest 2'])} over the largest two "
            f"(1 = linear). Memory above baseline: {lo['memory_mib']:.1f} MiB at N = {lo['n']:,}, "
            f"{hi['memory_mib']:.1f} MiB at N = {hi['n']:,} (the data themselves: {hi['data_mib']:.2f} MiB).")
    dims = sorted((r for r in rows if r["sweep"] == "D"), key=lambda r: r["dim"])
    if len(dims) >= 2:
        lo, hi = dims[0], dims[-1]
        lines.append(
            f"- **logistic, latent dimension** (N = {lo['n']:,}): from D = {lo['dim']} to {hi['dim']} the seconds "
            f"per chain-step go from {lo['seconds_per_chain_step']:.3g} to {hi['seconds_per_chain_step']:.3g} "
            f"(slope {_fmt(s['logistic vs D']['all'])} over all D, {_fmt(s['logistic vs D']['largest 2'])} over "
            f"the largest two); memory above baseline {lo['memory_mib']:.1f} to {hi['memory_mib']:.1f} MiB.")
    wide, tall = max(dims, key=lambda r: r["dim"], default=None), max(
        (r for r in rows if r["model"] == "logistic" and r["sweep"] == "N"), key=lambda r: r["n"], default=None)
    if wide is not None and tall is not None:
        lines.append(
            f"- **Same model, data or dimension**: logistic at N = {tall['n']:,}, D = {tall['dim']} (N x D = "
            f"{tall['n'] * tall['dim']:,}) costs {tall['seconds_per_chain_step']:.3g} s per chain-step; at N = "
            f"{wide['n']:,}, D = {wide['dim']} (N x D = {wide['n'] * wide['dim']:,}) it costs "
            f"{wide['seconds_per_chain_step']:.3g} s: "
            f"{tall['seconds_per_chain_step'] / wide['seconds_per_chain_step']:.3g}x the time for "
            f"{tall['n'] * tall['dim'] / (wide['n'] * wide['dim']):.3g}x the multiply-adds of the design product.")
    compile_s = [r["compile_seconds"] for r in rows]
    lines.append(f"- Compilation took {min(compile_s):.2f} to {max(compile_s):.2f} s per configuration, "
                 "excluded from the warm times; every warm call reused the compiled program: "
                 f"{all(not c for r in rows for c in r['warm_compiled'])}.")
    return lines


def values(folder: Path) -> dict:
    """The sweep's settings, baseline, table, findings, loads, machine and source, from ``scale.json``."""
    out = json.loads((Path(folder) / "scale.json").read_text())
    s = out["settings"]
    table = ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD),
             *["| " + " | ".join(_cells(r)) + " |" for r in out["results"]]]
    return {"chains": s["chains"], "steps": s["steps"], "repeats": s["repeats"], "baseline_mib": out["baseline_mib"],
            "table": "\n".join(table), "findings": "\n".join(_findings(out)),
            "load_start": ", ".join(f"{x:.2f}" for x in out["load_start"]),
            "load_end": ", ".join(f"{x:.2f}" for x in out["load_end"]), "wall_seconds": out["wall_seconds"],
            "machine": ", ".join(f"{k}={v}" for k, v in out["machine"].items()), "commit": out["source"]["commit"],
            "uncommitted": ", ".join(out["source"]["modified_in_src"]) or "none"}
