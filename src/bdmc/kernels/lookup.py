"""Reading a pilot's small tables at a traced lam: where lam falls on a sorted grid, and linear interpolation.

A pilot's tables (step sizes, mass matrices, moves per temperature) hold a few dozen points, read at one lam per
step. ``jnp.searchsorted`` and ``jnp.interp`` answer the same questions, but each brings a jitted function of its
own (a binary search loop, its sort-order comparators) that a first call in a fresh process traces and lowers
anew: about 20 ms for ``searchsorted`` and 40 ms for ``interp`` on this machine, against about 7 ms for a
comparison and a sum (``benchmarks/results/cold_programs``). These give the same numbers as the ``jnp`` functions
(``tests/kernels/test_lookup.py``): the same index, the same interpolation formula.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def count_at_most(grid, x):
    """How many points of the sorted ``grid`` are ``<= x``: ``jnp.searchsorted(grid, x, side="right")`` (a NaN
    ``x`` sorts after every point, as there)."""
    return jnp.sum((grid <= x) | jnp.isnan(x), dtype=jnp.int32)


def count_below(grid, x):
    """How many points of the sorted ``grid`` are ``< x``: ``jnp.searchsorted(grid, x, side="left")`` (a NaN
    ``x`` sorts after every point, as there)."""
    return jnp.sum((grid < x) | jnp.isnan(x), dtype=jnp.int32)


def interp(x, xp, fp):
    """``jnp.interp(x, xp, fp)`` for a scalar ``x``: ``fp`` linearly interpolated at ``x`` over the increasing
    ``xp``, held at its end values outside; the same formula, so the same numbers."""
    i = jnp.clip(count_at_most(xp, x), 1, xp.shape[0] - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    tiny = dx.dtype.type(np.spacing(np.finfo(dx.dtype).eps))
    flat = jnp.abs(dx) <= tiny
    f = jnp.where(flat, fp[i - 1], fp[i - 1] + (delta / jnp.where(flat, 1, dx)) * df)
    f = jnp.where(x < xp[0], fp[0], f)
    return jnp.where(x > xp[-1], fp[-1], f)
