"""The Bayesian information criterion as a log-ML estimate (BDMC paper, Sec. 6): fit, then penalize.

``BIC = max_theta log p(y | theta) - (k / 2) log N``, with theta the model's parameters (cluster centres,
the factor V, the feature matrix A, ...), the local latents of each data case summed or integrated out
(``model.bic_log_likelihood``), k the number of free parameters and N the number of data cases. The
maximum is the best of ``num_restarts`` BFGS runs from prior draws (``model.bic_sample_params``), run in
parallel. Neither a lower nor an upper bound.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.optimize import minimize

from .._errors import BDMCError
from ..core.ais import _seed
from ..core.estimate import Estimate
from ..models._contract import n_cases, validate_data
from ._timing import timed_call


def bic(key, model, data, *, num_restarts: int = 10, num_runs: int = 1, max_iterations: int = 500) -> Estimate:
    """BIC estimate of ``log p(y)``: the best of ``num_restarts`` maximum-likelihood fits, penalized.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model must provide ``bic_sample_params(key)`` and ``bic_log_likelihood(params, data)``.
    num_restarts : int
        Random restarts of the optimizer per run: the knob.
    num_runs : int
        Independent runs (each with its own restarts); combined by the mean.
    max_iterations : int
        BFGS iterations per restart.

    Returns
    -------
    Estimate
        ``bound=None``; ``settings["num_params"]`` is the penalized parameter count.
    """
    missing = [m for m in ("bic_sample_params", "bic_log_likelihood") if not hasattr(model, m)]
    if missing:
        raise BDMCError(f"BIC needs {type(model).__name__}.{' and .'.join(missing)}")
    for name, value in (("num_restarts", num_restarts), ("num_runs", num_runs)):
        if int(value) != value or value < 1:
            raise BDMCError(f"{name} must be a positive integer, got {value}")
    data = validate_data(model, data)
    flat0, unravel = ravel_pytree(model.bic_sample_params(jax.random.key(0)))
    num_params = int(flat0.size)
    penalty = 0.5 * num_params * math.log(n_cases(model, data))

    def fit(k):
        start, _ = ravel_pytree(model.bic_sample_params(k))
        res = minimize(lambda v: -model.bic_log_likelihood(unravel(v), data), start, method="BFGS",
                       options={"maxiter": int(max_iterations)})
        return -res.fun, res.nit

    def one_run(k):
        values, iterations = jax.vmap(fit)(jax.random.split(k, num_restarts))
        values = jnp.where(jnp.isfinite(values), values, -jnp.inf)  # a diverged restart does not count
        return jnp.max(values) - penalty, jnp.sum(iterations)

    fn = jax.jit(jax.vmap(one_run))
    keys = jax.random.split(key, num_runs)
    (runs, iterations), seconds, compile_seconds = timed_call(fn, keys)
    return Estimate.from_runs(
        np.asarray(runs, np.float64), bound=None, seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(np.sum(iterations)),  # one likelihood-and-gradient evaluation per BFGS iteration, at least
        settings={"method": "bic", "num_restarts": int(num_restarts), "num_runs": int(num_runs),
                  "num_params": num_params},
        seed=_seed(key),
    )
