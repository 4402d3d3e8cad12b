"""The package version, recorded in every result table."""

__version__ = "0.1.0"

# The distribution's name on the package index (the import name is bdmc): an unrelated project holds "bdmc".
DISTRIBUTION = "bdmc-jax"
