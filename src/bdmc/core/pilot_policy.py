"""The pilot as a step policy of the engine: adaptive tempering, step sizes steered toward a target acceptance,
and the chains' moments recorded by level (:mod:`bdmc.core.pilot` turns the records into the frozen choice)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.capabilities import supports
from ..contracts.kernel import JitteredSteps
from ..errors import NonFiniteLogDensityError, NonFiniteLogWeightError
from ..kernels.lookup import count_at_most
from ..kernels.mass import GaussianTable
from .chain_stats import chain_moments, move_correlation
from .engine import anneal
from .resampling import AdaptiveResampling

if TYPE_CHECKING:
    from .pilot import Pilot

PRECONDITIONED_JITTER = 0.5  # the step-size jitter of a preconditioned HMC (kernels.HMC's jitter)


def jitter_of(kernel) -> dict:
    """The step-size jitter a preconditioned kernel gets (HMC's ``jitter``: a fixed trajectory resonates on the
    unit scales a preconditioner makes), as ``replace`` keywords; none for a kernel without one or with its own."""
    names = {f.name for f in dataclasses.fields(kernel)}
    wanted = supports(kernel, JitteredSteps) and "jitter" in names and not kernel.jitter
    return {"jitter": PRECONDITIONED_JITTER} if wanted else {}


@dataclass(frozen=True)
class PilotPolicy:
    """The pilot as a step policy of the engine (:class:`bdmc.contracts.step_policy.StepPolicy`).

    Each step is a level: the engine weights, resamples and moves the chains with its own keys and failure
    record; the policy chooses the level's lambda (an adaptive one, below), gives each move the step size and
    preconditioner it has so far, nudges the step size after each move toward ``target_acceptance`` (a
    Robbins-Monro step on log step size) and records the level: its lambda, the variance across chains of the
    summed log-likelihood before the moves, the step size and acceptance, the chains' mean and covariance over
    the moves (the next level's preconditioner) and the moves' lag-one correlation.

    With a preconditioner to fit (``adaptive``), chains that lag behind a sharpening target would give a fit to
    where they were, not to f(.; lam): the pilot is an SMC sampler with adaptive tempering (as PyMC's and
    BlackJAX's), placing the next lam where the weight increments keep half the chains' ESS (never a longer step
    than the fixed grid's, which resolves the small lambdas a schedule needs), resampled at every level; it stops
    at lam = 1. Otherwise it walks the fixed grid and never resamples. The first ``pilot.warmup`` levels stay at
    lam = 0 (the prior), steering the first step size. Its choices are frozen before the run, so this costs the
    run no guarantee.
    """

    pilot: Pilot
    steer: bool
    kind: str
    field: str | None
    levels: int

    @property
    def moves(self) -> int:
        return int(self.pilot.moves_per_level)

    @property
    def adaptive(self) -> bool:
        return self.field is not None and self.kind != "identity"

    def init(self, args, positions):
        (step0,) = args
        mean, cov = chain_moments(positions, self.kind == "dense", int(self.pilot.num_chains))
        return jnp.log(jnp.where(step0 > 0, step0, 1.0)), mean, cov, jnp.zeros((), jnp.result_type(float))

    def finished(self, carry, t):
        return (carry[3] >= 1.0) & (t >= int(self.pilot.warmup)) if self.adaptive else jnp.zeros((), bool)

    def lambdas(self, carry, loglik, lam_from, lam_to, t):
        if not self.adaptive:
            return lam_from, lam_to
        lam_prev = carry[3]
        grid = jnp.asarray(self.pilot.grid(), jnp.result_type(float))
        cap = grid[jnp.minimum(count_at_most(grid, lam_prev), grid.shape[0] - 1)]
        last = t == self.levels - 1
        lam = jnp.minimum(next_lambda(loglik, jnp.isfinite(loglik), lam_prev, last, int(self.pilot.num_chains)),
                          jnp.where(last, 1.0, cap))
        return lam_prev, jnp.where(t < int(self.pilot.warmup), 0.0, lam)

    def kernel(self, carry, kernel, lam):
        log_step, mean, cov, _ = carry
        k = dataclasses.replace(kernel, step_size=jnp.exp(log_step)) if self.steer else kernel
        if self.field == "inverse_mass" and self.kind != "identity":
            return dataclasses.replace(k, inverse_mass=cov, **jitter_of(k))
        if self.field == "proposal":
            return dataclasses.replace(k, proposal=one_point_table(lam, mean, cov))
        return k

    def adapt(self, carry, acceptance):
        log_step, mean, cov, lam_prev = carry
        acc = jnp.mean(jnp.where(jnp.isfinite(acceptance), acceptance, 0.0))
        # Larger when accepting more than the target, smaller when less.
        target = jnp.asarray(self.pilot.target_acceptance, jnp.result_type(float))
        return (log_step + (acc - target) if self.steer else log_step), mean, cov, lam_prev

    def record(self, carry, loglik, lam_from, lam_to, before, positions, acceptance):
        ok = jnp.isfinite(loglik)
        ll_mean = jnp.sum(jnp.where(ok, loglik, 0.0)) / jnp.maximum(jnp.sum(ok), 1)
        var = jnp.sum(jnp.where(ok, (loglik - ll_mean) ** 2, 0.0)) / jnp.maximum(jnp.sum(ok) - 1, 1)
        # The table keeps the step size the level ended with, and the moments of every move's chains pooled.
        mean, cov = chain_moments(positions.reshape(-1, positions.shape[-1]), self.kind == "dense",
                                  int(self.pilot.num_chains))
        acc = jnp.mean(jnp.mean(jnp.where(jnp.isfinite(acceptance), acceptance, 0.0), axis=1))
        log_step = carry[0]
        return (log_step, mean, cov, lam_to), (lam_to, jnp.ones((), bool), var, jnp.exp(log_step), acc,
                                               jnp.any(jnp.isnan(acceptance)), mean, cov,
                                               move_correlation(before, positions))


def run_pilot(key, latents, model, data, kernel, pilot: Pilot, steer: bool, mass: tuple, step0: float):
    """The pilot's levels through the engine, from its chains' prior draws ``latents``: ``(records, initial
    moments, engine result)``, or None when the engine stopped at a NaN or +inf density or weight."""
    kind, field = mass
    warm = int(pilot.warmup)
    policy = PilotPolicy(pilot, steer, kind, field, 0)
    levels = warm + (max_levels(pilot) if policy.adaptive else int(pilot.num_steps) - 1)
    policy = dataclasses.replace(policy, levels=levels)
    # The fixed grid after the warm-up at lam = 0; an adaptive pilot chooses its own lambdas (the path's ones
    # only give the final check its lam).
    after = np.ones(levels - warm) if policy.adaptive else pilot.grid()[1:]
    path = np.concatenate([np.zeros(warm + 1), after])
    chains = int(pilot.num_chains)
    try:
        result = anneal(key, model, data, kernel, path, latents, num_particles=chains if policy.adaptive else 1,
                        resampler=AdaptiveResampling("systematic", 1.0), chunk_size=levels, progress=False,
                        description="the pilot", policy=policy, policy_args=(np.float64(step0),))
    except (NonFiniteLogDensityError, NonFiniteLogWeightError):
        return None
    return result


def max_levels(pilot: Pilot) -> int:
    """Levels (past the warm-up) an adaptive pilot may take to reach lam = 1: four times the fixed grid's."""
    return 4 * (int(pilot.num_steps) - 1)


def next_lambda(ll, ok, lam_prev, last, chains: int, *, ess_fraction: float = 0.5, iterations: int = 40):
    """The lam after ``lam_prev`` at which the chains' weight increments ``(lam - lam_prev) * ll`` keep an ESS of
    ``ess_fraction * chains`` (bisection in log of the increment), or 1 when it is reached, or at the last level."""
    lse = jax.scipy.special.logsumexp
    target = ess_fraction * chains

    def ess(log_delta):
        lw = jnp.where(ok, jnp.exp(log_delta) * ll, -jnp.inf)
        return jnp.exp(2 * lse(lw) - lse(2 * lw))

    room = jnp.maximum(1.0 - lam_prev, 1e-300)
    hi = jnp.log(room)
    lo = jnp.log(jnp.asarray(1e-12, ll.dtype) * jnp.maximum(room, 1e-300))

    def halve(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        keep = ess(mid) >= target
        return jnp.where(keep, mid, lo), jnp.where(keep, hi, mid)

    lo, _ = jax.lax.fori_loop(0, iterations, halve, (lo, hi))
    lam = jnp.where(last | (ess(hi) >= target), 1.0, lam_prev + jnp.exp(lo))
    return jnp.minimum(lam, 1.0)


def one_point_table(lam, mean, cov) -> GaussianTable:
    """A traced one-point table (inside the pilot): the current fit, whatever lam."""
    return jax.tree.unflatten(jax.tree.structure(GaussianTable((0.0,), ((0.0,),), ((1.0,),))),
                              [jnp.reshape(lam, (1,)), mean[None], cov[None]])
