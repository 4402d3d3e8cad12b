"""What several results pages' tables share: their rows, and the exact binomial interval their rates carry."""

from __future__ import annotations

import functools
from pathlib import Path

from harness.store import load_rows
from scipy import stats


def rows(folder: Path, name: str = "rows.jsonl") -> list[dict]:
    """The rows stored in ``folder/name``, in file order."""
    return load_rows(Path(folder) / name)


def shared_rows(folder: Path, name: str = "rows.jsonl") -> tuple[dict, ...]:
    """The rows of ``folder/name``, parsed once per version of the file and shared: not to be changed by the caller.
    A page's values read the same rows dozens of times (the audit calibration's 2,000 rows took 4 s a render)."""
    path = Path(folder, name).resolve()
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, mtime_ns: int, size: int) -> tuple[dict, ...]:  # the stat keys a changed file anew
    return tuple(load_rows(path))


def rows_at(folder: Path, settings: dict, name: str = "rows.jsonl") -> list[dict]:
    """The stored rows run at ``settings`` (each key's value as given): a page's rows at its documented settings."""
    return [r for r in rows(folder, name) if all(r.get(k) == v for k, v in settings.items())]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) binomial interval of ``k`` successes in ``n`` trials."""
    a = 1 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def bench_values(folder: Path) -> dict:
    """The values of a ``bdmc bench`` folder's page, from its ``bench.json``, ``bench.csv`` and ``summary.csv``.

    ``settings`` (the model, its options, the seed, the trials), the ground truth (``truth``, ``forward``,
    ``reverse`` and how they were run), ``budgets`` (one line per estimator and knob: the mean single-trial
    estimate, its error against the truth, the RMSE, the time) and ``reached`` (the first knob reaching each
    RMSE threshold, with its time).
    """
    import json

    import pandas as pd

    folder = Path(folder)
    info = json.loads((folder / "bench.json").read_text())
    settings, truth = info["settings"], info["truth"]
    bench = pd.read_csv(folder / "bench.csv")
    summary = pd.read_csv(folder / "summary.csv")
    labels = dict(zip(bench["estimator"], bench["label"], strict=False))
    budgets = ["| estimator | knob | bound | trials | mean single trial | mean error (nats) | RMSE (nats) | "
               "s per trial (batch / trials) | compile s | density evaluations |",
               "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in bench.itertuples():
        budgets.append(f"| {r.label} | {r.knob_name} = {r.knob} | {r.bound} | {r.trials} | {r.mean:.2f} | "
                       f"{r.bias:+.2f} | {r.rmse:.2f} | {r.seconds:.3g} | {r.compile_seconds:.1f} | {r.evals:,.0f} |")
    reached = ["| estimator | RMSE below (nats) | first knob reaching it | its RMSE | s per trial |",
               "|---|---:|---:|---:|---:|"]
    for r in summary.itertuples():
        label = labels.get(r.estimator, r.estimator)
        if r.reached:
            reached.append(f"| {label} | {r.threshold:g} | {int(r.knob)} | {r.rmse:.2f} | {r.seconds:.3g} |")
        else:
            reached.append(f"| {label} | {r.threshold:g} | not reached | - | - |")
    return {"model": settings["model"], "model_options": settings["model_options"], "seed": settings["seed"],
            "data": settings["data"], "trials": settings["trials"], "truth": truth["value"],
            "forward": truth["forward"], "reverse": truth["reverse"], "truth_steps": truth["num_steps"],
            "truth_runs": truth["num_runs"], "truth_tol": truth["tol"], "truth_seconds": truth["seconds"],
            "budgets": "\n".join(budgets), "reached": "\n".join(reached)}
