"""P-P plots of a Geweke test."""

from __future__ import annotations

import math

from matplotlib.figure import Figure


def plot_geweke(result, *, max_panels: int = 12, title: str | None = None) -> Figure:
    """One P-P panel per statistic: forward CDF against successive-conditional CDF.

    Parameters
    ----------
    result : bdmc.checks.GewekeResult
        What :func:`bdmc.checks.geweke` returns.
    max_panels : int
        Draw at most this many statistics (the first ones).
    title : str, optional
        The figure title; by default the verdict.

    Returns
    -------
    matplotlib.figure.Figure
        Points on the diagonal mean the two simulations agree; a panel's title gives its z-score, and
        statistics past the threshold are drawn in red.
    """
    names = result.names[:max_panels]
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(3.0 * cols, 3.0 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for j, ax in enumerate(axes.ravel()):
        if j >= len(names):
            ax.axis("off")
            continue
        f, s = result.pp_points(j)
        bad = abs(result.z[j]) >= result.threshold
        ax.plot([0, 1], [0, 1], color="0.6", lw=1)
        ax.plot(f, s, ".", ms=3, color="tab:red" if bad else "tab:blue")
        ax.set_title(f"{names[j]}\nz = {result.z[j]:+.2f}", fontsize=8)
        ax.set_xlabel("forward CDF", fontsize=7)
        ax.set_ylabel("successive-conditional CDF", fontsize=7)
        ax.tick_params(labelsize=6)
    verdict = "passed" if result.passed else f"FAILED (worst {result.worst[0]}, z = {result.worst[1]:+.1f})"
    fig.suptitle(title or f"Geweke test {verdict}", fontsize=10)
    fig.tight_layout()
    return fig
