"""The memory pre-flight: a run too large for this machine is refused before it starts, with what it would need.

Without it an absurd ``--runs`` hangs in the allocator and a huge ``--option n=...`` ends in XLA's out-of-memory
errors deep in a run. The estimate is a floor, from the model's shapes alone (``jax.eval_shape``: nothing is
allocated or compiled), measured on ``gaussian-mean`` (peak resident memory at n = 2e5 and 8e5 cases, and at
4,096 runs): every run first checks its density at ``PRIOR_CHECK_DRAWS`` exact prior draws at once, holding two
arrays of one log-likelihood term per case per draw, and its chains hold about two such arrays each. So a run
of C chains needs at least ``2 * max(C, 1024) * (latent + per-case terms)`` bytes beside its data set.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import jax

from ..core.prior_check import PRIOR_CHECK_DRAWS
from ._common import CLIError


@dataclasses.dataclass(frozen=True)
class Count:
    """One option that sets how many chains (or simulated data sets) a command runs at once.

    Attributes
    ----------
    option : str
        The option as typed, e.g. ``--runs 16``.
    number : int
        Chains (or data sets) it runs at once.
    fix : str
        What to do, e.g. ``use fewer runs``.
    data_sets : bool
        Whether each one simulates a data set of its own (SBC replications, Geweke samples).
    """

    option: str
    number: int
    fix: str
    data_sets: bool = False


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Bytes of one latent, one data set and one chain's per-case log-likelihood terms, and the number of cases."""

    latent: int
    data: int
    terms: int
    cases: int

    def need(self, count: Count | None = None) -> int:
        """Bytes a run needs at least (the module docstring's floor) for ``count`` chains or data sets, each data
        set held once."""
        number = count.number if count is not None else 0
        own_data = number * self.data if count is not None and count.data_sets else 0
        return 2 * self.data + 2 * max(number, PRIOR_CHECK_DRAWS) * (self.latent + self.terms) + own_data


def runs_count(runs: int, *, particles: int | None = None, option: str = "--runs") -> Count:
    """The chains that ``--runs`` (of ``particles`` particles each, for SMC) run at once.

    Parameters
    ----------
    runs : int
    particles : int, optional
    option : str
        The option's name.

    Returns
    -------
    Count
    """
    if particles is not None and particles > 1:
        return Count(f"{option} {runs} with {particles} particles each", runs * particles,
                     "use fewer runs or particles")
    return Count(f"{option} {runs}", runs, "use fewer runs")


def size_option(*, options: list[str] | None = None, data: Path | None = None, model: str | None = None) -> str:
    """How the user set the model's size, as typed: its ``--option`` items, its ``--data`` file, or its name.

    Parameters
    ----------
    options : list of str, optional
        ``KEY=VALUE`` items of a built-in model.
    data : Path, optional
        The ``--data`` file of a program.
    model : str, optional
        The built-in model's name (its default size).

    Returns
    -------
    str
    """
    if options:
        return " ".join(f"--option {o}" for o in options)
    return f"--data {data}" if data is not None else f"--model {model}"


def check_memory(model, *, counts: list[Count], size: str) -> None:
    """Refuse a run whose memory floor exceeds this machine's (or the accelerator's) memory.

    Parameters
    ----------
    model : bdmc Model
        The model, built (its shapes are traced, never computed).
    counts : list of Count
        The options setting how many chains or data sets run at once.
    size : str
        The options setting the model's size as typed, e.g. ``--option n=100000000`` or ``--data file.npz``.

    Raises
    ------
    CLIError
        Naming the culprit (the size when even one chain does not fit, else the largest count), the memory it
        would need and the memory there is.
    """
    sizes = model_sizes(model, size=size)
    if sizes is None:
        return
    limit, where = memory_limit()
    if sizes.need() > limit:
        raise CLIError(f"{size} would need about {human_bytes(sizes.need())} of memory (a data set of "
                       f"{human_bytes(sizes.data)} and {sizes.cases:,} likelihood terms per chain, for at least "
                       f"{PRIOR_CHECK_DRAWS:,} chains; {where} has {human_bytes(limit)}); {_smaller(size)}")
    for count in sorted(counts, key=sizes.need, reverse=True):
        if sizes.need(count) > limit:
            what = "simulated data sets" if count.data_sets else "chains"
            raise CLIError(f"{count.option} would need about {human_bytes(sizes.need(count))} of memory for its {what} "
                           f"({where} has {human_bytes(limit)}); {count.fix}")


def _smaller(size: str) -> str:
    if size.startswith("--option"):
        return "use smaller sizes in --option"
    return "use less data (a smaller --data file)" if size.startswith("--data") else "use a smaller model"


def model_sizes(model, *, size: str) -> Sizes | None:
    """The model's :class:`Sizes` from its traced shapes; None for a model whose draws cannot be traced (its run
    then reports its own errors)."""
    key = jax.random.key(0)
    try:
        latent = jax.eval_shape(model.sample_prior, key)
        data = jax.eval_shape(model.sample_data, key, latent)
        terms = jax.eval_shape(model.log_likelihood, latent, data)
    except MemoryError:  # a model that builds host arrays of its size while traced (a design matrix)
        raise CLIError(f"{size}: building the model ran out of memory; {_smaller(size)}") from None
    except Exception:  # noqa: BLE001  a model traced only through host callbacks: no floor, the run decides
        return None
    return Sizes(latent=_nbytes(latent), data=_nbytes(data), terms=_nbytes(terms),
                 cases=math.prod(jax.tree.leaves(terms)[0].shape) if jax.tree.leaves(terms) else 0)


def _nbytes(tree) -> int:
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))


def memory_limit() -> tuple[int, str]:
    """``(bytes, what)``: the accelerator's memory where JAX reports it, else this machine's physical memory.

    Returns
    -------
    tuple of (int, str)
        The bytes and the words naming them, ``"this machine"`` or the device.
    """
    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]), f"the {device.platform.upper()} {device.device_kind}"
    try:
        import psutil

        return int(psutil.virtual_memory().total), "this machine"
    except ImportError:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "this machine"


def human_bytes(n: float) -> str:
    """``7.3 TB``, ``24 GB``, ``512 kB`` (powers of 1,000)."""
    units = ("B", "kB", "MB", "GB", "TB", "PB", "EB")
    i = 0
    while n >= 1000 and i < len(units) - 1:
        n, i = n / 1000, i + 1
    return f"{n:.0f} {units[i]}" if n >= 10 or i == 0 else f"{n:.1f} {units[i]}"
