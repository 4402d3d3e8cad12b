"""Figures drawn from bdmc result tables (matplotlib, no pyplot state)."""

from .sandwich import plot_sandwich

__all__ = ["plot_sandwich"]
