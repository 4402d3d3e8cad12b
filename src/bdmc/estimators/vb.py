"""Variational Bayes lower bounds (BDMC paper, Sec. 5.1): mean-field coordinate ascent with random restarts.

``F(q) = E_q[log p(theta, z, y)] + H[q] = log p(y) - KL(q || p(. | y))`` (Eq. 41) is a lower bound on
``log p(y)`` for every q. Coordinate ascent updates each factor given the others (Eqs. 39-40) until the bound
improves by less than ``tol`` nats over ``patience`` iterations, from ``num_restarts`` random
initializations run in parallel; the best bound is reported. With the symmetry correction (``symmetric=True``)
the log number of equivalent modes is added, since a unimodal q covers one of them (Sec. 6: "VB+sym"):
``log K!`` for K exchangeable labels, or whatever the model declares.

The mean-field family is model-specific: a model provides ``vb_init(key, data)``, ``vb_update(params,
data)`` (one sweep of coordinate updates) and ``vb_bound(params, data)``; for the symmetry correction either
``vb_log_symmetries`` (the log number of equivalent modes: ``log K!`` for K exchangeable labels,
``log(2^K K!)`` for the signed permutations of a low-rank factorization). These are the capabilities
:class:`~bdmc.contracts.VariationalFamily` and :class:`~bdmc.contracts.LabelSymmetry`.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..contracts.capabilities import LabelSymmetry, VariationalFamily, require
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.model import validate_data
from ._timing import check_positive


@register_estimator("vb+sym", label="VB+sym", knob="num_restarts", knobs=(1, 10, 100), bound="lower",
                    combine="max", requires=(VariationalFamily, LabelSymmetry), options={"symmetric": True})
@register_estimator("vb", label="VB", knob="num_restarts", knobs=(1, 10, 100), bound="lower", combine="max",
                    requires=(VariationalFamily,))
def variational_bayes(key, model, data, *, exact_latent=None, num_restarts: int = 10, num_runs: int = 1,
                      symmetric: bool = False, tol: float = 0.01, patience: int = 50,
                      max_iterations: int = 5000) -> Estimate:
    """Best mean-field VB lower bound on ``log p(y)`` over ``num_restarts`` random restarts.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model supports :class:`~bdmc.contracts.VariationalFamily` (and
        :class:`~bdmc.contracts.LabelSymmetry` for ``symmetric``).
    exact_latent : optional
        Not used; accepted so every estimator has one call shape.
    num_restarts : int
        Random restarts per run: the knob (paper Sec. 6.2).
    num_runs : int
        Independent runs; combined by the max (footnote 5).
    symmetric : bool
        Add :func:`symmetry_correction`, ``model.vb_log_symmetries``.
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
    require(model, VariationalFamily, purpose="variational Bayes")
    check_positive(num_restarts=num_restarts, num_runs=num_runs, patience=patience)
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
        compiled, built = _compile_runs(model, settings, shapes), True
    else:
        compiled, built = _COMPILED.get_or_build((model, settings, shapes),
                                                 lambda: _compile_runs(model, settings, shapes))
    compile_seconds = time.perf_counter() - start if built else 0.0
    start = time.perf_counter()
    runs, iterations = jax.block_until_ready(compiled(keys, data))
    seconds = time.perf_counter() - start
    # Added on the host so that plain and corrected runs share one compiled function.
    runs = np.asarray(runs, np.float64) + correction
    # VB bounds combine by the max, not by log-mean-exp (BDMC paper, footnote 5).
    return Estimate.from_runs(
        runs, bound="lower", combine="max", seconds=seconds, compile_seconds=compile_seconds, compiled=built,
        n_evals=int(round(float(np.sum(iterations)) * num_restarts)),  # one pass over the data per sweep
        settings={"method": "vb+sym" if symmetric else "vb", "num_restarts": int(num_restarts),
                  "num_runs": int(num_runs), "iterations": float(np.mean(iterations)),
                  "symmetry_correction": float(correction)},
        seed=seed_of(key),
    )


def symmetry_correction(model) -> float:
    """The constant VB+sym adds: log of the number of equivalent posterior modes a unimodal q covers once.

    ``model.vb_log_symmetries``: ``log K!`` for K exchangeable labels, ``log(2^K K!)`` for the signed
    permutations of a low-rank factorization.

    Raises
    ------
    MissingCapabilityError
        If the model does not support :class:`~bdmc.contracts.LabelSymmetry`.
    """
    require(model, LabelSymmetry, purpose="the VB symmetry correction")
    return float(model.vb_log_symmetries)


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


_COMPILED = CompiledCache("variational_bayes", maxsize=32)


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
