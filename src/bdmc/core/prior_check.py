"""The check at exact prior draws: a NaN or +inf density term on a region of prior mass is a bug, found before a run.

Kernels reject proposals of NaN or +inf density (divergences), so a run would sample a model whose density is NaN
on part of its support as if that part had zero density: a silent bias. Before a run the engine evaluates every
density term at ``num_draws`` exact prior draws, on ``fold_in(key, PRIOR_CHECK_STREAM)`` (never the run's
randomness), and stops at a NaN or +inf there, naming the term. A region of prior mass p is missed with
probability ``(1 - p) ** num_draws``: with the 1,024 draws estimators use, below 1e-4 for p = 1%, 6% for p = 0.27%.
The check runs once per model and data set (a later run on equal data reuses the verdict, in a later process too:
a pass is kept on disk by :mod:`bdmc.core.pilot_store`), so a warm call, and a new process's call on a model and
data set already checked, pay nothing for it.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache, compile_quickly, leaf_types, named
from ..contracts.capabilities import CollapsedDensity, supports
from ..errors import DataError
from . import pilot_store
from .failures import raise_prior_failure
from .fingerprint import data_fingerprint
from .prior import draw_prior, prior_keys, timed_prior_draws

PRIOR_CHECK_DRAWS = 1024  # what estimators pass as the engine's prior_check
PRIOR_CHECK_STREAM = 0x5EEDC4EC  # folded into the run's key for the check's draws


def prior_check_flags(key, data, ends, *, model, num_draws):
    """Per exact prior draw, whether a density term is NaN or +inf there (every term, whatever its weight:
    prior draws are where every term must be defined)."""
    if not num_draws:
        return jnp.zeros((0,), bool)
    return illegal_at(draw_prior(jax.random.fold_in(key, PRIOR_CHECK_STREAM), model, num_draws)[0], data, ends,
                      model=model)


def check_keys(key, num_draws: int):
    """The keys of the check's draws: :func:`bdmc.core.prior.draw_prior`'s on the check's own stream, so the check
    and a run's chains share one compiled prior program (``core/prior.py``)."""
    return prior_keys(jax.random.fold_in(key, PRIOR_CHECK_STREAM), num_draws)[0]


def illegal_at(draws, data, ends, *, model):
    """Per draw (a leading axis), whether a density term is NaN or +inf there."""
    return _checked_at(draws, data, ends, model=model)[0]


def _checked_at(draws, data, ends, *, model):
    """Per draw, whether a density term is NaN or +inf there; and per data case, whether its likelihood term is
    zero (-inf) at every draw (none for a model with a collapsed density only)."""
    def terms(x):
        if supports(model, CollapsedDensity):
            values = jnp.stack([model.log_density(x, data, lam) for lam in ends])
            return jnp.any(jnp.isnan(values) | (values == jnp.inf)), jnp.zeros((0,), bool)
        likelihood = jnp.ravel(model.log_likelihood(x, data))
        values = jnp.concatenate([jnp.atleast_1d(model.log_prior(x)), likelihood])
        return jnp.any(jnp.isnan(values) | (values == jnp.inf)), likelihood == -jnp.inf

    bad, zero = jax.vmap(terms)(draws)
    return bad, jnp.all(zero, axis=0)


_CHECKS = CompiledCache("prior check", maxsize=64)


def check_prior(key, model, data, lams, *, num_draws: int, batch_axes, axes_signature, batch_label: str,
                description: str) -> float:
    """Run the check at ``num_draws`` exact prior draws (none when 0) and raise on a NaN or +inf term; return the
    seconds spent compiling it (0 when its program came from the cache: one per model and data shapes). A model
    and data set that passed once are not checked again: in this process (bounded cache; :func:`bdmc.clear_caches`
    forgets) nor in a later one (:mod:`bdmc.core.pilot_store`, keyed on the model's behaviour and the data's
    values; ``BDMC_PILOT_CACHE=0`` turns it off)."""
    if not num_draws:
        return 0.0
    ends = (np.asarray(lams[0]), np.asarray(lams[-1]))
    leaves, treedef = jax.tree.flatten((key, data, ends))
    signature = (treedef, leaf_types(leaves), axes_signature)
    # A model and data that passed are not checked again (a warm call then pays nothing for the check):
    # the guarantee is per model and data set, from the first run's draws.
    passed = (model, int(num_draws), signature, data_fingerprint(data, ends))

    def check():
        # A check passed in an earlier process (the same model behaviour, data, ends and draws) is not run again.
        stored = (pilot_store.prior_check_name(model, data, ends, repr((int(num_draws), signature)))
                  if pilot_store.store_dir(pilot_store.PRIOR_CHECKS) is not None else None)
        if stored is not None and pilot_store.check_passed(stored):
            return 0.0
        spent = _check(key, model, data, lams, ends, signature, num_draws=int(num_draws), batch_axes=batch_axes,
                       batch_label=batch_label, description=description)
        if stored is not None:
            pilot_store.record_check(stored, f"{description}: {type(model).__qualname__}, {int(num_draws)} draws")
        return spent

    spent, checked = _PASSED.get_or_build(passed, check)
    return spent if checked else 0.0


def _check(key, model, data, lams, ends, signature, *, num_draws, batch_axes, batch_label, description) -> float:
    """The check itself: raise on a NaN or +inf term, else return the seconds spent compiling."""
    if batch_axes is None:  # the draws come from the model's shared prior program (core/prior.py), compiled once
        draws, _, drawn = timed_prior_draws(jax.random.fold_in(key, PRIOR_CHECK_STREAM), model, int(num_draws))

        def build():
            began = time.perf_counter()
            fn = jax.jit(named(functools.partial(_checked_at, model=model), "prior_check"))
            return compile_quickly(fn.lower(draws, data, ends)), time.perf_counter() - began

        (compiled, seconds), built = _CHECKS.get_or_build((model, int(num_draws), signature, "pool"), build)
        bad, outside = compiled(draws, data, ends)
        spent = (seconds if built else 0.0) + drawn  # drawn: the shared program's compile, when this call built it
        raise_if_outside_support(np.asarray(outside), data, num_draws=int(num_draws), description=description)
    else:  # one program draws and checks every data set's draws
        def build():
            began = time.perf_counter()
            fn = functools.partial(prior_check_flags, model=model, num_draws=int(num_draws))
            fn = jax.vmap(fn, in_axes=(0, batch_axes, None))
            return jax.jit(named(fn, "prior_check")).lower(key, data, ends).compile(), time.perf_counter() - began

        (compiled, seconds), built = _CHECKS.get_or_build((model, int(num_draws), signature), build)
        bad, spent = compiled(key, data, ends), (seconds if built else 0.0)
    raise_if_prior_failed(np.asarray(bad), key, batch_axes, batch_label, model=model, data=data, lams=lams,
                          description=description)
    return spent


_PASSED = CompiledCache("prior checks passed", maxsize=256)  # (model, data) -> seconds the check spent


def raise_if_outside_support(outside, data, *, num_draws: int, description: str) -> None:
    """Refuse data a case of which has zero likelihood under every exact prior draw of the check: it lies outside
    the model's support (a negative count, a category the model does not have), and every run would give
    ``-inf``. A correct model whose prior puts less than about 1/num_draws of its mass where the data lie would
    be refused too; the message says so."""
    cases = np.flatnonzero(outside)
    if not cases.size:
        return
    shown = ", ".join(describe_case(data, int(i), outside.size) for i in cases[:3])
    more = f" (and {cases.size - 3} more cases)" if cases.size > 3 else ""
    raise DataError(f"{description}: {shown}{more} has zero density under every one of {num_draws:,} prior draws: "
                    "the data lie outside the model's support (a negative or non-integer count, a category or "
                    "value range the model does not have). If the model is right, its prior puts almost no mass "
                    "where these data lie.")


def describe_case(data, i: int, num_cases: int) -> str:
    """Data case ``i`` as its values: ``y[0] = -4`` (each data leaf whose leading axis holds the cases)."""
    if isinstance(data, dict):
        items = list(data.items())
    else:
        items = [("y", data)] if not isinstance(data, (list, tuple)) else [(f"data[{k}]", v)
                                                                         for k, v in enumerate(data)]
    parts = []
    for name, leaf in items:
        array = np.asarray(leaf)
        if array.ndim and array.shape[0] == num_cases:
            value = array[i]
            parts.append(f"{name}[{i}] = {value.item() if value.ndim == 0 else value.tolist()}")
    return ", ".join(parts) if parts else f"data case {i}"


def raise_if_prior_failed(bad, key, batch_axes, batch_label, *, model, data, lams, description):
    """Raise if an exact prior draw of the prior check has a NaN or +inf density term, naming the term and (in
    a batch) the data set."""
    flat = bad.reshape(-1, bad.shape[-1]) if bad.ndim else bad
    if not flat.any():
        return
    b = int(np.argmax(flat.any(axis=1))) if batch_axes is not None else 0
    member_key, member_data = key, data
    if batch_axes is not None:
        member_key = key[b]
        member_data = jax.tree.map(lambda ax, x: x if ax is None else jnp.take(x, b, axis=ax), batch_axes, data,
                                   is_leaf=lambda x: x is None)
        description = f"{description}, {batch_label} {b}"
    row = flat[b] if batch_axes is not None else flat
    draw = int(np.argmax(row))
    latent = jax.jit(model.sample_prior)(check_keys(member_key, row.size)[draw])
    raise_prior_failure(model, latent, member_data, lams, draw=draw, n_bad=int(row.sum()), n_draws=int(row.size),
                        description=description)
