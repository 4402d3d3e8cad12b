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

from ..contracts.capabilities import BICFit, require
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.model import n_cases, validate_data
from ._timing import check_positive, timed_call


@register_estimator("bic", label="BIC", knob="num_restarts", knobs=(1, 10), bound=None, requires=(BICFit,))
def bic(key, model, data, *, exact_latent=None, num_restarts: int = 10, num_runs: int = 1,
        max_iterations: int = 500) -> Estimate:
    """BIC estimate of ``log p(y)``: the best of ``num_restarts`` maximum-likelihood fits, penalized.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model supports :class:`~bdmc.contracts.BICFit`: ``bic_sample_params(key)`` and
        ``bic_log_likelihood(params, data)``.
    exact_latent : optional
        Not used; accepted so every estimator has one call shape.
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
    require(model, BICFit, purpose="BIC")
    check_positive(num_restarts=num_restarts, num_runs=num_runs)
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
        seed=seed_of(key), compiled=True,
    )
