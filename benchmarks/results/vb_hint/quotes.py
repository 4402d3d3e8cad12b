"""Numbers a page in this folder quotes, recomputed from rows.jsonl (tests/test_results_pages.py checks them).

Written by ``benchmarks/vb_hint.py``: one row per model, the latest one counting. Names are ``<model>_<what>`` with
model ``clustering``, ``low_rank`` or ``binary``; values in nats, VB bounds plain unless the name ends in ``_sym``
(the symmetry correction added). A page quotes one through a marker named after it. The
``QUOTES`` tuple lists those README.md uses (a listed, unused quote fails the test).
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


def _make(short, model):
    def truth(folder):
        """The bench's ground truth log p(y) (forward/reverse AIS average)."""
        return _row(folder, model)["truth"]

    def random_best(folder):
        """The best final bound over the random restarts."""
        return _row(folder, model)["random_best"]

    def random_median(folder):
        """The median final bound over the random restarts."""
        return _row(folder, model)["random_quantiles"]["0.5"]

    def hinted(folder):
        """The final bound of the run started at the generating latent."""
        return _row(folder, model)["hinted"]

    def hinted_start(folder):
        """The bound at the hinted start, before any sweep."""
        return _row(folder, model)["hinted_start"]

    def random_minus_hinted(folder):
        """Best random minus hinted: >= 0 when the restarts find the hint's optimum or a better one."""
        return _row(folder, model)["random_minus_hinted"]

    def gap_random(folder):
        """Truth minus the best random bound."""
        return _row(folder, model)["truth_minus_random_best"]

    def gap_hinted(folder):
        """Truth minus the hinted bound."""
        return _row(folder, model)["truth_minus_hinted"]

    def random_best_sym(folder):
        """The best random bound with the symmetry correction."""
        return _row(folder, model)["random_best_sym"]

    def hinted_sym(folder):
        """The hinted bound with the symmetry correction."""
        return _row(folder, model)["hinted_sym"]

    def gap_random_sym(folder):
        """Truth minus the best random bound with the symmetry correction."""
        row = _row(folder, model)
        return row["truth"] - row["random_best_sym"]

    def gap_hinted_sym(folder):
        """Truth minus the hinted bound with the symmetry correction."""
        row = _row(folder, model)
        return row["truth"] - row["hinted_sym"]

    def restarts(folder):
        """The number of random restarts."""
        return _row(folder, model)["restarts"]

    def reaching_hinted(folder):
        """Random restarts whose final bound is at least the hinted one minus the stopping tolerance."""
        return _row(folder, model)["random_reaching_hinted"]

    made = {"truth": truth, "random_best": random_best, "random_median": random_median, "hinted": hinted,
            "hinted_start": hinted_start, "random_minus_hinted": random_minus_hinted, "gap_random": gap_random,
            "gap_hinted": gap_hinted, "random_best_sym": random_best_sym, "hinted_sym": hinted_sym,
            "gap_random_sym": gap_random_sym, "gap_hinted_sym": gap_hinted_sym, "restarts": restarts,
            "reaching_hinted": reaching_hinted}
    return {f"{short}_{name}": fn for name, fn in made.items()}


_made = {}
for _short, _model in MODELS.items():
    _made.update(_make(_short, _model))
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
