"""``plot_bench``: log-ML estimates and their RMSE against running time (BDMC paper, Figs. 2-5)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..contracts.pairs import FALLBACK_STYLE, pair_of
from .figures import require_columns

# One colour and marker per estimator, so every panel of a figure (and every figure) reads alike: a paired
# estimator's from its pair (:class:`bdmc.contracts.pairs.EstimatorPair`), these for the estimators of no pair.
SINGLE_STYLES = {
    "lw": ("#8c564b", "v"), "hme": ("#e377c2", "^"), "ns": ("#9467bd", "X"), "bic": ("#7f7f7f", "h"),
    "vb": ("#bcbd22", "<"), "vb+sym": ("#17becf", ">"), "cms": ("#000000", "d"),
}
NEEDED = {"estimator", "label", "knob", "mean", "ci_low", "ci_high", "rmse", "combined_error", "seconds", "truth"}


def plot_bench(table: pd.DataFrame, *, zoom: float = 10.0, title: str | None = None) -> Figure:
    """Draw a benchmark table: estimates against time (full and zoomed) and RMSE against time.

    Parameters
    ----------
    table : pandas.DataFrame
        A table from :func:`bdmc.experiments.run_bench` or its CSV. Per estimator, the mean single-trial
        estimate is drawn against seconds per trial with its 95% confidence interval (for the expected
        estimate, not for log p(y)); the RMSE panel draws single-trial RMSE (solid) and the absolute error of
        the combined estimate (dashed).
    zoom : float
        Half-height, in nats, of the zoomed panel's y-range around the ground truth.
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels; nothing is shown (save it with ``fig.savefig(path)``).
    """
    require_columns(table, NEEDED, "plot_bench")
    fig = Figure(figsize=(16.5, 4.8), layout="constrained")
    full, zoomed, rmse = fig.subplots(1, 3)
    truth = float(table["truth"].iloc[0]) if len(table) else math.nan
    for name, rows in table.groupby("estimator", sort=False):
        rows = rows.sort_values("seconds")
        color, marker = style(name)
        label = str(rows["label"].iloc[0])
        for ax in (full, zoomed):
            _estimates(ax, rows, color=color, marker=marker, label=label)
        rmse.plot(rows["seconds"], rows["rmse"], color=color, marker=marker, label=label)
        rmse.plot(rows["seconds"], rows["combined_error"].abs(), color=color, marker=marker, linestyle="--",
                  markerfacecolor="white", alpha=0.8)
    for ax, name in ((full, "estimates"), (zoomed, f"zoomed: truth ± {zoom:g} nats")):
        if math.isfinite(truth):
            ax.axhline(truth, color="black", linewidth=1.2, linestyle="--", label=f"ground truth {truth:.2f}")
        ax.set_xscale("log")
        ax.set_xlabel("seconds per trial")
        ax.set_ylabel("mean log-ML estimate (nats)")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
    if math.isfinite(truth):
        zoomed.set_ylim(truth - zoom, truth + zoom)
    rmse.set_xscale("log")
    rmse.set_yscale("log")
    rmse.set_xlabel("seconds per trial")
    rmse.set_ylabel("RMSE (nats)")
    rmse.set_title("RMSE: single trials (solid), combined (dashed)")
    rmse.grid(True, which="both", alpha=0.3)
    # One legend beside the panels, so it hides no estimator (BIC and LW sit far below the truth).
    handles, labels = full.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    if title is not None:
        fig.suptitle(title)
    return fig


def _estimates(ax, rows: pd.DataFrame, *, color, marker, label) -> None:
    mean = rows["mean"].to_numpy(dtype=float)
    # Error bars from the interval's ends as recorded; a missing interval draws no bar.
    low = np.nan_to_num(mean - rows["ci_low"].to_numpy(dtype=float))
    high = np.nan_to_num(rows["ci_high"].to_numpy(dtype=float) - mean)
    ax.errorbar(rows["seconds"], mean, yerr=np.vstack([low, high]), color=color, marker=marker, capsize=3,
                label=label)


def style(estimator: str) -> tuple[str, str]:
    """The colour and marker of ``estimator`` (a registry name) in benchmark figures."""
    paired = pair_of(estimator)
    if paired is not None:
        pair, direction = paired
        return pair.styles[0 if direction == "forward" else 1]
    return SINGLE_STYLES.get(estimator, FALLBACK_STYLE)
