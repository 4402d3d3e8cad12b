"""The BREAD paper's toy targets on a 7 x 7 grid (Appendix B.1.1) and their Metropolis-Hastings kernel.

States are numbered row-major, ``s = row * size + col``, row 0 at the top. The initial distribution is
uniform over the grid and the path is geometric with a linear schedule, ``betas = linspace(0, 1, T)``
(``T`` distributions, prior and target included; see :mod:`bdmc.exact.jeffreys`). The kernel proposes one
of the four neighbours uniformly; a proposal off the grid is rejected (the chain stays put).

:func:`simulate_bread` runs forward and reverse AIS chains with that kernel by direct simulation (propose,
accept), independently of the transition matrices used for the exact answer, so the two can be compared.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..errors import OptionError
from .jeffreys import JeffreysResult, exact_jeffreys

GRID_SIZE = 7
EASY_SIGMA = 2.0
HARD_SIGMA = 10.0
BARRIER_MODE, BARRIER_FLAT, BARRIER_WALL = 3.0, 0.0, -10.0  # log f in Eq. (24)


def random_toy(rng: np.random.Generator, *, sigma: float, size: int = GRID_SIZE) -> np.ndarray:
    """Random target ``log f(x) ~ N(0, sigma^2)`` i.i.d. over the grid, shape (size * size,).

    ``sigma = 2`` is the paper's EASY RANDOM and ``sigma = 10`` its HARD RANDOM.
    """
    return sigma * rng.standard_normal(size * size)


def easy_random(rng: np.random.Generator, *, size: int = GRID_SIZE) -> np.ndarray:
    """EASY RANDOM: i.i.d. ``N(0, 2^2)`` log-probabilities."""
    return random_toy(rng, sigma=EASY_SIGMA, size=size)


def hard_random(rng: np.random.Generator, *, size: int = GRID_SIZE) -> np.ndarray:
    """HARD RANDOM: i.i.d. ``N(0, 10^2)`` log-probabilities."""
    return random_toy(rng, sigma=HARD_SIGMA, size=size)


def barrier(*, size: int = GRID_SIZE) -> np.ndarray:
    """BARRIER (Eq. 24): four 3 x 3 modes split by a wall along the middle row and column.

    ``log f = 3`` in the upper-right quadrant, ``0`` in the other three and ``-10`` on the wall; the
    dominant mode holds ``9 e^3 / (9 e^3 + 27 + 13 e^-10) = 0.870`` of the mass.
    """
    if size % 2 != 1:
        raise OptionError(f"BARRIER needs an odd grid size (a middle row and column), got {size}")
    mid = size // 2
    row, col = np.divmod(np.arange(size * size), size)
    logf = np.full(size * size, BARRIER_FLAT)
    logf[(row < mid) & (col > mid)] = BARRIER_MODE
    logf[(row == mid) | (col == mid)] = BARRIER_WALL
    return logf


def grid_neighbors(size: int = GRID_SIZE) -> np.ndarray:
    """Neighbour of each state in the directions up, down, left, right; ``-1`` off the grid. Shape (S, 4)."""
    row, col = np.divmod(np.arange(size * size), size)
    out = np.full((size * size, 4), -1)
    for d, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
        r, c = row + dr, col + dc
        inside = (r >= 0) & (r < size) & (c >= 0) & (c < size)
        out[inside, d] = r[inside] * size + c[inside]
    return out


def linear_betas(num_distributions: int) -> np.ndarray:
    """Linear schedule over ``num_distributions`` distributions, prior (0) and target (1) included."""
    if num_distributions < 2:
        raise OptionError(f"need at least 2 distributions (prior and target), got {num_distributions}")
    return np.linspace(0.0, 1.0, num_distributions)


def path_log_densities(log_target, betas) -> np.ndarray:
    """Unnormalized ``log f_beta = beta log f`` for the uniform prior, shape (len(betas), S)."""
    betas = np.asarray(betas, dtype=float)
    with np.errstate(invalid="ignore"):
        logf = betas[:, None] * np.asarray(log_target, dtype=float)[None, :]
    return np.where(np.isnan(logf), 0.0, logf)  # 0 * -inf: at beta = 0 every state has the prior's mass


def mh_transition_matrices(log_target, betas, *, size: int = GRID_SIZE) -> np.ndarray:
    """Metropolis-Hastings transition matrices of the grid kernel, one per beta, shape (n, S, S).

    ``K[i, j] = min(1, f_beta(j) / f_beta(i)) / 4`` for a neighbour ``j``; the rest of the row stays at ``i``.
    Each matrix is in detailed balance with ``f_beta = f^beta`` (uniform prior).
    """
    logf = path_log_densities(log_target, np.atleast_1d(betas))
    n, s = logf.shape
    nb = grid_neighbors(size)
    if nb.shape[0] != s:
        raise OptionError(f"log_target has {s} states; a {size} x {size} grid has {nb.shape[0]}")
    kernels = np.zeros((n, s, s))
    for d in range(4):
        src = np.flatnonzero(nb[:, d] >= 0)
        dst = nb[src, d]
        kernels[:, src, dst] = 0.25 * _accept_prob(logf[:, dst] - logf[:, src])
    idx = np.arange(s)
    kernels[:, idx, idx] = 1.0 - kernels.sum(axis=2)
    return kernels


def toy_jeffreys(log_target, num_distributions: int, *, size: int = GRID_SIZE) -> JeffreysResult:
    """Exact ``J`` and ``B`` of AIS on a grid toy: uniform prior, linear schedule, grid MH kernel.

    Parameters
    ----------
    log_target : array_like, shape (size * size,)
        Unnormalized log target, e.g. from :func:`barrier` or :func:`random_toy`.
    num_distributions : int
        ``T``, the number of distributions including the prior and the target (the paper's "number of
        intermediate distributions"); ``T - 1`` MH moves are made.
    size : int, keyword-only
        Grid side.

    Returns
    -------
    bdmc.exact.jeffreys.JeffreysResult
    """
    s = size * size
    return exact_jeffreys(
        log_target,
        np.full(s, 1.0 / s),
        linear_betas(num_distributions),
        lambda b: mh_transition_matrices(log_target, b, size=size),
    )


class BreadSamples(NamedTuple):
    """Per-pair output of simulated forward and reverse AIS (one forward and one reverse chain per pair).

    Attributes
    ----------
    log_w_forward : numpy.ndarray
        Forward-AIS log-weights, a stochastic lower bound on ``log Z``.
    log_w_reverse : numpy.ndarray
        Reverse-AIS log-weights (sign chosen so they are a stochastic upper bound on ``log Z``).
    final_states : numpy.ndarray
        The forward chains' output states (draws from ``q``).
    """

    log_w_forward: np.ndarray
    log_w_reverse: np.ndarray
    final_states: np.ndarray

    @property
    def b_hat(self) -> np.ndarray:
        """BREAD estimates ``log w_rev - log w_fwd``, one per pair; their mean estimates ``B``."""
        return self.log_w_reverse - self.log_w_forward


def simulate_bread(
    rng: np.random.Generator, log_target, num_distributions: int, *, num_pairs: int, size: int = GRID_SIZE
) -> BreadSamples:
    """Simulate ``num_pairs`` forward and reverse AIS chains on a grid toy (conventions as :func:`toy_jeffreys`).

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness (the caller owns the seed).
    log_target : array_like, shape (size * size,)
        Unnormalized log target.
    num_distributions : int
        ``T``, distributions including prior and target.
    num_pairs : int, keyword-only
        Number of forward and of reverse chains.
    size : int, keyword-only
        Grid side.

    Returns
    -------
    BreadSamples
    """
    log_target = np.asarray(log_target, dtype=float)
    betas = linear_betas(num_distributions)
    logf = path_log_densities(log_target, betas)
    loglik = log_target + np.log(log_target.size)  # log f - log p_1 for the uniform prior
    nb = grid_neighbors(size)
    dbeta = np.diff(betas)

    x = rng.integers(log_target.size, size=num_pairs)
    log_w_fwd = np.zeros(num_pairs)
    for k in range(1, betas.size):
        log_w_fwd += dbeta[k - 1] * loglik[x]
        x = _mh_step(rng, x, logf[k], nb)
    final = x

    p = np.exp(log_target - logsumexp(log_target))
    x = rng.choice(log_target.size, size=num_pairs, p=p / p.sum())
    log_w_rev = np.zeros(num_pairs)
    for k in range(betas.size - 1, 0, -1):
        x = _mh_step(rng, x, logf[k], nb)
        log_w_rev += dbeta[k - 1] * loglik[x]
    return BreadSamples(log_w_fwd, log_w_rev, final)


def _mh_step(rng, x, logf, nb) -> np.ndarray:
    """One grid MH move for every chain: propose a neighbour uniformly, reject off-grid proposals."""
    y = nb[x, rng.integers(4, size=x.size)]
    inside = y >= 0
    y_safe = np.where(inside, y, x)
    with np.errstate(invalid="ignore"):
        log_ratio = logf[y_safe] - logf[x]
    accept = inside & (np.log(rng.random(x.size)) < log_ratio)
    return np.where(accept, y_safe, x)


def _accept_prob(log_ratio) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        prob = np.minimum(1.0, np.exp(log_ratio))
    return np.where(np.isnan(prob), 1.0, prob)  # -inf to -inf: a zero-mass state, never occupied
