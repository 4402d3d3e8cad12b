"""Frozen pilots and passed prior checks kept on disk, so that a new process making a call on the same model, data
and options loads its pilot's choice and does not check its prior again.

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

A prior check (:mod:`bdmc.core.prior_check`) that passed is kept the same way, keyed on the model's behaviour, the
data's values, the path's ends and the check's draws: a process checks a model and data set once, and within a
process that was already so (a later call reuses the verdict whatever its key). Only a pass is kept; a check that
fails raises, every time.

The store is ``cache_dir() / "pilots"`` and ``cache_dir() / "prior_checks"`` (under ``$BDMC_CACHE_DIR``);
``BDMC_PILOT_CACHE=0`` turns both off. Each part keeps about the :data:`MAX_FILES` most recently written files
(pruned at a process's first write and every :data:`PRUNE_EVERY`-th after); :func:`clear_pilot_store` empties
the pilots.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import jax
import numpy as np

from ..config import cache_dir
from ..files import write_atomic
from .fingerprint import ADDRESS, code_version, data_fingerprint, model_fingerprint

PILOT_CACHE_SWITCH = "BDMC_PILOT_CACHE"  # "0": nothing is loaded from or written to the store
PILOTS = "pilots"  # the part that keeps frozen pilots
PRIOR_CHECKS = "prior_checks"  # the part that keeps passed prior checks
MAX_FILES = 512
FORMAT = 1  # bumped when what a stored file holds changes


def store_dir(part: str = PILOTS) -> Path | None:
    """Where the store keeps one part (:data:`PILOTS`, :data:`PRIOR_CHECKS`), or None when the store is off
    (``BDMC_PILOT_CACHE=0``)."""
    if os.environ.get(PILOT_CACHE_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return cache_dir() / part


def stored_name(key, model, data, kernel, settings: tuple) -> str | None:
    """The file name a pilot's choice is kept under, or None when the call cannot be fingerprinted stably.

    ``settings`` holds the call's other inputs (the number of distributions, the pilot, the prior check), each
    fingerprinted by its ``repr``.
    """
    described = repr(kernel).replace(repr(model), "<model>") + repr(settings)
    return _name(model, data, described, np.asarray(jax.random.key_data(key)).tobytes().hex())


def _name(model, data, *parts: str, ends=()) -> str | None:
    """The hash of what a stored result depends on: the model's behaviour, the data's values (and the path's ends),
    bdmc's code and ``parts``; None when the model has no stable fingerprint or a part names a memory address."""
    model_part = model_fingerprint(model, data)
    if model_part is None or any(ADDRESS in part for part in parts):
        return None
    digest = hashlib.blake2b(digest_size=20)
    for part in (str(FORMAT), code_version(), model_part, data_fingerprint(data, ends), *parts):
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
    _write(PILOTS, f"{name}.pkl", pickle.dumps((fields, kernel_fields), protocol=pickle.HIGHEST_PROTOCOL))


def prior_check_name(model, data, ends, settings: str) -> str | None:
    """The name a passed prior check is kept under: the model's behaviour, the data's values, the path's ends and
    the check's ``settings`` (its draws and data signature); None when the model cannot be fingerprinted."""
    return _name(model, data, "prior check", settings, ends=ends)


def check_passed(name: str) -> bool:
    """Whether a prior check kept under ``name`` passed (in this process or an earlier one)."""
    folder = store_dir(PRIOR_CHECKS)
    return folder is not None and (folder / f"{name}.passed").is_file()


def record_check(name: str, description: str) -> None:
    """Keep that the prior check under ``name`` passed (a small text file saying what was checked)."""
    _write(PRIOR_CHECKS, f"{name}.passed", description.encode())


def _write(part: str, file: str, payload: bytes) -> None:
    """Write one file of a part atomically, then drop its oldest files beyond :data:`MAX_FILES` (at the part's
    first write of a process and every :data:`PRUNE_EVERY`-th after). A store that cannot be written (a read-only
    home) is skipped: the call has its result either way."""
    folder = store_dir(part)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Not synced to disk: a result lost to a power cut is computed again, and one cut short fails to load.
        write_atomic(folder / file, payload, durable=False)
        _SAVES[part] = _SAVES.get(part, 0) + 1
        if (_SAVES[part] - 1) % PRUNE_EVERY == 0:
            files = sorted(folder.glob(f"*{Path(file).suffix}"), key=lambda p: p.stat().st_mtime_ns)
            for old in files[:-MAX_FILES]:
                old.unlink(missing_ok=True)
    except OSError:
        return


# Listing and dating every stored file takes milliseconds: a process prunes a part at its first write and then every
# PRUNE_EVERY-th, so a part holds at most MAX_FILES + PRUNE_EVERY - 1 files.
PRUNE_EVERY = 32
_SAVES: dict[str, int] = {}  # part -> files this process wrote


def clear_pilot_store() -> int:
    """Delete every stored pilot; return how many files went."""
    folder = store_dir()
    if folder is None or not folder.is_dir():
        return 0
    files = list(folder.glob("*.pkl"))
    for path in files:
        path.unlink(missing_ok=True)
    return len(files)
