"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them).

One quote per (posterior, column) of the table, named ``<posterior>__<column>`` with the posterior's name made an
identifier (``-`` becomes ``_``), and the counts of the headline and the summary line.
"""

import json
import re
from pathlib import Path


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _row(folder: Path, name: str):
    return next(r for r in _rows(folder) if r["posterior"] == name)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


# column -> (what it is, how it is computed from a row)
COLUMNS = {
    "params": ("parameters", lambda r: r["parameters"]),
    "cases": ("data cases", lambda r: r["cases"]),
    "ais": ("AIS's estimate", lambda r: r["ais"]),
    "ais_se": ("AIS's stderr", lambda r: r["ais_stderr"]),
    "certified": ("the larger certified lower bound of AIS and SMC", lambda r: max(r["ais_certified"],
                                                                                 r["smc_certified"])),
    "ais_s": ("AIS's seconds", lambda r: r["ais_seconds"]),
    "smc": ("SMC's estimate", lambda r: r["smc"]),
    "smc_s": ("SMC's seconds", lambda r: r["smc_seconds"]),
    "upper": ("the bracketing upper bound", lambda r: r.get("bracket_upper")),
    "blower": ("the bracketing lower bound", lambda r: r.get("bracket_lower")),
    "exact": ("the exact log p(y)", lambda r: r.get("exact")),
    "z": ("the largest |z| of AIS's weighted particles against the reference means", lambda r:
          r["particles_max_abs_z"]),
    "div": ("AIS's divergence rate, percent", lambda r: 100 * (r["ais_divergence_rate"] or 0)),
    "ess": ("AIS's weight ESS", lambda r: r["ais_weight_ess"]),
    "khat": ("AIS's k-hat", lambda r: r["ais_khat"]),
    "stan": ("the constant the Stan program drops (nats)", lambda r: r["stan_offset"]),
    "gap": ("the bracketing upper bound less AIS's estimate (nats)", lambda r: r["bracket_upper"] - r["ais"]),
}


def _make(name, column):
    what, get = COLUMNS[column]

    def quote(folder):
        return get(_row(folder, name))
    quote.__doc__ = f"{name}: {what}."
    return quote


# The stored rows' posteriors name the quotes (the template has a placeholder for each shown cell).
POSTERIORS = [r["posterior"] for r in _rows(Path(__file__).resolve().parents[2] / "results" / "posteriordb")]
_made = {f"{_slug(n)}__{c}": _make(n, c) for n in POSTERIORS for c in COLUMNS}
globals().update(_made)


def run_ok(folder):
    """Posteriors whose row has no error."""
    return sum(not r.get("error") for r in _rows(folder))


def run_all(folder):
    """Posteriors with a row."""
    return len(_rows(folder))


def exact_known(folder):
    """Posteriors with an exact log p(y)."""
    return sum(r.get("exact") is not None for r in _rows(folder) if not r.get("error"))


def exact_held(folder):
    """Of them: the certified bound below it and the upper bound above it (within 3 stderr)."""
    return sum(bool(r["certified_below_exact"]) and bool(r["upper_above_exact"])
               for r in _rows(folder) if not r.get("error") and r.get("exact") is not None)


def _listed(rows, test, words) -> str:
    named = [f"{r['posterior']} ({words(r)})" for r in rows if not r.get("error") and test(r)]
    return ", ".join(named) or "none"


def ais_below_blower(folder):
    """Posteriors whose AIS estimate lies more than 1 nat below the bracketing lower bound, by how much."""
    return _listed(_rows(folder), lambda r: r.get("bracket_lower") is not None and r["bracket_lower"] - r["ais"] > 1,
                   lambda r: f"{r['bracket_lower'] - r['ais']:.1f} nats")


def smc_low(folder):
    """Posteriors whose data-path SMC estimate lies more than 3 nats below AIS's, by how much."""
    return _listed(_rows(folder), lambda r: r.get("smc") is not None and r["ais"] - r["smc"] > 3,
                   lambda r: f"{r['ais'] - r['smc']:.0f} nats")


def _shown(row, column) -> bool:
    """Whether the page shows this column for this row: the table shows every value it has ("-" where None, "yes"
    where the Stan program is normalized); the gap is listed only where it exceeds 3 nats."""
    if column == "gap":
        return row.get("bracket_upper") is not None and row["bracket_upper"] - row["ais"] > 3
    if column == "stan":
        return not row.get("stan_normalized") and row.get("stan_offset") is not None
    value = COLUMNS[column][1](row)
    return value is not None and value == value and abs(value) != float("inf")


def _quotes(folder: Path) -> tuple[str, ...]:
    """The quotes of the page: the counts, and every cell the table shows for the rows in ``folder``."""
    return ("run_ok", "run_all", "exact_known", "exact_held", "ais_below_blower", "smc_low") + tuple(
        f"{_slug(r['posterior'])}__{c}" for r in _rows(folder) if not r.get("error") for c in COLUMNS if _shown(r, c))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote, computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/posteriordb`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in _quotes(folder)}
