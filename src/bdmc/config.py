"""Process-wide settings: bdmc changes only those a user has not set, and only the compilation cache unasked."""

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


COMPILE_CACHE_SWITCH = "BDMC_COMPILE_CACHE"  # "0": importing bdmc leaves JAX's compilation cache off
JAX_MIN_COMPILE_SECONDS = 1.0  # JAX's own default of jax_persistent_cache_min_compile_time_secs


def default_compilation_cache() -> Path | None:
    """Turn JAX's persistent compilation cache on (:func:`enable_compilation_cache`) unless the user chose:
    a cache directory already set (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), or
    ``BDMC_COMPILE_CACHE=0``. Called when bdmc is imported; returns the directory, or None when left alone.

    JAX decides at a process's first compilation whether it uses the cache, so this takes effect when bdmc is
    imported before anything is compiled (a later ``jax.config.update("jax_compilation_cache_dir", ...)`` still
    wins, if it comes first). The thresholds that keep JAX from caching small programs are lowered only where
    they still hold JAX's defaults.
    """
    if os.environ.get(COMPILE_CACHE_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if jax.config.jax_compilation_cache_dir or os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return None
    try:
        path = cache_dir() / "jax"
        path.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache rather than fail the import
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    if jax.config.jax_persistent_cache_min_compile_time_secs == JAX_MIN_COMPILE_SECONDS:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if jax.config.jax_persistent_cache_min_entry_size_bytes == 0:
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
