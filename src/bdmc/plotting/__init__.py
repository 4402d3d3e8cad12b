"""Figures drawn from bdmc result tables (matplotlib, no pyplot state)."""

from .bread import plot_bread
from .geweke import plot_geweke
from .sandwich import plot_sandwich

__all__ = ["plot_bread", "plot_geweke", "plot_sandwich"]
