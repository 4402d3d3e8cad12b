"""``host_call``: a PPL's host sampler called from JAX, the same values eager and traced, and an eager call keeps
nothing (JAX's eager ``pure_callback`` keeps a compiled program and its callback, the model, per model object)."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bdmc.errors import UserProgramError
from bdmc.ppl.host_calls import host_call

SPECS = (jax.ShapeDtypeStruct((3,), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32))


class Sampler:
    """Stands for a model whose forward sampler runs on the host (a bound method is its callback)."""

    def draw(self, seed, scale):
        rng = np.random.default_rng(np.asarray(seed).ravel().tolist())
        batch = np.shape(seed)[:-1]
        draws = np.asarray(scale)[..., None] * rng.normal(size=batch + (3,))
        return draws.astype(np.float32), np.full(batch, 7, np.int32)


def test_eager_and_traced_calls_give_the_same_draws():
    seed, scale = jnp.arange(4, dtype=jnp.uint32), jnp.float32(2.0)
    eager = host_call(Sampler().draw, SPECS, seed, scale)
    traced = jax.jit(lambda s, c: host_call(Sampler().draw, SPECS, s, c))(seed, scale)
    for a, b, spec in zip(eager, traced, SPECS, strict=True):
        assert a.shape == spec.shape and a.dtype == spec.dtype
        np.testing.assert_array_equal(a, b)


def test_a_batched_call_under_vmap_runs_once_for_the_batch():
    calls = []

    def draw(seed):
        calls.append(np.shape(seed))
        return np.zeros(np.shape(seed)[:-1] + (3,), np.float32), np.zeros(np.shape(seed)[:-1], np.int32)

    keys = jnp.zeros((5, 4), jnp.uint32)
    out = jax.vmap(lambda s: host_call(draw, SPECS, s))(keys)
    assert out[0].shape == (5, 3) and calls == [(5, 4)]
    jax.jit(jax.vmap(jax.vmap(lambda s: host_call(draw, SPECS, s))))(jnp.zeros((2, 5, 4), jnp.uint32))
    assert calls[-1] == (2, 5, 4)


def _alive_after_eager_call(call) -> bool:
    sampler = Sampler()
    alive = weakref.ref(sampler)
    call(sampler.draw, SPECS, jnp.arange(4, dtype=jnp.uint32), jnp.float32(1.0))
    del sampler
    gc.collect()
    return alive() is not None


def test_an_eager_call_keeps_no_reference_to_the_model():
    assert not _alive_after_eager_call(host_call)


def test_an_eager_vmap_keeps_no_reference_to_the_model_and_draws_as_jit_does():
    """An eager ``vmap`` of a host sampler (prior draws for a check) reaches the host directly, with the batch."""
    def batched(draw, specs, seed, scale):
        return jax.vmap(lambda s: host_call(draw, specs, s, scale))(jnp.stack([seed, seed + 1]))

    assert not _alive_after_eager_call(batched)
    seed, scale = jnp.arange(4, dtype=jnp.uint32), jnp.float32(2.0)
    eager = batched(Sampler().draw, SPECS, seed, scale)
    traced = jax.jit(lambda s, c: batched(Sampler().draw, SPECS, s, c))(seed, scale)
    assert eager[0].shape == (2, 3) and eager[1].shape == (2,)
    for a, b in zip(eager, traced, strict=True):
        np.testing.assert_array_equal(a, b)


def test_negative_control_an_eager_pure_callback_keeps_the_model_alive():
    """What ``host_call`` avoids: JAX's cache of eager calls holds the callback, hence the model, per object."""
    assert _alive_after_eager_call(lambda f, s, *a: jax.pure_callback(f, s, *a, vmap_method="broadcast_all"))


def test_a_result_of_the_wrong_shape_is_refused_naming_the_callback():
    def draw(seed):
        return np.zeros(2, np.float32), np.int32(0)

    with pytest.raises(UserProgramError, match=r"'draw' returned an array of shape \(2,\), expected \(3,\)"):
        host_call(draw, SPECS, jnp.zeros(4, jnp.uint32))
