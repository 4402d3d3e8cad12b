"""Prior draws that start a run: compiled, since eager draws cost milliseconds in dispatch, and pooled.

Compiling a model's prior sampler is often the dearest part of a short run (JAX's gamma sampler alone takes
about 0.7 s to compile), and a run needs prior draws in several places: the prior check's 1,024, the pilot's
chains, the run's chains. So every count up to :data:`POOL` is served by one compiled program per model that
draws :data:`POOL` of them: ``jax.random.split(key, POOL)[:num]`` equals ``jax.random.split(key, num)`` (JAX's
partitionable threefry), so the first ``num`` of the pool are exactly the draws of ``num`` keys and every
caller's numbers are those of a program of its own size. A count asked for again and again (a sweep of warm
calls) gets a program of its own size at its :data:`EXACT_AFTER`-th use, so a sweep no longer pays for the pool's
draws (about a millisecond a call), while a user's first few calls compile nothing new. Only a run's own draws
count as uses: a pilot's draws (``one_off``) come once per model, data and options, since the pilot is reused,
so they never make a count look swept. A model
whose sampler runs outside JAX (Stan, WebPPL, PyMC: the ``HostPrior`` capability) has nothing to compile and
draws only what is asked. The prior check's 1,024 draws are :func:`draw_prior`'s too (on its own stream), so the
check and the run share the program: a first call traces and compiles the model's sampler once.
"""

from __future__ import annotations

import time

import jax

from ..caching import CompiledCache, compile_quickly, compile_run, named
from ..contracts.capabilities import HostPrior, supports

POOL = 1024  # draws of the shared program (the prior check's count)


def draw_prior(key, model, num: int):
    """``num`` prior draws and the key left for the run: ``key`` split in two, the first split ``num`` ways
    (:func:`prior_keys`).

    Traceable (call it inside a compiled function); :func:`prior_draws` is the compiled, cached version.
    """
    keys, key_run = prior_keys(key, num)
    return jax.vmap(model.sample_prior)(keys), key_run


def prior_keys(key, num: int):
    """The keys of :func:`draw_prior`'s ``num`` draws and the key left for the run: the one place that says how a
    key becomes prior draws (the prior check names a flagged draw by its key)."""
    key_init, key_run = jax.random.split(key)
    return jax.random.split(key_init, num), key_run


def prior_draws(key, model, num: int, *, one_off: bool = False):
    """:func:`draw_prior` as compiled calls: for a model sampled in JAX, the first ``num`` of the one compiled
    program of :data:`POOL` draws when ``num <= POOL`` (the same numbers), else one program of that size, cached per
    model. ``one_off``: draws a caller makes once (a pilot's), not counted towards the count's own program."""
    draws, key_run, _ = timed_prior_draws(key, model, num, one_off=one_off)
    return draws, key_run


def timed_prior_draws(key, model, num: int, *, one_off: bool = False):
    """:func:`prior_draws` and the seconds spent compiling its program when this call built it (else 0). The key's
    split runs inside the compiled program: an eager split is a dispatch of its own on every call. A ``one_off``
    call uses the count's own program if a sweep built one, and never counts as a use."""
    num = int(num)
    repeated = _repeated(model, num, count=not one_off)
    pooled = num <= POOL and not supports(model, HostPrior) and not repeated
    size = POOL if pooled else num

    began = time.perf_counter()
    # Drawing is cheap and compiling a sampler dear (JAX's gamma sampler alone, 0.7 s): compiled quickly, except a
    # count a sweep asks for again and again, whose program runs on every call (about half as fast unoptimized). A
    # program already built for a size is kept whatever the options it was built with: never compiled twice.
    compiler = compile_run if repeated else compile_quickly
    fn, built = _DRAWS.get_or_build((model, size), lambda: compiler(jax.jit(named(
        lambda k: draw_prior(k, model, size), "prior_draws")).lower(key)))
    draws, key_run = jax.block_until_ready(fn(key)) if built else fn(key)
    seconds = time.perf_counter() - began if built else 0.0
    if num == size:
        return draws, key_run, seconds
    # One compiled slice of every leaf (indexing leaf by leaf costs a dispatch each, on every call).
    head, _ = _DRAWS.get_or_build((model, num, "head"), lambda: jax.jit(named(
        lambda d: jax.tree.map(lambda a: a[:num], d), "prior_draws_head")))
    return head(draws), key_run, seconds


_DRAWS = CompiledCache("prior draws", maxsize=64)
_USES = CompiledCache("prior draw counts", maxsize=256)  # (model, num) -> uses so far
EXACT_AFTER = 4  # the use at which a count asked again and again gets a program of its own size


def _repeated(model, num: int, *, count: bool = True) -> bool:
    """Whether ``num`` draws of ``model`` were asked often enough to get their own program: a sweep of warm calls
    then draws only what it uses (the pool's 1,024 draws cost a small run about a millisecond every call), while
    one-off counts share the pool's program. Both give the same numbers (the module docstring). ``count``: this
    ask is a use (a run's draws; a pilot's are not)."""
    if num == POOL:
        return False
    uses = _USES.get((model, num), 0) + int(count)
    if count:
        _USES.put((model, num), uses)
    return uses >= EXACT_AFTER


def prior_draws_batch(keys, model, num: int):
    """:func:`draw_prior` for each key of ``keys`` (one per data set of a batched run), as one compiled call:
    draws with leading axes (data sets, ``num``) and one run key per data set."""
    fn, _ = _DRAWS.get_or_build((model, int(num), "batch"),
                                lambda: jax.jit(jax.vmap(lambda k: draw_prior(k, model, int(num)))))
    return fn(keys)
