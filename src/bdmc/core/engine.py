"""The one annealing engine: many chains along a path of likelihood weights.

Forward AIS, reverse AIS (and later SMC and SHME) are this engine with different paths and starting states.
Each step t applies the AIS rule (BDMC paper, Alg. 1): add ``log f(x; lam_t) - log f(x; lam_{t-1})`` to
the chain's log-weight, then move ``x`` with a kernel that leaves ``f(.; lam_t)`` invariant.

Steps run inside one compiled loop per chunk of steps (a ``lax.while_loop`` over its active steps, ``vmap`` over
chains); the chunk function is compiled once per (model, kernel, shapes) and reused for every chunk and every
longer path, so a run never traces per step and the host only sees the state between chunks (for progress). A run
of one chunk (a path of at most ``chunk_size`` distributions) is one compiled program, its start and finish
included: one compilation cold, one dispatch warm.

Randomness (the one key convention; every caller uses it). A run on ``key`` moves its chains at transition
``t`` (0-based, ``t = 0 .. T - 2``) with ``jax.random.split(fold_in(key, t), 3) = (resample, refresh, move)``;
the move and refresh keys are split once more, one key per chain. Forward estimators first split the
caller's key with :func:`bdmc.core.prior.draw_prior` into ``(key_init, key_run)``: the starting prior draws
come from ``split(key_init, chains)`` and the run from ``key_run``; they pass
:class:`~bdmc.core.records.FromPrior`, and the run's own program makes the split and the draws (no program or
dispatch of their own). Reverse estimators start from given latents and run on the caller's key as is.
Estimators' pilots draw on keys of their own (``Pilot.seed``), never on the caller's. The chunk size never
changes the numbers.

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
1e-4 for p = 1%; :mod:`bdmc.core.prior_check`). A run from the prior makes the check inside its own program
(its start's, for a run of several chunks, read before the first chunk), on ``key_run``; either way a model
and data set that passed are not checked again, and the check's failure is raised before the run's.
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
from ..contracts.kernel import CachedTransition, evals_per_step, split_kernel
from ..contracts.step_policy import StepPolicy
from ..contracts.step_rule import StepRule
from ..errors import OptionError, ScheduleError
from .ais_rule import AISRule
from .engine_ends import finish_state, start_state
from .engine_steps import chunk_steps
from .failures import raise_batch_failure
from .prior import draw_prior
from .prior_check import check_prior, checked_in_run, pending_check, settle_check
from .progress import compiling, progress_report
from .records import (
    AnnealResult,
    FromPrior,
    StepInfo,
    StepOutput,
    axes_signature,
    batch_and_chains,
    pad_path,
)
from .resampling import AdaptiveResampling

DEFAULT_CHUNK = 64


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
    init_latents : pytree or FromPrior
        Starting states with a leading chain axis (a batch: (B, chains, ...)); exact draws from
        ``f(.; path[0])``. With particles, chains are ``num_runs`` consecutive groups of ``num_particles``.
        :class:`~bdmc.core.records.FromPrior` (a path from the prior, not a batch): the run draws its chains
        itself, on ``key`` split as the module docstring says.
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
    from_prior = isinstance(init_latents, FromPrior)
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
    statics = (model, kernel_def, rule, resampler, num_particles, bool(record_increments), cached,
               axes_signature(batch_axes), policy, (chains, int(prior_check)) if from_prior else None)
    first = (lam_from[:chunk_size], lam_to[:chunk_size], active[:chunk_size], index[:chunk_size])
    whole = num_chunks == 1  # one program: start, steps and finish
    # Drawn in the run's program, the start is whether to check the prior there (once per model and data).
    unchecked = pending_check(key, model, data, lams, num_draws=int(prior_check)) if from_prior else None
    start_arg = np.bool_(unchecked is not None) if from_prior else init_latents
    with compiling(progress, description):
        programs, compile_seconds, built = _compile(
            statics, batch_axes, (key, data, start_arg, runs, first, params, lams[-1], policy_args), whole=whole)
    if not from_prior:  # its own compiled program, cached per model and data shapes whatever the kernel or path
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

    def check_start(key_run, flags):  # the prior check a run from the prior made: its failure comes first
        if unchecked is not None:
            settle_check(unchecked, flags, key_run, model=model, data=data, lams=lams, description=description)

    try:
        if whole:
            (run,) = programs
            state, out, ended, failed, *drawn = jax.block_until_ready(
                run(params, key, data, start_arg, policy_args, *first, lams[-1], last))
            outs.append(out)
            if report is not None:
                report(num_transitions, num_transitions)
            if from_prior:
                check_start(*drawn)
            if np.asarray(failed).any():  # one flag read (one per data set); np.any would dispatch jnp.any
                check(state.failures)  # a step's failure first: the finish only saw the states it left
                check(ended[3])
        else:
            start, finish, compiled = programs
            if from_prior:
                state, key, flags = start(params, key, data, start_arg, policy_args, lam_from[0], lams[-1])
                check_start(key, flags)
            else:
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


_COMPILED = CompiledCache("engine")


def _whole(params, key, data, init_latents, policy_args, lam_from, lam_to, active, index, lam_end, last, *, start,
           chunk, finish, draw=None):
    """A run of one chunk as one program: its start, its steps and its finish; and whether any chain failed (the
    finish's failures hold the steps' and the final states'), so that a run that did not reads one flag. With
    ``draw`` (a run from the prior) it draws its chains first, ``init_latents`` being whether to check the prior,
    and also returns the run's key and the check's flags."""
    drawn = ()
    if draw is not None:
        init_latents, key, flags = draw(key, data, init_latents, (lam_from[0], lam_end))
        drawn = (key, flags)
    state = start(params, data, init_latents, policy_args)
    state, out = chunk(params, key, data, state, lam_from, lam_to, active, index)
    ended = finish(params, data, state, lam_end, last)
    failed = jnp.any(ended[3].weight_step >= 0) | jnp.any(ended[3].density_step >= 0)
    return state, out, ended, failed, *drawn


def _draw_start(key, data, check, ends, *, model, chains: int, num_checks: int):
    """A run from the prior's start, inside its program: ``chains`` prior draws on :func:`draw_prior`'s split of
    ``key``, the run's key, and the prior check's flags on that key when ``check`` (:func:`checked_in_run`)."""
    init, key_run = draw_prior(key, model, chains)
    flags = checked_in_run(key_run, data, ends, check, model=model, num_draws=num_checks) if num_checks else ()
    return init, key_run, flags


def _start_from_prior(params, key, data, check, policy_args, lam_first, lam_end, *, draw, start):
    """The start program of a run from the prior in several chunks: its draws (and check), then its state."""
    init, key_run, flags = draw(key, data, check, (lam_first, lam_end))
    return start(params, data, init, policy_args), key_run, flags


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
    model, kernel_def, rule, resampler, num_particles, record, cached, _, policy, prior = statics

    def build():
        began = time.perf_counter()
        start = functools.partial(start_state, model=model, kernel_def=kernel_def, cached=cached, runs=runs,
                                  policy=policy)
        finish = functools.partial(finish_state, model=model, kernel_def=kernel_def, cached=cached,
                                   num_particles=num_particles)
        chunk = functools.partial(chunk_steps, model=model, kernel_def=kernel_def, rule=rule, resampler=resampler,
                                  num_particles=num_particles, record=record, cached=cached, policy=policy)
        draw = None if prior is None else functools.partial(_draw_start, model=model, chains=prior[0],
                                                            num_checks=prior[1])
        # Programs named for what they run (compile logs, profiles): a pilot's or the run's.
        what = "run" if policy is None else "pilot"
        if whole:
            run = named(functools.partial(_whole, start=start, chunk=chunk, finish=finish, draw=draw), what)
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
        if draw is not None:
            start = functools.partial(_start_from_prior, draw=draw, start=start)
        start, finish, chunk = (jax.jit(named(start, f"{what}_start")), jax.jit(named(finish, f"{what}_finish")),
                                jax.jit(named(chunk, f"{what}_steps")))
        # The start is traced once: its lowering gives the state's shapes the other programs take.
        lowered_start = (start.lower(params, data, init_latents, policy_args) if draw is None else
                         start.lower(params, key, data, init_latents, policy_args, first[0][0], lam_end))
        state = lowered_start.out_info if draw is None else lowered_start.out_info[0]
        # The start and finish run once per call, a pilot's steps once per model and data: compiled quickly.
        lowered = chunk.lower(params, key, data, state, *first)
        programs = (compile_quickly(lowered_start),
                    compile_quickly(finish.lower(params, data, state, lam_end, np.int32(0))),
                    compile_run(lowered) if policy is None else compile_quickly(lowered))
        return programs, time.perf_counter() - began

    (programs, seconds), built = _COMPILED.get_or_build((statics, signature, whole), build)
    return programs, (seconds if built else 0.0), built
