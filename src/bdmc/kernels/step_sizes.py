"""Step sizes that depend on the annealing weight lambda only: a frozen table chosen by a pilot run.

A kernel may read its step size from lam (the distribution it targets), never from its own chain's history:
a transition that depends on a chain's past is no longer a fixed kernel leaving ``f(.; lam)`` invariant, and
AIS's weights lose their unbiasedness (``tests/core/test_pilot.py`` shows the bias by enumeration).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError
from .lookup import interp


@dataclass(frozen=True)
class StepSizeTable:
    """Step sizes by lam, linearly interpolated (in log step size) between the given points.

    ``lams`` increase from 0 to 1; ``sizes`` are positive. Tuples keep the table hashable, so a kernel
    holding one stays a static argument of compiled runs. A per-case lam (the SMC data path) reads the
    table at the mean weight.
    """

    lams: tuple
    sizes: tuple

    def __post_init__(self):
        lams, sizes = np.asarray(self.lams, float), np.asarray(self.sizes, float)
        if lams.ndim != 1 or lams.shape != sizes.shape or lams.size < 1:
            raise BDMCError(f"a step-size table needs equal-length 1-D lams and sizes, got {lams.shape} and "
                            f"{sizes.shape}")
        if not (np.all(np.isfinite(sizes)) and np.all(sizes > 0)):
            raise BDMCError(f"step sizes must be positive and finite, got {sizes.tolist()}")
        if np.any(np.diff(lams) <= 0):
            raise BDMCError("a step-size table's lams must increase")

    def __call__(self, lam):
        lam = jnp.mean(jnp.asarray(lam))
        log_sizes = jnp.log(jnp.asarray(self.sizes, lam.dtype))
        return jnp.exp(interp(lam, jnp.asarray(self.lams, lam.dtype), log_sizes))

    def __repr__(self):
        points = sum(lam <= 1.0 for lam in self.lams)  # a pilot pads its tables past lam = 1 to one shape
        return f"StepSizeTable({points} points, {min(self.sizes):.3g}..{max(self.sizes):.3g})"


def _leaf(values):
    # Tuples on the host become arrays; a table already rebuilt from traced leaves (a compiled run that passes
    # its kernel on to another compiled function) keeps them.
    return values if isinstance(values, jax.Array) else np.asarray(values, np.float64)


def _flatten(table):
    return (_leaf(table.lams), _leaf(table.sizes)), None


def _unflatten(_, leaves):
    # Inside a compiled run the leaves are traced arrays: build without the host-side checks.
    table = object.__new__(StepSizeTable)
    object.__setattr__(table, "lams", leaves[0])
    object.__setattr__(table, "sizes", leaves[1])
    return table


jax.tree_util.register_pytree_node(StepSizeTable, _flatten, _unflatten)


def step_size_at(step_size, lam):
    """The step size a kernel uses at ``lam``: a number as given, or a table read at lam."""
    return step_size(lam) if isinstance(step_size, StepSizeTable) else step_size
