"""Hamiltonian Monte Carlo along an annealing path, with the lambda-free parts of the density cached.

The intermediate density is ``log f(x; lam) = log_prior(x) + sum_i lam_i log p(y_i | x)``. Its value and
gradient at a state are linear in lam once the log prior, the likelihood terms and the two gradients are
known, so :class:`TermsState` keeps them: a new lam costs nothing, the AIS weight increment is read from
the cached terms, and one transition costs exactly ``num_integration_steps`` evaluations (each one prior and
one likelihood gradient, which together cost what one gradient of their weighted sum costs). BlackJAX's
HMC rebuilds its state at every call because lam changes: one more gradient per transition, plus the
likelihood evaluation the weight needs.

The transition itself is BlackJAX's (``blackjax.hmc.build_kernel``): the same momentum draw, velocity
Verlet integrator, energy and accept step; ``tests/kernels`` checks that both give the same move for the
same key. Models with their own collapsed ``log_density`` (not linear in lam) use BlackJAX's kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.capabilities import JointTerms, supports
from ..contracts.kernel import KernelInfo
from ..contracts.model import legal_for_acceptance, proposal_log_density, weighted_sum
from ..contracts.nonfinite import nonfinite_check
from ..errors import OptionError
from .cached import CachedTermsKernel
from .mass import GaussianTable, inverse_mass_at
from .step_sizes import StepSizeTable, step_size_at


class TermsState(NamedTuple):
    """A chain's state with the lambda-free parts of its density: the flat position, the log prior, the
    likelihood terms (one per data case) and the gradients of the log prior and of the summed terms."""

    position: jax.Array
    log_prior: jax.Array
    log_likelihood: jax.Array
    grad_prior: jax.Array
    grad_likelihood: jax.Array


@dataclass(frozen=True)
class HMC(CachedTermsKernel):
    """Hamiltonian Monte Carlo: ``num_integration_steps`` leapfrog steps of ``step_size``.

    Its first field, ``model`` (:class:`~bdmc.kernels.cached.CachedTermsKernel`'s), is the model whose
    intermediate densities ``f(.; lam)`` the kernel leaves invariant.

    Parameters
    ----------
    step_size : float or StepSizeTable
        One step size, or a table of step sizes by lam (a pilot run's frozen choice, see
        :func:`bdmc.core.pilot.tune`); a table is read at the lam of each transition, never at a chain's
        history, so every AIS bound stays valid.
    num_integration_steps : int
        Leapfrog steps per transition.
    inverse_mass : tuple or GaussianTable, optional
        Inverse mass matrix over the flattened latent (``ravel_pytree`` order): a diagonal (a tuple), a dense
        matrix (a tuple of rows), or a pilot's :class:`~bdmc.kernels.GaussianTable`, whose covariance at each
        lam it uses (:func:`bdmc.core.pilot.tune` with ``Pilot(mass=...)``); None means the identity.
    jitter : float
        Each transition's step size is ``step_size * (1 + jitter * (2u - 1))``, ``u ~ U(0, 1)`` from the
        transition's key: a random trajectory length. A preconditioned target has unit scales, where a fixed
        trajectory of length near a multiple of 2 pi returns where it started; the pilot that fits a mass matrix
        sets 0.5. Still a fixed kernel (a mixture over step sizes, each leaving ``f(.; lam)`` invariant).
    """

    step_size: float | StepSizeTable = 0.05
    num_integration_steps: int = 10
    inverse_mass: tuple | GaussianTable | None = None
    jitter: float = 0.0

    @property
    def evals_per_step(self) -> int:
        """Gradient evaluations of one call from a bare latent (the state is rebuilt first)."""
        return self.num_integration_steps + 1

    @property
    def evals_per_cached_step(self) -> int:
        """Gradient evaluations of one :meth:`step` from a cached state."""
        return self.num_integration_steps

    def __call__(self, key, latent, data, lam):
        # The cached gradient is that of the summed terms: it serves a scalar lam only.
        if not self.caches_terms or jnp.ndim(lam) != 0:
            return self._blackjax_step(key, latent, data, lam)
        state, info = self.step(key, self.init_state(latent, data), data, lam)
        return self.state_latent(state, latent), info

    # -- cached-state interface (the engine's lean path; the bookkeeping is CachedTermsKernel's) -------------
    def evaluate_state(self, flat, unravel, data) -> TermsState:
        """The lambda-free parts of the density at the flat position ``flat`` (one gradient evaluation)."""
        return _evaluate(self.model, flat, unravel, data)

    def step(self, key, state: TermsState, data, lam, *, like=None) -> tuple[TermsState, KernelInfo]:
        """One HMC transition leaving ``f(.; lam)`` invariant, from and to a cached state.

        ``lam`` must be a scalar (the cached gradient is that of the summed terms). ``like`` gives the latent's
        structure (defaults to the shape of a prior draw).
        """
        if jnp.ndim(lam) != 0:
            raise OptionError("HMC.step needs a scalar lam; a per-case lam goes through __call__")
        unravel = self.unravel_for(like)
        flat = state.position
        metric = blackjax.mcmc.metrics.default_metric(inverse_mass_at(self.inverse_mass, lam, flat))
        velocity = jax.grad(metric.kinetic_energy)
        step_size = jnp.asarray(step_size_at(self.step_size, lam), flat.dtype)
        if self.jitter:  # a third key: fold_in(key, 1) would equal split(key)[1], the acceptance's
            key_momentum, key_accept, key_jitter = jax.random.split(key, 3)
            step_size = _jittered(key_jitter, step_size, self.jitter)
        else:
            key_momentum, key_accept = jax.random.split(key)
        momentum = metric.sample_momentum(key_momentum, flat)
        _check(state, lam, unravel)

        def leapfrog(_, carry):
            s, p = carry
            p = p + step_size * 0.5 * _grad(s, lam)
            x = s.position + step_size * 1.0 * velocity(p)
            s = _evaluate(self.model, x, unravel, data)
            _check(s, lam, unravel)
            return s, p + step_size * 0.5 * _grad(s, lam)

        end, end_momentum = jax.lax.fori_loop(0, self.num_integration_steps, leapfrog, (state, momentum))
        energy = -_value(state, lam) + metric.kinetic_energy(momentum)
        # A proposal of NaN or +inf density is rejected (-inf): a divergence, counted, never an accepted state.
        new_energy = -legal_for_acceptance(_value(end, lam)) + metric.kinetic_energy(-end_momentum)
        delta = energy - new_energy
        delta = jnp.where(jnp.isnan(delta), -jnp.inf, delta)
        p_accept = jnp.clip(jnp.exp(delta), max=1)
        accept = jax.random.bernoulli(key_accept, p_accept)
        state = jax.tree.map(lambda a, b: jnp.where(accept, a, b), end, state)
        return state, KernelInfo(p_accept, diverged(delta))

    def _blackjax_step(self, key, latent, data, lam):
        logdensity = lambda x: proposal_log_density(self.model, x, data, lam)  # noqa: E731
        state = blackjax.hmc.init(latent, logdensity)
        flat, _ = ravel_pytree(latent)
        inverse_mass = inverse_mass_at(self.inverse_mass, lam, flat)
        step_size = jnp.asarray(step_size_at(self.step_size, lam), flat.dtype)
        if self.jitter:
            key, key_jitter = jax.random.split(key)
            step_size = _jittered(key_jitter, step_size, self.jitter)
        state, info = blackjax.hmc.build_kernel()(key, state, logdensity, step_size, inverse_mass,
                                                  self.num_integration_steps)
        return state.position, KernelInfo(info.acceptance_rate, info.is_divergent)


# The energy error beyond which a trajectory counts as divergent (Stan's and BlackJAX's threshold).
DIVERGENCE_THRESHOLD = 1000.0


def _jittered(key, step_size, jitter):
    return step_size * (1.0 + jitter * (2.0 * jax.random.uniform(key, (), step_size.dtype) - 1.0))


def diverged(delta) -> jax.Array:
    """Whether a trajectory with energy change ``delta`` (log acceptance ratio) diverged."""
    return ~(delta > -DIVERGENCE_THRESHOLD)


def _evaluate(model, flat, unravel, data) -> TermsState:
    if supports(model, JointTerms):  # one evaluation of both, each gradient from its pull-back
        (log_prior, terms), pullback = jax.vjp(lambda f: model.prior_and_terms(unravel(f), data), flat)
        (grad_prior,) = pullback((jnp.ones_like(log_prior), jnp.zeros_like(terms)))
        (grad_likelihood,) = pullback((jnp.zeros_like(log_prior), jnp.ones_like(terms)))
        return TermsState(flat, log_prior, terms, grad_prior, grad_likelihood)
    log_prior, grad_prior = jax.value_and_grad(lambda f: model.log_prior(unravel(f)))(flat)
    terms, pullback = jax.vjp(lambda f: model.log_likelihood(unravel(f), data), flat)
    (grad_likelihood,) = pullback(jnp.ones_like(terms))
    return TermsState(flat, log_prior, terms, grad_prior, grad_likelihood)


def _value(state: TermsState, lam) -> jax.Array:
    return state.log_prior + weighted_sum(lam, state.log_likelihood)


def _grad(state: TermsState, lam) -> jax.Array:
    # A scalar lam scales the summed terms' gradient; 0 * (non-finite) stays 0, as in weighted_sum.
    lam = jnp.asarray(lam, state.grad_likelihood.dtype)
    return state.grad_prior + jnp.where(lam == 0, 0.0, lam * state.grad_likelihood)


def _check(state: TermsState, lam, unravel) -> None:
    nonfinite_check(_value(state, lam) < jnp.inf, unravel(state.position))


# The step size and inverse mass (numbers or tables) are data, the rest static: a compiled run takes a pilot's
# new tables as arguments instead of compiling again.
jax.tree_util.register_dataclass(HMC, data_fields=["step_size", "inverse_mass"],
                                 meta_fields=["model", "num_integration_steps", "jitter"])
