"""Variational Bayes lower bounds (BDMC paper, Sec. 5.1): mean-field coordinate ascent with random restarts.

``F(q) = E_q[log p(theta, z, y)] + H[q] = log p(y) - KL(q || p(. | y))`` (Eq. 41) is a lower bound on
``log p(y)`` for every q. Coordinate ascent updates each factor given the others (Eqs. 39-40) until the bound
improves by less than ``tol`` nats over ``patience`` iterations, from ``num_restarts`` random
initializations run in parallel; the best bound is reported. With the symmetry correction (``symmetric=True``)
the log number of equivalent modes is added, since a unimodal q covers one of them (Sec. 6: "VB+sym"):
``log K!`` for K exchangeable labels, or whatever the model declares.

The mean-field family is model-specific: a model provides ``vb_init(key, data)``, ``vb_update(params,
data)`` (one sweep of coordinate updates) and ``vb_bound(params, data)``; for the symmetry correction either
``vb_log_symmetries`` (the log number of equivalent modes, e.g. ``log(2^K K!)`` for the signed permutations
of a low-rank factorization) or ``vb_num_labels`` (then ``log K!`` is used).
"""

from __future__ import annotations

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import BDMCError
from ..core.ais import _seed
from ..core.estimate import Estimate
from ..models._contract import validate_data


def variational_bayes(key, model, data, *, num_restarts: int = 10, num_runs: int = 1, symmetric: bool = False,
                      tol: float = 0.01, patience: int = 50, max_iterations: int = 5000) -> Estimate:
    """Best mean-field VB lower bound on ``log p(y)`` over ``num_restarts`` random restarts.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model provides ``vb_init``, ``vb_update``, ``vb_bound`` (and ``vb_log_symmetries`` or
        ``vb_num_labels`` for ``symmetric``).
    num_restarts : int
        Random restarts per run: the knob (paper Sec. 6.2).
    num_runs : int
        Independent runs; combined by the max (footnote 5).
    symmetric : bool
        Add :func:`symmetry_correction`: ``model.vb_log_symmetries`` when the model defines it, else ``log K!``
        for the K! relabelings of the latent components (``K = model.vb_num_labels``).
    tol, patience : float, int
        Stop a restart when its bound improved by less than ``tol`` nats over the last ``patience`` iterations.
    max_iterations : int
        Cap on coordinate-ascent sweeps per restart.

    Returns
    -------
    Estimate
        ``bound="lower"`` per run, but runs combine by the max; ``settings["iterations"]`` is the mean number
        of sweeps per restart.

    Notes
    -----
    The compiled function is cached per (model, restarts, stopping rule, shapes of the keys and data) when
    the model is hashable (frozen dataclasses are), so further calls with new keys, new data of the same
    shape or ``symmetric`` toggled do not compile again (their ``compile_seconds`` is then about 0).
    """
    missing = [m for m in ("vb_init", "vb_update", "vb_bound") if not hasattr(model, m)]
    if missing:
        raise BDMCError(f"variational Bayes needs {type(model).__name__}.{', .'.join(missing)}")
    for name, value in (("num_restarts", num_restarts), ("num_runs", num_runs), ("patience", patience)):
        if int(value) != value or value < 1:
            raise BDMCError(f"{name} must be a positive integer, got {value}")
    data = validate_data(model, data)
    correction = symmetry_correction(model) if symmetric else 0.0

    keys = jax.random.split(key, num_runs)
    settings = (int(num_restarts), float(tol), int(patience), int(max_iterations))
    leaves, treedef = jax.tree.flatten(data)
    shapes = (jax.ShapeDtypeStruct(keys.shape, keys.dtype), treedef,
              tuple(jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)) for x in leaves))
    start = time.perf_counter()
    try:
        hash(model)
    except TypeError:  # a model with unhashable fields: compile for this call only
        compiled = _compile_runs.__wrapped__(model, settings, shapes)
    else:
        compiled = _compile_runs(model, settings, shapes)
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    runs, iterations = jax.block_until_ready(compiled(keys, data))
    seconds = time.perf_counter() - start
    # Added on the host so that plain and corrected runs share one compiled function.
    runs = np.asarray(runs, np.float64) + correction
    est = Estimate.from_runs(
        runs, bound="lower", seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(round(float(np.sum(iterations)) * num_restarts)),  # one pass over the data per sweep
        settings={"method": "vb+sym" if symmetric else "vb", "num_restarts": int(num_restarts),
                  "num_runs": int(num_runs), "iterations": float(np.mean(iterations)),
                  "symmetry_correction": float(correction)},
        seed=_seed(key),
    )
    # VB bounds combine by the max, not by log-mean-exp (BDMC paper, footnote 5).
    return Estimate(value=float(np.max(runs)), bound="lower", runs=est.runs, stderr=float("nan"),
                    seconds=est.seconds, compile_seconds=est.compile_seconds, n_evals=est.n_evals,
                    settings=est.settings, seed=est.seed)


def symmetry_correction(model) -> float:
    """The constant VB+sym adds: log of the number of equivalent posterior modes a unimodal q covers once.

    ``model.vb_log_symmetries`` when the model defines it (e.g. ``log(2^K K!)`` for the signed permutations
    of a low-rank factorization), otherwise ``log K!`` with ``K = model.vb_num_labels``.

    Raises
    ------
    BDMCError
        If the model defines neither.
    """
    if hasattr(model, "vb_log_symmetries"):
        return float(model.vb_log_symmetries)
    if hasattr(model, "vb_num_labels"):
        return math.lgamma(model.vb_num_labels + 1)
    raise BDMCError(f"the VB symmetry correction needs {type(model).__name__}.vb_log_symmetries or .vb_num_labels")


def coordinate_ascent(model, data, params, *, tol: float = 0.01, patience: int = 50, max_iterations: int = 5000):
    """Run ``model.vb_update`` sweeps from ``params`` until the bound stalls: one compiled while loop.

    Stops when the bound improved by less than ``tol`` nats over the last ``patience`` sweeps, or after
    ``max_iterations`` sweeps. Pure and traceable (jit and vmap it freely); :func:`variational_bayes` runs
    it from random starts, and it can be started anywhere else, e.g. at the latent that generated the data
    (the paper's "hint" experiment, Sec. 6.4).

    Parameters
    ----------
    model, data
        The model provides ``vb_update`` and ``vb_bound``; ``data`` already validated.
    params
        The starting variational parameters.
    tol, patience, max_iterations : float, int, int, keyword-only
        As in :func:`variational_bayes`.

    Returns
    -------
    params, bound, iterations
        The final parameters, their bound and the number of sweeps done.
    """
    history = jnp.full(patience, -jnp.inf).at[0].set(model.vb_bound(params, data))

    def cond(s):
        _, hist, it = s
        newest, oldest = hist[it % patience], hist[(it + 1) % patience]
        return (it < max_iterations) & ((it < patience) | (newest - oldest >= tol))

    def body(s):
        p, hist, it = s
        p = model.vb_update(p, data)
        return p, hist.at[(it + 1) % patience].set(model.vb_bound(p, data)), it + 1

    params, history, it = jax.lax.while_loop(cond, body, (params, history, 0))
    return params, history[it % patience], it


@functools.lru_cache(maxsize=32)
def _compile_runs(model, settings, shapes):
    """Compiled ``(keys, data) -> (best bound per run, mean sweeps per run)``, vmapped over runs and restarts."""
    num_restarts, tol, patience, max_iterations = settings
    keys_shape, treedef, leaf_shapes = shapes

    def one_run(k, data):
        def restart(kk):
            _, bound, it = coordinate_ascent(model, data, model.vb_init(kk, data), tol=tol, patience=patience,
                                             max_iterations=max_iterations)
            return bound, it

        bounds, iterations = jax.vmap(restart)(jax.random.split(k, num_restarts))
        return jnp.max(bounds), jnp.mean(iterations)

    fn = jax.jit(jax.vmap(one_run, in_axes=(0, None)))
    return fn.lower(keys_shape, jax.tree.unflatten(treedef, leaf_shapes)).compile()
