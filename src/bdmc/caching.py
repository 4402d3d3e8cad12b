"""Bounded, clearable caches of compiled programs, and the one switch that clears them all.

A long-lived process (a notebook, a sweep, the test suite) would otherwise keep every executable it ever
compiled. Each cache holds at most ``maxsize`` entries, least recently used first out; :func:`clear_caches`
empties every cache created here, plus JAX's own.
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import jax

DEFAULT_MAXSIZE = 64
_CACHES: weakref.WeakSet[CompiledCache] = weakref.WeakSet()


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
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.name, self.maxsize = name, maxsize
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> tuple[Any, bool]:
        """``(value, built)``: the cached value for ``key``, or ``build()`` stored under it (``built=True``)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key], False
        value = build()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value, True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def cache_info() -> dict[str, tuple[int, int]]:
    """``{cache name: (entries, maxsize)}`` for every live cache."""
    return {c.name: (len(c), c.maxsize) for c in list(_CACHES)}


def clear_caches() -> None:
    """Drop every compiled program bdmc holds, and JAX's own caches; the next run compiles again."""
    for cache in list(_CACHES):
        cache.clear()
    jax.clear_caches()
