"""Reproduce the BREAD paper's toy experiments (Appendix B.1.1, Figs. 3 and 4): exact J and B on a 7 x 7 grid.

Writes to ``benchmarks/results/bread_toys/``: ``bread_toys_sweep.csv`` (J and B against T), ``bread_toys.json``
(the other sections' rows), ``bread_toys_fig3.png`` and ``bread_toys_fig4.png``, and renders ``bread_toys.md``
(the tables) from them:

1. BARRIER against the paper's numbers under several readings of "T intermediate distributions".
2. J and B for T = 10 ... 100,000 (Fig. 3), EASY / HARD RANDOM drawn with ``--seed``.
3. Exact B against the mean of B-hat from simulated forward/reverse chain pairs (T = 100, 1000).
4. The spread of J and B over ``--draws`` random targets, against the paper's single draw.
5. Intermediate distributions, target and AIS output law at T = 100 (Fig. 4).

    python benchmarks/bread_toys.py            # about 1 minute on 2 CPUs
    python benchmarks/bread_toys.py --quick    # T up to 10,000, fewer pairs and draws
    python benchmarks/bread_toys.py --render   # only re-render the page from the stored rows
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import bdmc  # noqa: E402
from bdmc.exact.grid_toys import (
    EASY_SIGMA,
    GRID_SIZE,
    HARD_SIGMA,
    barrier,
    linear_betas,
    mh_transition_matrices,
    random_toy,
    simulate_bread,
    toy_jeffreys,
)
from bdmc.exact.jeffreys import exact_jeffreys, geometric_log_densities
from bdmc.plotting.bread_toys import plot_bread_divergences, plot_grid_distributions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import stamp, write_text  # noqa: E402

bdmc.enable_x64()  # float64, as the paper's numbers and the closed forms

RESULTS = Path(__file__).resolve().parent / "results" / "bread_toys"
S = GRID_SIZE * GRID_SIZE
# The paper's values (Appendix B.1.1) for its own random draws of EASY and HARD RANDOM.
PAPER = {
    "EASY RANDOM": {"J@100": 0.13, "J@1000": 0.00518, "B@1000": 0.0705},
    "HARD RANDOM": {"J@100": 4.73, "J@1000": 1.840, "B@1000": 2.309},
    "BARRIER": {"J@100": 1.65, "J@1000": 1.085, "B@1000": 1.184},
}
FIG4_BETAS = (0.05, 0.2, 0.5)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="seed of the EASY/HARD draws shown and simulated")
    ap.add_argument("--draws", type=int, default=20, help="random targets for the EASY/HARD spread")
    ap.add_argument("--pairs", type=int, default=20_000, help="forward/reverse chain pairs per Monte Carlo check")
    ap.add_argument("--max-t", type=int, default=100_000)
    ap.add_argument("--quick", action="store_true", help="--max-t 10000 --pairs 4000 --draws 5")
    ap.add_argument("--render", action="store_true", help="only re-render the page from the stored rows")
    args = ap.parse_args(argv)
    if args.render:
        write_folder("bread_toys")
        return 0
    if args.quick:
        args.max_t, args.pairs, args.draws = 10_000, 4_000, 5
    RESULTS.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    toys = {
        "EASY RANDOM": random_toy(np.random.default_rng([args.seed, 0, 2]), sigma=EASY_SIGMA),
        "HARD RANDOM": random_toy(np.random.default_rng([args.seed, 0, 10]), sigma=HARD_SIGMA),
        "BARRIER": barrier(),
    }
    rows = {
        "settings": {"seed": args.seed, "draws": args.draws, "pairs": args.pairs, "max_t": args.max_t,
                     "quick": args.quick, "python": platform.python_version(), "numpy": np.__version__},
        "barrier": _barrier_conventions(),
    }
    _sweep_section(toys, args.max_t)  # its rows: bread_toys_sweep.csv
    rows["monte_carlo"] = _monte_carlo_section(toys, args.pairs, args.seed)
    rows["spread"] = _spread_section(args.draws, args.seed)
    rows["fig4"] = _fig4_section(toys)
    rows["seconds"] = time.perf_counter() - start
    rows["provenance"] = stamp()
    write_text(RESULTS / "bread_toys.json", json.dumps(rows, indent=1) + "\n")
    write_folder("bread_toys")
    print((RESULTS / "bread_toys.md").read_text())
    return 0


def _barrier_conventions() -> dict:
    log_target = barrier()
    p = np.exp(log_target - log_target.max())
    p /= p.sum()
    mode = p.reshape(GRID_SIZE, GRID_SIZE)[: GRID_SIZE // 2, GRID_SIZE // 2 + 1 :].sum()
    variants = {
        "T distributions incl. prior and target, last move at beta = 1 (used)": lambda t: _variant(t, final_move=True),
        "same, no move at beta = 1 (output = state weighted last)": lambda t: _variant(t, final_move=False),
        "T + 1 distributions (T counts moves)": lambda t: _variant(t + 1, final_move=True),
        "T + 2 distributions (T excludes prior and target)": lambda t: _variant(t + 2, final_move=True),
        "T - 1 distributions": lambda t: _variant(t - 1, final_move=True),
    }
    readings = []
    for name, run in variants.items():
        r100, r1000 = run(100), run(1000)
        readings.append({"reading": name, "J@100": r100.J, "J@1000": r1000.J, "B@1000": r1000.B})
    return {"mode_mass": float(mode), "readings": readings}


def _variant(num_distributions, *, final_move):
    log_target = barrier()
    betas = linear_betas(num_distributions)

    def kernels(b):
        k = mh_transition_matrices(log_target, b)
        if not final_move:
            k[b == 1.0] = np.eye(S)
        return k

    return exact_jeffreys(log_target, np.full(S, 1.0 / S), betas, kernels)


def _sweep_ts(max_t):
    ts = [t for decade in (10, 100, 1000, 10_000, 100_000) for t in (decade, 2 * decade, 5 * decade)]
    return [t for t in ts if t <= max_t]


def _sweep_section(toys, max_t) -> None:
    rows = []
    for name, log_target in toys.items():
        for t in _sweep_ts(max_t):
            r = toy_jeffreys(log_target, t)
            rows.append(
                dict(toy=name, num_distributions=t, J=r.J, B=r.B, log_w_forward=r.log_w_forward, log_z=r.log_z,
                     log_w_reverse=r.log_w_reverse, **stamp())
            )
    table = pd.DataFrame(rows)
    write_text(RESULTS / "bread_toys_sweep.csv", table.to_csv(index=False))
    fig = plot_bread_divergences(table)
    fig.savefig(RESULTS / "bread_toys_fig3.png", dpi=130)


def _monte_carlo_section(toys, pairs, seed) -> list[dict]:
    rows = []
    for i, (name, log_target) in enumerate(toys.items()):
        for t in (100, 1000):
            r = toy_jeffreys(log_target, t)
            sim = simulate_bread(np.random.default_rng([seed, 1, i, t]), log_target, t, num_pairs=pairs)
            mean, se = sim.b_hat.mean(), sim.b_hat.std(ddof=1) / np.sqrt(pairs)
            rows.append({"toy": name, "T": t, "B": r.B, "b_hat_mean": float(mean), "b_hat_stderr": float(se),
                         "log_w_forward": r.log_w_forward, "simulated_forward": float(sim.log_w_forward.mean()),
                         "log_w_reverse": r.log_w_reverse, "simulated_reverse": float(sim.log_w_reverse.mean())})
    return rows


def _spread_section(draws, seed) -> list[dict]:
    rows = []
    for name, sigma in (("EASY RANDOM", EASY_SIGMA), ("HARD RANDOM", HARD_SIGMA)):
        stats = {"J@100": [], "J@1000": [], "B@1000": []}
        for i in range(draws):
            log_target = random_toy(np.random.default_rng([seed, 2, int(sigma), i]), sigma=sigma)
            r100, r1000 = toy_jeffreys(log_target, 100), toy_jeffreys(log_target, 1000)
            stats["J@100"].append(r100.J)
            stats["J@1000"].append(r1000.J)
            stats["B@1000"].append(r1000.B)
        for stat, values in stats.items():
            v, paper = np.array(values), PAPER[name][stat]
            rows.append({"toy": name, "statistic": stat, "mean": float(v.mean()), "min": float(v.min()),
                         "max": float(v.max()), "paper": paper, "below": int(np.sum(v < paper)), "draws": draws})
    return rows


def _fig4_section(toys) -> list[dict]:
    rows, found = {}, []
    for name, log_target in toys.items():
        r = toy_jeffreys(log_target, 100)
        path = np.exp(geometric_log_densities(log_target, np.full(S, 1.0 / S), np.array([0.0, *FIG4_BETAS, 1.0])))
        panels = [(f"beta = {b}", path[i + 1]) for i, b in enumerate(FIG4_BETAS)]
        panels += [("target", r.p), (f"AIS output, T = 100\nJ = {r.J:.3g}", r.q)]
        rows[name] = panels
        found.append({"toy": name, "J": r.J, "B": r.B})
    plot_grid_distributions(rows).savefig(RESULTS / "bread_toys_fig4.png", dpi=130)
    return found


if __name__ == "__main__":
    sys.exit(main())
