"""Host code (a PPL's forward sampler) called from JAX: directly when the call is eager (an eager ``vmap``
included, with the whole batch), through ``jax.pure_callback`` when it is traced under ``jit``.

An eager ``jax.pure_callback`` (called outside ``jit``, ``vmap`` included) compiles a program for its callback and
JAX keeps it, keyed by the callback, for as long as the process lives. A bound method of a model is a new key for
every new model object, so a process that audits one model after another kept about 1.4 MB per Stan model, and the
model itself, however it was released. Calling the host directly compiles nothing and keeps nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import UserProgramError


def host_call(callback: Callable, result_shape_dtypes: Any, *args):
    """``callback(*args)``, with the result shaped and typed as ``result_shape_dtypes`` (a pytree of
    ``jax.ShapeDtypeStruct``), as :func:`jax.pure_callback` returns it.

    Parameters
    ----------
    callback : callable
        Takes NumPy arrays, returns NumPy arrays in the structure of ``result_shape_dtypes``.
    result_shape_dtypes : pytree of jax.ShapeDtypeStruct
        The shapes and dtypes of the result.
    *args : arrays
        The callback's arguments. Under ``vmap`` the callback is called once with the whole batch, every
        argument given the batch as its leading axis (``jax.pure_callback``'s ``vmap_method="broadcast_all"``).

    Returns
    -------
    pytree of jax.Array

    Raises
    ------
    bdmc.errors.UserProgramError
        When an eager call's result has another structure or shape than ``result_shape_dtypes`` (the host
        sampler, the user's program or simulator, returned the wrong thing).
    """
    if not any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
        return _direct(callback, result_shape_dtypes, args)

    # Under vmap the batched call comes back here with the whole batch: on the host directly when the batch is
    # concrete (an eager vmap, where JAX's cache of eager callbacks would otherwise keep the model), through
    # jax.pure_callback under jit.
    @jax.custom_batching.custom_vmap
    def call(*a):
        return jax.pure_callback(callback, result_shape_dtypes, *a)

    @call.def_vmap
    def _batched(axis_size, in_batched, *a):
        a = [x if batched else jnp.broadcast_to(x, (axis_size, *np.shape(x)))
             for x, batched in zip(a, in_batched, strict=True)]
        specs = jax.tree.map(lambda s: jax.ShapeDtypeStruct((axis_size, *s.shape), s.dtype), result_shape_dtypes)
        out = host_call(callback, specs, *a)
        return out, jax.tree.map(lambda _: True, out)

    return call(*args)


def _direct(callback, result_shape_dtypes, args):
    """``callback`` run on the host now, its result checked against the declared shapes as pure_callback does."""
    specs, structure = jax.tree.flatten(result_shape_dtypes)
    values = jax.tree.leaves(callback(*(np.asarray(a) for a in args)))
    if len(values) != len(specs):
        raise UserProgramError(f"{getattr(callback, '__name__', callback)!r} returned {len(values)} arrays, "
                               f"expected {len(specs)}")
    out = []
    for value, spec in zip(values, specs, strict=True):
        if np.shape(value) != tuple(spec.shape):
            raise UserProgramError(f"{getattr(callback, '__name__', callback)!r} returned an array of shape "
                                   f"{np.shape(value)}, expected {tuple(spec.shape)}")
        out.append(jnp.asarray(value, spec.dtype))
    return jax.tree.unflatten(structure, out)
