"""Compile a batched estimator once, then time its run separately from its compilation."""

from __future__ import annotations

import time

import jax


def timed_call(fn, *args):
    """Compile ``fn`` (jitted) for ``args`` and run it: ``(outputs, run seconds, compile seconds)``."""
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - start, compile_seconds
