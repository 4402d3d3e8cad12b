"""The real-data protocol's quartile plots (BREAD paper, Figs. 1, 5 and 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

_COLORS = {"forward-real": "#1f78b4", "forward-simulated": "#33a02c"}


def _quartiles(runs: pd.DataFrame, condition: str) -> pd.DataFrame:
    g = runs[runs["condition"] == condition].groupby("num_steps")["log_ml"]
    return pd.DataFrame({"q25": g.quantile(0.25), "median": g.median(), "q75": g.quantile(0.75)})


def _curve(ax, q: pd.DataFrame, shift: float, *, color, label, marker="o", offset=1.0):
    x = q.index.to_numpy() * offset
    ax.errorbar(x, q["median"] - shift, yerr=[q["median"] - q["q25"], q["q75"] - q["median"]], marker=marker,
                capsize=3, color=color, label=label, lw=1.5, ms=4)


def plot_real_data(runs: pd.DataFrame, *, bounds: pd.DataFrame, title: str | None = None, verdict=None) -> Figure:
    """Draw the protocol's runs; returns the Figure.

    Left: forward AIS on real and simulated data, each shifted by its largest forward estimate (Figs. 1a-b,
    5). Middle: reverse AIS on the simulated data for each S, with the simulated forward curve, shifted alike
    (Figs. 1c, 6). Both on a symmetric-log axis, linear within 1 nat of zero.
    Right: B-hat, the bound on the Jeffreys divergence, per S. Points are medians, bars the quartiles of the
    single-chain estimates. ``runs`` and ``bounds`` are :attr:`bdmc.realdata.RealDataResult.runs` and its
    ``bread_bounds()``; ``verdict`` (optional) is its ``forward`` consistency, named in the left title.
    """
    fig = Figure(figsize=(15, 4.6), layout="constrained")
    ax_fwd, ax_rev, ax_b = fig.subplots(1, 3)
    for condition, label in (("forward-real", "forward, real data"), ("forward-simulated", "forward, simulated")):
        q = _quartiles(runs, condition)
        shift = runs.loc[runs["condition"] == condition, "log_ml"].max()
        _curve(ax_fwd, q, shift, color=_COLORS[condition], label=label,
               offset=1.0 if condition == "forward-real" else 1.06)
    ax_fwd.set_ylabel("log-ML estimate minus the largest forward estimate (nats)")
    ax_fwd.set_title("forward AIS: real vs simulated" if verdict is None else
                     f"forward AIS: {'consistent' if verdict.consistent else 'NOT consistent'} "
                     f"(climbs differ by <= {100 * verdict.table['relative'].max():.0f}%)", fontsize=10)

    reverse = sorted((int(c.removeprefix("reverse-S")), c) for c in runs["condition"].unique()
                     if c.startswith("reverse-S"))
    cmap = [_shade(i, len(reverse)) for i in range(len(reverse))]
    shift = runs.loc[runs["condition"] == "forward-simulated", "log_ml"].max()
    _curve(ax_rev, _quartiles(runs, "forward-simulated"), shift, color=_COLORS["forward-simulated"],
           label="forward, simulated")
    for i, (S, condition) in enumerate(reverse):
        _curve(ax_rev, _quartiles(runs, condition), shift, color=cmap[i], label=f"reverse, S = {S:,}", marker="s",
               offset=1.0 + 0.04 * (i + 1))
    ax_rev.set_ylabel("log-ML estimate minus the largest forward estimate (nats)")
    ax_rev.set_title("reverse AIS from the sample after S MCMC steps", fontsize=10)

    b = bounds
    for i, (S, _) in enumerate(reverse):
        t = b[b["S"] == S]
        ax_b.errorbar(t["num_steps"] * (1.0 + 0.04 * i), t["b_hat"], yerr=2 * t["b_hat_stderr"], marker="s",
                      capsize=3, color=cmap[i], label=f"S = {S:,}", ms=4)
    if len(b) and np.all(b["b_hat"] > 0):
        ax_b.set_yscale("log")
    else:
        ax_b.axhline(0.0, color="0.5", lw=1)
    ax_b.set_ylabel("B-hat, bound on the Jeffreys divergence (nats)")
    ax_b.set_title("BREAD bound on the simulated data (±2 s.e.)", fontsize=10)
    for ax in (ax_fwd, ax_rev):
        # Early runs sit thousands of nats below late ones: linear within 1 nat of the top, log beyond.
        ax.set_yscale("symlog", linthresh=1.0)
    for ax in (ax_fwd, ax_rev, ax_b):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.set_xlabel("number of AIS steps T")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def _shade(i: int, n: int) -> str:
    from matplotlib import colormaps

    return colormaps["autumn"](0.85 * i / max(n - 1, 1))
