"""Prior draws that start a run: one compiled call, since eager draws cost milliseconds in dispatch."""

from __future__ import annotations

import jax

from ..caching import CompiledCache


def draw_prior(key, model, num: int):
    """``num`` prior draws and the key left for the run: ``key`` split in two, the first split ``num`` ways.

    Traceable (call it inside a compiled function); :func:`prior_draws` is the compiled, cached version.
    """
    key_init, key_run = jax.random.split(key)
    return jax.vmap(model.sample_prior)(jax.random.split(key_init, num)), key_run


def prior_draws(key, model, num: int):
    """:func:`draw_prior` as one compiled call, cached per model and ``num``."""
    fn, _ = _DRAWS.get_or_build((model, int(num)), lambda: jax.jit(lambda k: draw_prior(k, model, int(num))))
    return fn(key)


_DRAWS = CompiledCache("prior draws", maxsize=64)


def prior_draws_batch(keys, model, num: int):
    """:func:`draw_prior` for each key of ``keys`` (one per data set of a batched run), as one compiled call:
    draws with leading axes (data sets, ``num``) and one run key per data set."""
    fn, _ = _DRAWS.get_or_build((model, int(num), "batch"),
                                lambda: jax.jit(jax.vmap(lambda k: draw_prior(k, model, int(num)))))
    return fn(keys)
