"""The tables of ``small_cost.md`` and the numbers README.md quotes of it, from ``small_cost.json`` as
``benchmarks/ppl_adapters.py --small-cost`` writes it: medians over the repeats, and the fastest repeat of each
measure where the page breaks a chain-step into its parts."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

FORWARD = "forward AIS"


def _rows(folder: Path) -> list[dict]:
    return json.loads((folder / "small_cost.json").read_text())["rows"]


def _groups(folder: Path, field: str) -> dict:
    """``field`` of each (measure, implementation), over its repeats, in the rows' order."""
    out: dict = {}
    for r in _rows(folder):
        if field in r:
            out.setdefault((r["measure"], r["implementation"]), []).append(r[field])
    return out


def _median(folder: Path, measure: str, implementation: str) -> float:
    return statistics.median(_times(folder, measure, implementation))


def _fastest(folder: Path, measure: str, implementation: str) -> float:
    """The fastest repeat: the one other jobs on the machine disturbed least."""
    return min(_times(folder, measure, implementation))


def _times(folder: Path, measure: str, implementation: str) -> list:
    field = "seconds_per_1000_chain_steps" if measure == FORWARD else "microseconds_per_chain"
    return _groups(folder, field)[measure, implementation]


def cost_table(folder: Path) -> str:
    """Forward AIS: each implementation's runs, median and range of seconds per 1,000 chain-steps, ratio to
    NumPyro's median, the machine's 1-minute load over its runs and its JAX compile seconds."""
    times, loads = _groups(folder, "seconds_per_1000_chain_steps"), _groups(folder, "load")
    compiles = _groups(folder, "compile_seconds")
    numpyro = _median(folder, FORWARD, "NumPyro")
    lines = ["| implementation | runs | s per 1,000 chain-steps: median (min to max) | ratio to NumPyro | "
             "load (1 min) | JAX compile s |", "|---|---|---|---|---|---|"]
    for (measure, name), t in times.items():
        if measure != FORWARD:
            continue
        load = loads[measure, name]
        lines.append(f"| {name} | {len(t)} | {statistics.median(t):.4f} ({min(t):.4f} to {max(t):.4f}) | "
                     f"{statistics.median(t) / numpyro:.1f}x | {min(load):.1f} to {max(load):.1f} | "
                     f"{compiles[measure, name][0]:.1f} |")
    return "\n".join(lines)


def gradient_table(folder: Path) -> str:
    """Evaluations alone: median and range of microseconds per chain, and ten of the fastest (one HMC
    transition's leapfrog steps) over NumPyro's fastest chain-step."""
    numpyro_step_us = 1000 * _fastest(folder, FORWARD, "NumPyro")  # s per 1,000 chain-steps = ms per chain-step
    lines = ["| implementation | measure | us per chain: median (min to max) | "
             "10 x min / NumPyro's fastest chain-step |", "|---|---|---|---|"]
    for (measure, name), us in _groups(folder, "microseconds_per_chain").items():
        lines.append(f"| {name} | {measure} | {statistics.median(us):.2f} ({min(us):.2f} to {max(us):.2f}) | "
                     f"{10 * min(us) / numpyro_step_us:.1f}x |")
    return "\n".join(lines)


def _setting(folder: Path, field: str):
    (value,) = {r[field] for r in _rows(folder) if r["measure"] == FORWARD}
    return value


def values(folder: Path) -> dict:
    """Every value ``small_cost.md`` and README.md use of ``small_cost.json``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/ppl_adapters`` or a copy of it).

    Returns
    -------
    dict
    """
    numpyro, stan = _median(folder, FORWARD, "NumPyro"), _median(folder, FORWARD, "Stan in-process")
    glm = _median(folder, FORWARD, "Stan in-process, normal_id_glm_lpdf")
    # The breakdown of a chain-step compares the fastest repeat of each measure: on a shared machine the medians
    # of measures taken at different moments carry different shares of other jobs' load.
    fastest_numpyro, fastest_stan = _fastest(folder, FORWARD, "NumPyro"), _fastest(folder, FORWARD, "Stan in-process")
    grad = "value and gradient"
    stan_grad, value = _fastest(folder, grad, "Stan in-process"), _fastest(folder, "value alone", "Stan in-process")
    build = _fastest(folder, "value and gradient, a new lambda per call", "Stan in-process") - stan_grad
    stan_step_us = 1000 * fastest_stan  # s per 1,000 chain-steps = ms per chain-step
    loads = [r["load"] for r in _rows(folder)]
    return {"small_cost_table": cost_table(folder), "small_gradient_table": gradient_table(folder),
            "small_chains": _setting(folder, "chains"), "small_steps": _setting(folder, "steps"),
            "small_repeats": max(r["repeat"] for r in _rows(folder)) + 1, "small_commit": _setting(folder, "commit"),
            "small_load_min": min(loads), "small_load_max": max(loads),
            "small_numpyro_s": numpyro, "small_stan_s": stan, "small_stan_x": stan / numpyro,
            "small_stan_fastest_x": fastest_stan / fastest_numpyro, "small_glm_x": glm / numpyro,
            "small_stan_step_us": stan_step_us, "small_numpyro_step_us": 1000 * fastest_numpyro,
            "small_stan_grad_us": stan_grad, "small_numpyro_grad_us": _fastest(folder, grad, "NumPyro"),
            "small_glm_grad_us": _fastest(folder, grad, "Stan in-process, normal_id_glm_lpdf"),
            "small_value_us": value,
            # One chain-step on the engine's path for a model with its own log density: 11 values and gradients
            # (blackjax's HMC at the new lambda, then 10 leapfrog steps) and 2 values (the AIS weight).
            "small_compute_share": (11 * stan_grad + 2 * value) / stan_step_us,
            "small_rest_us": stan_step_us - 11 * stan_grad - 2 * value,
            "small_build_us": build, "small_build_share": build / stan_step_us,
            "small_floor_x": 10 * stan_grad / (1000 * fastest_numpyro)}
