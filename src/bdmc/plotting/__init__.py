"""Figures drawn from bdmc result tables (matplotlib, no pyplot state)."""

from .geweke import plot_geweke
from .sandwich import plot_sandwich

__all__ = ["plot_geweke", "plot_sandwich"]
