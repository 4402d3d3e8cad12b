"""The one annealing engine: many chains along a path of likelihood weights.

Forward AIS, reverse AIS (and later SMC and SHME) are this engine with different paths and starting states.
Each step t applies the AIS rule (BDMC paper, Alg. 1): add ``log f(x; lam_t) - log f(x; lam_{t-1})`` to
the chain's log-weight, then move ``x`` with a kernel that leaves ``f(.; lam_t)`` invariant.

Steps run inside one compiled ``lax.scan`` per chunk of steps (``vmap`` over chains); the chunk function is
compiled once per (model, kernel, shapes) and reused for every chunk and every path length, so a run never
traces per step and the host only sees the state between chunks (for progress).

Every log density a weight or a kernel evaluates is checked (``contracts.model.nonfinite_check``): each
chain's part of a step records, through mutable JAX references, whether a density was NaN or +inf and the
state it was evaluated at (this reaches inside gradients and the while loops of NUTS); every chain's first
failure is carried as data and the host reads it once per chunk, never per step. A NaN or +inf density, or a NaN or
+inf log-weight increment, stops the run; -inf (zero weight) is legal.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ScheduleError
from ..caching import CompiledCache
from ..contracts.capabilities import supports
from ..contracts.kernel import CachedTransition
from ..contracts.model import increment_from_terms, log_density_increment
from ..contracts.nonfinite import describe_nonfinite
from .failures import checked, expand, raise_if_failed
from .progress import compiling, progress_report
from .resampling import AdaptiveResampling, final_log_evidence, group_ess

DEFAULT_CHUNK = 64


class StepInfo(NamedTuple):
    """Per-step diagnostics over all chains, each of shape (T - 1,).

    ``ess`` is the effective sample size of the chains' weights (with particles: the mean over runs of each
    run's particle ESS, before resampling); ``resampled`` is the fraction of runs resampled at the step.
    """

    mean_increment: np.ndarray
    acceptance: np.ndarray
    ess: np.ndarray
    resampled: np.ndarray


class AnnealResult(NamedTuple):
    """What one annealing run returns.

    ``log_weights`` has one entry per chain (with particles: the weights since each run's last resampling);
    ``log_evidence`` has one entry per run: the chain's log-weight for AIS (one particle per run), the banked
    evidence plus the log-mean weight for SMC. ``latents`` are the final states (leading axis = chains);
    ``increments`` is (T - 1, chains) when requested, else None.
    """

    log_weights: np.ndarray
    log_evidence: np.ndarray
    latents: Any
    info: StepInfo
    increments: np.ndarray | None
    seconds: float
    compile_seconds: float
    n_evals: int
    compiled: bool = True


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
    rule: Any = None,
    chunk_size: int = DEFAULT_CHUNK,
    record_increments: bool = False,
    progress: bool | str | Callable[[int, int], None] = "auto",
    description: str = "annealing",
) -> AnnealResult:
    """Run every chain of ``init_latents`` along ``path`` and return log-weights, states and diagnostics.

    Parameters
    ----------
    key : PRNG key
        Randomness for all chains; the same key gives the same numbers whatever ``chunk_size`` is.
    model, data
        A Model and its (validated) data.
    kernel
        ``kernel(key, latent, data, lam) -> (latent, KernelInfo)``, hashable.
    path : array, shape (T,) or (T, N)
        The weights visited, in the order visited (reverse AIS passes a reversed path).
    init_latents : pytree
        Starting states with a leading chain axis; exact draws from ``f(.; path[0])``. With particles, chains
        are ``num_runs`` consecutive groups of ``num_particles``.
    num_particles : int
        Particles per run (SMC / SHME); 1 gives AIS, which never resamples.
    resampler : AdaptiveResampling, optional
        When and how a run's particles are resampled (default: systematic, at ESS below half the particles).
    rule : optional
        How a step weights and refreshes a chain: ``rule.increment(model, latent, data, lam_from, lam_to)`` and
        ``rule.refresh(key, model, latent, data, lam_from, lam_to)`` (applied after weighting, before the
        kernel). Default: the AIS increment ``log f(x; lam_to) - log f(x; lam_from)`` and no refresh.
    chunk_size : int
        Steps per compiled call (progress granularity).
    record_increments : bool
        Also return every chain's log-weight increment at every step.
    progress : bool, "auto" or callable
        A rich progress bar (``"auto"``: only on a terminal for long runs), or ``callback(done, total)``.
    description : str
        Label used in progress output and errors.

    Raises
    ------
    NonFiniteLogDensityError
        When any log density evaluated during the run (weights, kernels, rejected proposals and intermediate
        leapfrog points included) is NaN or +inf, naming the term, the first such step, lambda and a chain.
    NonFiniteLogWeightError
        When a chain's log-weight increment is NaN or +inf although the densities were not (e.g. a chain that
        reached a state of zero density under the distribution it was sampling).
    """
    lams = np.asarray(path, dtype=np.float64)
    if lams.ndim not in (1, 2) or lams.shape[0] < 2:
        raise ScheduleError(f"a path needs shape (T,) or (T, N) with T >= 2, got {lams.shape}")
    if not np.all(np.isfinite(lams)):
        raise ScheduleError("path contains NaN or inf")
    num_steps = lams.shape[0] - 1
    chains = _num_chains(init_latents)
    num_particles = int(num_particles)
    if num_particles < 1 or chains % num_particles:
        raise ValueError(f"{chains} chains cannot be split into runs of num_particles={num_particles}")
    runs = chains // num_particles
    resampler = AdaptiveResampling() if resampler is None else resampler
    rule = AISRule() if rule is None else rule
    chunk_size = max(1, min(int(chunk_size), DEFAULT_CHUNK * 16))
    num_chunks = math.ceil(num_steps / chunk_size)
    padded = num_chunks * chunk_size

    lam_from = _pad(lams[:-1], padded)
    lam_to = _pad(lams[1:], padded)
    active = np.arange(padded) < num_steps
    index = np.arange(padded, dtype=np.int32)

    cached = caches_terms(model, kernel, rule, lams)
    kernel_def, params = split_kernel(kernel)
    statics = (model, kernel_def, rule, resampler, num_particles, bool(record_increments), cached)
    first = (lam_from[:chunk_size], lam_to[:chunk_size], active[:chunk_size], index[:chunk_size])
    with compiling(progress, description):
        (start, finish, compiled), compile_seconds, built = _compile(statics, (key, data, init_latents, runs,
                                                                               first, params))
    carry = start(params, data, init_latents)

    report = progress_report(progress, num_steps * chains, description, num_steps)
    outs = []
    pending = None
    start = time.perf_counter()
    try:
        for c in range(num_chunks):
            sl = slice(c * chunk_size, (c + 1) * chunk_size)
            carry, out = compiled(params, key, data, carry, lam_from[sl], lam_to[sl], active[sl], index[sl])
            outs.append(out)
            # The previous chunk's failures are read while this one runs: one chunk of lag, no stall.
            if pending is not None:
                raise_if_failed(pending, lams=lams, model=model, data=data, rule=rule, description=description)
            pending = carry[3]
            if report is not None:
                jax.block_until_ready(carry[1])
                report(min((c + 1) * chunk_size, num_steps), num_steps)
        raise_if_failed(pending, lams=lams, model=model, data=data, rule=rule, description=description)
        latents, log_weights, log_evidence = jax.block_until_ready(finish(params, carry))
    finally:
        if report is not None and hasattr(report, "close"):
            report.close()
    seconds = time.perf_counter() - start

    stacked = [np.concatenate([np.asarray(o[i]) for o in outs])[:num_steps] for i in range(5)]
    info = StepInfo(mean_increment=stacked[0], acceptance=stacked[1], ess=stacked[2], resampled=stacked[3])
    if cached:  # one evaluation per chain to fill the cache; weights then come free
        evals = chains * (1 + num_steps * int(kernel.evals_per_cached_step))
    else:
        evals = chains * num_steps * (1 + int(getattr(kernel, "evals_per_step", 1)))
    return AnnealResult(
        log_weights=np.asarray(log_weights, dtype=np.float64),
        log_evidence=np.asarray(log_evidence, dtype=np.float64),
        latents=latents,
        info=info,
        increments=stacked[4] if record_increments else None,
        seconds=seconds,
        compile_seconds=compile_seconds,
        compiled=built,
        n_evals=evals,
    )


def caches_terms(model, kernel, rule, lams) -> bool:
    """Whether a run takes the lean path: chains carry the kernel's cached state and weights come from it.

    It needs a kernel that caches the lambda-free parts of the density (:class:`CachedTransition`) on a
    model where they apply, a scalar path and the plain AIS step (no refresh).
    """
    return (np.ndim(lams) == 1 and type(rule) is AISRule and supports(kernel, CachedTransition)
            and bool(kernel.caches_terms))


def split_kernel(kernel):
    """``(static part, parameters)`` of a kernel: a kernel registered as a pytree of numbers (HMC's step
    size or step-size table) passes them as arguments of the compiled run, so a new value (a pilot's new
    table) reuses the compiled program; any other kernel is static as a whole.
    """
    leaves, treedef = jax.tree.flatten(kernel)
    if len(leaves) == 1 and leaves[0] is kernel or not all(isinstance(x, (int, float, np.ndarray, jax.Array))
                                                            for x in leaves):
        return ("static", kernel), ()
    return ("pytree", treedef), tuple(leaves)


def join_kernel(kernel_def, params):
    """The kernel back from :func:`split_kernel`'s parts (inside a compiled function)."""
    kind, part = kernel_def
    return part if kind == "static" else jax.tree.unflatten(part, params)


def _start(params, data, init_latents, *, model, kernel_def, cached, runs):
    """The run's initial carry: (chain states, log-weights, banked evidence, failure record).

    Per chain the failure record holds the first step with a NaN/+inf increment, and the first step, phase and
    latent of a failed density check. On the lean path a chain's state is the kernel's cached state, whose
    densities are checked here (a failure is reported as the first step's weight).
    """
    kernel = join_kernel(kernel_def, params)
    chains = _num_chains(init_latents)
    dtype = jnp.result_type(float)
    never = jnp.full(chains, -1, jnp.int32)
    states, failures = init_latents, (never, never, jnp.zeros(chains, jnp.int32), init_latents)
    if cached:
        bad, at, states = jax.vmap(checked(lambda x: kernel.init_state(x, data)))(init_latents)
        failures = (never, jnp.where(bad, 0, never), failures[2], at)
    return states, jnp.zeros(chains, dtype), jnp.zeros(runs, dtype), failures


def _finish(params, carry, *, kernel_def, cached, num_particles):
    """Final latents, log-weights and each run's log-evidence, from the last carry."""
    kernel = join_kernel(kernel_def, params)
    states, logw, log_z, failures = carry
    latents = (jax.vmap(kernel.state_latent)(states, failures[3]) if cached else states)
    return latents, logw, final_log_evidence(logw, log_z, num_particles)


def _chunk(params, key, data, carry, lam_from, lam_to, active, index, *, model, kernel_def, rule, resampler,
           num_particles, record, cached):
    """Advance all chains through one chunk of steps (the compiled unit)."""
    kernel = join_kernel(kernel_def, params)

    def weigh(states, like, lf, lt):
        if cached:
            def inc(s):
                return increment_from_terms(kernel.state_terms(s), kernel.state_latent(s, like), lf, lt)
            return jax.vmap(checked(inc, like))(states)
        return jax.vmap(checked(lambda x: rule.increment(model, x, data, lf, lt)))(states)

    def move(keys, states, like, lt):
        if cached:
            def step(k, s):
                return kernel.step(k, s, data, lt, like=like)
            return jax.vmap(checked(step, like))(keys, states)
        return jax.vmap(checked(lambda k, x: kernel(k, x, data, lt)))(keys, states)

    def transition(carry, t, lf, lt):
        states, logw, log_z, (first_bad, dens_step, dens_phase, dens_at) = carry
        like = jax.tree.map(lambda a: a[0], dens_at)  # one chain's latent: the structure of every latent
        # Keys derive from the global step index, so chunking never changes the numbers.
        k_resample, k_refresh, k_move = jax.random.split(jax.random.fold_in(key, t), 3)
        chains = logw.shape[0]

        bad_w, at_w, inc = weigh(states, like, lf, lt)
        inc = inc.astype(logw.dtype)
        # A chain whose weight is already zero stays zero whatever its increment (-inf + inf would be NaN).
        dead = logw == -jnp.inf
        broken = (jnp.isnan(inc) | (inc == jnp.inf)) & ~dead
        first_bad = jnp.where((first_bad < 0) & broken, t, first_bad)
        logw = jnp.where(dead, logw, logw + inc)
        if num_particles > 1:
            ess = jnp.mean(group_ess(logw.reshape(-1, num_particles)))
            states, logw, log_z, resampled = resampler(k_resample, states, logw, log_z, num_particles)
            resampled = jnp.mean(resampled.astype(logw.dtype))
        else:
            ess, resampled = _ess(logw), jnp.zeros((), logw.dtype)
        if cached:  # the plain AIS step: no refresh
            bad_r, at_r = jnp.zeros(chains, bool), dens_at
        else:
            bad_r, at_r, states = jax.vmap(checked(lambda k, x: rule.refresh(k, model, x, data, lf, lt)))(
                jax.random.split(k_refresh, chains), states)
        bad_k, at_k, (states, info) = move(jax.random.split(k_move, chains), states, like, lt)
        # Each chain keeps its first failure, in the order evaluated within a step: weight, refresh, kernel.
        new = dens_step < 0
        for phase, (bad, at) in enumerate(((bad_w, at_w), (bad_r, at_r), (bad_k, at_k))):
            hit = new & bad
            dens_step = jnp.where(hit, t, dens_step)
            dens_phase = jnp.where(hit, phase, dens_phase)
            dens_at = jax.tree.map(lambda a, b: jnp.where(expand(hit, a), b, a), dens_at, at)
            new = new & ~bad
        acc = jnp.mean(info.acceptance).astype(logw.dtype)
        out = (jnp.mean(inc), acc, ess, resampled, inc if record else inc[:0])
        return (states, logw, log_z, (first_bad, dens_step, dens_phase, dens_at)), out

    def body(carry, xs):
        lf, lt, on, t = xs

        def skip(c):
            z = jnp.zeros((), c[1].dtype)
            return c, (z, z, z, z, jnp.zeros_like(c[1]) if record else c[1][:0])

        return jax.lax.cond(on, lambda c: transition(c, t, lf, lt), skip, carry)

    return jax.lax.scan(body, carry, (lam_from, lam_to, active, index))


class AISRule:
    """The AIS step: weight by ``f(x; lam_to) / f(x; lam_from)`` at the current state, no refresh."""

    def __hash__(self):
        return hash(AISRule)

    def __eq__(self, other):
        return type(other) is AISRule

    @staticmethod
    def increment(model, latent, data, lam_from, lam_to):
        return log_density_increment(model, latent, data, lam_from, lam_to)

    @staticmethod
    def refresh(key, model, latent, data, lam_from, lam_to):
        return latent

    @staticmethod
    def culprit(model, latent, data, lam_from, lam_to):
        """Name the NaN or +inf term behind a failed increment check (on the host, after the run stopped)."""
        found = describe_nonfinite(model, latent, data, lam_to)
        return found if found is not None else describe_nonfinite(model, latent, data, lam_from)


def _ess(logw):
    """Effective sample size of the normalized weights, exp(2 lse(w) - lse(2w)); 0 if all weights vanish."""
    lse = jax.scipy.special.logsumexp
    ess = jnp.exp(2 * lse(logw) - lse(2 * logw))
    return jnp.where(jnp.isfinite(ess), ess, 0.0)


_COMPILED = CompiledCache("engine")


def _compile(statics, shapes):
    """Compile a run's three programs once per (model, kernel, rule, resampler, particles, record, lean path,
    shapes): the start (initial carry), the chunk of steps, and the finish (latents and evidence).

    Returns ``((start, finish, chunk), seconds, built)``; ``seconds`` is 0.0 and ``built`` False when the
    programs came from the cache.
    """
    key, data, init_latents, runs, first, params = shapes
    leaves, treedef = jax.tree.flatten((key, data, init_latents, first, params))
    signature = (treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves), runs, jnp.result_type(float))
    model, kernel_def, rule, resampler, num_particles, record, cached = statics

    def build():
        began = time.perf_counter()
        start = jax.jit(functools.partial(_start, model=model, kernel_def=kernel_def, cached=cached, runs=runs))
        finish = jax.jit(functools.partial(_finish, kernel_def=kernel_def, cached=cached,
                                           num_particles=num_particles))
        chunk = jax.jit(functools.partial(_chunk, model=model, kernel_def=kernel_def, rule=rule,
                                          resampler=resampler, num_particles=num_particles, record=record,
                                          cached=cached))
        carry = jax.eval_shape(start, params, data, init_latents)
        programs = (start.lower(params, data, init_latents).compile(), finish.lower(params, carry).compile(),
                    chunk.lower(params, key, data, carry, *first).compile())
        return programs, time.perf_counter() - began

    (programs, seconds), built = _COMPILED.get_or_build((statics, signature), build)
    return programs, (seconds if built else 0.0), built


def _pad(a, length):
    out = np.empty((length,) + a.shape[1:], dtype=np.float64)
    out[: a.shape[0]] = a
    out[a.shape[0] :] = a[-1]
    return out


def _num_chains(latents) -> int:
    leaves = jax.tree.leaves(latents)
    if not leaves:
        raise ValueError("init_latents is empty")
    sizes = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"every leaf of init_latents needs the same leading chain axis, got sizes {sizes}")
    return sizes.pop()
