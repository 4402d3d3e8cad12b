"""Pilot-tuned, then frozen: a short pilot run chooses the schedule and a step-size table by lambda.

AIS stays unbiased for any schedule and any kernels chosen before the run, so the pilot uses its own keys
(``fold_in(key, PILOT_STREAM)``: independent of the run's) and the real run uses its choice frozen. Every
bound and the alarm keep their guarantees. What the pilot must not do is what BlackJAX's and the generative
models' published code do: adapt a chain's step size from that chain's own acceptance history during the
run it weights. :func:`refuse_in_chain_adaptation` says why; ``tests/core/test_pilot.py`` shows the bias.

The pilot anneals ``num_chains`` chains from the prior along a fixed geometric grid of lambdas. At each
level it records the variance across chains of the summed log-likelihood ``v(lam)``, takes one transition
and nudges the step size toward ``target_acceptance`` (a Robbins-Monro step on log step size). From it:

* the **schedule** spaces the T distributions at equal thermodynamic length: the increment of step t has
  variance about ``(lam_t - lam_{t-1})^2 v(lam)``, and for a fixed T the sum of these is smallest when every
  step has the same ``(lam_t - lam_{t-1}) sqrt(v(lam))`` (Gelman and Meng 1998; Grosse et al. 2013);
* the **step-size table** is the pilot's step sizes, smoothed, by lambda (:class:`StepSizeTable`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..contracts.capabilities import supports
from ..contracts.kernel import CachedTransition, TunableStepSize, evals_per_step
from ..contracts.model import log_density, weighted_sum
from ..errors import BDMCError
from ..kernels.step_sizes import StepSizeTable
from . import schedules
from .prior import draw_prior

PILOT_STREAM = 0x9E3779B9  # folded into the caller's key: the pilot's randomness is not the run's


@dataclass(frozen=True)
class Pilot:
    """How a pilot run tunes a run: its size and the acceptance rate it targets.

    Parameters
    ----------
    num_steps : int
        Levels of the pilot's own lambda grid (0, then geometric from ``min_lam`` to 1).
    num_chains : int
        Pilot chains (the variance at each level is taken across them).
    target_acceptance : float
        Mean acceptance the step size is steered to. Higher than the 0.65 that is optimal for sampling one
        distribution: a few stuck chains spoil single-run AIS estimates more than short steps slow them.
    min_lam : float
        Smallest positive lambda of the pilot grid.
    warmup : int
        Levels at lambda = 0 (the prior) before the grid, steering the first step size.
    moves_per_level : int
        Transitions per level, each followed by a step-size update.
    """

    num_steps: int = 32
    num_chains: int = 16
    target_acceptance: float = 0.9
    min_lam: float = 1e-6
    warmup: int = 8
    moves_per_level: int = 3

    def __post_init__(self):
        if int(self.num_steps) < 4 or int(self.num_chains) < 2:
            raise BDMCError(f"a pilot needs num_steps >= 4 and num_chains >= 2, got {self.num_steps} and "
                            f"{self.num_chains}")
        if not 0 < self.target_acceptance < 1:
            raise BDMCError(f"target_acceptance must lie in (0, 1), got {self.target_acceptance}")
        if not 0 < self.min_lam < 1:
            raise BDMCError(f"min_lam must lie in (0, 1), got {self.min_lam}")

    def grid(self) -> np.ndarray:
        return np.concatenate([[0.0], np.geomspace(self.min_lam, 1.0, int(self.num_steps) - 1)])


@dataclass(frozen=True)
class Tuned:
    """A pilot's frozen choice: the path, the kernel (with its step-size table) and what it cost."""

    path: np.ndarray
    kernel: Any
    seconds: float
    compile_seconds: float
    n_evals: int
    variances: np.ndarray
    acceptance: np.ndarray
    pilot: Pilot
    healthy: bool = True

    def settings(self) -> dict:
        """What the run records of its pilot."""
        table = self.kernel.step_size if supports(self.kernel, TunableStepSize) else None
        return {"tuned": "pilot" if self.healthy else "pilot saw a NaN or +inf density: run untuned",
                "pilot_steps": int(self.pilot.num_steps),
                "pilot_chains": int(self.pilot.num_chains), "pilot_seconds": self.seconds,
                "pilot_compile_seconds": self.compile_seconds, "pilot_evals": int(self.n_evals),
                "step_sizes": repr(table) if isinstance(table, StepSizeTable) else table}


def tunes_step_size(kernel) -> bool:
    """Whether the pilot can steer ``kernel``'s step size: a dataclass kernel with a ``step_size`` field
    (:class:`~bdmc.contracts.kernel.TunableStepSize`), which ``dataclasses.replace`` sets."""
    return (supports(kernel, TunableStepSize) and dataclasses.is_dataclass(kernel)
            and "step_size" in {f.name for f in dataclasses.fields(kernel)})


def tune(key, model, data, kernel, num_steps: int, *, pilot: Pilot | None = None) -> Tuned:
    """Run a pilot and return the frozen path of ``num_steps`` distributions and the tuned kernel.

    Parameters
    ----------
    key : PRNG key
        The caller's key; the pilot folds in its own stream, so the run's randomness is untouched.
    model, data
        The model and its validated data.
    kernel
        The run's kernel; one with a ``step_size`` field gets a :class:`StepSizeTable`, others are kept.
    num_steps : int
        Distributions T of the tuned path.
    pilot : Pilot, optional
        Pilot settings (default ``Pilot()``).
    """
    pilot = Pilot() if pilot is None else pilot
    steer = tunes_step_size(kernel)
    grid = pilot.grid()
    step0 = float(np.mean(kernel.step_size.sizes)) if steer and isinstance(kernel.step_size, StepSizeTable) \
        else (float(kernel.step_size) if steer else 0.0)
    run, compile_seconds = _compiled_pilot(model, kernel, pilot, steer, data)
    began = time.perf_counter()
    variances, sizes, acceptance, sick = (np.asarray(x) for x in run(key, data, grid, np.float64(step0)))
    seconds = time.perf_counter() - began
    # A NaN or +inf density in the pilot is a bug the run must report, not one a tuned run may steer around
    # (step sizes shrunk to nothing would keep the chains away from it): the run goes untuned.
    healthy = not bool(sick)
    path = thermodynamic_path(grid, variances, int(num_steps)) if healthy else schedules.sigmoidal(int(num_steps))
    if steer and healthy:
        kernel = dataclasses.replace(kernel, step_size=smoothed_table(grid[1:], sizes))
    levels = pilot.num_steps - 1 + pilot.warmup
    if supports(kernel, CachedTransition) and bool(kernel.caches_terms):
        evals = pilot.num_chains * (1 + levels * pilot.moves_per_level * int(kernel.evals_per_cached_step))
    else:  # each level also evaluates the likelihood for its variance
        evals = pilot.num_chains * levels * (1 + pilot.moves_per_level * evals_per_step(kernel))
    return Tuned(path=path, kernel=kernel, seconds=seconds + compile_seconds, compile_seconds=compile_seconds,
                 n_evals=evals, variances=variances, healthy=healthy,
                 acceptance=acceptance, pilot=pilot)


def thermodynamic_path(grid, variances, num_steps: int, *, weight: float = 0.5) -> np.ndarray:
    """``num_steps`` lambdas from 0 to 1, spaced by equal thermodynamic length ``int sqrt(v(lam)) dlam`` mixed
    with the sigmoidal schedule.

    ``variances[i]`` is v at ``grid[i]`` (``len(grid) - 1`` levels: the last grid point is not visited);
    ``sqrt(v)`` is interpolated linearly between grid points. The path's points are spent ``weight`` by
    thermodynamic length and the rest as the sigmoidal schedule spends them (the inverse of the mixture of
    the two cumulative distributions): a pilot's few chains underestimate the variance of a heavy-tailed
    likelihood under the prior, and the sigmoidal share keeps small first steps. Non-finite or zero
    variances (a pilot that failed, a likelihood constant in the latent) give the sigmoidal schedule.
    """
    grid = np.asarray(grid, np.float64)
    sd = np.sqrt(np.asarray(variances, np.float64))
    if sd.shape[0] != grid.shape[0] - 1 or not np.all(np.isfinite(sd)) or not np.any(sd > 0):
        return schedules.sigmoidal(num_steps)
    sd = np.append(sd, sd[-1])
    sd = np.maximum(sd, 1e-12 * sd.max())
    # Dense evaluation of both cumulative distributions of the path's points, then one inverse.
    sigmoid = schedules.sigmoidal(int(num_steps))
    fine = np.unique(np.concatenate([grid, np.linspace(0.0, 1.0, 4097), sigmoid]))
    sd_fine = np.interp(fine, grid, sd)
    length = np.concatenate([[0.0], np.cumsum(np.diff(fine) * 0.5 * (sd_fine[1:] + sd_fine[:-1]))])
    sigmoid_cdf = np.interp(fine, sigmoid, np.linspace(0.0, 1.0, int(num_steps)))
    cdf = weight * length / length[-1] + (1.0 - weight) * sigmoid_cdf
    path = np.interp(np.linspace(0.0, 1.0, int(num_steps)), cdf, fine)
    path[0], path[-1] = 0.0, 1.0
    return schedules.validate(np.maximum.accumulate(np.clip(path, 0.0, 1.0)))


def smoothed_table(lams, sizes, *, width: int = 5) -> StepSizeTable:
    """The pilot's step sizes as a table, smoothed by a running median of log step size."""
    log_sizes = np.log(np.asarray(sizes, np.float64))
    padded = np.pad(log_sizes, width // 2, mode="edge")
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(padded, width), axis=1)
    return StepSizeTable(tuple(float(x) for x in lams), tuple(float(x) for x in np.exp(smooth)))


def refuse_in_chain_adaptation(what: str) -> None:
    """Raise: adapting a chain's kernel from its own history breaks the AIS guarantee."""
    raise BDMCError(
        f"{what}: in-chain adaptation is refused. A step size that a chain adapts from its own acceptance "
        "history makes its transitions depend on its past, so they no longer leave each intermediate "
        "distribution invariant as a fixed kernel, and the AIS weights lose their unbiasedness: the lower and "
        "upper bounds, and the bug alarm, would no longer hold. Use tune='pilot' (the default for gradient "
        "kernels): a pilot run with its own keys chooses the schedule and a step size for each lambda, frozen "
        "for the real run."
    )


_PILOTS = CompiledCache("pilot", maxsize=32)


def _compiled_pilot(model, kernel, pilot: Pilot, steer: bool, data):
    leaves, treedef = jax.tree.flatten(data)
    signature = (treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves), jnp.result_type(float))

    def build():
        began = time.perf_counter()
        fn = jax.jit(lambda k, d, g, s0: _pilot(jax.random.fold_in(k, PILOT_STREAM), model, d, kernel, g, s0,
                                                pilot=pilot, steer=steer))
        example = (jax.random.key(0), data, pilot.grid(), np.float64(1.0))
        return fn.lower(*example).compile(), time.perf_counter() - began

    (compiled, seconds), built = _PILOTS.get_or_build((model, kernel, pilot, steer, signature), build)
    return compiled, (seconds if built else 0.0)


def _pilot(key, model, data, kernel, grid, step0, *, pilot: Pilot, steer: bool):
    """The pilot scan: per level, the variance of the summed log-likelihood, a move, a step-size update."""
    chains = int(pilot.num_chains)
    latents, key = draw_prior(key, model, chains)
    like = jax.tree.map(lambda a: a[0], latents)
    cached = supports(kernel, CachedTransition) and bool(kernel.caches_terms)
    states = jax.vmap(lambda x: kernel.init_state(x, data))(latents) if cached else latents
    target = jnp.asarray(pilot.target_acceptance, grid.dtype)

    def densities(states, lam):
        if cached:
            return jax.vmap(lambda s: s.log_prior + weighted_sum(lam, kernel.state_terms(s)))(states)
        return jax.vmap(lambda x: log_density(model, x, data, lam))(states)

    def summed(states):
        if cached:
            return jax.vmap(lambda s: jnp.sum(kernel.state_terms(s)))(states)
        return jax.vmap(lambda x: jnp.sum(model.log_likelihood(x, data)))(states)

    def level(carry, xs):
        states, log_step = carry
        t, lam = xs
        ll = summed(states)
        ok = jnp.isfinite(ll)
        mean = jnp.sum(jnp.where(ok, ll, 0.0)) / jnp.maximum(jnp.sum(ok), 1)
        var = jnp.sum(jnp.where(ok, (ll - mean) ** 2, 0.0)) / jnp.maximum(jnp.sum(ok) - 1, 1)

        def move(c, j):
            states, log_step = c
            k = dataclasses.replace(kernel, step_size=jnp.exp(log_step)) if steer else kernel
            keys = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, t), j), chains)
            if cached:
                states, info = jax.vmap(lambda kk, s: k.step(kk, s, data, lam, like=like))(keys, states)
            else:
                states, info = jax.vmap(lambda kk, x: k(kk, x, data, lam))(keys, states)
            acc = jnp.mean(jnp.where(jnp.isfinite(info.acceptance), info.acceptance, 0.0))
            sick = jnp.any(~(densities(states, lam) < jnp.inf)) | jnp.any(jnp.isnan(info.acceptance))
            # Robbins-Monro on log step size: larger when accepting more than the target, smaller when less.
            return (states, log_step + (acc - target) if steer else log_step), (acc, sick)

        # Several moves per level let the chains keep up with a sharpening target; the table keeps the step
        # size the level ended with.
        (states, log_step), (accs, sick) = jax.lax.scan(move, (states, log_step),
                                                        jnp.arange(int(pilot.moves_per_level)))
        return (states, log_step), (var, jnp.exp(log_step), jnp.mean(accs), jnp.any(sick))

    # Warm-up at lam = 0: the chains are exact prior draws, so these levels steer the first step size and
    # pool more draws into the variance at the start, where the path's first steps are decided.
    warm = int(pilot.warmup)
    lams = jnp.concatenate([jnp.zeros(warm, grid.dtype), grid[1:]])
    steps = jnp.arange(lams.shape[0])
    log_step0 = jnp.log(jnp.where(step0 > 0, step0, 1.0))
    _, (variances, sizes, acceptance, sick) = jax.lax.scan(level, (states, log_step0), (steps, lams))
    first = jnp.mean(variances[: warm + 1])
    return variances[warm:].at[0].set(first), sizes[warm:], acceptance[warm:], jnp.any(sick)
