"""Numbers of peers.md, recomputed from peers.jsonl and evidence.csv (tests/test_results_pages.py re-renders it)."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
from harness.store import load_rows

PEERS = ("bridge", "blackjax-smc", "nautilus", "pymc-smc")
REACH = 2.0  # an estimate outside the interval "reaches" it when within REACH of its own ± (or the seeds' sd)


def _interval(folder: Path) -> dict:
    """{posterior: (lower, upper)} of the posteriors bdmc computed an interval for."""
    path = folder / "evidence.csv"
    if not path.exists():
        return {}
    table = pd.read_csv(path)
    table = table[table["lower"].notna()]
    return {r["posterior"]: (float(r["lower"]), float(r["upper"])) for _, r in table.iterrows()}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _num(x, fmt=".2f") -> str:
    return format(float(x), fmt) if x is not None and math.isfinite(x) else "-"


def summary(rows: list[dict], intervals: dict) -> list[dict]:
    """One record per (posterior, peer) that has runs or a stated reason, compared with bdmc's interval.

    Parameters
    ----------
    rows : list of dict
        peers.jsonl's rows (the last row of each (posterior, peer, seed) counts).
    intervals : dict
        {posterior: (lower, upper)} from evidence.csv.

    Returns
    -------
    list of dict
        ``posterior``, ``peer``, ``runs`` (finite estimates), ``failed`` (non-finite ones), ``mean``, ``sd``
        (over seeds, ddof 1), ``own`` (the mean of the tool's own stderr, or None), ``seconds`` (median per run),
        ``interval``, ``where`` ("inside" / "below" / "above" / None), ``inside`` (runs inside), ``reaches``
        (outside but within ``REACH`` times its own ±, else the seeds' sd; None when inside or no interval),
        ``note`` (why it did not run, or stopped).
    """
    latest = {}
    for row in rows:
        latest[(row["posterior"], row["peer"], row.get("seed"))] = row
    out = []
    for posterior, peer in sorted({(p, q) for p, q, _ in latest}, key=lambda k: (k[0], PEERS.index(k[1]))):
        mine = [r for (p, q, _), r in latest.items() if (p, q) == (posterior, peer)]
        runs = [r for r in mine if r.get("seed") is not None and r.get("status") == "ok"]
        notes = list(dict.fromkeys(r["status"] for r in mine if r.get("status") != "ok"))
        values = [r["log_z"] for r in runs if _finite(r.get("log_z"))]
        rec = {"posterior": posterior, "peer": peer, "runs": len(values), "failed": len(runs) - len(values),
               "mean": None, "sd": None, "own": None, "where": None, "inside": None, "reaches": None,
               "seconds": float(np.median([r["seconds"] for r in runs])) if runs else None,
               "interval": intervals.get(posterior), "note": "; ".join(notes)}
        if values:
            rec["mean"] = float(np.mean(values))
            rec["sd"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
            own = [r["stderr"] for r in runs if _finite(r.get("stderr"))]
            rec["own"] = float(np.mean(own)) if own else None
        if values and rec["interval"] is not None:
            lower, upper = rec["interval"]
            mean = rec["mean"]
            rec["where"] = "below" if mean < lower else "above" if mean > upper else "inside"
            rec["inside"] = sum(lower <= v <= upper for v in values)
            err = rec["own"] if rec["own"] is not None else rec["sd"]
            if rec["where"] != "inside":
                gap = lower - mean if rec["where"] == "below" else mean - upper
                rec["reaches"] = err is not None and gap <= REACH * err
        out.append(rec)
    return out


def _table(records: list[dict]) -> str:
    rows = ["| posterior | peer | runs | mean log p(y) | sd over seeds | own ± | s per run | bdmc interval | "
            "mean vs interval | runs inside | reaches |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if not r["runs"] and not r["failed"]:
            continue
        interval = "-" if r["interval"] is None else f"[{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]"
        runs = f"{r['runs']}" + (f" (+{r['failed']} NaN)" if r["failed"] else "")
        reaches = "-" if r["reaches"] is None else ("yes" if r["reaches"] else "no")
        inside = "-" if r["inside"] is None else f"{r['inside']} of {r['runs']}"
        rows.append(f"| {r['posterior']} | {r['peer']} | {runs} | {_num(r['mean'])} | {_num(r['sd'])} | "
                    f"{_num(r['own'])} | {_num(r['seconds'], '.1f')} | {interval} | {r['where'] or '-'} | "
                    f"{inside} | {reaches} |")
    return "\n".join(rows)


def _reasons(records: list[dict]) -> str:
    rows = ["| posterior | peer | why not (or why fewer seeds) |", "|---|---|---|"]
    rows += [f"| {r['posterior']} | {r['peer']} | {r['note']} |" for r in records if r["note"]]
    return "\n".join(rows) if len(rows) > 2 else "none"


def _gist(records: list[dict]) -> str:
    rows = ["| peer | posteriors run | with a bdmc interval | mean inside | below | above | outside but reaching |",
            "|---|---|---|---|---|---|---|"]
    for peer in PEERS:
        ran = [r for r in records if r["peer"] == peer and r["runs"]]
        compared = [r for r in ran if r["where"] is not None]
        count = {where: sum(r["where"] == where for r in compared) for where in ("inside", "below", "above")}
        rows.append(f"| {peer} | {len(ran)} | {len(compared)} | {count['inside']} | {count['below']} | "
                    f"{count['above']} | {sum(bool(r['reaches']) for r in compared)} |")
    return "\n".join(rows)


def values(folder: Path) -> dict:
    """Every number and pre-rendered table of peers.md, from ``folder/peers.jsonl`` and ``folder/evidence.csv``."""
    rows = load_rows(folder / "peers.jsonl")
    records = summary(rows, _interval(folder))
    settings = next((r["settings"] for r in rows if "settings" in r), {})
    seeds = sorted({r["seed"] for r in rows if r.get("seed") is not None})
    return {
        "peers_gist": _gist(records), "peers_table": _table(records), "peers_reasons": _reasons(records),
        "peers_seeds": len(seeds), "peers_particles": settings.get("particles", 0),
        "peers_mcmc_steps": settings.get("mcmc_steps", 0), "peers_n_live": settings.get("n_live", 0),
        "peers_n_networks": settings.get("n_networks", 0),
        "peers_max_blackjax": settings.get("max_blackjax_seconds", 0.0),
        "peers_max_nautilus": settings.get("max_nautilus_seconds", 0.0),
        # rows from before the PyMC peer carry no pymc_draws: read it from a row that has it
        "peers_pymc_draws": next((r["settings"]["pymc_draws"] for r in rows
                                  if "pymc_draws" in r.get("settings", {})), 0),
        "peers_reach": REACH,
        "peers_total_minutes": sum(r.get("seconds", 0.0) + (r.get("compile_seconds") or 0.0) * (r.get("seed") == 0)
                                   for r in rows if _finite(r.get("seconds"))) / 60.0,
        "peers_commits": ", ".join(sorted({str(r["commit"]) for r in rows if r.get("commit")})) or "none",
    }
