"""Single-site Metropolis-Hastings: the kernel of WebPPL's ``MH``, one latent coordinate per update.

WebPPL's MH picks one random choice of the execution trace uniformly at random, proposes a new value for it
from its prior (unless the program gives a drift kernel) and accepts by the ratio of the tempered trace
scores (``factorCoeff`` multiplies the ``factor`` / ``observe`` scores; its AIS makes one such update per
intermediate distribution). :class:`SingleSiteMH` is that move on a bdmc latent, flattened
(``ravel_pytree`` order), accepting by ``f(.; lam) = prior * likelihood^lam``:

- ``order="random"`` picks each updated coordinate uniformly at random (WebPPL's choice);
  ``order="sweep"`` visits the coordinates in index order, every one once per sweep.
- ``proposal="random-walk"`` adds ``N(0, scale_j^2)`` to coordinate ``j``; ``proposal="independent"`` draws
  it afresh from ``N(loc_j, scale_j^2)``, Hastings-corrected. The Model contract has no per-coordinate
  prior to propose from, so WebPPL's prior proposal is the independent one with the prior's ``loc`` and
  ``scale``: exactly WebPPL's move on a model whose unconstrained prior is independent Gaussian per
  coordinate (matrix factorization: ``loc=0``, ``scale=1``), and a valid MH move on any other model.

The chain state caches the log prior and the likelihood terms (the :class:`CachedTransition` capability),
so an update costs one density evaluation, as a WebPPL MH step costs one run of the program: the AIS weight
is read from the cached terms and the current density is never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.kernel import KernelInfo
from ..contracts.model import legal_for_acceptance, log_density, weighted_sum
from ..contracts.nonfinite import nonfinite_check
from ..errors import BDMCError
from .cached import CachedTerms, CachedTermsKernel

ORDERS = ("random", "sweep")
PROPOSALS = ("random-walk", "independent")


@dataclass(frozen=True)
class SingleSiteMH(CachedTermsKernel):
    """Metropolis-Hastings that changes one latent coordinate per update (WebPPL's MH).

    Its first field, ``model`` (:class:`~bdmc.kernels.cached.CachedTermsKernel`'s), is the model whose
    intermediate densities ``f(.; lam)`` the kernel leaves invariant; its latents must be continuous and
    unconstrained (the PPL adapters' are).

    Parameters
    ----------
    scale : float or tuple of float
        The proposal's standard deviation, one for every coordinate or one per coordinate of the flattened
        latent (a tuple, so the kernel stays hashable).
    proposal : {"random-walk", "independent"}
        ``x_j + scale_j * z`` (symmetric), or a fresh ``loc_j + scale_j * z`` with the Hastings correction
        ``log q(x_j) - log q(x_j')``; the latter with the prior's ``loc`` / ``scale`` is WebPPL's proposal
        when the prior is independent Gaussian per coordinate.
    loc : float or tuple of float
        The independent proposal's mean (ignored by the random walk).
    order : {"random", "sweep"}
        The coordinate of each update: uniform at random (WebPPL), or every coordinate in index order.
    num_updates : int, optional
        Updates per call: default 1 with ``order="random"`` (one WebPPL MH step per intermediate
        distribution, as WebPPL's AIS), one sweep (``dim``) with ``order="sweep"``, where it must be a
        multiple of ``dim``.

    Notes
    -----
    One call from a bare latent costs ``1 + num_updates`` density evaluations (``evals_per_step``); from a
    cached state, on the engine's lean path, ``num_updates`` (``evals_per_cached_step``).
    """

    scale: float | tuple = 0.1
    proposal: str = "random-walk"
    loc: float | tuple = 0.0
    order: str = "random"
    num_updates: int | None = None

    def __post_init__(self):
        if self.proposal not in PROPOSALS:
            raise BDMCError(f"SingleSiteMH proposal must be one of {list(PROPOSALS)}, got {self.proposal!r}")
        if self.order not in ORDERS:
            raise BDMCError(f"SingleSiteMH order must be one of {list(ORDERS)}, got {self.order!r}")
        scales = self.scale if isinstance(self.scale, tuple) else (self.scale,)
        if not all(float(s) > 0 for s in scales):
            raise BDMCError(f"SingleSiteMH scale must be positive (per coordinate), got {self.scale!r}")
        if self.num_updates is not None and (isinstance(self.num_updates, bool) or int(self.num_updates) < 1):
            raise BDMCError(f"SingleSiteMH num_updates must be a positive integer, got {self.num_updates!r}")

    # -- cost accounting -------------------------------------------------------------------------------------
    @property
    def evals_per_step(self) -> int:
        """Density evaluations of one call from a bare latent (the current one, then one per update)."""
        return 1 + self.evals_per_cached_step

    @property
    def evals_per_cached_step(self) -> int:
        """Density evaluations of one :meth:`step` from a cached state (one per update).

        With ``order="sweep"`` and no ``num_updates`` this is a sweep's, which needs the latent's size: it is
        read from a prior draw's shape (no evaluation).
        """
        if self.num_updates is not None:
            return int(self.num_updates)
        if self.order == "random":
            return 1
        like = jax.eval_shape(self.model.sample_prior, jax.random.key(0))
        return int(sum(x.size for x in jax.tree.leaves(like)))

    # -- the kernel contract ---------------------------------------------------------------------------------
    def __call__(self, key, latent, data, lam):
        if not self.caches_terms:
            return self._collapsed_call(key, latent, data, lam)
        state, info = self.step(key, self.init_state(latent, data), data, lam, like=latent)
        return self.state_latent(state, latent), info

    # -- cached-state interface (the engine's lean path; the bookkeeping is CachedTermsKernel's) --------------
    def evaluate_state(self, flat, unravel, data) -> CachedTerms:
        """The log prior and the likelihood terms at the flat position ``flat`` (one evaluation)."""
        return _evaluate(self.model, flat, unravel, data)

    def step(self, key, state: CachedTerms, data, lam, *, like=None) -> tuple[CachedTerms, KernelInfo]:
        """``num_updates`` single-site updates leaving ``f(.; lam)`` invariant, from and to a cached state.

        ``lam`` may be a scalar or one weight per data case (the terms are cached one per case).
        """
        unravel = self.unravel_for(like)

        def value(s):
            return s.log_prior + weighted_sum(lam, s.log_likelihood)

        nonfinite_check(value(state) < jnp.inf, unravel(state.position))

        def evaluate(flat):
            s = _evaluate(self.model, flat, unravel, data)
            nonfinite_check(value(s) < jnp.inf, unravel(flat))
            return s

        return self._updates(key, state, value, evaluate)

    # -- the moves -------------------------------------------------------------------------------------------
    def _updates(self, key, state, value, evaluate):
        """The loop of site updates over a state with ``.position``; ``value(state)`` is log f(.; lam)."""
        flat = state.position
        dim = flat.shape[0]
        count = self._count(dim)
        dtype = flat.dtype
        scale = jnp.broadcast_to(jnp.asarray(self.scale, dtype), (dim,))
        loc = jnp.broadcast_to(jnp.asarray(self.loc, dtype), (dim,))
        keys = jax.random.split(key, count)

        def update(i, carry):
            s, acc = carry
            k_site, k_prop, k_acc = jax.random.split(keys[i], 3)
            j = jax.random.randint(k_site, (), 0, dim) if self.order == "random" else i % dim
            old, z = s.position[j], jax.random.normal(k_prop, (), dtype)
            if self.proposal == "random-walk":
                new, hastings = old + scale[j] * z, jnp.zeros((), dtype)
            else:
                new = loc[j] + scale[j] * z
                hastings = self._log_hastings(old, new, loc[j], scale[j])
            proposed = evaluate(s.position.at[j].set(new))
            # A NaN or +inf proposal is rejected (a divergence the engine counts).
            log_ratio = legal_for_acceptance(value(proposed)) - value(s) + hastings
            log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
            p_accept = jnp.exp(jnp.minimum(log_ratio, 0.0))
            accept = jax.random.uniform(k_acc, (), dtype) < p_accept
            s = jax.tree.map(lambda a, b: jnp.where(accept, a, b), proposed, s)
            return s, acc + p_accept

        state, total = jax.lax.fori_loop(0, count, update, (state, jnp.zeros((), dtype)))
        return state, KernelInfo(total / count)

    @staticmethod
    def _log_hastings(old, new, loc, scale):
        """``log q(old) - log q(new)`` for the independent proposal ``q = N(loc, scale^2)``."""
        return 0.5 * (((new - loc) / scale) ** 2 - ((old - loc) / scale) ** 2)

    def _count(self, dim: int) -> int:
        for name in ("scale", "loc"):
            value = getattr(self, name)
            if isinstance(value, tuple) and len(value) not in (1, dim):
                raise BDMCError(f"SingleSiteMH {name} has {len(value)} entries for a latent of {dim} coordinates")
        if self.num_updates is None:
            return 1 if self.order == "random" else dim
        count = int(self.num_updates)
        if self.order == "sweep" and count % dim:
            raise BDMCError(f"SingleSiteMH with order='sweep' needs num_updates a multiple of the latent's "
                            f"{dim} coordinates (whole sweeps), got {count}")
        return count

    def _collapsed_call(self, key, latent, data, lam):
        # A model with its own (collapsed) density: only its value at lam is known, so it is the state.
        flat, unravel = ravel_pytree(latent)
        start = _Valued(flat, log_density(self.model, latent, data, lam))
        state, info = self._updates(key, start, lambda s: s.value,
                                    lambda f: _Valued(f, log_density(self.model, unravel(f), data, lam)))
        return unravel(state.position), info


class _Valued(NamedTuple):
    position: jax.Array
    value: jax.Array


def _evaluate(model, flat, unravel, data) -> CachedTerms:
    latent = unravel(flat)
    return CachedTerms(flat, model.log_prior(latent), model.log_likelihood(latent, data))
