"""Nested sampling (Skilling 2006; BDMC paper Sec. 5.3) with MCMC moves under the likelihood constraint.

Each run keeps ``K`` particles from the prior. At step t the lowest log-likelihood ``log C_t`` among them is
the new threshold; the prior volume shrinks as ``V_t = (K / (K + 1))^t`` (Eq. 47) and
``(V_t - V_{t+1}) C_t`` is added to the evidence (the lower sum of Eq. 48). The worst particle is replaced by a
copy of another, chosen uniformly, which then takes ``num_moves`` MCMC transitions leaving the constrained
prior invariant. A run stops when a step would raise the evidence by a factor below ``1 + stop_ratio``
(the paper: ``e^-10``); the live particles' share ``V_t * mean(L)`` is then added.

The constrained-prior transitions leave the prior restricted to ``L > C`` invariant:

* :class:`ConstrainedGibbs` redraws each of the model's Gibbs blocks from its prior conditional and keeps the
  draw only inside the constraint (an exact draw from a conditional is reversible);
* :class:`ConstrainedRandomWalk` is random-walk Metropolis on the prior of unconstrained latents, accepted with
  the prior ratio and only inside the constraint;
* :class:`ConstrainedEllipticalSlice` is elliptical slice sampling (Murray, Adams & MacKay 2010) with the
  constraint as its slice, block by block, for latents with zero-mean Gaussian priors. It never rejects: it
  shrinks an angle bracket towards the current point until the proposal lies inside;
* :class:`ConstrainedCoordinateGibbs` (low-rank model) redraws one entry of U or V at a time from its prior
  truncated to the interval the constraint leaves, plus moves along the directions that leave ``U V`` fixed.

Which one :func:`nested_sampling` uses by default is decided by :func:`default_nested_kernel`: whole Gibbs
blocks redrawn from the prior almost never land inside a tight constraint on models with many coupled
Gaussian latents (the low-rank model), which therefore gets the coordinate kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..contracts.capabilities import (
    CollapsedDensity,
    ConstrainedMoves,
    GaussianPriorBlocks,
    GibbsConditionals,
    IndexedConditionals,
    supports,
)
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.kernel import ConstrainedMoveCost, CountedConstrainedMove
from ..contracts.model import validate_data
from ..errors import BDMCError
from ._timing import check_positive, timed_call


@dataclass(frozen=True)
class ConstrainedGibbs:
    """Redraw each Gibbs block from its prior conditional; keep the draw only if the likelihood stays above C.

    Parameters
    ----------
    model
        Supplies ``conditionals()`` (:class:`~bdmc.contracts.GibbsConditionals`).
    scan : bool
        Visit the sites in one ``lax.scan`` when the model supports
        :class:`~bdmc.contracts.IndexedConditionals`: one site update is compiled instead of one per
        conditional (the binary model's 500 bits took minutes to compile unrolled). Same keys, same order,
        same numbers; ``False`` forces the unrolled loop.
    """

    model: Any
    scan: bool = True

    @property
    def evals_per_move(self) -> int:
        if self._indexed:
            return int(self.model.num_sites())
        return len(self.model.conditionals())

    @property
    def _indexed(self) -> bool:
        return self.scan and supports(self.model, IndexedConditionals)

    def __call__(self, key, latent, data, log_c):
        zero = jnp.zeros((), jnp.result_type(float))
        keys = jax.random.split(key, self.evals_per_move)
        if self._indexed:
            def site(latent, xs):
                j, k = xs
                return self._keep_inside(self.model.update_site(k, j, latent, data, zero), latent, data, log_c), None

            return jax.lax.scan(site, latent, (jnp.arange(self.evals_per_move), keys))[0]
        for k, cond in zip(keys, self.model.conditionals(), strict=False):
            latent = self._keep_inside(cond.update(k, latent, data, zero), latent, data, log_c)
        return latent

    def _keep_inside(self, proposal, latent, data, log_c):
        """The proposal where its likelihood exceeds ``C``, else the current state."""
        inside = _log_l(self.model, proposal, data) > log_c
        return jax.tree.map(lambda a, b: jnp.where(inside, a, b), proposal, latent)


@dataclass(frozen=True)
class ConstrainedRandomWalk:
    """Gaussian random-walk Metropolis on the prior of unconstrained latents, restricted to L > C.

    The proposal is symmetric in the flattened latent, so the acceptance ratio is the prior ratio on the space
    ``log_prior`` is a density on (models with constrained parameters keep them transformed, with the
    Jacobian inside ``log_prior``), times the indicator of the constraint. The kernel is exact (its
    invariance is tested against rejection draws), but a move is short: with few moves per step the new
    particle stays next to the copy it started from, and nested sampling then underestimates log Z, by
    several nats on ``GaussianMean(n=20, dim=5)`` at the default ``scale`` with 5 moves per step.
    """

    model: Any
    scale: float = 0.1
    evals_per_move: int = 1

    def __call__(self, key, latent, data, log_c):
        k1, k2 = jax.random.split(key)
        flat, unravel = ravel_pytree(latent)
        proposal = unravel(flat + self.scale * jax.random.normal(k1, flat.shape))
        log_ratio = self.model.log_prior(proposal) - self.model.log_prior(latent)
        accept = (jnp.log(jax.random.uniform(k2)) < log_ratio) & (_log_l(self.model, proposal, data) > log_c)
        return jax.tree.map(lambda a, b: jnp.where(accept, a, b), proposal, latent)


@dataclass(frozen=True)
class ConstrainedEllipticalSlice:
    """Elliptical slice sampling on the prior restricted to ``L > C``, one block of Gaussian latents at a time.

    For a block ``x`` with a zero-mean Gaussian prior (the rest of the latent fixed), the proposal
    ``x cos(t) + nu sin(t)`` with ``nu`` drawn from that prior lies on an ellipse through ``x``; the angle ``t``
    is drawn from a bracket around 0 that shrinks towards the rejected angles until the proposal satisfies
    ``L > C`` (Murray, Adams & MacKay 2010, with the constraint as the slice, so there is no slice height to
    draw). The move is reversible with respect to the prior restricted to ``L > C`` and never leaves it.

    Parameters
    ----------
    model
        Supplies the likelihood and, unless ``blocks`` is given, ``gaussian_prior_blocks()``.
    blocks : tuple of (name, axis, std), optional
        Latent leaf ``name`` has independent ``N(0, std^2)`` entries given the other leaves; ``axis`` is the
        axis whose indices are the blocks (each slice along it is moved as one block, in turn), or ``None``
        for the whole leaf as one block. Default: ``model.gaussian_prior_blocks()``.
    max_shrinks : int
        Cap on the bracket shrinks per block. A block that reaches it stays where it is, which keeps the
        move exact: the capped kernel still satisfies detailed balance, since the same shrink sequence
        leads back (the bracket, in practice, collapses onto the current point long before the cap).
    """

    model: Any
    blocks: Any = None
    max_shrinks: int = 100

    def __post_init__(self):
        blocks = self._blocks()
        if not blocks:
            raise BDMCError(f"{type(self).__name__} needs at least one (name, axis, std) block, got {blocks!r}")
        for block in blocks:
            if len(block) != 3 or not isinstance(block[0], str):
                raise BDMCError(f"{type(self).__name__} block must be (name, axis, std), got {block!r}")
        if int(self.max_shrinks) != self.max_shrinks or self.max_shrinks < 1:
            raise BDMCError(f"max_shrinks must be a positive integer, got {self.max_shrinks}")

    def _blocks(self):
        if self.blocks is not None:
            return tuple(self.blocks)
        if not supports(self.model, GaussianPriorBlocks):
            raise BDMCError(f"{type(self.model).__name__} declares no gaussian_prior_blocks(); pass blocks= "
                            "to ConstrainedEllipticalSlice")
        return tuple(self.model.gaussian_prior_blocks())

    def __call__(self, key, latent, data, log_c):
        return self.counted(key, latent, data, log_c)[0]

    def counted(self, key, latent, data, log_c):
        """One sweep over the blocks: ``(latent, likelihood evaluations)``."""
        evals = jnp.zeros((), jnp.result_type(float))
        for j, (name, axis, std) in enumerate(self._blocks()):
            latent, n = self._sweep_leaf(jax.random.fold_in(key, j), latent, data, log_c, name, axis, std)
            evals = evals + n
        return latent, evals

    def _sweep_leaf(self, key, latent, data, log_c, name, axis, std):
        if axis is None:
            def loglik(x):
                return _log_l(self.model, {**latent, name: x}, data)

            x, n = _elliptical_slice(key, latent[name], std, loglik, log_c, int(self.max_shrinks))
            return {**latent, name: x}, n
        blocks = jnp.moveaxis(latent[name], axis, 0)  # one block per index along `axis`

        def body(i, carry):
            blocks, evals = carry

            def loglik(x):
                return _log_l(self.model, {**latent, name: jnp.moveaxis(blocks.at[i].set(x), 0, axis)}, data)

            x, n = _elliptical_slice(jax.random.fold_in(key, i), blocks[i], std, loglik, log_c,
                                     int(self.max_shrinks))
            return blocks.at[i].set(x), evals + n

        zero = jnp.zeros((), jnp.result_type(float))
        blocks, evals = jax.lax.fori_loop(0, blocks.shape[0], body, (blocks, zero))
        return {**latent, name: jnp.moveaxis(blocks, 0, axis)}, evals


def _elliptical_slice(key, x, std, loglik, log_c, max_shrinks):
    """One elliptical slice move of ``x ~ N(0, std^2 I)`` restricted to ``loglik > log_c``: ``(x', evals)``."""
    k_nu, k_t, k_loop = jax.random.split(key, 3)
    nu = std * jax.random.normal(k_nu, x.shape, x.dtype)
    two_pi = 2.0 * math.pi
    t = jax.random.uniform(k_t, (), x.dtype, 0.0, two_pi)

    def propose(t):
        return x * jnp.cos(t) + nu * jnp.sin(t)

    def cond(s):
        return (~s[4]) & (s[5] <= max_shrinks)

    def body(s):
        t, lo, hi, _, _, n = s
        lo, hi = jnp.where(t < 0, t, lo), jnp.where(t < 0, hi, t)  # shrink towards the current point, t = 0
        t = jax.random.uniform(jax.random.fold_in(k_loop, n), (), x.dtype, lo, hi)
        proposal = propose(t)
        return t, lo, hi, proposal, loglik(proposal) > log_c, n + 1

    first = propose(t)
    state = (t, t - two_pi, t, first, loglik(first) > log_c, jnp.ones((), jnp.int32))
    _, _, _, proposal, inside, n = jax.lax.while_loop(cond, body, state)
    return jnp.where(inside, proposal, x), n.astype(jnp.result_type(float))


def default_nested_kernel(model):
    """The constrained-prior kernel :func:`nested_sampling` uses when none is given, by capability.

    The model's own move when it supports :class:`~bdmc.contracts.ConstrainedMoves` (the low-rank model's
    coordinate Gibbs: redrawing whole Gibbs blocks from the prior almost never satisfies the constraint
    there), :class:`ConstrainedEllipticalSlice` for :class:`~bdmc.contracts.GaussianPriorBlocks`,
    :class:`ConstrainedGibbs` for :class:`~bdmc.contracts.GibbsConditionals`, else
    :class:`ConstrainedRandomWalk`. The choice is recorded in ``settings["kernel"]``.
    """
    if supports(model, ConstrainedMoves):
        return model.constrained_kernel()
    if supports(model, GaussianPriorBlocks):
        return ConstrainedEllipticalSlice(model)
    if supports(model, GibbsConditionals):
        return ConstrainedGibbs(model)
    return ConstrainedRandomWalk(model)


@register_estimator("ns", label="NS", knob="num_moves", knobs=(1, 3, 10), bound=None)
def nested_sampling(key, model, data, *, exact_latent=None, num_moves: int = 5, num_particles: int = 2,
                    num_runs: int = 16, kernel: Any = None, volumes: str = "geometric",
                    stop_ratio: float = math.exp(-10), max_steps: int = 100_000) -> Estimate:
    """Nested sampling estimate of ``log p(y)``; runs combine by the mean of their log estimates (footnote 5).

    Parameters
    ----------
    key : PRNG key
    model, data
    exact_latent : optional
        Not used; accepted so every estimator has one call shape.
    num_moves : int
        Constrained-prior MCMC transitions per step: the knob (paper Sec. 6.2).
    num_particles : int
        Live particles K >= 2 (the paper's default is 2).
    num_runs : int
        Independent runs, batched.
    kernel : optional
        ``kernel(key, latent, data, log_c) -> latent`` leaving the prior restricted to ``log L > log_c``
        invariant. A kernel whose cost varies (the elliptical slice kernel) may also provide
        ``counted(key, latent, data, log_c) -> (latent, likelihood evaluations)``; the others are charged
        ``evals_per_move`` per move. Default: :func:`default_nested_kernel`.
    volumes : {"geometric", "arithmetic"}
        Prior volume after t steps: ``exp(-t / K)``, the exponential of the expected log volume, which makes
        the log estimate nearly unbiased under exact constrained sampling (Skilling 2006; the default, since
        runs combine by the mean of their logs), or ``(K / (K + 1))^t``, the expected volume (the paper's
        Eq. 47). The latter overstates log V_t by ``t (log(K/(K+1)) + 1/K)``, about 0.095 t nats for K = 2:
        on the paper's clustering model (a few hundred steps) that is 7-19 nats too high. "Nearly": even with
        exact constrained draws the geometric log estimate keeps a positive bias of order 1/K: each term
        weights the interval ``(V_{t+1}, V_t)`` by the likelihood at its inner end (an upper sum), which the
        randomness of the true volumes only partly offsets. Simulated in volume space on ``GaussianMean``
        (whose likelihood is a known function of the prior volume; data from ``simulate`` with key 1), it is
        +0.19 nat for ``n = 20, dim = 5`` and +0.11 nat for ``n = 5, dim = 2`` at K = 2, and +0.03 nat for the
        latter at K = 8 (tests/estimators/test_nested_kernels.py); a few hundred runs resolve it.
    stop_ratio : float
        Stop when a step would multiply the evidence by less than ``1 + stop_ratio``.
    max_steps : int
        Safety cap on steps per run; a run that reaches it is reported in ``settings["capped_runs"]``.

    Returns
    -------
    Estimate
        ``bound=None``: nested sampling with MCMC moves is neither a lower nor an upper bound.
    """
    if int(num_particles) != num_particles or num_particles < 2:
        raise BDMCError(f"nested sampling needs num_particles >= 2, got {num_particles}")
    check_positive(num_moves=num_moves, num_runs=num_runs, max_steps=max_steps)
    data = validate_data(model, data)
    if kernel is None:
        kernel = default_nested_kernel(model)
    if supports(kernel, CountedConstrainedMove):
        counted = kernel.counted
    else:
        fixed_evals = float(kernel.evals_per_move if supports(kernel, ConstrainedMoveCost) else 1)

        def counted(k, z, data, log_c):
            return kernel(k, z, data, log_c), fixed_evals
    K = int(num_particles)
    if volumes not in ("arithmetic", "geometric"):
        raise BDMCError(f"volumes must be 'arithmetic' or 'geometric', got {volumes!r}")
    log_shrink = math.log(K / (K + 1)) if volumes == "arithmetic" else -1.0 / K
    log_stop = math.log(stop_ratio)

    def one_run(k):
        k_init, k_loop = jax.random.split(k)
        particles = jax.vmap(model.sample_prior)(jax.random.split(k_init, K))
        log_l = jax.vmap(lambda x: _log_l(model, x, data))(particles)
        dtype = log_l.dtype
        state = (particles, log_l, jnp.asarray(-jnp.inf, dtype), jnp.zeros((), dtype), jnp.zeros((), jnp.int32),
                 jnp.asarray(False), jnp.zeros((), dtype))

        def cond(s):
            return (~s[5]) & (s[4] < max_steps)

        def body(s):
            particles, log_l, log_z, log_vol, t, _, evals = s
            worst = jnp.argmin(log_l)
            log_c = log_l[worst]
            term = log_vol + math.log(-math.expm1(log_shrink)) + log_c  # (V_t - V_{t+1}) C_t
            done = term - log_z < log_stop  # this step would change Z by a factor < 1 + stop_ratio
            kt = jax.random.fold_in(k_loop, t)
            k_pick, k_move = jax.random.split(kt)
            other = (worst + 1 + jax.random.randint(k_pick, (), 0, K - 1)) % K  # uniform among the others
            x = jax.tree.map(lambda p: p[other], particles)

            def move(i, carry):
                z, n = counted(jax.random.fold_in(k_move, i), carry[0], data, log_c)
                return z, carry[1] + n

            x, n_move = jax.lax.fori_loop(0, num_moves, move, (x, jnp.zeros((), dtype)))
            new_particles = jax.tree.map(lambda p, v: p.at[worst].set(v), particles, x)
            new_log_l = log_l.at[worst].set(_log_l(model, x, data))
            keep = lambda a, b: jax.tree.map(lambda u, v: jnp.where(done, u, v), a, b)  # noqa: E731
            return (keep(particles, new_particles), keep(log_l, new_log_l),
                    jnp.where(done, log_z, jnp.logaddexp(log_z, term)), jnp.where(done, log_vol, log_vol + log_shrink),
                    jnp.where(done, t, t + 1), done, jnp.where(done, evals, evals + n_move))

        particles, log_l, log_z, log_vol, steps, done, evals = jax.lax.while_loop(cond, body, state)
        live = log_vol + jax.scipy.special.logsumexp(log_l) - math.log(K)  # V_T * mean L of the live particles
        return jnp.logaddexp(log_z, live), steps, done, evals

    fn = jax.jit(jax.vmap(one_run))
    keys = jax.random.split(key, num_runs)
    (runs, steps, done, move_evals), seconds, compile_seconds = timed_call(fn, keys)
    steps = np.asarray(steps)
    evals = int(round(float(np.sum(move_evals)))) + K * int(num_runs)
    return Estimate.from_runs(
        np.asarray(runs, np.float64), bound=None, seconds=seconds, compile_seconds=compile_seconds, n_evals=evals,
        settings={"method": "nested_sampling", "num_moves": int(num_moves), "num_particles": K,
                  "num_runs": int(num_runs), "kernel": type(kernel).__name__, "volumes": volumes,
                  "mean_steps": float(steps.mean()),
                  "capped_runs": int(np.sum(~np.asarray(done)))},
        seed=seed_of(key), compiled=True,
    )


def _log_l(model, latent, data):
    """Full-data log-likelihood (for collapsed models, the collapsed log p(y | z))."""
    if supports(model, CollapsedDensity):
        n = jax.eval_shape(model.log_likelihood, latent, data).shape[0]
        one = jnp.ones(n, jnp.result_type(float))
        return model.log_density(latent, data, one) - model.log_density(latent, data, jnp.zeros_like(one))
    return jnp.sum(model.log_likelihood(latent, data))
