"""Gibbs hook and kernel combinators."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.kernel import KernelInfo
from ..errors import OptionError
from .lookup import count_below


@dataclass(frozen=True)
class Gibbs:
    """Wrap an exact conditional update ``update(key, latent, data, lam) -> latent`` as a kernel.

    The update must leave ``f(.; lam)`` invariant for scalar and per-data-case ``lam`` (tested with
    ``bdmc.checks`` on the models that ship one). Acceptance is reported as 1.
    """

    update: Callable
    evals_per_step: int = 1

    def __call__(self, key, latent, data, lam):
        new = self.update(key, latent, data, lam)
        return new, KernelInfo(jnp.ones((), jnp.result_type(float)))


@dataclass(frozen=True)
class Cycle:
    """Apply each kernel once, in order; the composition leaves f invariant if each does."""

    kernels: tuple

    def __post_init__(self):
        if not self.kernels:
            raise OptionError("Cycle needs at least one kernel")
        object.__setattr__(self, "kernels", tuple(self.kernels))

    @property
    def evals_per_step(self) -> int:
        return sum(k.evals_per_step for k in self.kernels)

    def __call__(self, key, latent, data, lam):
        keys = jax.random.split(key, len(self.kernels))
        acc = []
        for k, kernel in zip(keys, self.kernels, strict=False):
            latent, info = kernel(k, latent, data, lam)
            acc.append(info.acceptance)
        return latent, KernelInfo(jnp.mean(jnp.stack(acc)))


@dataclass(frozen=True)
class Repeat:
    """Apply ``kernel`` ``n`` times (a ``lax.scan``, so compile time does not grow with ``n``)."""

    kernel: Any
    n: int

    def __post_init__(self):
        if int(self.n) < 1:
            raise OptionError(f"Repeat needs n >= 1, got {self.n}")

    @property
    def evals_per_step(self) -> int:
        return self.n * self.kernel.evals_per_step

    def __call__(self, key, latent, data, lam):
        def body(x, k):
            x, info = self.kernel(k, x, data, lam)
            divergent = jnp.zeros((), bool) if info.divergent is None else jnp.asarray(info.divergent, bool)
            return x, (info.acceptance, divergent)

        latent, (acc, divergent) = jax.lax.scan(body, latent, jax.random.split(key, self.n))
        # A step of n moves diverged if any of its moves did.
        return latent, KernelInfo(jnp.mean(acc), jnp.any(divergent))


# The inner kernel's numbers (a pilot's step-size table) are data, so a new table reuses the compiled run.
jax.tree_util.register_dataclass(Repeat, data_fields=["kernel"], meta_fields=["n"])


@dataclass(frozen=True)
class RepeatUpTo:
    """Apply ``kernel`` ``n`` times, ``n`` a number the compiled program reads (at most ``most``): kernels with
    different ``n`` share one program. The same numbers as ``Repeat(kernel, n)`` (the first ``n`` keys of
    ``split(key, most)`` are ``split(key, n)``); the moves past ``n`` are skipped."""

    kernel: Any
    n: int
    most: int

    def __post_init__(self):
        if isinstance(self.n, (int, np.integer)) and not 1 <= int(self.n) <= int(self.most):  # not when traced
            raise OptionError(f"RepeatUpTo needs 1 <= n <= most, got n={self.n}, most={self.most}")

    @property
    def evals_per_step(self) -> int:
        return int(self.n) * self.kernel.evals_per_step

    def __call__(self, key, latent, data, lam):
        n = jnp.asarray(self.n)
        keys = jax.random.split(key, self.most)

        def body(i, carry):
            x, acc, divergent = carry
            x, info = self.kernel(keys[i], x, data, lam)
            bad = jnp.zeros((), bool) if info.divergent is None else jnp.asarray(info.divergent, bool)
            return x, acc + jnp.asarray(info.acceptance, acc.dtype), divergent | bad

        # A trip count the program reads: a while loop over the first n keys, the rest never drawn on.
        latent, acc, divergent = jax.lax.fori_loop(0, n, body, (latent, jnp.zeros(()), jnp.zeros((), bool)))
        return latent, KernelInfo(acc / n, divergent)


jax.tree_util.register_dataclass(RepeatUpTo, data_fields=["kernel", "n"], meta_fields=["most"])


@dataclass(frozen=True)
class MovesTable:
    """Apply ``kernel`` a number of times read from a frozen table by lam: at ``lam`` (its mean, for a per-case
    lam) the count of the first entry of ``lams`` at or above it (the last entry's beyond them). A pilot's
    choice, fixed before the run, so each step's transition is still a fixed kernel leaving ``f(.; lam)``
    invariant. The same numbers as :class:`RepeatUpTo` with that count.

    Parameters
    ----------
    kernel
        One move.
    lams : tuple of float
        Increasing lams.
    counts : tuple of int
        Moves at each lam, each between 1 and ``most``.
    most : int
        The largest count (the keys drawn per step).
    """

    kernel: Any
    lams: Any
    counts: Any
    most: int

    def __post_init__(self):
        if isinstance(self.counts, tuple):  # not when rebuilt from traced leaves
            lams, counts = np.asarray(self.lams, float), np.asarray(self.counts)
            if lams.ndim != 1 or lams.shape != counts.shape or lams.size < 1 or np.any(np.diff(lams) <= 0):
                raise OptionError(f"MovesTable needs increasing lams and one count each, got {lams.shape} lams "
                                  f"and {counts.shape} counts")
            if np.any(counts < 1) or np.any(counts > int(self.most)):
                raise OptionError(f"MovesTable counts must lie in [1, {self.most}], got {counts.tolist()}")

    @property
    def evals_per_step(self) -> int:
        """Evaluations of a step at the table's mean count over its lams up to 1 (rounded up; a pilot pads its
        tables past 1): a run's count depends on the lams it visits."""
        lams, counts = np.asarray(self.lams, float), np.asarray(self.counts, float)
        return int(np.ceil(np.mean(counts[lams <= 1.0]))) * self.kernel.evals_per_step

    def count_at(self, lam):
        """The moves a step targeting ``lam`` applies."""
        lam = jnp.mean(jnp.asarray(lam))
        lams = jnp.asarray(self.lams, lam.dtype)
        index = jnp.minimum(count_below(lams, lam), lams.shape[0] - 1)
        return jnp.asarray(self.counts)[index]

    def __call__(self, key, latent, data, lam):
        return RepeatUpTo(self.kernel, self.count_at(lam), self.most)(key, latent, data, lam)

    def __repr__(self):
        counts = np.asarray(self.counts)
        return f"MovesTable({counts.min()}..{counts.max()} moves, {self.kernel!r})"


def _table_leaf(values, dtype):
    return values if isinstance(values, jax.Array) else np.asarray(values, dtype)


jax.tree_util.register_pytree_node(
    MovesTable,
    lambda t: ((t.kernel, _table_leaf(t.lams, np.float64), _table_leaf(t.counts, np.int32)), t.most),
    lambda most, leaves: _rebuilt_moves_table(most, leaves))


def _rebuilt_moves_table(most, leaves):
    # Inside a compiled run the leaves are traced arrays: build without the host-side checks.
    table = object.__new__(MovesTable)
    for name, value in zip(("kernel", "lams", "counts"), leaves, strict=True):
        object.__setattr__(table, name, value)
    object.__setattr__(table, "most", most)
    return table


def cycle(*kernels) -> Cycle:
    """Compose kernels in sequence."""
    return Cycle(tuple(kernels))


def repeat(kernel, n: int) -> Repeat:
    """Apply ``kernel`` ``n`` times per step."""
    return Repeat(kernel, int(n))
