"""Posterior samplers that simulation-based calibration (:func:`bdmc.checks.sbc`) audits.

A sampler draws from ``p(x | y)`` of one data set: ``sampler.draws(key, data, *, num_draws)`` returns the
latent pytree with a leading axis of ``num_draws`` draws (the :class:`~bdmc.contracts.sampler.Sampler` contract,
re-exported here; its optional hooks ``batch``, ``thin`` and ``diagnosed_draws`` are protocols of
:mod:`bdmc.contracts.sampler`). Every sampler here is pure JAX, so SBC runs all
its replications as one compiled, ``vmap``-ped program (``traceable = True``); a sampler that leaves JAX
(another PPL's own sampler) sets ``traceable = False`` and is called once per replication.

Chains start from an independent prior draw, never from the latent that generated the data: a chain started
there is already at an exact posterior sample and would hide a sampler that does not converge.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from ..contracts.capabilities import HostDensity, supports
from ..contracts.kernel import HoldsModel, join_kernel, split_kernel
from ..contracts.model import log_density
from ..contracts.sampler import Sampler
from ..errors import BDMCError, require
from ..kernels.gradient import MALA, NUTS
from ..kernels.hmc import HMC
from ..kernels.step_sizes import step_size_at
from ..ppl.registry import PPLS

__all__ = ["STEP_SIZE_KERNELS", "KernelSampler", "NumPyroNUTS", "Sampler"]

STEP_SIZE_KERNELS = (HMC, NUTS, MALA)  # the kernels whose step KernelSampler(target_accept=...) adapts


@dataclass(frozen=True)
class KernelSampler:
    """Any bdmc kernel run at ``lam = 1`` (the posterior) as a posterior sampler.

    One chain per data set starts from an independent prior draw, runs ``warmup`` transitions, then keeps
    every ``thin``-th of ``num_draws * thin`` transitions.

    Parameters
    ----------
    kernel : Kernel
        ``kernel(key, latent, data, lam) -> (latent, info)``.
    warmup : int
        Transitions discarded before the first kept draw.
    thin : int
        Transitions between kept draws; raise it until the draws are near independent (SBC records their
        effective sample size).
    model : Model, optional
        The model whose prior starts the chain; defaults to the kernel's own ``model`` attribute (gradient
        kernels have one; a Gibbs sweep does not, so pass it).
    target_accept : float, optional
        For a kernel with a step size (:data:`STEP_SIZE_KERNELS`: HMC, NUTS, MALA): adapt a factor on its step
        size (read at lambda = 1) by dual averaging toward this mean acceptance during the warm-up of each data
        set, then keep it fixed,
        as Stan and NumPyro do. A step size tuned on one data set can be far too large on another (a posterior
        many times narrower): the chain then rejects every move and never leaves its start. The kept draws come
        from a fixed kernel, so they are still exact in the limit.
    """

    kernel: Any
    warmup: int = 100
    thin: int = 1
    model: Any = None
    traceable: bool = True
    target_accept: float | None = None

    @property
    def batch(self) -> str:
        """How SBC runs its replications: ``"map"`` for NUTS (trees of data-dependent depth), else ``"vmap"``; a
        density evaluated outside JAX is batched even under NUTS (a request per chain would cost more than the
        batch's longest tree)."""
        return "map" if isinstance(self.kernel, NUTS) and not supports(self._model(), HostDensity) else "vmap"

    def __post_init__(self):
        if self.warmup < 0 or self.thin < 1:
            raise BDMCError(f"KernelSampler needs warmup >= 0 and thin >= 1, got warmup={self.warmup}, "
                            f"thin={self.thin}")
        if self._model() is None:
            raise BDMCError(f"KernelSampler: {type(self.kernel).__name__} holds no model to draw the chain's start "
                            "from; pass model=...")
        if self.target_accept is not None:
            if not 0 < self.target_accept < 1:
                raise BDMCError(f"KernelSampler: target_accept must lie in (0, 1), got {self.target_accept}")
            if not isinstance(self.kernel, STEP_SIZE_KERNELS):
                raise BDMCError(f"KernelSampler: target_accept adapts a step size, and {type(self.kernel).__name__} "
                                "has none")

    def _model(self):
        if self.model is not None:
            return self.model
        return self.kernel.model if supports(self.kernel, HoldsModel) else None

    def draws(self, key, data, *, num_draws: int):
        sampler_def, params = split_kernel(self)
        return _kernel_sampler_draws(key, data, params, sampler_def=sampler_def, num_draws=int(num_draws))

    def _draws(self, key, data, num_draws: int):
        model = self._model()
        k_init, k_warm, k_run = jax.random.split(key, 3)
        one = jnp.ones((), jnp.result_type(float))

        latent, kernel = self._warmup(k_warm, model.sample_prior(k_init), data, one)

        def step(latent, k):
            return kernel(k, latent, data, one)[0], None

        def keep(latent, k):
            latent = jax.lax.scan(step, latent, jax.random.split(k, self.thin))[0]
            return latent, latent

        return jax.lax.scan(keep, latent, jax.random.split(k_run, num_draws))[1]

    def _warmup(self, key, latent, data, one):
        """The chain after ``warmup`` transitions, and the kernel it keeps (its step adapted, if asked)."""
        keys = jax.random.split(key, self.warmup)
        if self.target_accept is None:
            return jax.lax.scan(lambda x, k: (self.kernel(k, x, data, one)[0], None), latent, keys)[0], self.kernel
        from blackjax.adaptation.step_size import dual_averaging_adaptation

        base = jnp.asarray(step_size_at(self.kernel.step_size, one), one.dtype)
        init, update, final = dual_averaging_adaptation(self.target_accept)

        def body(carry, k):
            x, state = carry
            kernel = dataclasses.replace(self.kernel, step_size=base * jnp.exp(state.log_step_size))
            x, info = kernel(k, x, data, one)
            accepted = jnp.where(jnp.isfinite(info.acceptance), info.acceptance, 0.0)
            return (x, update(state, accepted)), None

        (latent, state), _ = jax.lax.scan(body, (latent, init(jnp.ones((), one.dtype))), keys)
        return latent, dataclasses.replace(self.kernel, step_size=base * final(state))

    def settings(self) -> dict:
        return {"sampler": "kernel", "kernel": type(self.kernel).__name__, "warmup": self.warmup, "thin": self.thin,
                "target_accept": self.target_accept}


# The kernel is data (its numbers, when it is a pytree of them: a pilot's step-size table), the rest static: SBC
# takes a new table as an argument of its compiled program instead of compiling again.
jax.tree_util.register_dataclass(KernelSampler, data_fields=["kernel"],
                                 meta_fields=["warmup", "thin", "model", "traceable", "target_accept"])


@partial(jax.jit, static_argnames=("sampler_def", "num_draws"))
def _kernel_sampler_draws(key, data, params, *, sampler_def, num_draws: int):
    """One compiled chain per (sampler structure, draws, data shapes)."""
    return join_kernel(sampler_def, params)._draws(key, data, num_draws)


@dataclass(frozen=True)
class NumPyroNUTS:
    """NumPyro's own NUTS (its functional ``hmc(algo="NUTS")``, with its warm-up adaptation) on a program from
    :func:`bdmc.ppl.from_numpyro`.

    The potential is the program's log joint on NumPyro's unconstrained space, as the adapter evaluates it
    (the same density NumPyro's ``MCMC`` samples). The kernel is pure JAX, so SBC compiles it once over all
    replications (NumPyro's ``MCMC`` would re-enter Python per data set). It maps over them rather than vmap
    (``batch = "map"``): NUTS builds trees of data-dependent depth, and a vmapped batch runs every chain for as
    long as its deepest tree (one data set with a narrow posterior holds the batch at the largest trees).

    Parameters
    ----------
    model : NumPyroModel
    num_warmup : int
        NumPyro's warm-up (step-size and mass-matrix adaptation) transitions.
    thin : int
        Transitions between kept draws.
    step_size : float
        Initial step size (the fixed one when ``adapt_step_size=False``).
    adapt_step_size, adapt_mass_matrix, dense_mass, target_accept_prob, max_tree_depth
        As for ``numpyro.infer.NUTS``.
    """

    model: Any
    num_warmup: int = 500
    thin: int = 1
    step_size: float = 1.0
    adapt_step_size: bool = True
    adapt_mass_matrix: bool = True
    dense_mass: bool = False
    target_accept_prob: float = 0.8
    max_tree_depth: int = 10
    traceable: bool = True
    batch: str = "map"

    def __post_init__(self):
        require("numpyro", extra=PPLS["numpyro"].extra)
        if self.num_warmup < 0 or self.thin < 1:
            raise BDMCError(f"NumPyroNUTS needs num_warmup >= 0 and thin >= 1, got num_warmup={self.num_warmup}, "
                            f"thin={self.thin}")

    def draws(self, key, data, *, num_draws: int):
        return _numpyro_nuts_run(key, data, sampler=self, num_draws=int(num_draws))[0]

    def diagnosed_draws(self, key, data, *, num_draws: int):
        """``draws`` with the chain's divergences: ``(draws, {"divergences": int, "transitions": int})``, counted
        over every transition after warm-up (the thinned-away ones too)."""
        draws, diverging = _numpyro_nuts_run(key, data, sampler=self, num_draws=int(num_draws))
        return draws, {"divergences": int(jnp.sum(diverging)), "transitions": int(num_draws) * self.thin}

    def _run(self, key, data, num_draws: int):
        from numpyro.infer.hmc import hmc

        model = self.model
        k_init, k_run = jax.random.split(key)
        init_kernel, sample_kernel = hmc(potential_fn=lambda u: -log_density(model, u, data, 1.0), algo="NUTS")
        state = init_kernel(model.sample_prior(k_init), self.num_warmup, step_size=self.step_size,
                            adapt_step_size=self.adapt_step_size, adapt_mass_matrix=self.adapt_mass_matrix,
                            dense_mass=self.dense_mass, target_accept_prob=self.target_accept_prob,
                            max_tree_depth=self.max_tree_depth, rng_key=k_run)

        def step(state, _):
            return sample_kernel(state), None

        state = jax.lax.scan(step, state, None, length=self.num_warmup)[0]

        def keep(state, _):
            def one(carry, _):
                state, diverged = carry
                state = sample_kernel(state)
                return (state, diverged + state.diverging.astype(jnp.int32)), None

            state, diverged = jax.lax.scan(one, (state, jnp.zeros((), jnp.int32)), None, length=self.thin)[0]
            return state, (state.z, diverged)

        return jax.lax.scan(keep, state, None, length=num_draws)[1]

    def settings(self) -> dict:
        return {"sampler": "numpyro-nuts", "num_warmup": self.num_warmup, "thin": self.thin,
                "step_size": self.step_size, "adapt_step_size": self.adapt_step_size,
                "adapt_mass_matrix": self.adapt_mass_matrix, "dense_mass": self.dense_mass,
                "target_accept_prob": self.target_accept_prob, "max_tree_depth": self.max_tree_depth}


@partial(jax.jit, static_argnames=("sampler", "num_draws"))
def _numpyro_nuts_run(key, data, *, sampler: NumPyroNUTS, num_draws: int):
    """One compiled chain per (sampler, draws, data shapes): equal samplers (same program, same options) share it,
    so a second audit of a program reuses the first's compilation."""
    return sampler._run(key, data, num_draws)
