"""``plot_sandwich``: lower and upper bounds on log p(y) against the number of intermediate distributions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from ..contracts.pairs import estimator_pair
from .figures import figure_and_axes, require_columns

LOWER_COLOR = "#1f77b4"
UPPER_COLOR = "#d62728"
BAND_COLOR = "#9467bd"
CROSSED_COLOR = "#d62728"
BAND_LABEL = "between the bounds"
CROSSED_LABEL = "bounds crossed (lower above upper)"
MAX_LABELLED_LENGTHS = 8  # up to this many chain lengths get their own tick; more get decade ticks


def plot_sandwich(table: pd.DataFrame, *, exact: float | None = None, ax=None, title: str | None = None) -> Figure:
    """Draw a sandwich table: forward (lower) and reverse (upper) bounds against T on a log axis.

    Where both bounds exist, the region between them is shaded, and where they cross (the lower bound above
    the upper one) it is hatched red instead, labelled "bounds crossed".

    Parameters
    ----------
    table : pandas.DataFrame
        A table from :func:`bdmc.sandwich` (``SandwichResult.table``) or its CSV: columns ``num_steps``,
        ``direction`` ("forward"/"reverse"), ``value`` and ``stderr`` are used; ``exact`` when present.
        Rows may come in any order and a chain length may have only one direction.
    exact : float, optional
        The exact log p(y), drawn as a horizontal line. Defaults to the table's ``exact`` column when finite.
    ax : matplotlib Axes, optional
        Axes to draw into; a new figure (not registered with pyplot, so no GUI backend is touched) otherwise.
    title : str, optional
        Axes title; defaults to "BDMC sandwich" with the number of runs when the table records it.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding ``ax``. Nothing is shown; save it with ``fig.savefig(path)``.
    """
    require_columns(table, ("num_steps", "direction", "value", "stderr"), "plot_sandwich")
    fig, ax = figure_and_axes(ax, (7.0, 4.6))
    if exact is None and "exact" in table.columns:
        finite = pd.to_numeric(table["exact"], errors="coerce").dropna()
        finite = finite[np.isfinite(finite)]
        exact = float(finite.iloc[0]) if len(finite) else None

    pair = estimator_pair(str(table["method"].iloc[0]) if "method" in table.columns and len(table) else "ais")
    names = pair.labels
    sides = {}
    # Open squares for the upper bound, drawn under the filled lower-bound circles, so both stay visible
    # where the bounds meet.
    for direction, label, color, marker, size, face, z in (
        ("forward", f"lower bound ({names[0]})", LOWER_COLOR, "o", 5, LOWER_COLOR, 4),
        ("reverse", f"upper bound ({names[1]})", UPPER_COLOR, "s", 7, "white", 3),
    ):
        rows = table[table["direction"] == direction].sort_values("num_steps")
        sides[direction] = rows.set_index("num_steps")["value"]
        if rows.empty:
            continue
        ax.errorbar(
            rows["num_steps"], rows["value"], yerr=rows["stderr"].fillna(0.0), label=label, color=color,
            marker=marker, markersize=size, markerfacecolor=face, markeredgewidth=1.4, linewidth=1.6, capsize=3,
            elinewidth=1.2, zorder=z,
        )

    both = pd.concat(sides, axis=1, join="inner").sort_index() if len(sides) == 2 else pd.DataFrame()
    if len(both):
        _draw_bands(ax, both.index.to_numpy(dtype=float), both["forward"].to_numpy(float),
                   both["reverse"].to_numpy(float))
    if exact is not None and math.isfinite(exact):
        ax.axhline(exact, color="black", linestyle="--", linewidth=1.2, zorder=2, gid="exact",
                   label=f"exact log p(y) = {exact:.3f}")

    ax.set_xscale("log")
    lengths = np.unique(table["num_steps"].to_numpy(dtype=float))
    if 0 < len(lengths) <= MAX_LABELLED_LENGTHS:
        # Label the chain lengths actually run (plain integers), not just the decades.
        ax.xaxis.set_major_locator(FixedLocator(lengths))
        ax.xaxis.set_minor_locator(NullLocator())
    else:
        ax.xaxis.set_minor_locator(LogLocator(subs="auto"))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(pair.axis)
    ax.set_ylabel("log p(y) (nats)")
    ax.grid(True, which="major", alpha=0.3)
    if title is None:
        title = "BDMC sandwich"
        if "num_runs" in table.columns and table["num_runs"].nunique() == 1:
            title += f" ({int(table['num_runs'].iloc[0])} runs per direction)"
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        # Bounds first, then band and exact line; upper right is usually empty once the bounds converge, but
        # a lower bound alone (real data) rises into it, leaving lower right empty.
        order = sorted(range(len(labels)), key=lambda i: (not labels[i].startswith(("lower", "upper")), labels[i]))
        ax.legend([handles[i] for i in order], [labels[i] for i in order], framealpha=0.9,
                  loc="upper right" if len(sides["reverse"]) else "lower right")
    return fig


def _draw_bands(ax, x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    """Shade between the bounds where the lower one is below the upper one, and hatch where they cross.

    A crossed region is not "between the bounds": it is where the lower bound lies above the upper one, which
    a correct sampler does only by chance (the bug alarm judges how much). The crossing points are found
    linearly in log T, where the drawn lines are straight, so each region ends where the lines meet.

    Parameters
    ----------
    ax : matplotlib Axes
        With a log x axis.
    x, lower, upper : array
        Knob values (increasing) and both bounds at each.
    """
    x, lower, upper = _with_crossings(x, lower, upper)
    kept, crossed = upper > lower, lower > upper
    if kept.any():
        ax.fill_between(x, lower, upper, where=upper >= lower, color=BAND_COLOR, alpha=0.15, linewidth=0,
                        label=BAND_LABEL, zorder=1, gid="between")
    if crossed.any():
        ax.fill_between(x, lower, upper, where=lower >= upper, facecolor=(*to_rgb(CROSSED_COLOR), 0.12),
                        edgecolor=CROSSED_COLOR, hatch="///", linewidth=0, label=CROSSED_LABEL, zorder=1,
                        gid="crossed")


def _with_crossings(x: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """``(x, lower, upper)`` with a point added wherever the bounds cross between two knob values.

    The point is where the two segments meet on a log x axis, so both fills stop exactly there.
    """
    points = [(x[0], lower[0], upper[0])]
    for i in range(1, len(x)):
        d0, d1 = upper[i - 1] - lower[i - 1], upper[i] - lower[i]
        if np.isfinite(d0) and np.isfinite(d1) and d0 * d1 < 0:  # opposite signs: the lines meet in between
            t = d0 / (d0 - d1)
            meet = lower[i - 1] + t * (lower[i] - lower[i - 1])
            points.append((math.exp((1 - t) * math.log(x[i - 1]) + t * math.log(x[i])), meet, meet))
        points.append((x[i], lower[i], upper[i]))
    return tuple(np.array(column, dtype=float) for column in zip(*points, strict=False))
