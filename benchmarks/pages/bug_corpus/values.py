"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them)."""

import json
from pathlib import Path

QUOTES = ("rows", "metropolis_seeds", "metropolis_geweke", "metropolis_sbc", "metropolis_any",
          "offbyone_nuts_seeds", "offbyone_sbc", "offbyone_bdmc", "mixture_nuts_seeds", "mixture_sbc", "mixture_bdmc",
          "twin_nuts_sbc", "twin_nuts_bdmc", "twin_nuts_checks", "twin_alarms", "twin_checks", "min_seeds_free",
          "offbyone_sim_fired", "stan_mixture_sim_fired")


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _cell(folder, program, variant, check):
    cell = [r for r in _rows(folder) if r["program"] == program and r["variant"] == variant and check in r["checks"]]
    return sum(r["checks"][check]["verdict"] == "fail" for r in cell), len(cell)


def rows(folder):
    return len(_rows(folder))


def metropolis_seeds(folder):
    return _cell(folder, "numpyro/metropolis", "bug", "geweke")[1]


def metropolis_geweke(folder):
    return _cell(folder, "numpyro/metropolis", "bug", "geweke")[0]


def metropolis_sbc(folder):
    return _cell(folder, "numpyro/metropolis", "bug", "sbc")[0]


def metropolis_any(folder):
    return sum(any(c["verdict"] == "fail" for c in r["checks"].values()) for r in _rows(folder)
               if r["program"] == "numpyro/metropolis" and r["variant"] == "bug")


def offbyone_nuts_seeds(folder):
    return _cell(folder, "stan/off-by-one", "bug", "sbc")[1]


def offbyone_sbc(folder):
    return _cell(folder, "stan/off-by-one", "bug", "sbc")[0]


def offbyone_bdmc(folder):
    return _cell(folder, "stan/off-by-one", "bug", "bdmc")[0]


def mixture_nuts_seeds(folder):
    return _cell(folder, "stan/mixture", "bug", "sbc")[1]


def mixture_sbc(folder):
    return _cell(folder, "stan/mixture", "bug", "sbc")[0]


def mixture_bdmc(folder):
    return _cell(folder, "stan/mixture", "bug", "bdmc")[0]


def _twin_nuts(folder, check):
    cells = [_cell(folder, p, "correct", check) for p in ("stan/regression", "stan/mixture")]
    return sum(f for f, _ in cells), sum(n for _, n in cells)


def twin_nuts_sbc(folder):
    return _twin_nuts(folder, "sbc")[0]


def twin_nuts_bdmc(folder):
    return _twin_nuts(folder, "bdmc")[0]


def twin_nuts_checks(folder):
    return _twin_nuts(folder, "sbc")[1]


def twin_alarms(folder):
    return sum(c["verdict"] == "fail" for r in _rows(folder) if r["variant"] == "correct" for c in r["checks"].values())


def twin_checks(folder):
    return sum(len(r["checks"]) for r in _rows(folder) if r["variant"] == "correct")


def min_seeds_free(folder):
    """The fewest seeds of the sampler-free checks in any program's cell (bug or twin)."""
    seeds = {}
    for r in _rows(folder):
        if r.get("set", "sampler-free") == "sampler-free":
            seeds.setdefault((r["program"], r["variant"]), set()).add(r["seed"])
    return min(len(s) for s in seeds.values())


def offbyone_sim_fired(folder):
    return _cell(folder, "stan/off-by-one", "bug", "simulator-density")[0]


def stan_mixture_sim_fired(folder):
    return _cell(folder, "stan/mixture", "bug", "simulator-density")[0]


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/bug_corpus`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
