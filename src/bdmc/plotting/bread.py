"""The BREAD bound on the Jeffreys divergence against chain length."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from .figures import figure_and_axes, require_columns


def plot_bread(result, *, ax=None, title: str | None = None) -> Figure:
    """Draw B-hat (with 2-stderr bars) against the number of intermediate distributions.

    Parameters
    ----------
    result : bdmc.checks.BreadResult or pandas.DataFrame
        What :func:`bdmc.bread` returns, or its ``table`` (columns ``num_steps``, ``b_hat``, ``b_hat_stderr``
        and, when present, ``kl_q_p_bound``, ``kl_p_q_bound``, ``alarm``).
    ax : matplotlib.axes.Axes, optional
        Draw into these axes instead of a new figure.
    title : str, optional
        The axes title.

    Returns
    -------
    matplotlib.figure.Figure
        Chain lengths where the bug alarm fired are circled in red; the y axis is logarithmic when every B-hat
        is positive and they span more than two decades.
    """
    table = result if isinstance(result, pd.DataFrame) else result.table
    require_columns(table, ("num_steps", "b_hat", "b_hat_stderr"), "plot_bread")
    fig, ax = figure_and_axes(ax, (7, 4.5))
    t = table.sort_values("num_steps")
    ax.errorbar(t["num_steps"], t["b_hat"], yerr=2 * t["b_hat_stderr"].fillna(0.0), marker="o", capsize=3,
                color="#6a3d9a", label="B-hat: E[B-hat] >= Jeffreys divergence")
    for col, label, style in (("kl_q_p_bound", "bound on KL(q || p)", "--"),
                              ("kl_p_q_bound", "bound on KL(p || q)", ":")):
        if col in t.columns and t[col].notna().any():
            ax.plot(t["num_steps"], t[col], style, marker=".", label=label)
    if "alarm" in t.columns and t["alarm"].astype(bool).any():
        bad = t[t["alarm"].astype(bool)]
        ax.scatter(bad["num_steps"], bad["b_hat"], s=160, facecolors="none", edgecolors="red", linewidths=2,
                   zorder=5, label="bug alarm")
    if not np.all(t["b_hat"] > 0):
        ax.axhline(0.0, color="0.5", lw=1)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.set_xlabel("intermediate distributions T")
    ax.set_ylabel("nats")
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "BREAD: bound on the Jeffreys divergence of AIS samples")
    ax.legend(loc="upper right")
    if np.all(t["b_hat"] > 0) and t["b_hat"].max() / t["b_hat"].min() > 100:
        ax.set_yscale("log")
    return fig
