"""Likelihood weighting and the harmonic mean estimator (BDMC paper, Secs. 3.1-3.2): mirror images.

Likelihood weighting averages ``p(y | x)`` over prior draws (unbiased for Z: a stochastic lower bound on
log Z). The harmonic mean estimator averages ``1 / p(y | x)`` over posterior draws -- here a Markov chain
started at the exact sample, so every draw is exactly from the posterior and the estimate of 1/Z is
unbiased: a stochastic upper bound on log Z.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.kernel import evals_per_step
from ..contracts.model import validate_data
from ..core.ais import broadcast_latent, default_kernel, require_exact_latent
from ._timing import check_positive, timed_runs


@register_estimator("lw", label="LW", knob="num_proposals", knobs=(10, 100, 1000, 10000), bound="lower")
def likelihood_weighting(key, model, data, *, exact_latent=None, num_proposals: int = 1000, num_runs: int = 16,
                         batch_size: int = 4096) -> Estimate:
    """Importance sampling from the prior: ``log mean_m p(y | x_m)``, ``x_m ~ p(x)``.

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its data (``log_likelihood`` summed over cases; for collapsed models the chain-rule terms).
    exact_latent : optional
        Not used; accepted so every estimator has one call shape.
    num_proposals : int
        Prior draws per run: the knob.
    num_runs : int
        Independent runs; combined by log-mean-exp.
    batch_size : int
        Proposals evaluated at once, counted over all runs together (bounds memory for large
        ``num_proposals``: the runs are batched with ``vmap``).

    Returns
    -------
    Estimate
        ``bound="lower"``.
    """
    check_positive(num_proposals=num_proposals, num_runs=num_runs, batch_size=batch_size)
    data = validate_data(model, data)
    batch = max(1, min(int(batch_size) // int(num_runs), int(num_proposals)))
    num_batches = math.ceil(num_proposals / batch)

    def one_run(k):
        def body(acc, kb):
            i, kk = kb
            lls = jax.vmap(lambda kx: jnp.sum(model.log_likelihood(model.sample_prior(kx), data)))(
                jax.random.split(kk, batch))
            valid = i * batch + jnp.arange(batch) < num_proposals  # the last batch may be partial
            return jnp.logaddexp(acc, logsumexp(jnp.where(valid, lls, -jnp.inf))), None

        keys = jax.random.split(k, num_batches)
        total, _ = jax.lax.scan(body, -jnp.inf, (jnp.arange(num_batches), keys))
        return total - jnp.log(num_proposals)

    runs, seconds, compile_seconds = timed_runs(jax.jit(jax.vmap(one_run)), jax.random.split(key, num_runs))
    return Estimate.from_runs(
        runs, bound="lower", seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(num_runs * num_proposals),
        settings={"method": "likelihood_weighting", "num_proposals": int(num_proposals), "num_runs": int(num_runs)},
        seed=seed_of(key), compiled=True,
    )


@register_estimator("hme", label="HME", knob="num_samples", knobs=(10, 100, 1000, 10000), bound="upper",
                    needs_exact=True)
def harmonic_mean(key, model, data, *, exact_latent=None, num_samples: int = 1000, num_runs: int = 16,
                  kernel=None) -> Estimate:
    """Harmonic mean of the likelihood along a posterior chain started at the exact sample.

    Parameters
    ----------
    key : PRNG key
    model, data
    exact_latent : pytree
        The latent that generated the simulated data (an exact posterior sample).
    num_samples : int
        Chain states averaged per run, each after one kernel transition: the knob.
    num_runs : int
        Independent chains; combined by log-harmonic-mean.
    kernel : optional
        Transition operator leaving the posterior invariant (the model's own by default).

    Returns
    -------
    Estimate
        ``bound="upper"``.
    """
    require_exact_latent(exact_latent, "the harmonic mean estimator")
    check_positive(num_samples=num_samples, num_runs=num_runs)
    data = validate_data(model, data)
    kernel = default_kernel(model) if kernel is None else kernel
    init = broadcast_latent(model, exact_latent, num_runs)
    one = jnp.ones((), jnp.result_type(float))

    def one_run(k, x0):
        def body(carry, kk):
            x, acc = carry
            x, _ = kernel(kk, x, data, one)
            return (x, jnp.logaddexp(acc, -jnp.sum(model.log_likelihood(x, data)))), None

        (_, acc), _ = jax.lax.scan(body, (x0, -jnp.inf), jax.random.split(k, num_samples))
        return -(acc - jnp.log(num_samples))

    runs, seconds, compile_seconds = timed_runs(jax.jit(jax.vmap(one_run)), jax.random.split(key, num_runs), init)
    return Estimate.from_runs(
        runs, bound="upper", seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(num_runs * num_samples * (1 + evals_per_step(kernel))),
        settings={"method": "harmonic_mean", "num_samples": int(num_samples), "num_runs": int(num_runs),
                  "kernel": type(kernel).__name__},
        seed=seed_of(key), compiled=True,
    )
