"""Figures of an audit's checks other than SBC (whose figures live in :mod:`bdmc.plotting.sbc`).

Each function draws numbers an audit already computed; :func:`png_bytes` renders a figure for the report.
The sandwich, BREAD, Geweke and real-data figures are :func:`bdmc.plotting.plot_sandwich`,
:func:`~bdmc.plotting.plot_bread`, :func:`~bdmc.plotting.plot_geweke` and :func:`~bdmc.plotting.plot_real_data`.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .figures import figure_and_axes, require_columns

PASS_COLOR, FAIL_COLOR = "#1f77b4", "#d62728"


def png_bytes(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure rendered as PNG bytes (no file, no pyplot state).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : int
        Resolution; 100 keeps a report of a dozen figures under a megabyte.

    Returns
    -------
    bytes
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def plot_consistency(table: pd.DataFrame, *, tol: float, ax=None, title: str | None = None) -> Figure:
    """Violations of the conditional-vs-joint identity, one row of points per (conditional, lambda).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per triple: ``conditional`` (its name), ``lam`` and ``violation`` (nats, non-negative).
    tol : float
        The largest violation accepted as rounding; drawn as a vertical line.
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Violations on a log axis (zeros drawn at a tenth of the smallest positive value or of ``tol``);
        points beyond ``tol`` in red.
    """
    require_columns(table, ("conditional", "lam", "violation"), "plot_consistency")
    groups = list(table.groupby(["conditional", "lam"], sort=False))
    fig, ax = figure_and_axes(ax, (7, 0.9 + 0.45 * max(len(groups), 1)))
    v = table["violation"].to_numpy(dtype=float)
    positive = v[(v > 0) & np.isfinite(v)]
    floor = 0.1 * min(positive.min() if positive.size else tol, tol)
    for i, (_, rows) in enumerate(groups):
        x = np.clip(rows["violation"].to_numpy(dtype=float), floor, None)
        x = np.where(np.isfinite(x), x, 1e6)
        bad = x > tol
        ax.scatter(x[~bad], np.full((~bad).sum(), i), s=12, color=PASS_COLOR, alpha=0.7)
        ax.scatter(x[bad], np.full(bad.sum(), i), s=16, color=FAIL_COLOR)
    ax.axvline(tol, color="0.3", ls="--", lw=1, label=f"tolerance {tol:.0e} nats")
    ax.set_yticks(range(len(groups)), [f"{name}, λ = {lam:g}" for (name, lam), _ in groups], fontsize=8)
    ax.set_ylim(-0.7, len(groups) - 0.3)
    ax.set_xscale("log")
    ax.set_xlabel("|log p(x|u) - log p(x'|u) - [log f(x, u) - log f(x', u)]|  (nats)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "Conditional vs joint: violations per random triple", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def plot_evidence(table: pd.DataFrame, *, ax=None, title: str | None = None) -> Figure:
    """Bounds on log p(y): each estimate with two standard errors, and its Markov-certified value.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per bound: ``label``, ``side`` ("lower" or "upper"), ``value``, ``stderr`` and ``certified``
        (the value that holds with the stated probability; NaN when the bound has no such statement). A side
        other than "lower" or "upper" (e.g. "exact") is drawn in black.
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Lower bounds in blue, upper bounds in red, certified values as open triangles pointing the way the
        truth lies.
    """
    require_columns(table, ("label", "side", "value", "stderr", "certified"), "plot_evidence")
    fig, ax = figure_and_axes(ax, (7, 1.2 + 0.5 * len(table)))
    for i, row in enumerate(table.itertuples(index=False)):
        color = {"lower": PASS_COLOR, "upper": FAIL_COLOR}.get(row.side, "black")
        se = row.stderr if np.isfinite(row.stderr) else 0.0
        ax.errorbar(row.value, i, xerr=2 * se, fmt="o", color=color, capsize=3)
        if np.isfinite(row.certified):
            ax.plot(row.certified, i, marker=">" if row.side == "lower" else "<", mfc="none", color=color, ms=8)
    ax.set_yticks(range(len(table)), list(table["label"]), fontsize=8)
    ax.set_ylim(-0.7, len(table) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("log p(y)  (nats; bars: 2 standard errors; open triangles: certified values)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title or "Evidence: bounds on log p(y)", fontsize=10)
    return fig


def plot_simulator_density(table: pd.DataFrame, *, level: float, max_rows: int = 24, ax=None,
                           title: str | None = None) -> Figure:
    """The tests of the simulator-vs-density check: each p-value on a -log10 axis, rejected tests in red.

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`bdmc.checks.simulator_density.SimulatorDensityResult.table` (``part``, ``test``, ``where``,
        ``p_value``, ``fired``).
    level : float
        The family-wise level; a dashed line marks the smallest Holm threshold, ``level / number of tests``.
    max_rows : int
        Draw the tests with the smallest p-values, at most this many.
    ax : matplotlib.axes.Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(table, ("part", "test", "where", "p_value", "fired"), "plot_simulator_density")
    t = table.sort_values("p_value").head(max_rows).iloc[::-1]
    fig, ax = figure_and_axes(ax, (7.5, 1.0 + 0.28 * max(len(t), 1)))
    score = -np.log10(np.clip(t["p_value"].to_numpy(dtype=float), 1e-300, 1.0))
    colors = np.where(t["fired"].to_numpy(dtype=bool), FAIL_COLOR, PASS_COLOR)
    ax.barh(np.arange(len(t)), score, color=colors)
    ax.axvline(-np.log10(level / max(len(table), 1)), color="0.3", ls="--", lw=1,
               label=f"Holm's first threshold, {level:g} / {len(table)} tests")
    ax.set_yticks(np.arange(len(t)), [f"{r.part}: {r.test} ({r.where})" for r in t.itertuples()], fontsize=7)
    ax.set_xlabel("-log10 p-value")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or f"Simulator vs density: the {len(t)} smallest p-values of {len(table)} tests", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return fig
