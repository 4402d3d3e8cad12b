"""NumPyro ports of posteriordb posteriors without reference draws, one module per family of programs.

Each module defines

- ``ENTRIES``: a list of :class:`posteriordb_models.Entry` (built with ``posteriordb_models.build_entry``);
- ``EXPECTED``: ``{posterior: (data -> log p_numpyro - log p_stan, reason)}``, the constant each Stan program drops,
  computed from its statements (``benchmarks/posteriordb_check.py`` checks the measured offset against it);
- ``N_CASES``: ``{posterior: data -> number of likelihood terms}`` where it is not ``data["N"]``.

``posteriordb_models.POSTERIORS`` and ``posteriordb_check.EXPECTED`` merge them with the hand-written ports of the
posteriors that have reference draws.
"""

from __future__ import annotations

import importlib

FAMILIES = ("small", "radon", "hierarchical", "extra")


def _modules():
    # The family modules import posteriordb_models, whose POSTERIORS import the families: import it first, so a
    # family module never runs while it is being imported (when this package is imported before it).
    importlib.import_module("posteriordb_models")
    out = []
    for family in FAMILIES:
        try:
            out.append(importlib.import_module(f"posteriordb_ports.{family}"))
        except ModuleNotFoundError as err:
            if err.name != f"posteriordb_ports.{family}":
                raise
    return out


def entries() -> list:
    """Every family's entries."""
    return [entry for module in _modules() for entry in module.ENTRIES]


def expected() -> dict:
    """Every family's expected offsets."""
    return {name: value for module in _modules() for name, value in module.EXPECTED.items()}


def n_cases() -> dict:
    """Every family's case counts (where not ``data["N"]``)."""
    return {name: value for module in _modules() for name, value in getattr(module, "N_CASES", {}).items()}
