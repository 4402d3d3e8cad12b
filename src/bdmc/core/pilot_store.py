"""Frozen pilots kept on disk, so that a new process making a call on the same model, data and options loads its
pilot's choice.

A pilot is a deterministic function of the model, the data, the kernel's settings, the number of distributions,
the pilot's settings and the key it is given (an estimator's pilot is given its own, from ``Pilot.seed``, never the
caller's). A later process making a call with the same model, data and options, whatever its key, would compute the
same choice again; it loads it instead, as JAX's persistent compilation cache loads a program. The numbers are
those a new pilot gives (the same tables, so the same estimate), and no guarantee changes: the pilot's keys are
never the run's. A call with other data or other settings (another pilot seed among them) runs its own pilot.
What a stored choice depends on is fingerprinted without Python object identity: the jaxprs of the model's prior
draws and density terms with their constants, the data's values, the kernel's and pilot's settings (their
``repr``), the pilot's key's data, and the installed bdmc's source files and JAX's version. A model or kernel
whose fingerprint would name a memory address (a Python callback inside the density) is never stored.

The store is ``cache_dir() / "pilots"`` (``$BDMC_CACHE_DIR/pilots``); ``BDMC_PILOT_CACHE=0`` turns it off. It
keeps about the :data:`MAX_FILES` most recently written choices (pruned at a process's first save and every
:data:`PRUNE_EVERY`-th after); :func:`clear_pilot_store` empties it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import jax
import numpy as np

from ..caching import cached, leaf_types
from ..config import cache_dir
from ..contracts.capabilities import CollapsedDensity, supports
from ..files import write_atomic
from .prior_check import data_fingerprint

PILOT_CACHE_SWITCH = "BDMC_PILOT_CACHE"  # "0": pilots are neither loaded from nor written to disk
MAX_FILES = 512
FORMAT = 1  # bumped when what a stored file holds changes
_ADDRESS = " at 0x"


def store_dir() -> Path | None:
    """Where frozen pilots are kept, or None when the store is off (``BDMC_PILOT_CACHE=0``)."""
    if os.environ.get(PILOT_CACHE_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return cache_dir() / "pilots"


def stored_name(key, model, data, kernel, settings: tuple) -> str | None:
    """The file name a pilot's choice is kept under, or None when the call cannot be fingerprinted stably.

    ``settings`` holds the call's other inputs (the number of distributions, the pilot, the prior check), each
    fingerprinted by its ``repr``.
    """
    try:
        model_part = _model_fingerprint(model, data)
    except Exception:  # noqa: BLE001 - a model we cannot trace apart from a run is simply not stored
        return None
    described = repr(kernel).replace(repr(model), "<model>") + repr(settings)
    if model_part is None or _ADDRESS in described:
        return None
    digest = hashlib.blake2b(digest_size=20)
    for part in (str(FORMAT), _code_version(), model_part, data_fingerprint(data), described,
                 np.asarray(jax.random.key_data(key)).tobytes().hex()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def load(name: str):
    """The stored ``(fields, kernel_fields)`` under ``name``, or None (none stored, or a file that cannot be read:
    written by another version, cut short)."""
    folder = store_dir()
    if folder is None:
        return None
    try:
        with open(folder / f"{name}.pkl", "rb") as f:
            stored = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return stored if isinstance(stored, tuple) and len(stored) == 2 else None


def save(name: str, fields: dict, kernel_fields: dict) -> None:
    """Keep a pilot's choice under ``name`` (atomically), then drop the oldest files beyond :data:`MAX_FILES`.
    A store that cannot be written (a read-only home) is skipped: the call has its pilot either way."""
    folder = store_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Not synced to disk: a stored pilot lost to a power cut is run again, and one cut short fails to load.
        write_atomic(folder / f"{name}.pkl", pickle.dumps((fields, kernel_fields), protocol=pickle.HIGHEST_PROTOCOL),
                     durable=False)
        _SAVES[0] += 1
        if (_SAVES[0] - 1) % PRUNE_EVERY == 0:  # the first save of a process, then every PRUNE_EVERY-th
            files = sorted(folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime_ns)
            for old in files[:-MAX_FILES]:
                old.unlink(missing_ok=True)
    except OSError:
        return


# Listing and dating every stored file takes milliseconds: a process prunes at its first save and then every
# PRUNE_EVERY-th, so the store holds at most MAX_FILES + PRUNE_EVERY - 1 files.
PRUNE_EVERY = 32
_SAVES = [0]


def clear_pilot_store() -> int:
    """Delete every stored pilot; return how many files went."""
    folder = store_dir()
    if folder is None or not folder.is_dir():
        return 0
    files = list(folder.glob("*.pkl"))
    for path in files:
        path.unlink(missing_ok=True)
    return len(files)


def _model_fingerprint(model, data) -> str | None:
    """The model's behaviour without its identity: the jaxprs of its prior draws and its density terms at the
    data's shapes, and their constants' values; None when a jaxpr names a memory address. Worked out once per model
    and data shapes (tracing and printing the jaxprs takes milliseconds, which a new pilot in every call would pay
    each time); a model that cannot be hashed is worked out every time."""
    leaves, treedef = jax.tree.flatten(data)
    shapes = (treedef, leaf_types(leaves))
    try:
        hash((model, shapes))
    except TypeError:
        return _traced_fingerprint(model, shapes)
    return _cached_fingerprint(model, shapes)


def _traced_fingerprint(model, shapes) -> str | None:
    treedef, types = shapes
    data = jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in types])
    key = jax.random.key(0)
    draw = jax.make_jaxpr(model.sample_prior)(key)
    latent = jax.eval_shape(model.sample_prior, key)
    if supports(model, CollapsedDensity):
        terms = [jax.make_jaxpr(model.log_density)(latent, data, 1.0)]
    else:
        terms = [jax.make_jaxpr(model.log_prior)(latent), jax.make_jaxpr(model.log_likelihood)(latent, data)]
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{type(model).__module__}.{type(model).__qualname__}".encode())
    for closed in (draw, *terms):
        text = str(closed.jaxpr)
        if _ADDRESS in text or "callback[" in text:  # host code: its behaviour is not in the jaxpr
            return None
        digest.update(text.encode())
        for const in closed.consts:
            array = np.asarray(const)
            digest.update(str((array.shape, array.dtype)).encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


_cached_fingerprint = cached(maxsize=256)(_traced_fingerprint)


@cached(maxsize=1)
def _code_version() -> str:
    """The installed bdmc's source files (name, size, modification time) and JAX's version: a stored choice is
    never handed to other code."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(jax.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()
