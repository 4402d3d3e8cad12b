"""One chunk of an annealing run's steps: the compiled unit of :mod:`bdmc.core.engine`, whose module docstring
gives the step (weigh, resample, refresh, move), the key convention and the failure records it keeps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.kernel import join_kernel
from ..contracts.model import increment_from_terms, weighted_sum
from .engine_ends import chain_positions
from .failures import checked, expand, flagged
from .records import AnnealState, Failures, StepOutput
from .resampling import group_ess, weights_ess

RESAMPLE_STREAM = 0x2545F491  # a policy step's resampling keys, folded into the step's key


def chunk_steps(params, key, data, state, lam_from, lam_to, active, index, *, model, kernel_def, rule, resampler,
           num_particles, record, cached, policy):
    """Advance all chains of one run through one chunk of steps (the compiled unit)."""
    kernel = join_kernel(kernel_def, params)

    def weigh(states, like, lf, lt):
        if cached:
            def inc(s):
                return increment_from_terms(kernel.state_terms(s), kernel.state_latent(s, like), lf, lt)
            return jax.vmap(checked(inc, like))(states)
        return jax.vmap(checked(lambda x: rule.increment(model, x, data, lf, lt)))(states)

    def loglik(states):
        if cached:
            return jax.vmap(lambda s: jnp.sum(kernel.state_terms(s)))(states)
        return jax.vmap(lambda x: jnp.sum(model.log_likelihood(x, data)))(states)

    def move(kernel, keys, states, like, lt):
        """The kernel's move: ``(diverged, accepted_bad, accepted_at, (states, info))`` per chain. A NaN or +inf
        density the kernel evaluated (at a proposal it rejected) is a divergence; at the state it moved to (on
        the lean path, whose cached terms give that density free) a failure. Off the lean path the next
        weight, or the final check, evaluates the state the kernel moved to."""
        if cached:
            def step(k, s):
                return kernel.step(k, s, data, lt, like=like)
            diverged, (new, info) = jax.vmap(flagged(step))(keys, states)
            value = jax.vmap(lambda s: s.log_prior + weighted_sum(lt, kernel.state_terms(s)))(new)
            bad = ~(value < jnp.inf)
            at = jax.vmap(kernel.state_latent, in_axes=(0, None))(new, like)
        else:
            diverged, (new, info) = jax.vmap(flagged(lambda k, x: kernel(k, x, data, lt)))(keys, states)
            bad, at = jnp.zeros_like(diverged), new
        if info.divergent is not None:
            diverged = diverged | info.divergent
        return diverged, bad, at, (new, info)

    def policy_moves(k_t, states, carry, like, lt, at, chains, dtype):
        """A policy's moves: each with the kernel the policy gives, adapting its carry after each; their
        acceptances recorded in the weights' dtype."""
        def one(c, j):
            states, carry, bad, at, count = c
            d, b, a, (states, info) = move(policy.kernel(carry, kernel, lt),
                                           jax.random.split(jax.random.fold_in(k_t, j), chains), states, like, lt)
            first = b & ~bad
            at = jax.tree.map(lambda x, y: jnp.where(expand(first, x), y, x), at, a)
            return ((states, policy.adapt(carry, info.acceptance), bad | b, at, count + d.astype(jnp.int32)),
                    (chain_positions(kernel, states, like, cached), info.acceptance.astype(dtype)))

        start = (states, carry, jnp.zeros(chains, bool), at, jnp.zeros(chains, jnp.int32))
        return jax.lax.scan(one, start, jnp.arange(int(policy.moves)))

    def transition(state: AnnealState, t, lf, lt):
        states, logw, log_z, failures, carry = (state.states, state.log_weights, state.log_evidence,
                                                state.failures, state.policy)
        like = jax.tree.map(lambda a: a[0], failures.density_at)  # one chain's latent: every latent's structure
        # Keys derive from the global step index, so chunking never changes the numbers.
        k_t = jax.random.fold_in(key, t)
        k_resample, k_refresh, k_move = jax.random.split(k_t, 3)
        chains = logw.shape[0]
        if policy is not None:
            ll = loglik(states)
            lf, lt = policy.lambdas(carry, ll, lf, lt, t)

        bad_w, at_w, inc = weigh(states, like, lf, lt)
        inc = inc.astype(logw.dtype)
        # A chain whose weight is already zero stays zero whatever its increment (-inf + inf would be NaN).
        dead = logw == -jnp.inf
        broken = (jnp.isnan(inc) | (inc == jnp.inf)) & ~dead
        weight_step = jnp.where((failures.weight_step < 0) & broken, t, failures.weight_step)
        logw = jnp.where(dead, logw, logw + inc)
        if num_particles > 1:
            ess = jnp.mean(group_ess(logw.reshape(-1, num_particles)))
            keyed = {} if policy is None else {"group_keys": jax.vmap(lambda r: jax.random.fold_in(k_t, r))(
                RESAMPLE_STREAM + np.arange(log_z.shape[0], dtype=np.uint32))}
            states, logw, log_z, resampled = resampler(k_resample, states, logw, log_z, num_particles, **keyed)
            resampled = jnp.mean(resampled.astype(logw.dtype))
        else:
            ess, resampled = weights_ess(logw), jnp.zeros((), logw.dtype)
        if cached:  # the plain AIS step: no refresh
            bad_r, at_r = jnp.zeros(chains, bool), failures.density_at
        else:
            bad_r, at_r, states = jax.vmap(checked(lambda k, x: rule.refresh(k, model, x, data, lf, lt)))(
                jax.random.split(k_refresh, chains), states)
        if policy is None:
            diverged, bad_k, at_k, (states, info) = move(kernel, jax.random.split(k_move, chains), states, like, lt)
            count, acceptance, step_record = diverged.astype(jnp.int32), info.acceptance, ()
        else:
            before = chain_positions(kernel, states, like, cached)
            (states, carry, bad_k, at_k, count), (flats, acceptance) = policy_moves(
                k_t, states, carry, like, lt, failures.density_at, chains, logw.dtype)
            carry, step_record = policy.record(carry, ll, lf, lt, before, flats, acceptance)
            diverged = count > 0
        # Each chain keeps its first failure, in the order evaluated within a step: weight, refresh, accepted.
        step, phase_of, at_of = failures.density_step, failures.density_phase, failures.density_at
        new = step < 0
        for phase, (bad, at) in enumerate(((bad_w, at_w), (bad_r, at_r), (bad_k, at_k))):
            hit = new & bad
            step = jnp.where(hit, t, step)
            phase_of = jnp.where(hit, phase, phase_of)
            at_of = jax.tree.map(lambda a, b, hit=hit: jnp.where(expand(hit, a), b, a), at_of, at)
            new = new & ~bad
        acc = jnp.mean(acceptance).astype(logw.dtype)
        out = StepOutput(jnp.mean(inc), acc, ess, resampled, jnp.mean(diverged.astype(logw.dtype)),
                         inc if record else inc[:0], step_record)
        return AnnealState(states, logw, log_z, Failures(weight_step, step, phase_of, at_of),
                           state.divergences + count, carry), out

    def policy_record(st, t, lf, lt):
        """A policy step's record from the policy alone, its moves' positions and acceptances stood in for (the
        kernel is not traced again): what a skipped step reports, as zeros, is shaped as it."""
        like = jax.tree.map(lambda a: a[0], st.failures.density_at)
        ll = loglik(st.states)
        lf, lt = policy.lambdas(st.policy, ll, lf, lt, t)
        before = chain_positions(kernel, st.states, like, cached)
        flats = jnp.broadcast_to(before, (int(policy.moves), *before.shape))
        return policy.record(st.policy, ll, lf, lt, before, flats, jnp.zeros(flats.shape[:2], st.log_weights.dtype))[1]

    idle = () if policy is None else jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(
        policy_record, state, index[0], lam_from[0], lam_to[0]))

    def blank(st):
        """A step's output where no step ran (a padded step, or one after an adaptive path's end): zeros."""
        z = jnp.zeros((), st.log_weights.dtype)
        return StepOutput(z, z, z, z, z, jnp.zeros_like(st.log_weights) if record else st.log_weights[:0], idle)

    # The chunk's active steps (a prefix) run in a while loop, so a padded step costs nothing and a step that runs
    # has no conditional around it; each writes its output into the chunk's records, zeros where none ran.
    size = lam_from.shape[0]

    def going(carry):
        i, st, _ = carry
        j = jnp.minimum(i, size - 1)
        on = (i < size) & active[j]
        if policy is not None:  # an adaptive path that reached its end skips its remaining steps
            on = on & ~policy.finished(st.policy, index[j])
        return on

    def step(carry):
        i, st, outs = carry
        st, out = transition(st, index[i], lam_from[i], lam_to[i])
        return i + 1, st, jax.tree.map(lambda buffer, x: buffer.at[i].set(x), outs, out)

    outs = jax.tree.map(lambda x: jnp.zeros((size, *x.shape), x.dtype), blank(state))
    _, state, outs = jax.lax.while_loop(going, step, (jnp.int32(0), state, outs))
    return state, outs
