"""What the figure functions share: the check of a table's columns and the figure-or-given-axes preamble."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from matplotlib.figure import Figure

from ..errors import DataError


def require_columns(table: pd.DataFrame, columns: Iterable[str], plot: str) -> None:
    """Refuse a table that lacks any of ``columns``.

    Parameters
    ----------
    table : pandas.DataFrame
    columns : iterable of str
        The columns the figure reads.
    plot : str
        The figure function's name, for the message.

    Raises
    ------
    bdmc.DataError
        Naming the missing columns.
    """
    missing = set(columns) - set(table.columns)
    if missing:
        raise DataError(f"{plot} needs columns {sorted(missing)} in the table")


def figure_and_axes(ax, figsize: tuple[float, float]):
    """The axes to draw into and their figure.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        Given axes; when None, one axes on a new constrained-layout figure of ``figsize`` inches (not
        registered with pyplot, so no GUI backend is touched).
    figsize : (float, float)

    Returns
    -------
    (matplotlib.figure.Figure, matplotlib.axes.Axes)
    """
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, fig.subplots()
    return ax.figure, ax
