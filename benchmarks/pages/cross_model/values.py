"""Numbers quoted by README.md, recomputed from rows.jsonl (tests/test_results_pages.py checks them); the
fixed-hyperparameter ground truths from ../paper_models (its values.py).

Names: ``<data>_<fit>_...`` with c, l, b for clustering, low rank, binary. Entries are forward AIS lower bounds,
the chains combined by log-mean-exp (the rows' ``value``), at T = 30,000 unless a name says otherwise.
"""

import importlib.util
import json
from pathlib import Path

SHORT = {"c": "clustering", "l": "low-rank", "b": "binary"}
LAST = 30000


def _rows(folder: Path):
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]


def _value(folder: Path, data: str, fit: str, steps: int = LAST) -> float:
    (value,) = [r["value"] for r in _rows(folder) if (r["data"], r["fit"], r["num_steps"]) == (data, fit, steps)]
    return value


def _paper_models():
    path = Path(__file__).resolve().parent.parent / "paper_models" / "values.py"
    spec = importlib.util.spec_from_file_location("values_paper_models_for_cross_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make(d, f):
    data, fit = SHORT[d], SHORT[f]

    def entry(folder):
        """The entry: data set `data` fitted by model `fit`, T = 30,000."""
        return _value(folder, data, fit)

    def margin(folder):
        """How far the entry lies below the generating model's own entry on the same data."""
        return _value(folder, data, data) - _value(folder, data, fit)

    def rise(folder):
        """How much the entry rose between T = 10,000 and 30,000."""
        return _value(folder, data, fit) - _value(folder, data, fit, 10000)

    def below_truth(folder):
        """How far the diagonal entry lies below the fixed-hyperparameter AIS ground truth (../paper_models)."""
        return _paper_models().truth(folder.parent / "paper_models", data) - _value(folder, data, fit)

    return {f"{d}_{f}": entry, f"{d}_{f}_margin": margin, f"{d}_{f}_rise": rise, f"{d}_{f}_below_truth": below_truth}


_made = {}
for _d in SHORT:
    for _f in SHORT:
        _made.update(_make(_d, _f))
globals().update(_made)


def _make_t(steps):
    def quote(folder):
        return _value(folder, "binary", "binary", steps)
    quote.__doc__ = f"The binary fit to its own data at T = {steps:,}."
    return quote


b_b_T1000, b_b_T3000, b_b_T10000 = (_make_t(t) for t in (1000, 3000, 10000))


def _margins(folder):
    return [_made[f"{d}_{f}_margin"](folder) for d in SHORT for f in SHORT if d != f]


def margin_lo(folder):
    """The smallest margin of a wrong model below the generating one."""
    return min(_margins(folder))


def margin_hi(folder):
    """The largest."""
    return max(_margins(folder))


def half_margin_lo(folder):
    """Half the smallest margin."""
    return min(_margins(folder)) / 2


def b_wrong_apart(folder):
    """On binary data: how far apart the two wrong models' entries are."""
    return _value(folder, "binary", "low-rank") - _value(folder, "binary", "clustering")


def rise_hi(folder):
    """The largest rise of any entry between T = 10,000 and 30,000."""
    return max(_made[f"{d}_{f}_rise"](folder) for d in SHORT for f in SHORT)


def wall_minutes(folder):
    """Wall minutes of every entry summed (the rows' wall_seconds)."""
    return sum(r["wall_seconds"] for r in _rows(folder)) / 60


def truth_gap_hi(folder):
    """The largest single-run gap of ../paper_models' ground-truth sandwiches at their longest T."""
    return _paper_models().gap_hi(folder.parent / "paper_models")


def _make_truth(data):
    def quote(folder):
        return _paper_models().truth(folder.parent / "paper_models", data)
    quote.__doc__ = f"The fixed-hyperparameter AIS ground truth of the {data} data set (../paper_models)."
    return quote


truth_c, truth_l, truth_b = (_make_truth(m) for m in SHORT.values())

QUOTES = (tuple(f"{d}_{f}" for d in SHORT for f in SHORT)
          + tuple(f"{d}_{f}_margin" for d in SHORT for f in SHORT if d != f)
          + ("c_b_rise", "l_l_rise", "l_b_rise", "c_c_below_truth", "l_l_below_truth", "b_b_below_truth",
             "b_b_T1000", "b_b_T3000", "b_b_T10000", "margin_lo", "margin_hi", "half_margin_lo", "b_wrong_apart",
             "rise_hi", "wall_minutes", "truth_gap_hi", "truth_c", "truth_l", "truth_b"))


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/cross_model`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
