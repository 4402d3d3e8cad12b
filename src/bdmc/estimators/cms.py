"""The Chib-Murray-Salakhutdinov (CMS) estimator (BDMC paper, Sec. 5.2, Eqs. 42-44; Murray and Salakhutdinov 2009).

Chib's identity ``p(y) = p(x*, y) / p(x* | y)`` holds at any state ``x*``; the denominator is estimated by
``p_hat = (1/S) sum_j T(x* | x_j)`` along a Markov chain ``x_1..x_S``. Murray and Salakhutdinov's variant
draws a position ``s`` uniformly from ``1..S``, draws ``x_s ~ T~(. | x*)`` from the reverse operator
(``pi(x) T(x' | x) = pi(x') T~(x | x')``), runs ``x_{s+1..S}`` forward with ``T`` and ``x_{s-1..1}`` backward
with ``T~``. Then ``exp(log p(x*, y) - log p_hat)`` is unbiased for ``p(y)``, so the estimate is a
stochastic lower bound on ``log p(y)`` and runs combine by log-mean-exp (BDMC paper, footnote 5).

Why it is unbiased: chaining the reversal identity along the path gives
``q(s, x_{1:S}) = pi(x_1) prod_{j>1} T(x_j | x_{j-1}) * T(x* | x_s) / (S pi(x*))``; summed over s this is
``(stationary chain density) * p_hat / pi(x*)``, so ``E_q[1 / p_hat] = 1 / pi(x*) = p(y) / p(x*, y)``.
With ``s`` fixed instead of uniform the factor ``T(x* | x_s)`` does not become ``p_hat`` and the identity fails.

The kernel must provide two hooks: ``log_transition(latent_from, latent_to, data, lam)`` (``log T``) and
``reversed()`` (the kernel of ``T~``, itself with both hooks). Gibbs sweeps over conditionals with an
``assign`` hook (:class:`bdmc.kernels.GibbsSweep`), the collapsed clustering sweep and the collapsed binary
attribute sweep have them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.capabilities import require
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.kernel import ReversibleTransition, evals_per_step
from ..contracts.model import validate_data
from ..core.ais import broadcast_latent, default_kernel, require_exact_latent
from ._timing import check_positive, timed_call


@register_estimator("cms", label="CMS", knob="num_steps", knobs=(10, 100, 1000), bound="lower", needs_exact=True,
                    kernel_requires=(ReversibleTransition,))
def chib_murray_salakhutdinov(key, model, data, *, exact_latent=None, num_steps: int = 100, num_runs: int = 16,
                              kernel=None) -> Estimate:
    """Chib-style estimate of ``log p(y)`` made unbiased in ``p(y)`` by a reverse-operator start.

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its data. ``log p(x*, y)`` is ``log_prior + sum(log_likelihood)`` (for collapsed models
        these are the collapsed terms, and the kernel must act on the same collapsed state).
    exact_latent : pytree
        The state ``x*`` at which Chib's identity is applied: here the latent that generated the simulated
        data (one latent, or one per run with a leading ``num_runs`` axis).
    num_steps : int
        ``S``, the number of chain states (MCMC transitions) per run: the knob.
    num_runs : int
        Independent runs (batched with ``vmap``); combined by log-mean-exp.
    kernel : optional
        Transition operator leaving the posterior invariant, with the ``log_transition`` and ``reversed``
        hooks (the model's own kernel by default).

    Returns
    -------
    Estimate
        ``bound="lower"``. ``details`` holds ``log_joint`` (per run), ``log_p_hat`` (per run) and ``start``
        (the drawn position s, 1-based). ``n_evals`` counts ``S`` transitions and ``S`` transition
        densities per run (each costing the kernel's ``evals_per_step``) plus the joint; the batched runs
        also compute, and discard, the transition in the direction a run is not moving, which the seconds
        include.

    Raises
    ------
    MissingCapabilityError
        If the kernel (or its reverse) lacks :class:`~bdmc.contracts.ReversibleTransition`.
    BDMCError
        If an option is not a positive integer, or exact_latent is missing.
    """
    require_exact_latent(exact_latent, "chib_murray_salakhutdinov")
    check_positive(num_steps=num_steps, num_runs=num_runs)
    data = validate_data(model, data)
    kernel = default_kernel(model) if kernel is None else kernel
    backward = _reverse_of(kernel)
    init = broadcast_latent(model, exact_latent, num_runs)
    one_run = _run_fn(model, data, kernel, backward, int(num_steps))

    out, seconds, compile_seconds = timed_call(jax.jit(jax.vmap(one_run)), jax.random.split(key, num_runs), init)
    runs, log_joint, log_p_hat, start = (np.asarray(o) for o in out)
    evals = evals_per_step(kernel)
    return Estimate.from_runs(
        runs, bound="lower", seconds=seconds, compile_seconds=compile_seconds,
        n_evals=int(num_runs * (2 * num_steps * evals + 1)),
        settings={"method": "chib_murray_salakhutdinov", "num_steps": int(num_steps), "num_runs": int(num_runs),
                  "kernel": type(kernel).__name__},
        seed=seed_of(key), compiled=True,
        details={"log_joint": log_joint, "log_p_hat": log_p_hat, "start": start + 1},
    )


cms = chib_murray_salakhutdinov


def _reverse_of(kernel):
    """The reverse operator of ``kernel``, after checking both carry the hooks CMS needs."""
    require(kernel, ReversibleTransition, purpose="chib_murray_salakhutdinov (its kernel)")
    backward = kernel.reversed()
    require(backward, ReversibleTransition,
            purpose=f"chib_murray_salakhutdinov (the reverse of {type(kernel).__name__})")
    return backward


def _run_fn(model, data, forward, backward, num_steps, *, position=None):
    """One CMS run ``(key, x*) -> (log estimate, log p(x*, y), log p_hat, s)`` as a single ``lax.scan``.

    Step 0 draws ``x_s ~ T~(. | x*)``; steps 1..s walk backward with ``T~``; step s + 1 restarts from
    ``x_s`` and the remaining steps walk forward with ``T``. Every step adds ``T(x* | new state)`` to the
    running log-sum. ``position`` (0-based) fixes s instead of drawing it: only for negative controls.
    """
    one = jnp.ones((), jnp.result_type(float))

    def where(cond, a, b):
        return jax.tree.map(lambda u, v: jnp.where(cond, u, v), a, b)

    def one_run(key, x_star):
        k_s, k_chain = jax.random.split(key)
        s = jax.random.randint(k_s, (), 0, num_steps) if position is None else jnp.asarray(position)

        def body(carry, xs):
            current, anchor, acc = carry
            t, k = xs
            source = where(t == s + 1, anchor, current)
            back, _ = backward(k, source, data, one)
            ahead, _ = forward(k, source, data, one)
            new = where(t <= s, back, ahead)
            anchor = where(t == 0, new, anchor)
            acc = jnp.logaddexp(acc, forward.log_transition(new, x_star, data, one))
            return (new, anchor, acc), None

        init = (x_star, x_star, -jnp.inf * one)
        (_, _, acc), _ = jax.lax.scan(body, init, (jnp.arange(num_steps), jax.random.split(k_chain, num_steps)))
        log_p_hat = acc - jnp.log(num_steps)
        log_joint = model.log_prior(x_star) + jnp.sum(model.log_likelihood(x_star, data))
        return log_joint - log_p_hat, log_joint, log_p_hat, s

    return one_run

