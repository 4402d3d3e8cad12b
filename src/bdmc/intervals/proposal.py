"""Certified runs from a proposal fitted to the posterior draws: importance sampling forward, reciprocal importance
sampling in reverse.

Half of the draws (the first half of every chain) fit a mixture of 1, 4 or 16 Gaussians to the posterior on the
latent space (:mod:`bdmc.intervals.mixture`; one is enough near a Gaussian, more follow a funnel); the other half
(the second halves) are held out. Then, with ``p(x, y)`` the model's joint density:

- **forward**: each run draws ``m`` points from the mixture with Student-t components ``q_f`` (their covariances
  times a factor of 1 to 1.7; heavier tails than the posterior, so the weights have finite variance) and averages
  ``p(x, y) / q_f(x)``: unbiased for ``p(y)``, whatever the fit, and the runs are independent;
- **reverse**: each run averages ``q_r(x) / p(x, y)`` over its own ``m`` held-out draws, ``q_r`` the Gaussian
  mixture (its covariances times a factor of 0.6 to 1: lighter tails keep the ratio bounded):
  ``E[q_r(x) / p(x, y)] = (1/p(y)) * int_{p > 0} q_r <= 1 / p(y)`` for exact posterior draws, so
  ``-log`` of it is an upper run (reciprocal importance sampling, Gelfand and Dey 1994). The held-out draws of
  different runs are disjoint: independent runs given independent exact draws (the assumption the result states).

How many runs each side is split into, the mixtures and their factors are chosen beforehand from what the runs do
not use (:func:`proposal_runs`). A good fit makes both sides tight at the cost of some 70,000 density
evaluations; a poor one only loosens the certificates (:mod:`bdmc.intervals.bounds`), which hold either way. The
model's latent must be continuous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import special, stats

from ..caching import CompiledCache
from ..contracts.model import log_density
from ..errors import OptionError
from .bounds import order_ranks, order_statistic_margin
from .draws import PosteriorDraws
from .mixture import candidate_components, fit_mixture

DEGREES_OF_FREEDOM = 5.0  # the forward proposal's Student-t
FORWARD_BUDGET = 2**16  # density evaluations shared out among the forward runs
PILOT = 2048  # forward proposal draws that choose its mixture, scale and number of runs (then discarded)
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
        The fitted covariances' factor in the forward Student-t mixture and in the reverse Gaussian mixture.
    forward_components, reverse_components : int
        Their numbers of components.
    """

    forward: np.ndarray
    reverse: np.ndarray
    forward_draws: int
    held_out_draws: int
    fitted_on: int
    forward_scale: float = 1.0
    reverse_scale: float = 1.0
    forward_components: int = 1
    reverse_components: int = 1


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
    log_joint = _batched_log_joint(model, data, unravel, fit.shape[1])
    train, valid = _validation_split(fit)
    mixtures = [fit_mixture(train, k) for k in candidate_components(train.shape[0], train.shape[1])]
    k_pilot, k_runs = jax.random.split(key)

    # Forward: the mixture, its scale and the split from a pilot of fresh draws.
    best = None
    for mixture in mixtures:
        for scale in FORWARD_SCALES:
            theta = mixture.sample(k_pilot, PILOT, scale=scale, nu=DEGREES_OF_FREEDOM)
            log_w = log_joint(theta) - mixture.log_pdf(theta, scale=scale,
                                                                                nu=DEGREES_OF_FREEDOM)
            variance = _relative_variance(log_w)
            for n in _choices(num_runs, forward_budget):
                margin = predicted_margin(variance, forward_budget // n, n, level)
                if best is None or margin < best[0]:
                    best = (margin, mixture, scale, n)
    _, forward_mixture, forward_scale, runs = best
    per_run = int(forward_budget) // runs
    theta = forward_mixture.sample(k_runs, runs * per_run, scale=forward_scale, nu=DEGREES_OF_FREEDOM)
    log_w = log_joint(theta) - forward_mixture.log_pdf(theta, scale=forward_scale,
                                                                                 nu=DEGREES_OF_FREEDOM)
    log_w = np.where(np.isnan(log_w), -np.inf, log_w).reshape(runs, per_run)
    forward = special.logsumexp(log_w, axis=1) - math.log(per_run)

    # Reverse: the mixture, its scale and the split from the fitted half's validation rows; the held-out half is
    # used once, by the runs.
    valid_joint = log_joint(valid)
    best = None
    for mixture in mixtures:
        for scale in REVERSE_SCALES:
            variance = _relative_variance(mixture.log_pdf(valid, scale=scale) - valid_joint)
            for n in _choices(reverse_runs, held.shape[0]):
                margin = predicted_margin(variance, held.shape[0] // n, n, level)
                if best is None or margin < best[0]:
                    best = (margin, mixture, scale, n)
    _, reverse_mixture, reverse_scale, reverse_count = best
    held_per_run = held.shape[0] // reverse_count
    if held_per_run < 1:
        raise OptionError(f"{held.shape[0]} held-out draws cannot start {reverse_count} reverse runs")
    theta = held[: held_per_run * reverse_count]
    log_v = reverse_mixture.log_pdf(theta, scale=reverse_scale) - log_joint(theta)
    # A NaN term is dropped: W only falls, so U only rises (the bound stays one).
    log_v = np.where(np.isnan(log_v), -np.inf, log_v).reshape(reverse_count, held_per_run)
    reverse = -(special.logsumexp(log_v, axis=1) - math.log(held_per_run))
    return ProposalRuns(forward=np.asarray(forward, np.float64), reverse=np.asarray(reverse, np.float64),
                        forward_draws=per_run, held_out_draws=held_per_run, fitted_on=int(fit.shape[0]),
                        forward_scale=float(forward_scale), reverse_scale=float(reverse_scale),
                        forward_components=forward_mixture.num_components,
                        reverse_components=reverse_mixture.num_components)


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
    first, second = float(special.logsumexp(log_w)) - size, float(special.logsumexp(2 * log_w)) - size
    return math.expm1(min(second - 2 * first, 700.0))


def _validation_split(fit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) rows of the fitted half: every fifth row validates (all rows train and validate when
    there are too few to spare)."""
    if fit.shape[0] < 10:
        return fit, fit
    rows = np.arange(fit.shape[0])
    return fit[rows % 5 != 4], fit[rows % 5 == 4]


def _halves(draws: PosteriorDraws) -> tuple[np.ndarray, np.ndarray]:
    """(fit, held out): the first and second half of every chain, flattened to rows."""
    flat = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(draws.latents), np.float64)
    chains = draws.num_chains or 1
    length = flat.shape[0] // chains
    parts = flat[: chains * length].reshape(chains, length, -1)
    half = length // 2
    return parts[:, :half].reshape(-1, flat.shape[1]), parts[:, half:].reshape(-1, flat.shape[1])


_PROGRAMS = CompiledCache("proposal stage", maxsize=16)


def _batched_log_joint(model, data, unravel, dim):
    """``theta (rows, NumPy) -> log p(x, y)`` (NumPy): one compiled program for a chunk of fixed size, run over the
    rows chunk by chunk (the last one padded), so every count of rows reuses it and memory stays bounded. Cached per
    (model, latent layout, data shapes) when the model is hashable: another call on the same model does not
    compile again."""
    values = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(data))
    chunk = int(min(8192, max(64, BATCH_VALUES // max(values, 1))))
    latent = jax.eval_shape(unravel, jax.ShapeDtypeStruct((int(dim),), jnp.result_type(float)))
    layout = (jax.tree.structure(latent), tuple((leaf.shape, str(leaf.dtype)) for leaf in jax.tree.leaves(latent)))
    leaves, treedef = jax.tree.flatten(data)
    shapes = (treedef, tuple((np.shape(x), str(jnp.result_type(x))) for x in leaves))

    def build():
        return jax.jit(jax.vmap(lambda t, d: log_density(model, unravel(t), d, 1.0), in_axes=(0, None)))

    try:
        compiled, _ = _PROGRAMS.get_or_build((model, layout, shapes, chunk), build)
    except TypeError:  # an unhashable model: compiled for this call only
        compiled = build()

    def log_joint(theta):
        theta = np.asarray(theta, np.float64)
        out = np.empty(theta.shape[0])
        for start in range(0, theta.shape[0], chunk):
            part = theta[start:start + chunk]
            padded = np.concatenate([part, np.repeat(part[-1:], chunk - part.shape[0], axis=0)])
            out[start:start + part.shape[0]] = np.asarray(compiled(jnp.asarray(padded), data))[: part.shape[0]]
        return out

    return log_joint
