"""The two ends of an annealing run (:mod:`bdmc.core.engine`): its initial state, and its final latents, weights
and evidence with the final states' density check; and every chain's position as one flat vector."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ..contracts.kernel import join_kernel
from ..contracts.model import log_density
from .failures import ACCEPTED, checked, expand
from .records import AnnealState, Failures, num_chains
from .resampling import final_log_evidence


def start_state(params, data, init_latents, policy_args, *, model, kernel_def, cached, runs, policy):
    """The run's initial state. On the lean path a chain's state is the kernel's cached state, whose densities
    are checked here (a failure is reported as the first step's weight). A policy's first carry is made here."""
    kernel = join_kernel(kernel_def, params)
    chains = num_chains(init_latents)
    dtype = jnp.result_type(float)
    never = jnp.full(chains, -1, jnp.int32)
    states, failures = init_latents, Failures(never, never, jnp.zeros(chains, jnp.int32), init_latents)
    if cached:
        bad, at, states = jax.vmap(checked(lambda x: kernel.init_state(x, data)))(init_latents)
        failures = failures._replace(density_step=jnp.where(bad, 0, never), density_at=at)
    carry = () if policy is None else policy.init(
        policy_args, chain_positions(kernel, states, jax.tree.map(lambda a: a[0], init_latents), cached))
    return AnnealState(states, jnp.zeros(chains, dtype), jnp.zeros(runs, dtype), failures,
                       jnp.zeros(chains, jnp.int32), carry)


def chain_positions(kernel, states, like, cached):
    """Every chain's latent as one flat vector (chains, d): what a step policy reads of the chains."""
    if cached:
        return jax.vmap(lambda s: ravel_pytree(kernel.state_latent(s, like))[0])(states)
    return jax.vmap(lambda x: ravel_pytree(x)[0])(states)


def finish_state(params, data, state: AnnealState, lam_end, last_step, *, model, kernel_def, cached, num_particles):
    """Final latents, log-weights, each run's log-evidence and the final states' failures (a NaN or +inf
    density at the state a chain ends in, which no later weight would see)."""
    kernel = join_kernel(kernel_def, params)
    latents = (jax.vmap(kernel.state_latent)(state.states, state.failures.density_at) if cached
               else state.states)
    bad, at, _ = jax.vmap(checked(lambda x: log_density(model, x, data, lam_end)))(latents)
    failures = state.failures
    last = jnp.full_like(failures.density_step, last_step)
    hit = (failures.density_step < 0) & bad
    failures = Failures(failures.weight_step, jnp.where(hit, last, failures.density_step),
                        jnp.where(hit, ACCEPTED, failures.density_phase),
                        jax.tree.map(lambda a, b: jnp.where(expand(hit, a), b, a), failures.density_at, at))
    evidence = final_log_evidence(state.log_weights, state.log_evidence, num_particles)
    return latents, state.log_weights, evidence, failures
