"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TARGETS = {"regression": "RMSE < 0.1 nat", "sblrc": "every run within 1 nat"}


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _cells(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["problem"], r["estimator"], r["particles"], r["moves"], r["pilot"]), []).append(r)
    return cells


def _reached(problem, errors) -> bool:
    return bool(np.sqrt(np.mean(errors**2)) < 0.1) if problem == "regression" else bool(np.max(np.abs(errors)) < 1)


def _summary(cell):
    errors = np.array([r["error"] for r in cell])
    warm = [r["wall_seconds"] for r in cell if not r["cold"]]
    return {"runs": len(cell), "rmse": float(np.sqrt(np.mean(errors**2))), "bias": float(errors.mean()),
            "median_abs": float(np.median(np.abs(errors))),
            "sd": float(errors.std(ddof=1)) if len(cell) > 1 else float("nan"),
            "worst": float(errors[np.argmax(np.abs(errors))]),
            "warm": float(np.median(warm)) if warm else float("nan"),
            "cold": next((r["wall_seconds"] for r in cell if r["cold"]), float("nan")),
            "steps": int(np.median([r["path_steps"] for r in cell])),
            "acceptance": float(np.median([r["data_pilot_acceptance"] or np.nan for r in cell])),
            "reached": _reached(cell[0]["problem"], errors)}


def _table(cells) -> str:
    lines = ["| problem | estimator | pilot | particles x moves | runs | RMSE (nats) | mean error | sd | "
             "median abs error | worst error | target | reached | warm s / run (median) | cold s | "
             "path steps (median) | pilot's acceptance |", "|---" * 16 + "|"]
    for (problem, estimator, particles, moves, pilot), cell in cells.items():
        s = _summary(cell)
        lines.append(f"| {problem} | {estimator.upper()} | {pilot} | {particles}x{moves} | {s['runs']} | "
                     f"{s['rmse']:.3g} | {s['bias']:+.3g} | {s['sd']:.3g} | {s['median_abs']:.3g} | "
                     f"{s['worst']:+.3g} | "
                     f"{TARGETS[problem]} | {'yes' if s['reached'] else 'no'} | {s['warm']:.3g} | {s['cold']:.3g} | "
                     f"{s['steps']} | {s['acceptance']:.2f} |")
    return "\n".join(lines)


def _first_reached(cells, problem, estimator, pilot_label="default") -> str:
    """The cheapest budget (particles x moves) whose runs meet the target, and any costlier one that missed it."""
    mine = sorted(((particles * moves, particles, moves, cell) for (p, e, particles, moves, pilot), cell
                   in cells.items() if p == problem and e == estimator and pilot == pilot_label),
                  key=lambda c: c[:3])
    if not mine:
        return "not run"
    for i, (_, particles, moves, cell) in enumerate(mine):
        s = _summary(cell)
        if s["reached"]:
            least = "at least " if pilot_label in ("moves", "auto") else ""  # the pilot adds moves
            text = (f"{particles} particles x {least}{moves} move{'s' if moves > 1 else ''} per step "
                    f"(RMSE {s['rmse']:.3g} nats over {s['runs']} runs, {s['warm']:.3g} s a warm run)")
            missed = [(pp, mm, _summary(c)) for _, pp, mm, c in mine[i + 1:] if not _summary(c)["reached"]]
            if missed:
                text += "; but " + ", ".join(f"{pp}x{mm} missed it (RMSE {t['rmse']:.3g})" for pp, mm, t in missed)
                text += f": over {s['runs']} runs the RMSE itself is uncertain by about a quarter"
            return text
    return "not reached at the budgets run"


def _median_abs(cells, key):
    return _summary(cells[key])["median_abs"] if key in cells else float("nan")


def _cell(cells, key):
    nan = float("nan")
    return _summary(cells[key]) if key in cells else {"rmse": nan, "bias": nan, "median_abs": nan, "runs": 0,
                                                      "worst": nan}


def values(folder: Path) -> dict:
    rows = _rows(folder)
    cells = _cells(rows)
    commits = sorted({r["commit"] for r in rows})
    loads = [r["load"] for r in rows]
    before = _cell(cells, ("sblrc", "smc", 256, 1, "previous"))
    after = _cell(cells, ("sblrc", "smc", 256, 1, "default"))
    return {
        "table": _table(cells),
        "rows": len(rows), "commits": ", ".join(commits),
        "clean": "yes" if all(r["clean_tree"] for r in rows) else "no (some rows)",
        "first_date": min(r["date"] for r in rows), "last_date": max(r["date"] for r in rows),
        "load_min": min(loads), "load_max": max(loads),
        "smc_regression": _first_reached(cells, "regression", "smc"),
        "shme_regression": _first_reached(cells, "regression", "shme"),
        "smc_sblrc": _first_reached(cells, "sblrc", "smc"),
        "shme_sblrc": _first_reached(cells, "sblrc", "shme"),
        "sblrc_before_median": before["median_abs"], "sblrc_after_median": after["median_abs"],
        "sblrc_before_worst": before["worst"], "sblrc_after_worst": after["worst"],
        "shme_sblrc_1": _median_abs(cells, ("sblrc", "shme", 256, 1, "default")),
        "shme_sblrc_5": _median_abs(cells, ("sblrc", "shme", 256, 5, "default")),
        "shme_sblrc_1024x5": _median_abs(cells, ("sblrc", "shme", 1024, 5, "default")),
        "shme_sblrc_20": _median_abs(cells, ("sblrc", "shme", 256, 20, "default")),
        **{f"{e}_{p}_{label}": _first_reached(cells, p, e, label) for e in ("smc", "shme")
           for p in ("regression", "sblrc") for label in ("moves", "auto")},
        **{f"{e}_sblrc_{label}_{n}_{k}": _cell(cells, ("sblrc", e, n, 1, label))[k] for e in ("smc", "shme")
           for n in (256, 1024) for k in ("median_abs", "worst") for label in ("moves", "auto")},
        **{f"shme_sblrc_{label}_{n}_warm": _cell(cells, ("sblrc", "shme", n, 1, label)).get("warm", float("nan"))
           for label, n in (("moves", 256), ("auto", 256), ("auto", 1024))},
        "shme_sblrc_20_warm": _cell(cells, ("sblrc", "shme", 256, 20, "default")).get("warm", float("nan")),
        "shme_sblrc_20_worst": _cell(cells, ("sblrc", "shme", 256, 20, "default"))["worst"],
        "shme_sblrc_moves_counts": _counts(cells, ("sblrc", "shme", 256, 1, "moves")),
        "shme_sblrc_1024_within": _within(cells, ("sblrc", "shme", 1024, 1, "auto")),
    }


def _within(cells, key) -> str:
    """How many of a cell's runs are within a nat of log p(y)."""
    cell = cells.get(key, [])
    return f"{sum(abs(r['error']) < 1 for r in cell)} of {len(cell)}"


def _counts(cells, key) -> str:
    """The range of the pilot's mean moves per step over a cell's runs."""
    means = [float(r["moves_per_step"].split("mean ")[1].split(" ")[0]) for r in cells.get(key, [])
             if r.get("moves_per_step")]
    return f"{min(means):.3g} to {max(means):.3g}" if means else "-"
