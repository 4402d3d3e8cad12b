"""Figures of the decoder-model evaluation (Wu et al. 2017): AIS against T, the sigma sweep, samples, and AIS
posterior samples beside their images. Each draws the tables or arrays the evaluation saved; none computes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .figures import require_columns

COLORS = {"vae": "#1f77b4", "gan": "#d62728", "gmmn": "#2ca02c"}
FALLBACK = "#7f7f7f"


def plot_ais_curve(curve: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Mean log-likelihood per image against the number of AIS distributions T, per model and split.

    Parameters
    ----------
    curve : pandas.DataFrame
        Columns ``model``, ``split``, ``steps``, ``mean``, ``stderr`` (``OUT/curve.csv``). Test images are
        drawn solid, training images dashed, with error bars of one standard error across images.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(curve, {"model", "split", "steps", "mean", "stderr"}, "plot_ais_curve")
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for (model, split), rows in curve.groupby(["model", "split"], sort=True):
        rows = rows.sort_values("steps")
        ax.errorbar(rows["steps"], rows["mean"], yerr=np.nan_to_num(rows["stderr"].to_numpy(float)), capsize=3,
                    color=COLORS.get(model, FALLBACK), marker="o", linestyle="-" if split == "test" else "--",
                    label=f"{model.upper()} {split}")
    ax.set_xscale("log")
    ax.set_xlabel("AIS intermediate distributions T")
    ax.set_ylabel("mean log p(x) lower bound (nats)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title or "forward AIS against T (solid: test, dashed: train)")
    return fig


def plot_gap_curve(gaps: pd.DataFrame, *, title: str | None = None) -> Figure:
    """The BDMC figure of Wu et al. (2017): on images simulated from each decoder, forward (lower) and reverse
    (upper) AIS against T (left), and their gap against T (right; log scale beyond 0.1 nat, linear within, so a
    gap within noise of zero is drawn with its sign).

    Parameters
    ----------
    gaps : pandas.DataFrame
        Columns ``model``, ``steps``, ``forward``, ``reverse``, ``gap``, ``gap_se`` (``OUT/gap_curve.csv``):
        means over the simulated images, the gap's standard error across them.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(gaps, {"model", "steps", "forward", "reverse", "gap", "gap_se"}, "plot_gap_curve")
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    bounds, gap_ax = fig.subplots(1, 2)
    for model, rows in gaps.groupby("model", sort=True):
        rows = rows.sort_values("steps")
        color = COLORS.get(model, FALLBACK)
        bounds.plot(rows["steps"], rows["forward"], marker="o", color=color, label=f"{model.upper()} forward")
        bounds.plot(rows["steps"], rows["reverse"], marker="v", linestyle="--", color=color,
                    label=f"{model.upper()} reverse")
        gap = rows["gap"].to_numpy(float)
        gap_ax.errorbar(rows["steps"], gap, yerr=np.nan_to_num(rows["gap_se"].to_numpy(float)),
                        marker="o", capsize=3, color=color, label=model.upper())
    for ax in (bounds, gap_ax):
        ax.set_xscale("log")
        ax.set_xlabel("AIS intermediate distributions T")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    bounds.set_ylabel("mean log p(x) bound on simulated images (nats)")
    # Symmetric log: a gap within noise of zero may be negative, and is drawn where it is.
    gap_ax.set_yscale("symlog", linthresh=0.1)
    gap_ax.axhline(0.0, color="black", linewidth=0.8)
    gap_ax.set_ylabel("BDMC gap, reverse - forward (nats)")
    fig.suptitle(title or "BDMC on images simulated from each decoder")
    return fig


def plot_sigma_sweep(sweep: pd.DataFrame, *, zoom: float = 1500.0, title: str | None = None) -> Figure:
    """AIS log-likelihood of validation images against the observation noise sigma, per model.

    Parameters
    ----------
    sweep : pandas.DataFrame
        Columns ``model``, ``sigma``, ``mean``, ``stderr``; the chosen sigma (the maximum) is ringed.
    zoom : float
        When the values span more than this many nats, the y-axis shows only the top ``zoom`` nats.

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(sweep, {"model", "sigma", "mean", "stderr"}, "plot_sigma_sweep")
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for model, rows in sweep.groupby("model", sort=True):
        rows = rows.sort_values("sigma")
        color = COLORS.get(model, FALLBACK)
        ax.errorbar(rows["sigma"], rows["mean"], yerr=np.nan_to_num(rows["stderr"].to_numpy(float)), capsize=3,
                    color=color, marker="o", label=model.upper())
        best = rows.loc[rows["mean"].idxmax()] if rows["mean"].notna().any() else None
        if best is not None:
            ax.plot([best["sigma"]], [best["mean"]], marker="o", markersize=14, markerfacecolor="none",
                    color=color)
    ax.set_xscale("log")
    grid = np.sort(sweep["sigma"].unique())
    ax.set_xticks(grid, [f"{s:g}" for s in grid], fontsize="small")
    ax.minorticks_off()
    top = float(np.nanmax(sweep["mean"])) if sweep["mean"].notna().any() else math.nan
    if np.isfinite(top) and top - float(np.nanmin(sweep["mean"])) > zoom:
        # Small sigmas fall thousands of nats below: show the region around the optimum.
        ax.set_ylim(top - zoom, top + 0.1 * zoom)
        ax.set_title(title or f"choosing sigma by AIS on validation images (top {zoom:g} nats)")
    ax.set_xlabel("sigma")
    ax.set_ylabel("mean AIS log p(x), validation images (nats)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    if not ax.get_title():
        ax.set_title(title or "choosing sigma by AIS on validation images")
    return fig


def plot_image_grid(images: np.ndarray, *, shape: Sequence[int], columns: int = 8, title: str | None = None) -> Figure:
    """Images (n, pixels) in a grid, grey scale in [0, 1] (e.g. a decoder's mean images f(z))."""
    images = np.asarray(images, float)
    n = images.shape[0]
    rows = max(1, math.ceil(n / columns))
    fig = Figure(figsize=(columns * 0.9, rows * 0.9 + (0.4 if title else 0)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    for i, ax in enumerate(axes):
        ax.axis("off")
        if i < n:
            ax.imshow(images[i].reshape(tuple(shape)), cmap="gray", vmin=0.0, vmax=1.0)
    if title:
        fig.suptitle(title, fontsize="small")
    return fig


def plot_posterior_samples(images: np.ndarray, decoded: np.ndarray, *, shape: Sequence[int],
                           title: str | None = None) -> Figure:
    """Each image (left) beside the decoder's mean at the final z of a few of its AIS chains (right).

    Parameters
    ----------
    images : array (m, pixels)
    decoded : array (m, chains, pixels)
        ``f(z)`` at each chain's last state: approximate posterior samples seen through the decoder.
    shape : (height, width)
    """
    images, decoded = np.asarray(images, float), np.asarray(decoded, float)
    m, c = decoded.shape[:2]
    fig = Figure(figsize=((c + 1) * 0.9, m * 0.9 + 0.5), layout="constrained")
    axes = fig.subplots(m, c + 1, squeeze=False)
    for i in range(m):
        for j in range(c + 1):
            ax = axes[i, j]
            ax.axis("off")
            ax.imshow((images[i] if j == 0 else decoded[i, j - 1]).reshape(tuple(shape)), cmap="gray", vmin=0.0,
                      vmax=1.0)
    axes[0, 0].set_title("image", fontsize="small")
    axes[0, 1].set_title("f(z), AIS chains", fontsize="small", loc="left")
    if title:
        fig.suptitle(title, fontsize="small")
    return fig


def plot_rate_distortion(curve: pd.DataFrame, *, title: str | None = None) -> Figure:
    """A model's rate-distortion curve from one AIS run: rate (nats) against distortion (squared error per pixel).

    Parameters
    ----------
    curve : pandas.DataFrame
        Columns ``beta``, ``rate``, ``mse`` (one model's rows of ``OUT/rate_distortion.csv``); points are colored
        by beta, the AIS inverse temperature (the curve's slope, in the units of -log p(x | z)).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    require_columns(curve, {"beta", "rate", "mse"}, "plot_rate_distortion")
    curve = curve.sort_values("beta")
    fig = Figure(figsize=(6.0, 4.5), layout="constrained")
    ax = fig.subplots()
    ax.plot(curve["mse"], curve["rate"], color="#444444", linewidth=1, zorder=1)
    points = ax.scatter(curve["mse"], curve["rate"], c=curve["beta"], cmap="viridis", s=12, zorder=2)
    fig.colorbar(points, ax=ax, label="beta (AIS inverse temperature)")
    ax.set_xscale("log")
    ax.set_xlabel("distortion: mean squared error per pixel")
    ax.set_ylabel("rate: KL(q_beta(z | x) || p(z)) (nats)")
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "rate-distortion from one forward AIS run (an upper bound in expectation)")
    return fig

