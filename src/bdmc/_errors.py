"""Errors that name the culprit."""

from __future__ import annotations

import importlib


class BDMCError(Exception):
    """Base class of every error raised by bdmc."""


class ScheduleError(BDMCError, ValueError):
    """An annealing schedule or path is malformed."""


class DataError(BDMCError, ValueError):
    """Observed data has the wrong shape, dtype or contains non-finite values."""


class NonFiniteLogWeightError(BDMCError, FloatingPointError):
    """A log-weight became NaN or +inf during an annealing run (a bug, never a result)."""

    def __init__(self, *, step: int, lam, chain: int, n_bad: int, direction: str):
        self.step, self.lam, self.chain, self.n_bad = step, lam, chain, n_bad
        super().__init__(
            f"{direction} annealing produced a non-finite (NaN or +inf) log-weight increment at step {step} "
            f"(lambda = {lam}) in chain {chain}; {n_bad} chain(s) affected. This is a bug in the model's "
            "log density or the kernel, not a result."
        )


class MissingExtraError(BDMCError, ImportError):
    """An optional dependency is not installed."""


def require(module: str, *, extra: str):
    """Import an optional dependency, or fail naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"'{module}' is required for this feature but is not installed; "
            f"install it with: pip install 'bdmc[{extra}]'"
        ) from err
