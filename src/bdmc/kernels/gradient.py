"""Random-walk Metropolis, MALA and NUTS from BlackJAX, on the intermediate densities f(x; lambda).

Each kernel is a frozen dataclass bound to a model: ``kernel(key, latent, data, lam) -> (latent, info)``.
The BlackJAX state (log density, gradient) is rebuilt from the latent at every call because ``lam`` changes
between calls; the cost of that is counted in ``evals_per_step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.kernel import KernelInfo
from ..contracts.model import proposal_log_density
from .mass import inverse_mass_at


def _target(model, data, lam):
    # NaN or +inf at a proposal is a rejection (-inf), counted by the engine as a divergence.
    return lambda x: proposal_log_density(model, x, data, lam)


@dataclass(frozen=True)
class RandomWalkMH:
    """Gaussian random-walk Metropolis-Hastings with isotropic proposal scale ``scale``.

    Only for models whose latents are all continuous and unconstrained.
    """

    model: Any
    scale: float = 0.1
    evals_per_step: int = 2

    def __call__(self, key, latent, data, lam):
        logdensity = _target(self.model, data, lam)
        state = blackjax.rmh.init(latent, logdensity)
        step = blackjax.mcmc.random_walk.build_additive_step()
        state, info = step(key, state, logdensity, blackjax.mcmc.random_walk.normal(jnp.asarray(self.scale)))
        return state.position, KernelInfo(info.acceptance_rate)


@dataclass(frozen=True)
class MALA:
    """Metropolis-adjusted Langevin algorithm with step size ``step_size``.

    ``inverse_mass`` preconditions it as for :class:`~bdmc.kernels.HMC` (a diagonal, a dense matrix or a
    pilot's :class:`~bdmc.kernels.GaussianTable`): BlackJAX's MALA runs on ``y = A^-1 x`` with ``A A^T`` the
    inverse mass at lam, a linear change of variables fixed by lam, so the kernel stays a fixed kernel.
    """

    model: Any
    step_size: float = 0.01
    inverse_mass: Any = None
    evals_per_step: int = 2

    def __call__(self, key, latent, data, lam):
        logdensity = _target(self.model, data, lam)
        if self.inverse_mass is None:
            state = blackjax.mala.init(latent, logdensity)
            state, info = blackjax.mala.build_kernel()(key, state, logdensity, self.step_size)
            return state.position, KernelInfo(info.acceptance_rate)
        flat, unravel = ravel_pytree(latent)
        scale = inverse_mass_at(self.inverse_mass, lam, flat)
        if scale.ndim == 1:
            forward, backward = (lambda y: jnp.sqrt(scale) * y), (lambda x: x / jnp.sqrt(scale))
        else:
            factor = jnp.linalg.cholesky(scale)
            forward = lambda y: factor @ y  # noqa: E731
            backward = lambda x: jax.scipy.linalg.solve_triangular(factor, x, lower=True)  # noqa: E731
        in_y = lambda y: logdensity(unravel(forward(y)))  # noqa: E731
        state = blackjax.mala.init(backward(flat), in_y)
        state, info = blackjax.mala.build_kernel()(key, state, in_y, self.step_size)
        return unravel(forward(state.position)), KernelInfo(info.acceptance_rate)


@dataclass(frozen=True)
class NUTS:
    """The No-U-Turn sampler: HMC whose trajectory length adapts to the current intermediate distribution.

    Useful along an annealing path, where the target widens from the posterior to the prior and a fixed
    trajectory tuned at the posterior crawls through the prior. ``inverse_mass`` is an inverse mass matrix
    over the flattened latent, as for :class:`~bdmc.kernels.HMC` (a diagonal, a dense matrix or a pilot's
    :class:`~bdmc.kernels.GaussianTable`); None means the identity.
    ``evals_per_step`` counts the largest tree, ``2 ** max_tree_depth`` gradient calls: an upper bound.
    """

    model: Any
    step_size: float = 0.05
    inverse_mass: Any = None
    max_tree_depth: int = 8

    @property
    def evals_per_step(self) -> int:
        return 2 ** self.max_tree_depth

    def __call__(self, key, latent, data, lam):
        logdensity = _target(self.model, data, lam)
        state = blackjax.nuts.init(latent, logdensity)
        flat, _ = ravel_pytree(latent)
        inverse_mass = inverse_mass_at(self.inverse_mass, lam, flat)
        state, info = blackjax.nuts.build_kernel()(key, state, logdensity, self.step_size, inverse_mass,
                                                   max_num_doublings=self.max_tree_depth)
        return state.position, KernelInfo(info.acceptance_rate, info.is_divergent)
