"""Process-wide settings bdmc changes only when asked."""

import os
from pathlib import Path

import jax


def enable_x64(enabled: bool = True) -> None:
    """Switch JAX to float64 (``enabled=True``) or back to its float32 default, for the whole process.

    Importing bdmc changes no JAX setting. The paper's numbers and the closed-form checks are float64, so the
    ``bdmc`` command calls this (``--float32`` to opt out); float32 is what a GPU run wants. Call it before
    building arrays: arrays made earlier keep their dtype.
    """
    jax.config.update("jax_enable_x64", bool(enabled))


def cache_dir() -> Path:
    """bdmc's directory under the user's cache: ``$BDMC_CACHE_DIR``, else ``$XDG_CACHE_HOME/bdmc``, else
    ``~/.cache/bdmc``."""
    if os.environ.get("BDMC_CACHE_DIR"):
        return Path(os.environ["BDMC_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "bdmc"


def enable_compilation_cache(directory: str | os.PathLike | None = None) -> Path:
    """Keep compiled programs on disk (JAX's persistent compilation cache), so a later process reuses them.

    The ``bdmc`` command turns this on (``--no-compile-cache`` to opt out); from Python it is one call,
    ``bdmc.enable_compilation_cache()``, before the first run. A second process on the same model and shapes
    then loads its programs instead of compiling them, every program however small (the many small ones of a
    first call together cost about as much to compile as one large one).
    Returns the directory used (default ``cache_dir() / "jax"``).
    """
    path = Path(directory) if directory is not None else cache_dir() / "jax"
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
