"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them). One row per
chain length T and seed; names are ``t<T>_s<seed>_<field>``."""

import json
from pathlib import Path


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _row(folder: Path, steps: int, seed: int):
    (row,) = [r for r in _rows(folder) if r["num_steps"] == steps and r["seed"] == seed]
    return row


def exact(folder):
    """The exact log p(y) by quadrature (the same in every row)."""
    (value,) = {r["exact"] for r in _rows(folder)}
    return value


def _make(steps, seed):
    def value(folder):
        """The forward AIS estimate."""
        return _row(folder, steps, seed)["value"]

    def stderr(folder):
        """Its stderr."""
        return _row(folder, steps, seed)["stderr"]

    def error(folder):
        """Estimate minus the exact log p(y)."""
        return _row(folder, steps, seed)["error"]

    def divergences(folder):
        """Divergent transitions, all runs and steps."""
        return _row(folder, steps, seed)["divergences"]

    def div_pct(folder):
        """Divergences as a percentage of the transitions."""
        return 100 * _row(folder, steps, seed)["divergence_rate"]

    def ess(folder):
        """Effective sample size of the weights."""
        return _row(folder, steps, seed)["weight_ess"]

    def khat(folder):
        """PSIS k-hat of the weights."""
        return _row(folder, steps, seed)["khat"]

    def seconds(folder):
        """Wall seconds of the estimate."""
        return _row(folder, steps, seed)["seconds"]

    fns = dict(value=value, se=stderr, err=error, div=divergences, divpct=div_pct, ess=ess, khat=khat, s=seconds)
    return {f"t{steps}_s{seed}_{k}": f for k, f in fns.items()}


_made = {}
for _steps in (1000, 10000):
    for _seed in range(5):
        _made.update(_make(_steps, _seed))
globals().update(_made)

QUOTES = tuple(_made) + ("exact",)


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/textbook_regression`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
