"""The one annealing engine: many chains along a path of likelihood weights.

AIS in both directions, SMC, SHME and tempered SMC are this engine with other paths, starts and step rules. Each
step t applies the AIS rule (BDMC paper, Alg. 1): add ``log f(x; lam_t) - log f(x; lam_{t-1})`` to the chain's
log-weight, then move ``x`` with a kernel that leaves ``f(.; lam_t)`` invariant.

Steps run inside one compiled loop per chunk of steps (a ``lax.while_loop`` over its active steps, ``vmap`` over
chains), compiled once per (model, kernel, shapes) and reused for every chunk and longer path: the host sees the
state between chunks only. A run of one chunk is one program, its start and finish included. Within
:func:`bdmc.shard_runs` the chains are split across devices (:mod:`bdmc.core.sharding`).

Randomness (the one key convention; every caller uses it). A run on ``key`` moves its chains at transition
``t`` (0-based, ``t = 0 .. T - 2``) with ``jax.random.split(fold_in(key, t), 3) = (resample, refresh, move)``;
the move and refresh keys are split once more, one key per chain. Forward estimators first split the
caller's key with :func:`bdmc.core.prior.draw_prior` into ``(key_init, key_run)``: the starting prior draws
come from ``split(key_init, chains)`` and the run from ``key_run``. Reverse estimators start from given
latents and run on the caller's key as is. Estimators' pilots draw on keys of their own (``Pilot.seed``), never
on the caller's. The chunk size never changes the numbers.

A step policy (:class:`bdmc.contracts.step_policy.StepPolicy`: a pilot's adaptive lambdas and step sizes) runs
in the same scan; its transition ``t`` takes ``k_t = fold_in(key, t)`` too, moves ``policy.moves`` times, move
``j`` on ``split(fold_in(k_t, j), chains)``, and resamples run ``r`` on ``fold_in(k_t, RESAMPLE_STREAM + r)``.

A batch of independent data sets (the images of a generative model, the simulated data sets of a calibration
study) is one call: ``keys`` has one key per data set, ``batch_axes`` marks which leaves of ``data`` hold one
entry per data set, and data set ``b`` gets exactly the numbers a run of it alone on ``keys[b]`` gives (up to
rounding: batched arithmetic may associate differently). Its failures name the data set.

Every log density a weight or a kernel evaluates is checked (``contracts.model.nonfinite_check``): each
chain's part of a step records, through mutable JAX references, whether a density was NaN or +inf and the
state it was evaluated at (this reaches inside gradients and the while loops of NUTS). Where a density must
be finite, that is an error: at a state a chain holds (its weight, an SMC refresh, the state a kernel
accepted, the final state) and at exact prior draws. Every chain's first failure is carried as data and the
host reads it once per chunk, never per step; the run stops naming the term, step, lambda and chain. -inf
(zero weight) is legal. Where a density may diverge, it is not an error: a NaN or +inf density at a
kernel's *proposal* (an HMC trajectory that overflowed) is a rejection, as in NumPyro, Stan and BlackJAX,
counted per step and per chain as a divergence.

A model whose density is NaN on a region of prior mass would then be sampled as if that region had zero
density: a silent bias. So a run given ``prior_check`` first evaluates the density at that many exact prior
draws (on ``fold_in(key, PRIOR_CHECK_STREAM)``, never the run's randomness) and stops at a NaN or +inf
there: a region of prior mass p is missed with probability ``(1 - p) ** prior_check`` (1,024 draws: below
1e-4 for p = 1%; :mod:`bdmc.core.prior_check`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache, compile_quickly, compile_run, leaf_types, named
from ..contracts.capabilities import supports
from ..contracts.kernel import CachedTransition, evals_per_step, join_kernel, split_kernel
from ..contracts.model import increment_from_terms, weighted_sum
from ..contracts.step_policy import StepPolicy
from ..contracts.step_rule import StepRule
from ..errors import OptionError, ScheduleError
from .ais_rule import AISRule
from .engine_ends import chain_positions, finish_state, start_state
from .failures import checked, expand, flagged, raise_batch_failure
from .prior_check import check_prior
from .progress import compiling, progress_report
from .records import (
    AnnealResult,
    AnnealState,
    Failures,
    StepInfo,
    StepOutput,
    axes_signature,
    batch_and_chains,
    pad_path,
)
from .resampling import AdaptiveResampling, group_ess, weights_ess
from .sharding import place_run, state_options, state_shapes

DEFAULT_CHUNK = 64
RESAMPLE_STREAM = 0x2545F491  # a policy step's resampling keys, folded into the step's key


def anneal(
    key,
    model,
    data,
    kernel,
    path,
    init_latents,
    *,
    num_particles: int = 1,
    resampler: AdaptiveResampling | None = None,
    rule: StepRule | None = None,
    batch_axes: Any = None,
    batch_label: str = "data set",
    chunk_size: int = DEFAULT_CHUNK,
    prior_check: int = 0,
    record_increments: bool = False,
    progress: bool | str | Callable[[int, int], None] = "auto",
    description: str = "annealing",
    policy: StepPolicy | None = None,
    policy_args: Any = (),
) -> AnnealResult:
    """Run every chain of ``init_latents`` along ``path`` and return log-weights, states and diagnostics.

    Parameters
    ----------
    key : PRNG key, or a key array (B,) for a batch
        Randomness for all chains (the module docstring gives the convention); the same key gives the same
        numbers whatever ``chunk_size`` is.
    model, data
        A Model and its (validated) data.
    kernel
        ``kernel(key, latent, data, lam) -> (latent, KernelInfo)``, hashable (:mod:`bdmc.contracts.kernel`).
    path : array, shape (T,) or (T, N)
        The weights visited, in the order visited (reverse AIS passes a reversed path); T distributions, so
        T - 1 transitions.
    init_latents : pytree
        Starting states with a leading chain axis (a batch: (B, chains, ...)); exact draws from
        ``f(.; path[0])``. With particles, chains are ``num_runs`` consecutive groups of ``num_particles``.
    num_particles : int
        Particles per run (SMC / SHME); 1 gives AIS, which never resamples.
    resampler : AdaptiveResampling, optional
        When and how a run's particles are resampled (default: systematic, at ESS below half the particles).
    rule : StepRule, optional
        How a step weights and refreshes a chain (:class:`bdmc.contracts.step_rule.StepRule`). Default: the
        AIS increment ``log f(x; lam_to) - log f(x; lam_from)`` and no refresh.
    batch_axes : pytree, optional
        Runs a batch of independent data sets in one call: a ``jax.vmap`` ``in_axes`` prefix of ``data``, 0 on
        the leaves with one entry per data set, None on those all data sets share. ``key`` is then one key
        per data set and ``init_latents`` has a leading data-set axis.
    batch_label : str
        What a member of the batch is called in error messages ("image", "data set").
    chunk_size : int
        Steps per compiled call (progress granularity).
    prior_check : int
        Exact prior draws (``model.sample_prior``) at which every density term is checked before the run (0:
        none); estimators pass :data:`bdmc.core.prior_check.PRIOR_CHECK_DRAWS`. See the module docstring.
    record_increments : bool
        Also return every chain's log-weight increment at every step.
    progress : bool, "auto" or callable
        A rich progress bar (``"auto"``: only on a terminal for long runs), or ``callback(done, total)``.
    description : str
        Label used in progress output and errors.
    policy : StepPolicy, optional
        What each step does beyond weighting, resampling and moving (:mod:`bdmc.contracts.step_policy`: a
        pilot's lambdas and step sizes); its records are returned in ``AnnealResult.records``. Not with a batch.
    policy_args : pytree
        Arrays the policy's first carry is made from (arguments of the compiled run).

    Raises
    ------
    NonFiniteLogDensityError
        When a log density that must be finite is NaN or +inf (at a chain's state, weighted or accepted, or at
        an exact prior draw of the prior check), naming the term, the first such step, lambda, the chain (and
        the data set of a batch). At a proposal it is a divergence, counted in ``AnnealResult.divergences``.
    NonFiniteLogWeightError
        When a chain's log-weight increment is NaN or +inf although the densities were not (e.g. a chain that
        reached a state of zero density under the distribution it was sampling).
    """
    lams = np.asarray(path, dtype=np.float64)
    if lams.ndim not in (1, 2) or lams.shape[0] < 2:
        raise ScheduleError(f"a path needs shape (T,) or (T, N) with T >= 2, got {lams.shape}")
    if not np.all(np.isfinite(lams)):
        raise ScheduleError("path contains NaN or inf")
    num_transitions = lams.shape[0] - 1
    batched = batch_axes is not None
    members, chains = batch_and_chains(init_latents, batched)
    if batched and tuple(np.shape(jax.random.key_data(key)))[:1] != (members,):
        raise OptionError(f"a batch of {members} data sets needs one key each (a key array of shape ({members},))")
    num_particles = int(num_particles)
    if num_particles < 1 or chains % num_particles:
        raise OptionError(f"{chains} chains cannot be split into runs of num_particles={num_particles}")
    runs = chains // num_particles
    resampler = AdaptiveResampling() if resampler is None else resampler
    rule = AISRule() if rule is None else rule
    chunk_size = max(1, min(int(chunk_size), DEFAULT_CHUNK * 16))
    num_chunks = math.ceil(num_transitions / chunk_size)
    padded = num_chunks * chunk_size

    lam_from = pad_path(lams[:-1], padded)
    lam_to = pad_path(lams[1:], padded)
    active = np.arange(padded) < num_transitions
    index = np.arange(padded, dtype=np.int32)

    cached = caches_terms(model, kernel, rule, lams)
    kernel_def, params = split_kernel(kernel)
    if policy is not None and batched:
        raise OptionError("a step policy runs one data set at a time")
    where, init_latents = place_run(init_latents, runs, batched=batched, policy=policy)  # within bdmc.shard_runs
    statics = (model, kernel_def, rule, resampler, num_particles, bool(record_increments), cached,
               axes_signature(batch_axes), policy, where)
    first = (lam_from[:chunk_size], lam_to[:chunk_size], active[:chunk_size], index[:chunk_size])
    whole = num_chunks == 1  # one program: start, steps and finish
    with compiling(progress, description):
        programs, compile_seconds, built = _compile(
            statics, batch_axes, (key, data, init_latents, runs, first, params, lams[-1], policy_args), whole=whole)
    # Its own compiled program, cached per model and data shapes whatever the kernel, path or chains.
    compile_seconds += check_prior(key, model, data, lams, num_draws=int(prior_check), batch_axes=batch_axes,
                                   axes_signature=axes_signature(batch_axes), batch_label=batch_label,
                                   description=description)
    report = progress_report(progress, num_transitions * chains * members, description, num_transitions)
    outs = []
    pending = None
    last = np.int32(num_transitions - 1)
    began = time.perf_counter()

    def check(failures):
        raise_batch_failure(failures, batch_axes, batch_label, lams=lams, model=model, data=data, rule=rule,
                         description=description)

    try:
        if whole:
            (run,) = programs
            state, out, ended, failed = jax.block_until_ready(
                run(params, key, data, init_latents, policy_args, *first, lams[-1], last))
            outs.append(out)
            if report is not None:
                report(num_transitions, num_transitions)
            if np.asarray(failed).any():  # one flag read (one per data set); np.any would dispatch jnp.any
                check(state.failures)  # a step's failure first: the finish only saw the states it left
                check(ended[3])
        else:
            start, finish, compiled = programs
            state = start(params, data, init_latents, policy_args)
            for c in range(num_chunks):
                sl = slice(c * chunk_size, (c + 1) * chunk_size)
                state, out = compiled(params, key, data, state, lam_from[sl], lam_to[sl], active[sl], index[sl])
                outs.append(out)
                # The previous chunk's failures are read while this one runs: one chunk of lag, no stall.
                if pending is not None:
                    check(pending)
                pending = state.failures
                if report is not None:
                    jax.block_until_ready(state.log_weights)
                    report(min((c + 1) * chunk_size, num_transitions), num_transitions)
            check(pending)
            ended = jax.block_until_ready(finish(params, data, state, lams[-1], last))
            check(ended[3])
        latents, log_weights, log_evidence, _ = ended
    finally:
        if report is not None and hasattr(report, "close"):
            report.close()
    seconds = time.perf_counter() - began

    steps = StepOutput(*(np.asarray(fields[0]) if len(fields) == 1 else
                         np.concatenate([np.asarray(field) for field in fields], axis=-1 if i < 5 else -2)
                         for i, fields in enumerate(zip(*(out[:6] for out in outs), strict=False))))
    records = None if policy is None else jax.tree.map(lambda *r: np.concatenate(r)[:num_transitions],
                                                       *(out.record for out in outs))
    info = StepInfo(mean_increment=steps.mean_increment[..., :num_transitions],
                    acceptance=steps.acceptance[..., :num_transitions], ess=steps.ess[..., :num_transitions],
                    resampled=steps.resampled[..., :num_transitions],
                    divergent=steps.divergent[..., :num_transitions])
    if cached:  # one evaluation per chain to fill the cache; weights then come free
        evals = chains * (1 + num_transitions * int(kernel.evals_per_cached_step))
    else:
        evals = chains * num_transitions * (1 + evals_per_step(kernel))
    return AnnealResult(
        log_weights=np.asarray(log_weights, dtype=np.float64),
        log_evidence=np.asarray(log_evidence, dtype=np.float64),
        latents=latents,
        info=info,
        increments=steps.increments[..., :num_transitions, :] if record_increments else None,
        seconds=seconds,
        compile_seconds=compile_seconds,
        compiled=built,
        n_evals=evals * members,
        divergences=np.asarray(state.divergences),
        records=records,
    )


def caches_terms(model, kernel, rule, lams) -> bool:
    """Whether a run takes the lean path: chains carry the kernel's cached state and weights come from it.

    It needs a kernel that caches the lambda-free parts of the density (:class:`CachedTransition`) on a
    model where they apply, a scalar path and the plain AIS step (no refresh).
    """
    return (np.ndim(lams) == 1 and type(rule) is AISRule and supports(kernel, CachedTransition)
            and bool(kernel.caches_terms))


def _chunk(params, key, data, state, lam_from, lam_to, active, index, *, model, kernel_def, rule, resampler,
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


_COMPILED = CompiledCache("engine")


def _whole(params, key, data, init_latents, policy_args, lam_from, lam_to, active, index, lam_end, last, *, start,
           chunk, finish):
    """A run of one chunk as one program: its start, its steps and its finish; and whether any chain failed (the
    finish's failures hold the steps' and the final states'), so that a run that did not reads one flag."""
    state = start(params, data, init_latents, policy_args)
    state, out = chunk(params, key, data, state, lam_from, lam_to, active, index)
    ended = finish(params, data, state, lam_end, last)
    failed = jnp.any(ended[3].weight_step >= 0) | jnp.any(ended[3].density_step >= 0)
    return state, out, ended, failed


def _compile(statics, batch_axes, shapes, *, whole: bool = False):
    """Compile a run's programs once per (model, kernel, rule, resampler, particles, record, lean path, batch
    axes, shapes): the start (initial state), the chunk of steps, and the finish (latents and evidence); or, for a
    run of one chunk (``whole``), the three as one program. A batch maps each over its data sets (``vmap``): the
    key, the data's marked leaves and the state.

    Returns ``((start, finish, chunk) or (whole,), seconds, built)``; ``seconds`` is 0.0 and ``built`` False when
    the programs came from the cache.
    """
    key, data, init_latents, runs, first, params, lam_end, policy_args = shapes
    leaves, treedef = jax.tree.flatten((key, data, init_latents, first, params, lam_end, policy_args))
    signature = (treedef, leaf_types(leaves), runs, jax.dtypes.canonicalize_dtype(float))
    model, kernel_def, rule, resampler, num_particles, record, cached, _, policy, where = statics

    def build():
        began = time.perf_counter()
        start = functools.partial(start_state, model=model, kernel_def=kernel_def, cached=cached, runs=runs,
                                  policy=policy)
        finish = functools.partial(finish_state, model=model, kernel_def=kernel_def, cached=cached,
                                   num_particles=num_particles)
        chunk = functools.partial(_chunk, model=model, kernel_def=kernel_def, rule=rule, resampler=resampler,
                                  num_particles=num_particles, record=record, cached=cached, policy=policy)
        # Programs named for what they run (compile logs, profiles): a pilot's or the run's.
        what = "run" if policy is None else "pilot"
        if whole:
            run = named(functools.partial(_whole, start=start, chunk=chunk, finish=finish), what)
            if batch_axes is not None:
                run = jax.vmap(run, in_axes=(None, 0, batch_axes, 0, None, None, None, None, None, None, None))
            lowered = jax.jit(run).lower(params, key, data, init_latents, policy_args, *first, lam_end, np.int32(0))
            # A run's steps compile with the run's options; a pilot's run once per model and data: quickly.
            program = compile_run(lowered) if policy is None else compile_quickly(lowered)
            return (program,), time.perf_counter() - began
        if batch_axes is not None:
            start = jax.vmap(start, in_axes=(None, batch_axes, 0, None))
            finish = jax.vmap(finish, in_axes=(None, batch_axes, 0, None, None))
            chunk = jax.vmap(chunk, in_axes=(None, 0, batch_axes, 0, None, None, None, None))
        at_start, at_steps = state_options(where)  # split across devices, the state stays split between programs
        start, finish, chunk = (jax.jit(named(start, f"{what}_start"), **at_start),
                                jax.jit(named(finish, f"{what}_finish")), jax.jit(named(chunk, f"{what}_steps"),
                                                                                  **at_steps))
        # The start is traced once: its lowering gives the state's shapes the other programs take.
        lowered_start = start.lower(params, data, init_latents, policy_args)
        state = state_shapes(where, lowered_start.out_info)
        # The start and finish run once per call, a pilot's steps once per model and data: compiled quickly.
        lowered = chunk.lower(params, key, data, state, *first)
        programs = (compile_quickly(lowered_start),
                    compile_quickly(finish.lower(params, data, state, lam_end, np.int32(0))),
                    compile_run(lowered) if policy is None else compile_quickly(lowered))
        return programs, time.perf_counter() - began

    (programs, seconds), built = _COMPILED.get_or_build((statics, signature, whole), build)
    return programs, (seconds if built else 0.0), built
