"""Are these draws from this posterior? A sign test on the log density's rise under a reversible kernel.

An exact posterior draw ``x`` is stationary under any kernel ``K`` that leaves the posterior invariant, and for a
reversible ``K`` the pair ``(x, K(x))`` is exchangeable, so ``d = log f(K(x)) - log f(x)`` (``log f``: the model's
log density at ``lam = 1``) is symmetric about 0. Among ``n`` independent draws the number with ``d > 0`` is
Binomial(n', 1/2), ``n'`` the draws that moved (``d = 0``, a rejected move, is a tie and dropped). Draws of
another posterior (another model or data set) or from far outside the typical set climb toward it: most ``d``
are positive, and large.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import binomtest

from ..contracts.model import log_density, validate_data
from ..core.pilot import tune
from ..errors import DataError, OptionError
from ..kernels import HMC

__all__ = ["DrawsCheck", "check_draws", "log_density_rises", "min_draws"]

DEFAULT_MOVES = 3
PILOT_PATH_STEPS = 100  # the pilot's path length: only its tables at lam = 1 are used


@dataclass(frozen=True)
class DrawsCheck:
    """The result of :func:`check_draws`.

    Attributes
    ----------
    p_value : float
        One-sided exact binomial p-value of the number of draws whose log density rose (1 when none moved).
    fraction_up : float
        The share of moved draws whose log density rose (NaN when none moved); 1/2 in expectation for exact
        draws.
    median_rise : float
        The median of ``log f(K(x)) - log f(x)`` over the moved draws, in nats (NaN when none moved).
    num_draws, num_moved : int
        Draws tested; draws the kernel moved (the others are ties).
    moves : int
        Kernel transitions from each draw.
    level : float
        The test's level.
    passed : bool
        ``p_value >= level``: the draws are not detectably off this posterior (see :attr:`conclusive`).
    """

    p_value: float
    fraction_up: float
    median_rise: float
    num_draws: int
    num_moved: int
    moves: int
    level: float
    passed: bool

    @property
    def conclusive(self) -> bool:
        """Whether enough draws moved for the test to be able to reject at its level (:func:`min_draws`)."""
        return self.num_moved >= min_draws(self.level)

    def message(self) -> str:
        """One sentence saying what the check found."""
        if not self.conclusive:
            return (f"inconclusive: the kernel moved {self.num_moved} of the {self.num_draws} draws in {self.moves} "
                    f"move(s), fewer than the {min_draws(self.level)} a sign test at level {self.level:g} needs to "
                    "ever reject")
        counts = (f"the log density rose from {round(self.fraction_up * self.num_moved)} of the {self.num_moved} "
                  f"draws the kernel moved ({self.moves} reversible move(s) each; median rise "
                  f"{self.median_rise:.3g} nats; one-sided sign test p = {self.p_value:.3g})")
        if self.passed:
            return f"the draws pass: {counts}, as draws of this posterior may (level {self.level:g})"
        return (f"the draws are not draws of this posterior: {counts}, below level {self.level:g}; they climb "
                "toward it, as draws of another model, data set or a sampler that had not converged do")


def min_draws(level: float) -> int:
    """The fewest moved draws with which the one-sided sign test can reject at ``level``: ``2^-n <= level``."""
    return int(math.ceil(math.log2(1.0 / level)))


def log_density_rises(key, model, data, latents, *, kernel, moves: int = DEFAULT_MOVES) -> np.ndarray:
    """``log f(K^moves(x)) - log f(x)`` at ``lam = 1`` for each draw ``x`` (leading axis of ``latents``).

    Each draw moves on its own key (``split(key, n)[i]``, then ``split(.., moves)``), all in one compiled call.

    Raises
    ------
    bdmc.DataError
        When a draw's log density is not finite (it lies outside the support).
    """
    n = int(jax.tree.leaves(latents)[0].shape[0])

    def one(k, x):
        start = log_density(model, x, data, 1.0)

        def move(x, k):
            return kernel(k, x, data, 1.0)[0], None

        end = jax.lax.scan(move, x, jax.random.split(k, moves))[0]
        return start, log_density(model, end, data, 1.0)

    start, end = (np.asarray(v, np.float64) for v in jax.jit(jax.vmap(one))(jax.random.split(key, n), latents))
    if not np.all(np.isfinite(start)):
        i = int(np.argmin(np.isfinite(start)))
        raise DataError(f"draw {i} has log density {start[i]} at lam = 1: it lies outside the posterior's support")
    return end - start


def check_draws(key, model, data, latents, *, level: float = 0.01, moves: int = DEFAULT_MOVES,
                kernel=None) -> DrawsCheck:
    """Test whether ``latents`` are draws of this model's posterior given ``data``.

    From each draw ``x`` a reversible kernel ``K`` that leaves the posterior invariant moves ``moves`` times;
    for exact posterior draws ``d = log f(K(x)) - log f(x)`` is symmetric about 0 (``(x, K(x))`` is
    exchangeable), so the count of rises among the draws that moved is Binomial(n', 1/2): a one-sided exact
    binomial (sign) test at ``level``. Draws from another model or data set, or far out of the typical set,
    climb and are rejected. The test assumes independent draws: MCMC draws that are only approximately exact
    (autocorrelated, or from a chain short of convergence) may be rejected, and that is the point: reverse runs
    started from them would not bound ``log p(y)``. Use well-separated draws (:meth:`PosteriorDraws.spaced`).

    Parameters
    ----------
    key : jax.random.key
        Split in two: the pilot's key and the moves' key.
    model, data
        The model and the data set the draws should be a posterior of.
    latents : pytree or PosteriorDraws
        The draws on the model's latent space, leading axis over the draws.
    level : float
        The test's level, in (0, 1).
    moves : int
        Transitions of ``K`` from each draw (a power of a reversible kernel is reversible).
    kernel : optional
        A kernel reversible with respect to ``f(.; 1)``, called at ``lam = 1``. Default: HMC (MH-corrected,
        fixed trajectory) with the step size and mass matrix a pilot (:func:`bdmc.core.pilot.tune`) chose on its
        own prior draws, not on these draws, so the kernel is the same for every draw.

    Returns
    -------
    DrawsCheck

    Raises
    ------
    bdmc.DataError
        When there are fewer draws than the test needs to ever reject at ``level`` (:func:`min_draws`), or a draw
        lies outside the support.
    bdmc.OptionError
        When ``level`` or ``moves`` is out of range.
    """
    if not 0.0 < float(level) < 1.0:
        raise OptionError(f"level must lie in (0, 1), got {level!r}")
    if int(moves) < 1 or int(moves) != moves:
        raise OptionError(f"moves must be a positive integer, got {moves!r}")
    from .draws import PosteriorDraws  # the records' module imports this one

    if isinstance(latents, PosteriorDraws):
        latents = latents.latents
    if kernel is None and any(not jnp.issubdtype(jnp.result_type(x), jnp.inexact) for x in jax.tree.leaves(latents)):
        raise OptionError("the draws have discrete coordinates, which HMC (the default kernel) cannot move: pass a "
                          "kernel reversible with respect to the posterior (kernel=)")
    n = int(jax.tree.leaves(latents)[0].shape[0])
    if n < min_draws(level):
        raise DataError(f"{n} draws are too few: the sign test needs at least {min_draws(level)} to be able to "
                        f"reject at level {level:g}")
    data = validate_data(model, data)
    key_pilot, key_moves = jax.random.split(key)
    if kernel is None:
        kernel = tune(key_pilot, model, data, HMC(model), PILOT_PATH_STEPS).kernel
    rises = log_density_rises(key_moves, model, data, latents, kernel=kernel, moves=int(moves))
    moved = rises != 0.0
    up, n_moved = int(np.sum(rises > 0)), int(np.sum(moved))
    p = float(binomtest(up, n_moved, 0.5, alternative="greater").pvalue) if n_moved else 1.0
    return DrawsCheck(p_value=p, fraction_up=up / n_moved if n_moved else math.nan,
                      median_rise=float(np.median(rises[moved])) if n_moved else math.nan, num_draws=n,
                      num_moved=n_moved, moves=int(moves),
                      level=float(level), passed=p >= float(level))
