"""Certified runs from a proposal fitted to the posterior draws: importance sampling forward, reciprocal importance
sampling in reverse.

Half of the draws (the first half of every chain) fit a Gaussian to the posterior on the latent space; the other
half (the second halves) are held out. Then, with ``p(x, y)`` the model's joint density:

- **forward**: each run draws ``m`` points from a multivariate Student-t ``q_f`` with that mean and covariance
  (heavier tails than the posterior, so the weights have finite variance where it matters) and averages
  ``p(x, y) / q_f(x)``: unbiased for ``p(y)``, whatever the fit, and the runs are independent;
- **reverse**: each run averages ``q_r(x) / p(x, y)`` over its own ``m`` held-out draws, ``q_r`` the fitted
  Gaussian: ``E[q_r(x) / p(x, y)] = (1/p(y)) * int_{p > 0} q_r <= 1 / p(y)`` for exact posterior draws, so
  ``-log`` of it is an upper run (reciprocal importance sampling, Gelfand and Dey 1994). The held-out draws of
  different runs are disjoint: independent runs given independent exact draws (the assumption the result states).

A good fit makes both sides tight at the cost of a few thousand density evaluations; a poor one only loosens the
certificates (:mod:`bdmc.intervals.bounds`), which hold either way. The model's latent must be continuous.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.special import logsumexp

from ..contracts.model import log_density
from ..errors import OptionError
from .draws import PosteriorDraws

DEGREES_OF_FREEDOM = 5.0  # the forward proposal's Student-t
JITTER = 1e-9  # relative, on the fitted covariance's diagonal


@dataclass(frozen=True)
class ProposalRuns:
    """The per-run log estimates of both directions, and what made them.

    Attributes
    ----------
    forward : ndarray
        ``log Z_i`` of each forward (importance sampling) run.
    reverse : ndarray
        ``log U_i = -log W_i`` of each reverse (reciprocal importance sampling) run.
    forward_draws : int
        Proposal draws per forward run.
    held_out_draws : int
        Held-out posterior draws per reverse run.
    fitted_on : int
        Posterior draws the Gaussian was fitted to.
    """

    forward: np.ndarray
    reverse: np.ndarray
    forward_draws: int
    held_out_draws: int
    fitted_on: int


def continuous(latents) -> bool:
    """Whether every leaf of the latent is floating point (a proposal on the latent space needs it)."""
    return all(jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating) for leaf in jax.tree.leaves(latents))


def proposal_runs(key, model, data, draws: PosteriorDraws, *, num_runs: int, forward_draws: int = 256,
                  reverse_runs: int | None = None) -> ProposalRuns:
    """``num_runs`` forward and ``reverse_runs`` reverse runs from a Gaussian fitted to half of ``draws``.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model and the observed data.
    draws : PosteriorDraws
        The posterior draws (:func:`bdmc.intervals.draws.posterior_draws`); continuous latents only.
    num_runs : int
        Forward runs.
    forward_draws : int
        Proposal draws per forward run.
    reverse_runs : int, optional
        Reverse runs, the held-out draws shared out among them (at least one each); None: ``num_runs``.

    Returns
    -------
    ProposalRuns

    Raises
    ------
    bdmc.errors.OptionError
        Too few draws for ``num_runs`` reverse runs, or a latent that is not continuous.
    """
    if not continuous(draws.latents):
        raise OptionError("a proposal on the latent space needs a continuous latent; this model's has integer leaves")
    fit, held = _halves(draws)
    reverse_runs = int(num_runs if reverse_runs is None else reverse_runs)
    per_run = held.shape[0] // reverse_runs
    if per_run < 1:
        raise OptionError(f"{held.shape[0]} held-out draws cannot start {reverse_runs} reverse runs")
    _, unravel = ravel_pytree(jax.tree.map(lambda x: x[0], draws.latents))
    mean = fit.mean(axis=0)
    cov = np.atleast_2d(np.cov(fit, rowvar=False)) if fit.shape[0] > 1 else np.eye(fit.shape[1])
    cov = cov + JITTER * np.diag(np.maximum(np.diag(cov), 1e-300)) + 1e-300 * np.eye(cov.shape[0])
    forward = _forward(key, model, data, unravel, mean, cov, num_runs=int(num_runs), per_run=int(forward_draws))
    reverse = _reverse(model, data, unravel, mean, cov, held[: per_run * reverse_runs].reshape(reverse_runs, per_run,
                                                                                                -1))
    return ProposalRuns(forward=np.asarray(forward, np.float64), reverse=np.asarray(reverse, np.float64),
                        forward_draws=int(forward_draws), held_out_draws=per_run, fitted_on=int(fit.shape[0]))


def _halves(draws: PosteriorDraws) -> tuple[np.ndarray, np.ndarray]:
    """(fit, held out): the first and second half of every chain, flattened to rows."""
    flat = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(draws.latents), np.float64)
    chains = draws.num_chains or 1
    length = flat.shape[0] // chains
    parts = flat[: chains * length].reshape(chains, length, -1)
    half = length // 2
    return parts[:, :half].reshape(-1, flat.shape[1]), parts[:, half:].reshape(-1, flat.shape[1])


def _log_joint(model, data, unravel):
    return jax.vmap(lambda theta: log_density(model, unravel(theta), data, 1.0))


def _forward(key, model, data, unravel, mean, cov, *, num_runs, per_run):
    dim = mean.shape[0]
    nu = DEGREES_OF_FREEDOM
    scale = np.linalg.cholesky(cov * (nu - 2.0) / nu)  # the t's covariance equals the fitted one
    k_z, k_g = jax.random.split(key)
    z = jax.random.normal(k_z, (num_runs * per_run, dim))
    g = jax.random.gamma(k_g, nu / 2.0, (num_runs * per_run,)) / (nu / 2.0)
    theta = mean + (z @ scale.T) / jnp.sqrt(g)[:, None]
    log_q = _student_t_log_pdf(theta, mean, scale, nu)
    log_w = jax.jit(_log_joint(model, data, unravel))(theta) - log_q
    log_w = jnp.where(jnp.isnan(log_w), -jnp.inf, log_w).reshape(num_runs, per_run)
    return logsumexp(log_w, axis=1) - jnp.log(per_run)


def _reverse(model, data, unravel, mean, cov, held):
    runs, per_run, dim = held.shape
    scale = np.linalg.cholesky(cov)
    theta = jnp.asarray(held.reshape(-1, dim))
    log_q = _gaussian_log_pdf(theta, mean, scale)
    log_v = (log_q - jax.jit(_log_joint(model, data, unravel))(theta)).reshape(runs, per_run)
    return -(logsumexp(log_v, axis=1) - jnp.log(per_run))


def _gaussian_log_pdf(x, mean, scale):
    dim = mean.shape[0]
    white = jax.scipy.linalg.solve_triangular(scale, (x - mean).T, lower=True).T
    return (-0.5 * jnp.sum(white**2, axis=1) - jnp.sum(jnp.log(jnp.diag(scale))) - 0.5 * dim * jnp.log(2 * jnp.pi))


def _student_t_log_pdf(x, mean, scale, nu):
    dim = mean.shape[0]
    white = jax.scipy.linalg.solve_triangular(scale, (x - mean).T, lower=True).T
    quad = jnp.sum(white**2, axis=1)
    return (jax.scipy.special.gammaln((nu + dim) / 2) - jax.scipy.special.gammaln(nu / 2)
            - 0.5 * dim * jnp.log(nu * jnp.pi) - jnp.sum(jnp.log(jnp.diag(scale)))
            - 0.5 * (nu + dim) * jnp.log1p(quad / nu))
