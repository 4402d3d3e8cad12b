"""The per-image annealing run: images x chains under ``vmap``, one compiled ``lax.scan`` per chunk of steps.

Each (image, chain) pair is its own AIS chain with its own weight: the image's data (its pixels, plus the
shared decoder parameters and log sigma, which are arguments of the compiled programs, never constants)
enters only that chain's density. The move is the project's HMC (``bdmc.kernels.HMC``: BlackJAX's
transition with the lambda-free terms cached), so a transition costs its leapfrog gradients and the weight
increment ``(beta_t - beta_{t-1}) log p(x | z)`` is read from the cached likelihood term.

Randomness: ``key`` is split into ``(key_init, key_run)``. Chain j of image i starts (forward runs) at
``sample_prior(fold_in(fold_in(key_init, i), j))`` and moves at step t (1-based, as in the engine) with
``fold_in(fold_in(fold_in(key_run, t), i), j)``. An image's numbers depend on its index, never on the other
images of the batch, and the chunk size never changes them.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..core.engine import join_kernel, split_kernel
from ..core.progress import compiling, progress_report
from ..errors import NonFiniteLogWeightError

DEFAULT_CHUNK = 64


class ImageRun(NamedTuple):
    """Raw output of :func:`run_images`: log-weights (n, c), final latents (n, c, k), acceptance by step."""

    log_weights: np.ndarray
    latents: Any
    acceptance: np.ndarray
    seconds: float
    compile_seconds: float
    compiled: bool
    n_evals: int


def split_keys(key):
    """``(key_init, key_run)``: where the start draws and the moves take their randomness."""
    key_init, key_run = jax.random.split(key)
    return key_init, key_run


_DRAWS = CompiledCache("generative prior draws", maxsize=16)


def prior_starts(key_init, model, num_images: int, num_chains: int):
    """Chain j of image i from ``model.sample_prior(fold_in(fold_in(key_init, i), j))``: shape (n, c, k)."""
    n, c = int(num_images), int(num_chains)

    def draw(key):
        def image(i):
            ki = jax.random.fold_in(key, i)
            return jax.vmap(lambda j: model.sample_prior(jax.random.fold_in(ki, j)))(jnp.arange(c))
        return jax.vmap(image)(jnp.arange(n))

    fn, _ = _DRAWS.get_or_build((model, n, c), lambda: jax.jit(draw))
    return fn(key_init)


def run_images(key_run, model, data, axes, kernel, path, init, *, chunk_size: int = DEFAULT_CHUNK,
               progress="auto", description: str = "per-image AIS") -> ImageRun:
    """Anneal every chain of every image along ``path`` (visited in the given order).

    Parameters
    ----------
    key_run : PRNG key
        The moves' randomness (see the module docstring).
    model
        A one-image model (``DecoderModel`` or ``EncoderStartModel``) whose density is linear in beta.
    data : pytree
        The model's data with a leading image axis on the leaves ``axes`` marks 0 (None: shared by all images).
    axes : pytree
        ``jax.vmap`` in_axes prefix of ``data``.
    kernel : HMC
        The move; its step size (a number or a frozen table by beta) is an argument of the compiled run.
    path : array (T,)
        Annealing weights in the order visited (reversed for reverse AIS).
    init : array (n, c, k)
        Starting latents: exact draws from the path's first distribution.
    """
    lams = np.asarray(path, np.float64)
    num_steps = lams.shape[0] - 1
    chunk_size = max(1, min(int(chunk_size), DEFAULT_CHUNK * 16))
    num_chunks = math.ceil(num_steps / chunk_size)
    padded = num_chunks * chunk_size
    lam_from, lam_to = _pad(lams[:-1], padded), _pad(lams[1:], padded)
    active = np.arange(padded) < num_steps
    index = np.arange(1, padded + 1, dtype=np.int32)
    n, c = int(init.shape[0]), int(init.shape[1])

    kernel_def, params = split_kernel(kernel)
    first = (lam_from[:chunk_size], lam_to[:chunk_size], active[:chunk_size], index[:chunk_size])
    with compiling(progress, description):
        (start, chunk), compile_seconds, built = _compile(model, kernel_def, axes, (key_run, data, init, first,
                                                                                   params))
    report = progress_report(progress, num_steps * n * c, description, num_steps)
    began = time.perf_counter()
    carry = start(params, data, init)
    accs = []
    try:
        for k in range(num_chunks):
            sl = slice(k * chunk_size, (k + 1) * chunk_size)
            carry, acc = chunk(params, key_run, data, carry, lam_from[sl], lam_to[sl], active[sl], index[sl])
            accs.append(acc)
            if report is not None:
                jax.block_until_ready(carry[1])
                report(min((k + 1) * chunk_size, num_steps), num_steps)
        states, log_weights, first_bad = jax.block_until_ready(carry)
    finally:
        if report is not None and hasattr(report, "close"):
            report.close()
    seconds = time.perf_counter() - began
    _raise_if_bad(np.asarray(first_bad), lams, description)
    acceptance = np.concatenate([np.asarray(a, np.float64) for a in accs])[:num_steps]
    evals = n * c * (1 + num_steps * int(kernel.evals_per_cached_step))
    return ImageRun(np.asarray(log_weights, np.float64), states.position, acceptance, seconds,
                    compile_seconds, built, evals)


def _start(kparams, data, init, *, kernel_def, axes):
    kernel = join_kernel(kernel_def, kparams)
    states = jax.vmap(lambda d, x: jax.vmap(lambda z: kernel.init_state(z, d))(x), in_axes=(axes, 0))(data, init)
    shape = init.shape[:2]
    return states, jnp.zeros(shape, init.dtype), jnp.full(shape, -1, jnp.int32)


def _chunk(kparams, key, data, carry, lam_from, lam_to, active, index, *, kernel_def, axes):
    kernel = join_kernel(kernel_def, kparams)

    def transition(carry, t, lf, lt):
        states, logw, first_bad = carry
        n, c = logw.shape
        like = jax.ShapeDtypeStruct(states.position.shape[2:], states.position.dtype)
        terms = states.log_likelihood
        delta = (jnp.asarray(lt, terms.dtype) - jnp.asarray(lf, terms.dtype))
        # 0 * (-inf) = 0: a step that does not change beta adds nothing, as in contracts.weighted_sum.
        inc = jnp.sum(jnp.where(delta == 0, 0.0, delta * terms), axis=-1).astype(logw.dtype)
        dead = logw == -jnp.inf
        bad = (jnp.isnan(inc) | (inc == jnp.inf)) & ~dead
        first_bad = jnp.where((first_bad < 0) & bad, t, first_bad)
        logw = jnp.where(dead, logw, logw + inc)
        key_t = jax.random.fold_in(key, t)

        def image(i, d, s):
            key_i = jax.random.fold_in(key_t, i)
            keys = jax.vmap(lambda j: jax.random.fold_in(key_i, j))(jnp.arange(c))
            return jax.vmap(lambda k, s1: kernel.step(k, s1, d, lt, like=like))(keys, s)

        states, info = jax.vmap(image, in_axes=(0, axes, 0))(jnp.arange(n), data, states)
        return (states, logw, first_bad), jnp.mean(info.acceptance).astype(logw.dtype)

    def body(carry, xs):
        lf, lt, on, t = xs
        return jax.lax.cond(on, lambda cr: transition(cr, t, lf, lt),
                            lambda cr: (cr, jnp.zeros((), cr[1].dtype)), carry)

    return jax.lax.scan(body, carry, (lam_from, lam_to, active, index))


_COMPILED = CompiledCache("generative", maxsize=32)


def _compile(model, kernel_def, axes, shapes):
    """The start and chunk programs, once per (model, kernel structure, shapes); data and step sizes are
    arguments. Returns ``((start, chunk), seconds, built)``."""
    key, data, init, first, params = shapes
    leaves, treedef = jax.tree.flatten((key, data, init, first, params))
    axes_def = jax.tree.structure(axes, is_leaf=lambda x: x is None)
    signature = (treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves), jnp.result_type(float),
                 str(axes_def), tuple(jax.tree.leaves(axes, is_leaf=lambda x: x is None)))

    def build():
        began = time.perf_counter()
        start = jax.jit(functools.partial(_start, kernel_def=kernel_def, axes=axes))
        chunk = jax.jit(functools.partial(_chunk, kernel_def=kernel_def, axes=axes))
        carry = jax.eval_shape(start, params, data, init)
        programs = (start.lower(params, data, init).compile(), chunk.lower(params, key, data, carry, *first).compile())
        return programs, time.perf_counter() - began

    (programs, seconds), built = _COMPILED.get_or_build((model, kernel_def, signature), build)
    return programs, (seconds if built else 0.0), built


def _raise_if_bad(first_bad, lams, description):
    bad = first_bad >= 0
    if not bad.any():
        return
    step = int(first_bad[bad].min())
    image, chain = (int(v) for v in np.argwhere(first_bad == step)[0])
    raise NonFiniteLogWeightError(
        f"{description}: image {image}, chain {chain} got a NaN or +inf log-weight increment at step {step} "
        f"(beta {lams[step - 1]:.6g} -> {lams[step]:.6g}); {int(bad.sum())} chain(s) affected. The decoder's "
        "log p(x | z) was NaN or +inf there: a bug in the decoder or its parameters, not a result.",
        step=step, lam=float(lams[step]), chain=chain, n_bad=int(bad.sum()), direction=description)


def _pad(a, length):
    out = np.empty(length, dtype=np.float64)
    out[: a.shape[0]] = a
    out[a.shape[0]:] = a[-1]
    return out
