"""What every kernel returns besides its new state."""

from __future__ import annotations

from typing import NamedTuple

import jax


class KernelInfo(NamedTuple):
    """Per-transition diagnostics: the Metropolis acceptance probability (1 for Gibbs updates)."""

    acceptance: jax.Array
