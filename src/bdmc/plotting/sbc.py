"""Simulation-based calibration figures: rank histograms and ECDF difference plots, one panel per quantity."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure


def _grid(num: int, *, width: float = 3.0, height: float = 2.6):
    cols = min(4, num)
    rows = math.ceil(num / cols)
    fig = Figure(figsize=(width * cols, height * rows))
    return fig, fig.subplots(rows, cols, squeeze=False).ravel()


def _title(result, j: int) -> str:
    flag = "  OUTSIDE" if result.outside[j] else ""
    return f"{result.names[j]}\ngamma {result.statistic[j]:.2g}{flag}"


def _suptitle(result, title, what):
    return title or (f"SBC {what}: {result.verdict} ({result.num_replications} replications, {result.num_draws} "
                     f"draws, level {result.level:g})")


def _panels(result, max_panels: int, title, what: str, draw) -> Figure:
    """One panel per quantity shown (the most extreme first): ``draw(ax, j)`` draws quantity ``j``'s panel and
    this frames it (title, tick labels), blanks the unused axes and titles the figure."""
    shown = result.most_extreme(max_panels)
    fig, axes = _grid(len(shown))
    for ax, j in zip(axes, shown, strict=False):
        draw(ax, j)
        ax.set_title(_title(result, j), fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in axes[len(shown):]:
        ax.axis("off")
    fig.suptitle(_suptitle(result, title, what), fontsize=10)
    fig.tight_layout()
    return fig


def plot_sbc_histograms(result, *, max_panels: int = 12, num_bins: int | None = None,
                        title: str | None = None) -> Figure:
    """Rank histograms with the band of counts a uniform rank stays in (99% per bin, pointwise).

    Parameters
    ----------
    result : bdmc.checks.SBCResult
    max_panels : int
        Quantities shown: the log-likelihood, then those with the smallest gamma (the most suspicious).
    num_bins : int, optional
        Rank bins (about one per ten replications by default).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        A hump in the middle means the draws are too wide (overdispersed), a U too narrow, a slope a bias.
    """
    edges, counts, lower, upper = result.histogram(num_bins)

    def draw(ax, j):
        ax.fill_between(edges, np.r_[lower, lower[-1]], np.r_[upper, upper[-1]], step="post", color="0.85",
                        lw=0, label="uniform, 99%")
        ax.stairs(counts[:, j], edges, fill=True, color="tab:red" if result.outside[j] else "tab:blue", alpha=0.8)
        ax.set_xlabel("rank", fontsize=7)

    return _panels(result, max_panels, title, "rank histograms", draw)


def plot_sbc_ecdf(result, *, max_panels: int = 12, title: str | None = None) -> Figure:
    """ECDF difference plots (ECDF of the fractional ranks minus the uniform CDF) with the simultaneous band.

    Parameters
    ----------
    result : bdmc.checks.SBCResult
    max_panels : int
        Quantities shown: the log-likelihood, then those with the smallest gamma.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        The band holds every quantity's whole curve with probability ``1 - level / num_quantities`` when the
        sampler is right (Sailynoja et al. 2022); a curve leaving it is drawn in red.
    """
    z, diff, lo, hi = result.ecdf_difference()

    def draw(ax, j):
        ax.fill_between(z, lo, hi, step="post", color="0.85", lw=0)
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.step(z, diff[:, j], where="post", color="tab:red" if result.outside[j] else "tab:blue", lw=1.2)
        ax.set_xlabel("fractional rank", fontsize=7)
        ax.set_ylabel("ECDF - uniform", fontsize=7)

    return _panels(result, max_panels, title, "ECDF differences", draw)
