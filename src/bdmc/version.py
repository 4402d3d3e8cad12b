"""The package version, recorded in every result table."""

__version__ = "0.1.0"
