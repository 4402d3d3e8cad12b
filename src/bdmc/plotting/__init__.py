"""Figures drawn from bdmc result tables (matplotlib, no pyplot state)."""

from .bench import plot_bench
from .bread import plot_bread
from .bread_toys import plot_bread_divergences, plot_grid_distributions
from .geweke import plot_geweke
from .real_data import plot_real_data
from .sandwich import plot_sandwich
from .sbc import plot_sbc_ecdf, plot_sbc_histograms

__all__ = ["plot_bench", "plot_bread", "plot_bread_divergences", "plot_grid_distributions", "plot_geweke",
           "plot_real_data", "plot_sandwich", "plot_sbc_ecdf", "plot_sbc_histograms"]
