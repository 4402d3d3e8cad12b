"""Bounded, clearable caches of compiled programs, and the one switch that clears them all.

A long-lived process (a notebook, a sweep, the test suite) would otherwise keep every executable it ever
compiled. Each cache holds at most ``maxsize`` entries, least recently used first out; :func:`clear_caches`
empties every cache created here, plus JAX's own.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import gc
import os
import sys
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import jax
import numpy as np

from .errors import OptionError

DEFAULT_MAXSIZE = 64
# XLA options for programs that run once or briefly per model (a pilot, the prior draws, a run's start and finish):
# the backend's optimizations take most of a cold call's seconds and buy such a program milliseconds.
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
# ... and for a run's steps: the LLVM backend at level 1 rather than 2 compiles faster, and the hand scan of
# benchmarks/engine_overhead.py compiled so runs as fast as at the default (its "hand-run-options" rows).
RUN_COMPILE = {"xla_backend_optimization_level": 1}
_CACHES: weakref.WeakSet[CompiledCache] = weakref.WeakSet()


def leaf_types(leaves) -> tuple:
    """``(shape, dtype)`` of each leaf as JAX compiles it (a dtype canonicalized for the x64 mode; a Python scalar's
    default dtype): what a compiled program's cache key holds of its arguments. An array's own dtype is read directly,
    since ``jnp.result_type`` costs microseconds a leaf (12 us on a key), on every call."""
    return tuple((x.shape, x.dtype) if isinstance(x, jax.Array)  # a JAX array's dtype is canonical already
                 else (np.shape(x), jax.dtypes.canonicalize_dtype(x.dtype, allow_extended_dtype=True)
                       if isinstance(x, (np.ndarray, np.generic)) else jax.numpy.result_type(x))
                 for x in leaves)


_MISSING = object()


class _Key:
    """A cache key hashed once: a lookup hashes its key two or three times, and a program's key (a model, a kernel's
    tree definition, the arguments' shapes) takes microseconds to hash, on every warm call."""

    __slots__ = ("key", "hash")

    def __init__(self, key: Hashable):
        self.key, self.hash = key, hash(key)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Key) and self.hash == other.hash and self.key == other.key


class CompiledCache:
    """A least-recently-used map from a hashable key to a compiled program.

    Parameters
    ----------
    name : str
        Shown by :func:`cache_info`.
    maxsize : int
        The most entries kept; the least recently used goes first.
    """

    def __init__(self, name: str, *, maxsize: int = DEFAULT_MAXSIZE):
        if maxsize < 1:
            raise OptionError(f"maxsize must be at least 1, got {maxsize}")
        self.name, self.maxsize = name, maxsize
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> tuple[Any, bool]:
        """``(value, built)``: the cached value for ``key``, or ``build()`` stored under it (``built=True``); the
        build runs with Python's cyclic garbage collection paused (:func:`collection_paused`)."""
        key = _Key(key)
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is not _MISSING:
                self._entries.move_to_end(key)
                return value, False
        with collection_paused():
            value = build()
        self._store(key, value)
        return value, True

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The cached value for ``key`` (now the most recently used), or ``default``."""
        key = _Key(key)
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entry beyond ``maxsize``."""
        self._store(_Key(key), value)

    def _store(self, key: _Key, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


@contextlib.contextmanager
def collection_paused():
    """Python's cyclic garbage collection paused for the block, then as it was (a process that had turned it off
    keeps it off). Tracing and lowering a program allocate many objects, and the collections they trigger are a
    large part of a first call's time (first calls before and after, a median 10% shorter over 8 cells:
    ``git show 8e9e915:benchmarks/results/cold_programs/README.md``); what they would have freed is freed by the
    next collection after the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _RegisteredFunctionCache:
    """A ``functools.lru_cache`` that :func:`clear_caches` clears and :func:`cache_info` lists."""

    def __init__(self, name: str, function: Callable, maxsize: int):
        self.name, self.maxsize = name, maxsize
        self.cached = functools.lru_cache(maxsize=maxsize)(function)
        _CACHES.add(self)

    def clear(self) -> None:
        self.cached.cache_clear()

    def __len__(self) -> int:
        return self.cached.cache_info().currsize


_FUNCTION_CACHES: list[_RegisteredFunctionCache] = []  # strong references: a module-level function lives forever


def cached(*, maxsize: int = DEFAULT_MAXSIZE) -> Callable[[Callable], Callable]:
    """Decorator: a least-recently-used cache of ``function``'s results (``functools.lru_cache``), registered so
    that :func:`clear_caches` empties it; the only way bdmc caches a function (``tests/test_caching.py`` counts).

    Parameters
    ----------
    maxsize : int
        The most results kept.
    """

    def wrap(function: Callable) -> Callable:
        registered = _RegisteredFunctionCache(f"{function.__module__}.{function.__qualname__}", function, maxsize)
        _FUNCTION_CACHES.append(registered)
        wrapper = registered.cached
        wrapper.cache_name = registered.name
        return wrapper

    return wrap


def jit_static(*, static: tuple[str, ...], maxsize: int = DEFAULT_MAXSIZE,
               options: dict | None = None) -> Callable[[Callable], Callable]:
    """Decorator: ``jax.jit`` with the keyword arguments ``static`` static, their compiled programs held in a bdmc
    cache (one jitted closure per tuple of static values) rather than in JAX's caches of a module-level function.

    JAX keeps what it traced for a static argument (a model) for as long as the jitted function lives, up to
    thousands of entries: a module-level function compiled for many models holds every one of them.
    Here each model's closure is dropped with the cache (:func:`release_compiled`, :func:`clear_caches`, or
    least recently used first), and JAX's entries for it go with it.

    Parameters
    ----------
    static : tuple of str
        Keyword arguments treated as static (hashable; every call passes them by name).
    maxsize : int
        Closures kept.
    options : dict, optional
        XLA options the programs compile with (:func:`compiler_options`): :data:`RUN_COMPILE` for a program that
        runs for seconds (a Geweke test's chains), as a run's steps do.
    """

    def wrap(function: Callable) -> Callable:
        def program(*values):
            kept = compiler_options(options or {})
            return jax.jit(functools.partial(function, **dict(zip(static, values, strict=True))),
                           **({"compiler_options": kept} if kept else {}))

        program.__module__, program.__qualname__ = function.__module__, f"{function.__qualname__}.program"
        programs = cached(maxsize=maxsize)(program)

        @functools.wraps(function)
        def call(*args, **kwargs):
            values = tuple(kwargs.pop(name) for name in static)
            return programs(*values)(*args, **kwargs)

        return call

    return wrap


def array_memo(array, what: str, compute: Callable[[Any], Any]):
    """``compute(array)``, remembered for this very JAX array while it lives: a JAX array never changes, so what
    was computed from its values (a digest, a finiteness check) holds for as long as it exists. Other arrays (a
    NumPy array can change in place) and tracers are computed every time. A warm call on large data then pays
    no copy to the host nor hash of its values (25 ms a fingerprint at 10^6 values). ``compute`` must not return
    the array itself, which the memo would then keep alive."""
    if not isinstance(array, jax.Array) or isinstance(array, jax.core.Tracer):
        return compute(array)
    key = (id(array), what)
    hit = _ARRAY_MEMO.get(key)
    if hit is not None and hit[0]() is array:
        return hit[1]
    value = compute(array)
    # The entry goes with the array (an id is reused only after its object is gone).
    _ARRAY_MEMO[key] = (weakref.ref(array, lambda _, key=key: _ARRAY_MEMO.pop(key, None)), value)
    return value


_ARRAY_MEMO: dict[tuple[int, str], tuple[weakref.ref, Any]] = {}


def cache_info() -> dict[str, tuple[int, int]]:
    """``{cache name: (entries, maxsize)}`` for every live cache."""
    return {c.name: (len(c), c.maxsize) for c in list(_CACHES)}


def clear_caches() -> None:
    """Drop every compiled program bdmc holds, and JAX's own caches; the next run compiles again."""
    for cache in list(_CACHES):
        cache.clear()
    _ARRAY_MEMO.clear()
    jax.clear_caches()


def release_compiled() -> None:
    """Drop every compiled program bdmc holds: its caches and the caches of its own jitted functions (those it
    defines at module level, whose static arguments hold the models they were compiled for). JAX's other caches,
    the user's programs among them, are left alone (:func:`clear_caches` empties those too).

    An audit compiles dozens of programs for its model, each held for as long as the process lives: a process
    that audits many models grew by hundreds of MB an audit. ``bdmc.audit(..., release=True)`` calls this as it
    ends, so memory stays flat (``benchmarks/audit_memory.py``); the next call compiles again, from the
    persistent compilation cache where it is on.
    """
    for cache in list(_CACHES):
        cache.clear()
    for name, module in list(sys.modules.items()):
        if module is not None and (name == "bdmc" or name.startswith("bdmc.")):
            for value in list(vars(module).values()):
                if isinstance(value, jax.stages.Wrapped):
                    value.clear_cache()
    _return_freed_memory()


def _return_freed_memory() -> None:
    """Hand the memory just freed back to the operating system (glibc keeps it for reuse otherwise, and a
    process's resident size then climbs audit after audit although nothing is held)."""
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl, say): nothing to trim
        return
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def compile_quickly(lowered):
    """Compile a lowered program with :data:`QUICK_COMPILE`: for programs whose compilation costs far more than
    their runs (a pilot's steps compile for seconds and run for milliseconds).
    Other backends than the CPU compile as by default."""
    return _compile(lowered, QUICK_COMPILE)


def compile_run(lowered):
    """Compile a run's steps with :data:`RUN_COMPILE` (the CPU; other backends as by default)."""
    return _compile(lowered, RUN_COMPILE)


def compiler_options(options: dict) -> dict:
    """``options`` as a program compiles with them: on the CPU, less any that the process's ``XLA_FLAGS`` set, read
    at each compilation (a setting the user, or the test suite, made wins); none on other backends."""
    if not options or jax.default_backend() != "cpu":
        return {}
    given = os.environ.get("XLA_FLAGS", "")
    return {name: value for name, value in options.items() if f"--{name}" not in given}


def _compile(lowered, options: dict):
    """``lowered`` compiled with :func:`compiler_options` of ``options``."""
    kept = compiler_options(options)
    return lowered.compile(compiler_options=kept) if kept else lowered.compile()


def named(function: Callable, name: str) -> Callable:
    """``function`` under ``name``: what JAX calls the program compiled from it (in ``jax_log_compiles``'s log,
    a profile's trace and the disk cache's keys), so a first call's programs say what each is for."""
    def program(*args, **kwargs):
        return function(*args, **kwargs)

    program.__name__ = program.__qualname__ = name
    return program
