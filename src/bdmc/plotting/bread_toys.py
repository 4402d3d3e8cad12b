"""Figures of the BREAD paper's grid toys (Appendix B, Figs. 3 and 4), drawn from precomputed arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .figures import figure_and_axes, require_columns

TOY_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def plot_bread_divergences(table: pd.DataFrame, *, ax=None, log_y: bool = True, title: str | None = None) -> Figure:
    """True Jeffreys divergence ``J`` (solid) and its bound ``B`` (dashed) against ``T``, one colour per toy.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``toy``, ``num_distributions``, ``J`` and ``B``; one row per toy and ``T``.
    ax : matplotlib Axes, optional
        Axes to draw into; a new figure (not registered with pyplot) otherwise.
    log_y : bool, keyword-only
        Logarithmic y-axis (divergences span several decades); rows with a non-positive value are dropped.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(table, ("toy", "num_distributions", "J", "B"), "plot_bread_divergences")
    fig, ax = figure_and_axes(ax, (6.4, 4.4))
    for i, (toy, rows) in enumerate(table.groupby("toy", sort=False)):
        rows = rows.sort_values("num_distributions")
        color = TOY_COLORS[i % len(TOY_COLORS)]
        for column, style, label in (("J", "-", f"{toy}: J"), ("B", "--", f"{toy}: B")):
            keep = rows[column] > 0 if log_y else np.ones(len(rows), bool)
            ax.plot(rows["num_distributions"][keep], rows[column][keep], style, color=color, lw=1.6, label=label)
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("number of intermediate distributions T")
    ax.set_ylabel("Jeffreys divergence (nats)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, ncol=len(table["toy"].unique()), loc="lower left")
    ax.set_title(title or "True Jeffreys divergence J (solid) and BREAD bound B (dashed)", fontsize=10)
    return fig


def plot_grid_distributions(
    rows: Mapping[str, Sequence[tuple[str, np.ndarray]]], *, size: int = 7, cmap: str = "viridis"
) -> Figure:
    """Heatmaps of distributions on a ``size x size`` grid: one figure row per toy, one panel per distribution.

    Parameters
    ----------
    rows : mapping from str to sequence of (str, array)
        For each toy (row label), the panels to draw: a title and a probability vector of length
        ``size * size`` (row-major, row 0 at the top) or a ``size x size`` array.
    size : int, keyword-only
        Grid side.
    cmap : str, keyword-only
        Colour map; each panel has its own colour scale (from 0 to its maximum).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ncols = max(len(panels) for panels in rows.values())
    fig = Figure(figsize=(1.9 * ncols, 2.0 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), ncols, squeeze=False)
    for r, (toy, panels) in enumerate(rows.items()):
        for c, ax in enumerate(axes[r]):
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= len(panels):
                ax.axis("off")
                continue
            name, values = panels[c]
            grid = np.asarray(values, dtype=float).reshape(size, size)
            ax.imshow(grid, cmap=cmap, vmin=0.0, vmax=grid.max(), interpolation="nearest")
            ax.set_title(name, fontsize=8)
            if c == 0:
                ax.set_ylabel(toy, fontsize=9)
    return fig
