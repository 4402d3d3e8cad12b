"""Runs split across devices: within ``with bdmc.shard_runs(devices):`` a run's chains are sharded over a mesh of
those devices (``jax.sharding``, one axis named ``runs``), and its data, key and kernel are replicated on each.

The engine's programs are the same programs, partitioned by XLA (GSPMD): every chain computes what it computes on
one device, with the same keys, so a sharded run gives an unsharded run's numbers (to rounding: XLA may sum the
chains' records in another order). Chains are split in contiguous blocks, so with particles a run's particles
stay on one device when the runs divide evenly among the devices, which is required. A pilot's chains (a few
dozen, on its own keys) run on one device; a batch of data sets (the generative models' images) is not split.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..errors import OptionError

AXIS = "runs"
_MESH: ContextVar[Mesh | None] = ContextVar("bdmc_runs_mesh", default=None)


@contextmanager
def shard_runs(devices: Sequence | None = None) -> Iterator[Mesh]:
    """Split every run's chains across ``devices`` within the ``with`` block.

    Parameters
    ----------
    devices : sequence of jax.Device, optional
        The devices to split across (default: ``jax.devices()``, every device of the default backend). A CPU
        offers one device unless the process starts with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``.

    Yields
    ------
    jax.sharding.Mesh
        The one-axis mesh (axis ``"runs"``) the runs are split over.

    Raises
    ------
    OptionError
        When no device is given; within the block, when a run's runs do not divide evenly among the devices.

    Examples
    --------
    >>> with bdmc.shard_runs():                                          # doctest: +SKIP
    ...     est = bdmc.tempered_smc(key, model, data, num_runs=8, num_particles=256)
    """
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise OptionError("shard_runs needs at least one device")
    token = _MESH.set(Mesh(np.asarray(devices, dtype=object), (AXIS,)))
    try:
        yield _MESH.get()
    finally:
        _MESH.reset(token)


class Placement(NamedTuple):
    """Where a run's arrays go: its chains split along the mesh's axis, everything else replicated."""

    mesh: Mesh

    @property
    def split(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(AXIS))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())


def place_run(init_latents, runs: int, *, batched: bool, policy) -> tuple[Placement | None, object]:
    """A run's placement, and its starting states placed by it (split across the devices). Outside
    :func:`shard_runs`, for a pilot's run (``policy``) and on a one-device mesh the placement is None and the states
    stay where they are; what cannot be split is refused."""
    mesh = _MESH.get()
    if mesh is None or policy is not None or mesh.size == 1:
        return None, init_latents
    if batched:
        raise OptionError("shard_runs splits the runs of one data set; a batch of data sets (images) runs on one "
                          "device: call it outside the shard_runs block")
    if runs % mesh.size:
        raise OptionError(f"{runs} runs cannot be split evenly across {mesh.size} devices (shard_runs): choose "
                          f"num_runs as a multiple of {mesh.size}")
    where = Placement(mesh)
    return where, jax.device_put(init_latents, where.split)


def state_options(where: Placement | None) -> tuple[dict, dict]:
    """``jax.jit`` options of a run's start and of its chunk of steps: split across devices, the state they return
    stays split (each of its leaves leads with the chains or the runs), the steps' records are replicated."""
    if where is None:
        return {}, {}
    return {"out_shardings": where.split}, {"out_shardings": (where.split, where.replicated)}


def state_shapes(where: Placement | None, info):
    """The start's outputs as the other programs are lowered for them: split across devices, within
    :func:`shard_runs`."""
    if where is None:
        return info
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=where.split), info)
