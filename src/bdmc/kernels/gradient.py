"""Random-walk Metropolis, MALA and NUTS from BlackJAX, on the intermediate densities f(x; lambda).

Each kernel is a frozen dataclass bound to a model: ``kernel(key, latent, data, lam) -> (latent, info)``.
The BlackJAX state (log density, gradient) is rebuilt from the latent at every call because ``lam`` changes
between calls; the cost of that is counted in ``evals_per_step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import blackjax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.kernel import KernelInfo
from ..contracts.model import proposal_log_density


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
    """Metropolis-adjusted Langevin algorithm with step size ``step_size``."""

    model: Any
    step_size: float = 0.01
    evals_per_step: int = 2

    def __call__(self, key, latent, data, lam):
        logdensity = _target(self.model, data, lam)
        state = blackjax.mala.init(latent, logdensity)
        state, info = blackjax.mala.build_kernel()(key, state, logdensity, self.step_size)
        return state.position, KernelInfo(info.acceptance_rate)


@dataclass(frozen=True)
class NUTS:
    """The No-U-Turn sampler: HMC whose trajectory length adapts to the current intermediate distribution.

    Useful along an annealing path, where the target widens from the posterior to the prior and a fixed
    trajectory tuned at the posterior crawls through the prior. ``inverse_mass`` is a diagonal inverse mass
    matrix over the flattened latent (a tuple, so the kernel stays hashable); None means the identity.
    ``evals_per_step`` counts the largest tree, ``2 ** max_tree_depth`` gradient calls: an upper bound.
    """

    model: Any
    step_size: float = 0.05
    inverse_mass: tuple | None = None
    max_tree_depth: int = 8

    @property
    def evals_per_step(self) -> int:
        return 2 ** self.max_tree_depth

    def __call__(self, key, latent, data, lam):
        logdensity = _target(self.model, data, lam)
        state = blackjax.nuts.init(latent, logdensity)
        flat, _ = ravel_pytree(latent)
        inverse_mass = (jnp.ones_like(flat) if self.inverse_mass is None
                        else jnp.asarray(self.inverse_mass, flat.dtype))
        state, info = blackjax.nuts.build_kernel()(key, state, logdensity, self.step_size, inverse_mass,
                                                   max_num_doublings=self.max_tree_depth)
        return state.position, KernelInfo(info.acceptance_rate, info.is_divergent)
