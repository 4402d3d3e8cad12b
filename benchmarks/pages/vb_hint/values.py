"""Numbers a page in this folder quotes, recomputed from rows.jsonl (tests/test_results_pages.py checks them).

Written by ``benchmarks/vb_hint.py``: one row per model, the latest one counting. Names are ``<model>_<what>`` with
model ``clustering``, ``low_rank`` or ``binary``; values in nats, VB bounds plain unless the name ends in ``_sym``
(the symmetry correction added). A page quotes one through a placeholder named after it. The
``QUOTES`` tuple lists those README.md uses (a listed, unused quote fails the rendering).
"""

import json
from pathlib import Path

MODELS = {"clustering": "clustering", "low_rank": "low-rank", "binary": "binary"}


def _row(folder: Path, model: str) -> dict:
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines() if line.strip()]
    mine = [r for r in rows if r["model"] == model]
    if not mine:
        raise KeyError(f"{folder}/rows.jsonl has no row for {model}")
    return mine[-1]


# what -> (how it follows from a row, docstring)
FIELDS = {
    "truth": (lambda r: r["truth"], "The bench's ground truth log p(y) (forward/reverse AIS average)."),
    "random_best": (lambda r: r["random_best"], "The best final bound over the random restarts."),
    "random_median": (lambda r: r["random_quantiles"]["0.5"], "The median final bound over the random restarts."),
    "hinted": (lambda r: r["hinted"], "The final bound of the run started at the generating latent."),
    "hinted_start": (lambda r: r["hinted_start"], "The bound at the hinted start, before any sweep."),
    "random_minus_hinted": (lambda r: r["random_minus_hinted"],
                            "Best random minus hinted: >= 0 when the restarts reach the hint's optimum or better."),
    "gap_random": (lambda r: r["truth_minus_random_best"], "Truth minus the best random bound."),
    "gap_hinted": (lambda r: r["truth_minus_hinted"], "Truth minus the hinted bound."),
    "random_best_sym": (lambda r: r["random_best_sym"], "The best random bound with the symmetry correction."),
    "hinted_sym": (lambda r: r["hinted_sym"], "The hinted bound with the symmetry correction."),
    "gap_random_sym": (lambda r: r["truth"] - r["random_best_sym"],
                       "Truth minus the best random bound with the symmetry correction."),
    "gap_hinted_sym": (lambda r: r["truth"] - r["hinted_sym"],
                       "Truth minus the hinted bound with the symmetry correction."),
    "restarts": (lambda r: r["restarts"], "The number of random restarts."),
    "reaching_hinted": (lambda r: r["random_reaching_hinted"],
                        "Random restarts whose final bound is at least the hinted one minus the stopping tolerance."),
}


def _make(model, get, doc):
    def quote(folder):
        return get(_row(folder, model))
    quote.__doc__ = f"{model}: {doc}"
    return quote


_made = {f"{short}_{what}": _make(model, get, doc)
         for short, model in MODELS.items() for what, (get, doc) in FIELDS.items()}
globals().update(_made)


def _bench_vb(folder: Path, model: str) -> list[tuple[int, list[float]]]:
    """The bench's plain-VB trials of ``model``: (restarts per trial, the trials' bounds) per knob."""
    import csv

    with open(folder.parent / f"bench-{model}" / "bench.csv", newline="") as f:
        return [(int(r["knob"]), json.loads(r["trial_estimates"])) for r in csv.DictReader(f) if r["estimator"] == "vb"]


def binary_bench_best(folder):
    """The best plain-VB bound over every trial of the binary bench (all its restart counts)."""
    return max(max(trials) for _, trials in _bench_vb(folder, "binary"))


def binary_bench_restarts(folder):
    """Random restarts behind binary_bench_best: restarts per trial times trials, summed over the knobs."""
    return sum(knob * len(trials) for knob, trials in _bench_vb(folder, "binary"))


def binary_hinted_minus_bench_best(folder):
    """The hinted binary bound minus the bench's best plain-VB bound."""
    return binary_hinted(folder) - binary_bench_best(folder)  # noqa: F821  (made above)


def binary_hinted_minus_random_best(folder):
    """The hinted binary bound minus the best random restart's (what the restarts miss)."""
    return -binary_random_minus_hinted(folder)  # noqa: F821  (made above)


# The quotes README.md uses (the other per-model functions stay for a reader's own checks).
QUOTES = tuple(f"{m}_{w}" for m in MODELS for w in ("truth", "random_best", "hinted", "random_minus_hinted",
                                                    "gap_hinted", "gap_hinted_sym", "reaching_hinted",
                                                    "hinted_start")) + (
    "clustering_restarts", "binary_restarts", "clustering_random_median", "binary_random_median",
    "binary_bench_best", "binary_bench_restarts", "binary_hinted_minus_bench_best", "binary_hinted_minus_random_best")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/vb_hint`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
