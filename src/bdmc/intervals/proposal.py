"""Certified runs from a proposal fitted to the posterior draws: importance sampling forward, reciprocal importance
sampling in reverse.

Half of the draws (the first half of every chain) fit a Gaussian to the posterior on the latent space; the other
half (the second halves) are held out. Then, with ``p(x, y)`` the model's joint density:

- **forward**: each run draws ``m`` points from a multivariate Student-t ``q_f`` with that mean and covariance
  (times a factor of 1 to 1.7; heavier tails than the posterior, so the weights have finite variance) and averages
  ``p(x, y) / q_f(x)``: unbiased for ``p(y)``, whatever the fit, and the runs are independent;
- **reverse**: each run averages ``q_r(x) / p(x, y)`` over its own ``m`` held-out draws, ``q_r`` the fitted
  Gaussian (its covariance times a factor of 0.6 to 1: lighter tails keep the ratio bounded):
  ``E[q_r(x) / p(x, y)] = (1/p(y)) * int_{p > 0} q_r <= 1 / p(y)`` for exact posterior draws, so
  ``-log`` of it is an upper run (reciprocal importance sampling, Gelfand and Dey 1994). The held-out draws of
  different runs are disjoint: independent runs given independent exact draws (the assumption the result states).

How many runs each side is split into, and the two factors, are chosen beforehand from what the runs do not use
(:func:`proposal_runs`). A good fit makes both sides tight at the cost of some 70,000 density evaluations; a poor
one only loosens the certificates (:mod:`bdmc.intervals.bounds`), which hold either way. The model's latent must
be continuous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.special import logsumexp
from scipy import stats

from ..contracts.model import log_density
from ..errors import OptionError
from .bounds import order_ranks, order_statistic_margin
from .draws import PosteriorDraws

DEGREES_OF_FREEDOM = 5.0  # the forward proposal's Student-t
JITTER = 1e-9  # relative, on the fitted covariance's diagonal
FORWARD_BUDGET = 2**16  # density evaluations shared out among the forward runs
PILOT = 2048  # forward proposal draws that choose its scale and the number of runs (then discarded)
RUN_COUNTS = (16, 32, 64, 128, 256, 512, 1024)  # the numbers of runs a side may be split into
FORWARD_SCALES = (1.0, 1.3, 1.7)  # the t's covariance, times the fitted one: wider tails where the fit is narrow
REVERSE_SCALES = (1.0, 0.8, 0.6)  # the reverse Gaussian's: narrower, so q / p stays bounded in the tails
BATCH_VALUES = 2**26  # density evaluations per batch times data values: the memory of one batch


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
    forward_scale, reverse_scale : float
        The fitted covariance's factor in the forward Student-t and in the reverse Gaussian.
    """

    forward: np.ndarray
    reverse: np.ndarray
    forward_draws: int
    held_out_draws: int
    fitted_on: int
    forward_scale: float = 1.0
    reverse_scale: float = 1.0


def continuous(latents) -> bool:
    """Whether every leaf of the latent is floating point (a proposal on the latent space needs it)."""
    return all(jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating) for leaf in jax.tree.leaves(latents))


def proposal_runs(key, model, data, draws: PosteriorDraws, *, level: float = 0.0025,
                  forward_budget: int = FORWARD_BUDGET, num_runs: int | None = None,
                  reverse_runs: int | None = None) -> ProposalRuns:
    """Forward and reverse runs from a Gaussian fitted to half of ``draws``, their sizes chosen for a narrow bound.

    How to split a side's draws into runs is a trade: more runs shrink the certificates' slack (``log(1/a)/n`` for
    the extreme run), fewer and larger runs shrink their spread. Unless fixed by the caller, each side's split and
    its proposal's scale are chosen to minimize the predicted certified bound (:func:`predicted_margin`) from the
    weights' relative variance measured where the runs cannot see it: forward, on a pilot of fresh proposal draws
    that is then discarded; reverse, on the fitted half of the draws (the held-out half is used once, by the runs).
    The choice depends on nothing the runs use, so the certificates keep their level.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model and the observed data.
    draws : PosteriorDraws
        The posterior draws (:func:`bdmc.intervals.draws.posterior_draws`); continuous latents only.
    level : float
        The level each side's certified bound will be computed at (it only steers the choice of splits).
    forward_budget : int
        Proposal draws of all forward runs together.
    num_runs, reverse_runs : int, optional
        Fix the number of forward / reverse runs (the held-out draws shared out among the reverse runs, at least
        one each); None: chosen as above.

    Returns
    -------
    ProposalRuns

    Raises
    ------
    bdmc.errors.OptionError
        Too few draws for the reverse runs, or a latent that is not continuous.
    """
    if not continuous(draws.latents):
        raise OptionError("a proposal on the latent space needs a continuous latent; this model's has integer leaves")
    fit, held = _halves(draws)
    _, unravel = ravel_pytree(jax.tree.map(lambda x: x[0], draws.latents))
    log_joint = _batched_log_joint(model, data, unravel)
    mean = fit.mean(axis=0)
    cov = np.atleast_2d(np.cov(fit, rowvar=False)) if fit.shape[0] > 1 else np.eye(fit.shape[1])
    cov = cov + JITTER * np.diag(np.maximum(np.diag(cov), 1e-300)) + 1e-300 * np.eye(cov.shape[0])
    k_pilot, k_runs = jax.random.split(key)

    # Forward: the scale and the split from a pilot of fresh draws.
    best = None
    for scale in FORWARD_SCALES:
        log_w = _student_t_weights(k_pilot, log_joint, mean, cov * scale, PILOT)
        for n in _choices(num_runs, forward_budget):
            margin = predicted_margin(_relative_variance(log_w), forward_budget // n, n, level)
            if best is None or margin < best[0]:
                best = (margin, scale, n)
    _, forward_scale, runs = best
    per_run = int(forward_budget) // runs
    log_w = _student_t_weights(k_runs, log_joint, mean, cov * forward_scale, runs * per_run).reshape(runs, per_run)
    forward = logsumexp(log_w, axis=1) - jnp.log(per_run)

    # Reverse: the scale and the split from the fitted half, the held-out half used once.
    fit_joint = log_joint(jnp.asarray(fit))
    best = None
    for scale in REVERSE_SCALES:
        log_v = _gaussian_log_pdf(jnp.asarray(fit), mean, np.linalg.cholesky(cov * scale)) - fit_joint
        for n in _choices(reverse_runs, held.shape[0]):
            margin = predicted_margin(_relative_variance(log_v), held.shape[0] // n, n, level)
            if best is None or margin < best[0]:
                best = (margin, scale, n)
    _, reverse_scale, reverse_count = best
    held_per_run = held.shape[0] // reverse_count
    if held_per_run < 1:
        raise OptionError(f"{held.shape[0]} held-out draws cannot start {reverse_count} reverse runs")
    theta = jnp.asarray(held[: held_per_run * reverse_count])
    log_v = _gaussian_log_pdf(theta, mean, np.linalg.cholesky(cov * reverse_scale)) - log_joint(theta)
    # A NaN term is dropped: W only falls, so U only rises (the bound stays one).
    log_v = jnp.where(jnp.isnan(log_v), -jnp.inf, log_v).reshape(reverse_count, held_per_run)
    reverse = -(logsumexp(log_v, axis=1) - jnp.log(held_per_run))
    return ProposalRuns(forward=np.asarray(forward, np.float64), reverse=np.asarray(reverse, np.float64),
                        forward_draws=per_run, held_out_draws=held_per_run, fitted_on=int(fit.shape[0]),
                        forward_scale=float(forward_scale), reverse_scale=float(reverse_scale))


def predicted_margin(relative_variance: float, per_run: int, num_runs: int, level: float) -> float:
    """The predicted distance from ``log p(y)`` to the certified bound of ``num_runs`` runs of ``per_run`` draws.

    A run's log estimate is taken as normal with variance ``log(1 + v / m)`` (``v`` the weights' relative
    variance, ``m`` the draws per run); each order-statistic rule of :mod:`bdmc.intervals.bounds` then sits at
    its expected order statistic (Blom's approximation) plus its margin; the best rule is predicted.
    """
    n = int(num_runs)
    sd = math.sqrt(math.log1p(max(relative_variance, 0.0) / max(int(per_run), 1)))
    ranks = order_ranks(n)
    share = level / (len(ranks) + 1)
    return min(sd * float(stats.norm.ppf((n - k + 0.625) / (n + 0.25))) + order_statistic_margin(n, k, share)
               for k in ranks)


def _choices(fixed, total):
    if fixed is not None:
        return (int(fixed),)
    return tuple(n for n in RUN_COUNTS if n <= total) or (1,)


def _relative_variance(log_w) -> float:
    """``E[w^2] / E[w]^2 - 1`` of the weights from their logs; +inf when none is finite."""
    log_w = np.asarray(log_w, np.float64)
    log_w = log_w[np.isfinite(log_w)] if np.isfinite(log_w).any() else log_w
    if not np.isfinite(log_w).any():
        return math.inf
    size = math.log(log_w.size)
    first, second = float(logsumexp(log_w)) - size, float(logsumexp(2 * log_w)) - size
    return math.expm1(min(second - 2 * first, 700.0))


def _student_t_weights(key, log_joint, mean, cov, count):
    """``log p(x, y) - log q(x)`` at ``count`` draws of the Student-t with this mean and covariance."""
    nu = DEGREES_OF_FREEDOM
    scale = np.linalg.cholesky(cov * (nu - 2.0) / nu)  # the t's covariance equals ``cov``
    k_z, k_g = jax.random.split(key)
    z = jax.random.normal(k_z, (count, mean.shape[0]))
    g = jax.random.gamma(k_g, nu / 2.0, (count,)) / (nu / 2.0)
    theta = mean + (z @ scale.T) / jnp.sqrt(g)[:, None]
    log_w = log_joint(theta) - _student_t_log_pdf(theta, mean, scale, nu)
    return jnp.where(jnp.isnan(log_w), -jnp.inf, log_w)


def _halves(draws: PosteriorDraws) -> tuple[np.ndarray, np.ndarray]:
    """(fit, held out): the first and second half of every chain, flattened to rows."""
    flat = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(draws.latents), np.float64)
    chains = draws.num_chains or 1
    length = flat.shape[0] // chains
    parts = flat[: chains * length].reshape(chains, length, -1)
    half = length // 2
    return parts[:, :half].reshape(-1, flat.shape[1]), parts[:, half:].reshape(-1, flat.shape[1])


def _batched_log_joint(model, data, unravel):
    """``theta (rows) -> log p(x, y)``, compiled once, in batches whose memory stays bounded by the data's size."""
    values = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(data))
    batch = int(min(8192, max(64, BATCH_VALUES // max(values, 1))))
    one = jax.jit(lambda theta: jax.lax.map(lambda t: log_density(model, unravel(t), data, 1.0), theta,
                                            batch_size=batch))
    return one


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
