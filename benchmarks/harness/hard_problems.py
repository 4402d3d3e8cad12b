"""Hard targets with known log Z, written as the peers' problems (:class:`harness.problems.Problem`), each with a
sampler of exact draws from its posterior (so bdmc's reverse run, and its sandwich, have a start).

* ``eggbox`` (Feroz et al. 2009): ``L(x, y) = exp((2 + cos(x/2) cos(y/2))^5)`` under a uniform prior on
  ``[0, 10 pi]^2``; 18 equal modes. The latent is ``u = logit(x / 10 pi)`` (unconstrained; a logistic prior is
  the uniform one), the nested samplers' parameters are ``(x, y)``. ``log Z = 235.856`` (by quadrature here too).
  Exact draws: the posterior tabulated on a 4,001 x 4,001 grid, a cell drawn by its mass and a point uniformly in
  it (exact to the grid's resolution, 0.008 in x against modes about 0.3 wide).
* ``manywell``: 16 copies of the double well ``E(a, b) = a^4 - 6 a^2 - 0.5 a + 0.5 b^2`` in 32 dimensions, target
  ``exp(-E)`` (``2^16`` modes, the two wells of each copy unequal); the prior is ``N(0, 2^2 I)`` and the
  likelihood ``exp(-E) / prior``, so ``log Z = 16 (log Z_1 + log sqrt(2 pi))`` with ``Z_1`` the integral of
  ``exp(-(a^4 - 6 a^2 - 0.5 a))`` by quadrature. Exact draws: ``a`` by the inverse of its distribution function
  tabulated on 200,001 points of ``[-6, 6]``, ``b ~ N(0, 1)``.
* ``phase``: the first-order phase transition of BlackJAX's nested-sampling example (the sampling book's
  "A Phase Transition"): a uniform prior on ``[-5, 5]^10`` and ``L(x) = exp(-|x|^2 / 2) + 9e10 exp(-|x|^2 / 0.02)``,
  a broad background and a spike 10^10 times smaller in volume that holds 90% of Z. Tempering's path jumps from
  the one to the other at a critical temperature. The latent is ``u = logit((x + 5) / 10)`` per coordinate.
  ``log Z = log(sum_k h_k (sigma_k sqrt(2 pi) erf(5 / (sigma_k sqrt 2)))^10) - 10 log 10`` in closed form
  (the box cuts each Gaussian). Exact draws: a component by its share of Z, then each coordinate from its
  normal truncated to the box.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special, stats

from bdmc.errors import MissingCapabilityError
from harness.problems import LOG_2PI, Problem

EGGBOX_SIDE = 10 * math.pi
WELL_COPIES, WELL_PRIOR_SD = 16, 2.0


def _no_pymc(*_):
    raise MissingCapabilityError("the hard targets have no PyMC twin", missing=("pymc_model",))


# ---------------------------------------------------------------------------------------------- eggbox
def eggbox_log_lik_xy(x, y):
    return (2.0 + jnp.cos(x / 2) * jnp.cos(y / 2)) ** 5


def eggbox_problem() -> Problem:
    grid = np.linspace(0.0, EGGBOX_SIDE, 4001)
    X, Y = np.meshgrid(grid, grid, indexing="ij")
    f = (2.0 + np.cos(X / 2) * np.cos(Y / 2)) ** 5
    top = f.max()
    inner = integrate.simpson(integrate.simpson(np.exp(f - top), x=grid, axis=1), x=grid)
    exact = float(top + math.log(inner) - 2 * math.log(EGGBOX_SIDE))

    def log_prior(u):  # the logistic density: u = logit(x / side) with x uniform
        return jnp.sum(jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u))

    def log_lik(u, data):
        x = EGGBOX_SIDE * jax.nn.sigmoid(u)
        return jnp.reshape(eggbox_log_lik_xy(x[0], x[1]), (1,))

    def sample_prior(key):
        return jax.random.logistic(key, (2,))

    def prior_transform(cube):
        return EGGBOX_SIDE * np.asarray(cube)

    def z_to_x(z):
        p = jnp.clip(z / EGGBOX_SIDE, 1e-300, 1.0)
        return jnp.log(p) - jnp.log1p(-p)

    # Cell masses of the grid's cells (midpoint values), for exact draws.
    mid = 0.5 * (grid[1:] + grid[:-1])
    MX, MY = np.meshgrid(mid, mid, indexing="ij")
    g = (2.0 + np.cos(MX / 2) * np.cos(MY / 2)) ** 5
    mass = np.exp(g - g.max()).ravel()
    cdf = np.cumsum(mass / mass.sum())
    step = grid[1] - grid[0]

    def exact_draws(seed, num):
        rng = np.random.default_rng(seed)
        cell = np.minimum(np.searchsorted(cdf, rng.random(num)), cdf.size - 1)
        i, j = np.unravel_index(cell, MX.shape)
        xy = np.stack([grid[i] + step * rng.random(num), grid[j] + step * rng.random(num)], axis=1)
        p = np.clip(xy / EGGBOX_SIDE, 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)

    return Problem(name="eggbox", title="eggbox (Feroz et al.), 2 parameters, 18 modes", dim=2, data=np.zeros(1),
                   log_prior=log_prior, log_lik=log_lik, sample_prior=sample_prior, prior_transform=prior_transform,
                   pymc_model=_no_pymc, pymc_point=_no_pymc, exact=exact, z_to_x=z_to_x,
                   info={"exact_draws": exact_draws, "truth": "2-D Simpson quadrature on a 4,001^2 grid"})


# -------------------------------------------------------------------------------------------- many-well
def _well_1d(a):
    return -(a**4 - 6 * a**2 - 0.5 * a)


def manywell_problem() -> Problem:
    z1, _ = integrate.quad(lambda a: math.exp(_well_1d(a)), -10, 10, epsabs=0, epsrel=1e-12, limit=200)
    exact = WELL_COPIES * (math.log(z1) + 0.5 * LOG_2PI)
    dim = 2 * WELL_COPIES
    sd = WELL_PRIOR_SD

    def log_prior(x):
        return jnp.sum(-0.5 * (x / sd) ** 2 - math.log(sd) - 0.5 * LOG_2PI)

    def log_lik(x, data):
        a, b = x[0::2], x[1::2]
        energy = jnp.sum(a**4 - 6 * a**2 - 0.5 * a + 0.5 * b**2)
        return jnp.reshape(-energy - log_prior(x), (1,))

    def sample_prior(key):
        return sd * jax.random.normal(key, (dim,))

    def prior_transform(cube):
        return sd * special.ndtri(np.clip(np.asarray(cube), 1e-16, 1 - 1e-16))

    grid = np.linspace(-6.0, 6.0, 200_001)
    density = np.exp(_well_1d(grid) - _well_1d(grid).max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]

    def exact_draws(seed, num):
        rng = np.random.default_rng(seed)
        out = np.empty((num, dim))
        out[:, 0::2] = np.interp(rng.random((num, WELL_COPIES)), cdf, grid)
        out[:, 1::2] = rng.standard_normal((num, WELL_COPIES))
        return out

    return Problem(name="manywell", title="many-well, 32 dimensions, 2^16 modes", dim=dim, data=np.zeros(1),
                   log_prior=log_prior, log_lik=log_lik, sample_prior=sample_prior, prior_transform=prior_transform,
                   pymc_model=_no_pymc, pymc_point=_no_pymc, exact=exact,
                   info={"exact_draws": exact_draws, "truth": "16 x one-dimensional adaptive quadrature (rel. 1e-12)"})


# ------------------------------------------------------------------------------------- phase transition
PHASE_DIM, PHASE_HALF_WIDTH = 10, 5.0
PHASE_SIGMAS, PHASE_HEIGHTS = (1.0, 0.1), (1.0, 9e10)  # background, spike


def phase_log_lik_x(x):
    """log L at a point of the box: the background's and the spike's unnormalized Gaussians, summed."""
    sq = jnp.sum(x**2)
    terms = jnp.array([math.log(h) - sq / (2 * s**2) for s, h in zip(PHASE_SIGMAS, PHASE_HEIGHTS, strict=True)])
    return jax.scipy.special.logsumexp(terms)


def phase_components() -> np.ndarray:
    """log of each component's share of V Z: h_k times its Gaussian's integral over the box."""
    return np.array([math.log(h) + PHASE_DIM * math.log(s * math.sqrt(2 * math.pi)
                                                         * math.erf(PHASE_HALF_WIDTH / (s * math.sqrt(2))))
                     for s, h in zip(PHASE_SIGMAS, PHASE_HEIGHTS, strict=True)])


def phase_problem() -> Problem:
    side, dim = 2 * PHASE_HALF_WIDTH, PHASE_DIM
    log_parts = phase_components()
    exact = float(special.logsumexp(log_parts) - dim * math.log(side))
    share = np.exp(log_parts - special.logsumexp(log_parts))

    def to_box(u):
        return side * jax.nn.sigmoid(u) - PHASE_HALF_WIDTH

    def log_prior(u):  # the logistic density: the uniform prior on the box, seen through u
        return jnp.sum(jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u))

    def log_lik(u, data):
        return jnp.reshape(phase_log_lik_x(to_box(u)), (1,))

    def sample_prior(key):
        return jax.random.logistic(key, (dim,))

    def prior_transform(cube):
        return side * np.asarray(cube) - PHASE_HALF_WIDTH

    def z_to_x(z):
        p = jnp.clip((z + PHASE_HALF_WIDTH) / side, 1e-300, 1.0)
        return jnp.log(p) - jnp.log1p(-p)

    def exact_draws(seed, num):
        rng = np.random.default_rng(seed)
        sigma = np.asarray(PHASE_SIGMAS)[(rng.random(num) < share[1]).astype(int)][:, None]
        bound = PHASE_HALF_WIDTH / sigma
        x = sigma * stats.truncnorm.rvs(-bound, bound, size=(num, dim), random_state=rng)
        p = np.clip((x + PHASE_HALF_WIDTH) / side, 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)

    return Problem(name="phase", title="first-order phase transition, 10 parameters", dim=dim, data=np.zeros(1),
                   log_prior=log_prior, log_lik=log_lik, sample_prior=sample_prior, prior_transform=prior_transform,
                   pymc_model=_no_pymc, pymc_point=_no_pymc, exact=exact, z_to_x=z_to_x,
                   info={"exact_draws": exact_draws, "spike_share": float(share[1]),
                         "truth": "closed form (Gaussians cut by the box, through erf)"})


HARD_BUILDERS = {"eggbox": eggbox_problem, "manywell": manywell_problem, "phase": phase_problem}
