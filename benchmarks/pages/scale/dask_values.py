"""The values of ``scale/dask.md``, from ``dask.json`` (``benchmarks/dask_sweep.py``): the table per mode and the
findings, sentences computed from the rows."""

from __future__ import annotations

import json
from pathlib import Path

MODES = ("in-process", "threads", "processes")


_DASK_HEAD = ["mode", "workers", "start s", "sweep s", "first row s", "compile s (sum)", "compile + run s (sum)",
        "same rows as in-process", "max |diff| of trials", "load (1 min) before"]


def _dask_cells(t: dict) -> list[str]:
    same = t.get("same", {})
    return [t["mode"], str(t["workers"]), f"{t['start_seconds']:.1f}", f"{t['sweep_seconds']:.1f}",
            f"{t['first_row_seconds']:.1f}", f"{t['compile_seconds']:.1f}", f"{t['compute_seconds']:.1f}",
            "-" if not same else ("identical" if same["identical"] else "differ"),
            "-" if not same else f"{same['max_abs_diff_trials']:.3g}", f"{t['load_before'][0]:.2f}"]


def _stored_as_finished(t: dict) -> bool:
    """Whether the store's rows are in the order the cells finished (each appended as it came)."""
    return t["store_order"] == [[e, k] for e, k, _ in t["finish_order"]]


def _finish_order_is_plan(t: dict, ref: dict) -> bool:
    """Whether the cells finished in the order the in-process sweep ran them (the order requested)."""
    return [[e, k] for e, k, _ in t["finish_order"]] == [[e, k] for e, k, _ in ref["finish_order"]]


def _dask_findings(out: dict) -> list[str]:
    """Sentences computed from the results."""
    by = {t["mode"]: t for t in out["timings"]}
    ref = by.get("in-process")
    lines = []
    for mode in MODES[1:]:
        if mode not in by or ref is None:
            continue
        t = by[mode]
        lines.append(f"- **{mode}** ({t['workers']} worker(s)): the sweep took {t['sweep_seconds']:.1f} s against "
                     f"{ref['sweep_seconds']:.1f} s in-process ({ref['sweep_seconds'] / t['sweep_seconds']:.2f}x "
                     f"speed-up), plus {t['start_seconds']:.1f} s to start the cluster; its rows are "
                     f"{'identical to' if t['same']['identical'] else 'not identical to'} the in-process ones "
                     f"(largest difference of a trial estimate {t['same']['max_abs_diff_trials']:.3g} nats). "
                     f"The store holds {t['rows_in_store']} rows, "
                     f"{'in the order the cells finished' if _stored_as_finished(t) else 'not in finishing order'}"
                     f"{'' if _finish_order_is_plan(t, ref) else ', which is not the order requested'}.")
    return lines


def values(folder: Path) -> dict:
    """The sweep's settings, table, findings, loads, machine and source, from ``dask.json`` (named ``dask_...``)."""
    out = json.loads((Path(folder) / "dask.json").read_text())
    s = out["settings"]
    table = ["| " + " | ".join(_DASK_HEAD) + " |", "|" + "---|" * len(_DASK_HEAD),
             *["| " + " | ".join(_dask_cells(t)) + " |" for t in out["timings"]]]
    return {"dask_n": s["n"], "dask_seed": s["seed"], "dask_trials": s["trials"],
            "dask_knobs": "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in s["knobs"].items()),
            "dask_truth_steps": s["truth_steps"], "dask_truth_runs": s["truth_runs"], "dask_cells": len(out["rows"]),
            "dask_worker_threads": s["worker_threads"], "dask_table": "\n".join(table),
            "dask_findings": "\n".join(_dask_findings(out)),
            "dask_load_start": ", ".join(f"{x:.2f}" for x in out["load_start"]),
            "dask_load_end": ", ".join(f"{x:.2f}" for x in out["load_end"]),
            "dask_machine": ", ".join(f"{k}={v}" for k, v in out["machine"].items()),
            "dask_commit": out["source"]["commit"],
            "dask_uncommitted": ", ".join(out["source"]["modified_in_src"]) or "none"}
