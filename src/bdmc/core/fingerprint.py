"""What a result kept between calls depends on, hashed without Python object identity: data by value, a model by
its jaxprs, bdmc by its installed source.

The prior check's verdict and a frozen pilot are reused for equal data (:func:`data_fingerprint`, in memory and on
disk); on disk (:mod:`bdmc.core.pilot_store`) they are also keyed on the model's behaviour
(:func:`model_fingerprint`) and the code that produced them (:func:`code_version`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import jax
import numpy as np

from ..caching import array_memo, cached, leaf_types
from ..contracts.capabilities import CollapsedDensity, supports

ADDRESS = " at 0x"  # in a repr or jaxpr: a Python object's identity, which no other process shares


def data_fingerprint(data, ends=()) -> str:
    """The data's values and the path's ends, hashed: a check is reused only for equal data. The ends in either
    order check the same terms, so a reverse run reuses a forward run's verdict."""
    digest = hashlib.blake2b(digest_size=16)
    for part in [array_memo(leaf, "digest", leaf_digest) for leaf in jax.tree.leaves(data)] + sorted(
            repr(float(e)) if np.ndim(e) == 0 else leaf_digest(e) for e in ends):
        digest.update(part.encode())
    return digest.hexdigest()


def leaf_digest(leaf) -> str:
    """An array's shape, dtype and values, hashed."""
    array = np.asarray(leaf)
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str((array.shape, array.dtype)).encode())
    digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def model_fingerprint(model, data) -> str | None:
    """The model's behaviour without its identity: the jaxprs of its prior draws and its density terms at the
    data's shapes, and their constants' values; None when a jaxpr names a memory address or calls back into
    Python, or the model cannot be traced apart from a run. Worked out once per model and data shapes (tracing and
    printing the jaxprs takes milliseconds, which a new pilot in every call would pay each time); a model that
    cannot be hashed is worked out every time."""
    leaves, treedef = jax.tree.flatten(data)
    shapes = (treedef, leaf_types(leaves))
    try:
        hash((model, shapes))
    except TypeError:
        fingerprint = _traced_fingerprint
    else:
        fingerprint = _cached_fingerprint
    try:
        return fingerprint(model, shapes)
    except Exception:  # noqa: BLE001 - a model we cannot trace apart from a run simply has no fingerprint
        return None


def _traced_fingerprint(model, shapes) -> str | None:
    treedef, types = shapes
    data = jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in types])
    key = jax.random.key(0)
    draw, latent = jax.make_jaxpr(model.sample_prior, return_shape=True)(key)  # one trace for both
    if supports(model, CollapsedDensity):
        terms = [jax.make_jaxpr(model.log_density)(latent, data, 1.0)]
    else:
        terms = [jax.make_jaxpr(model.log_prior)(latent), jax.make_jaxpr(model.log_likelihood)(latent, data)]
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{type(model).__module__}.{type(model).__qualname__}".encode())
    for closed in (draw, *terms):
        text = str(closed.jaxpr)
        if ADDRESS in text or "callback[" in text:  # host code: its behaviour is not in the jaxpr
            return None
        digest.update(text.encode())
        for const in closed.consts:
            array = np.asarray(const)
            digest.update(str((array.shape, array.dtype)).encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


_cached_fingerprint = cached(maxsize=256)(_traced_fingerprint)


@cached(maxsize=1)
def code_version() -> str:
    """The installed bdmc's source files (name, size, modification time) and JAX's version: a stored result is
    never handed to other code."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(jax.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()
