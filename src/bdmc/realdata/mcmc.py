"""Posterior MCMC for the real-data protocol: NUTS fits, and chains stopped after S steps.

Both run BlackJAX's NUTS on ``log f(x; 1)``, the posterior of any bdmc model, as one compiled scan. The fit
adapts a step size and a diagonal mass matrix (Stan's window adaptation); the protocol reuses them for the
approximate posterior samples and for the AIS kernel.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..contracts.model import log_density
from ..errors import BDMCError


@dataclass(frozen=True)
class PosteriorFit:
    """Adapted NUTS and the posterior medians of the hyperparameters.

    Attributes
    ----------
    hyperparameters : dict
        Posterior median of each named hyperparameter on its natural (constrained) space.
    step_size : float
    inverse_mass : np.ndarray
        Diagonal inverse mass matrix over the flattened latent.
    acceptance : float
        Mean acceptance probability of the sampling phase.
    seconds : float
    """

    hyperparameters: dict
    step_size: float
    inverse_mass: np.ndarray
    acceptance: float
    seconds: float


def fit_hyperparameters(key, model, data, *, hyperparameters: Sequence[str], num_warmup: int = 500,
                        num_samples: int = 500) -> PosteriorFit:
    """Fit hyperparameters by approximate posterior inference on (real) data.

    Runs NUTS with window adaptation from a prior draw and reports each hyperparameter's posterior median.
    Medians are taken elementwise on the unconstrained latent and then constrained: for the scalar, monotone
    transforms of hyperparameters this is exactly the median on the natural scale.

    Parameters
    ----------
    key : PRNG key
    model, data
        A bdmc model and its data.
    hyperparameters : sequence of str
        Names (as ``model.constrain`` reports them) of the sites to fit.
    num_warmup, num_samples : int
        Adaptation steps, then sampling steps.

    Returns
    -------
    PosteriorFit
    """
    key_init, key_warm, key_sample = jax.random.split(key, 3)
    start = time.perf_counter()
    position = model.sample_prior(key_init)
    names = set(model.constrain(position))
    unknown = sorted(set(hyperparameters) - names)
    if unknown:
        raise BDMCError(f"hyperparameter(s) {unknown} are not latents of {model!r}; it has {sorted(names)}")
    logdensity = _posterior(model, data)
    adaptation = blackjax.window_adaptation(blackjax.nuts, logdensity, target_acceptance_rate=0.8)
    (state, params), _ = adaptation.run(key_warm, position, num_steps=int(num_warmup))
    sampler = blackjax.nuts(logdensity, **params)

    @jax.jit
    def sample(key, state):
        def one(state, k):
            state, info = sampler.step(k, state)
            return state, (state.position, info.acceptance_rate)

        return jax.lax.scan(one, state, jax.random.split(key, int(num_samples)))

    _, (positions, acceptance) = sample(key_sample, state)
    median = jax.tree.map(lambda x: jnp.median(x, axis=0), positions)
    constrained = model.constrain(median)
    return PosteriorFit(
        hyperparameters={n: np.asarray(constrained[n]) for n in hyperparameters},
        step_size=float(params["step_size"]),
        inverse_mass=np.asarray(params["inverse_mass_matrix"], dtype=np.float64),
        acceptance=float(np.mean(acceptance)),
        seconds=time.perf_counter() - start,
    )


def posterior_checkpoints(key, model, data, start, *, checkpoints: Sequence[int], step_size: float,
                          inverse_mass) -> dict[int, Any]:
    """States of one NUTS chain on ``p(latent | data)`` after each number of steps in ``checkpoints``.

    One compiled scan runs ``max(checkpoints)`` steps from ``start`` and keeps the state after each
    checkpoint: the approximate posterior samples ``(eta*, theta*)`` of the BREAD paper, Sec. 3.2.
    """
    checkpoints = sorted({int(s) for s in checkpoints})
    if not checkpoints or checkpoints[0] < 0:
        raise BDMCError(f"checkpoints must be non-negative step counts, got {checkpoints}")
    sampler = blackjax.nuts(_posterior(model, data), step_size=float(step_size),
                            inverse_mass_matrix=jnp.asarray(inverse_mass))
    marks = jnp.asarray(checkpoints)
    flat0, unravel = ravel_pytree(start)

    @jax.jit
    def run(key, flat0):
        state = sampler.init(unravel(flat0))
        saved = jnp.where((marks == 0)[:, None], flat0, jnp.zeros((marks.shape[0], flat0.shape[0]), flat0.dtype))

        def one(carry, step_key):
            state, saved, t = carry
            state, _ = sampler.step(step_key, state)
            flat, _ = ravel_pytree(state.position)
            saved = jnp.where((marks == t + 1)[:, None], flat, saved)
            return (state, saved, t + 1), None

        (_, saved, _), _ = jax.lax.scan(one, (state, saved, 0), jax.random.split(key, checkpoints[-1]))
        return saved

    saved = run(key, flat0)
    return {s: unravel(saved[i]) for i, s in enumerate(checkpoints)}


def _posterior(model, data):
    return lambda x: log_density(model, x, data, 1.0)
