"""What the estimators share: timing a compiled batch apart from its compilation, and option checks."""

from __future__ import annotations

import time

import jax
import numpy as np

from ..errors import BDMCError


def timed_call(fn, *args):
    """Compile ``fn`` (jitted) for ``args`` and run it: ``(outputs, run seconds, compile seconds)``."""
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - start, compile_seconds


def timed_runs(fn, *args):
    """:func:`timed_call` with the per-run results as float64 NumPy."""
    out, seconds, compile_seconds = timed_call(fn, *args)
    return np.asarray(out, dtype=np.float64), seconds, compile_seconds


def check_positive(**values) -> None:
    """Raise unless every value is a positive integer, naming the first that is not."""
    for name, value in values.items():
        if int(value) != value or value < 1:
            raise BDMCError(f"{name} must be a positive integer, got {value}")
