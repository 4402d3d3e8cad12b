"""The one annealing engine: many chains along a path of likelihood weights.

Forward AIS, reverse AIS (and later SMC and SHME) are this engine with different paths and starting states.
Each step t applies the AIS rule (BDMC paper, Alg. 1): add ``log f(x; lam_t) - log f(x; lam_{t-1})`` to
the chain's log-weight, then move ``x`` with a kernel that leaves ``f(.; lam_t)`` invariant.

Steps run inside one compiled ``lax.scan`` per chunk of steps (``vmap`` over chains); the chunk function is
compiled once per (model, kernel, shapes) and reused for every chunk and every path length, so a run never
traces per step and the host only sees the state between chunks (for progress).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import NonFiniteLogWeightError, ScheduleError
from ..models._contract import log_density_increment
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
    NonFiniteLogWeightError
        When any chain's log-weight increment is NaN or +inf, naming the first such step, lambda and chain.
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
    dtype = jnp.result_type(float)
    chunk_size = max(1, min(int(chunk_size), DEFAULT_CHUNK * 16))
    num_chunks = math.ceil(num_steps / chunk_size)
    padded = num_chunks * chunk_size

    lam_from = _pad(lams[:-1], padded)
    lam_to = _pad(lams[1:], padded)
    active = np.arange(padded) < num_steps
    index = np.arange(padded, dtype=np.int32)

    carry = (init_latents, jnp.zeros(chains, dtype), jnp.zeros(runs, dtype), jnp.full(chains, -1, jnp.int32))
    args0 = (key, data, carry, lam_from[:chunk_size], lam_to[:chunk_size], active[:chunk_size], index[:chunk_size])
    statics = (model, kernel, rule, resampler, num_particles, bool(record_increments))
    compiled, compile_seconds = _compile(statics, args0)

    report = _progress(progress, num_steps * chains, description, num_steps)
    outs = []
    start = time.perf_counter()
    try:
        for c in range(num_chunks):
            sl = slice(c * chunk_size, (c + 1) * chunk_size)
            carry, out = compiled(key, data, carry, lam_from[sl], lam_to[sl], active[sl], index[sl])
            outs.append(out)
            if report is not None:
                jax.block_until_ready(carry[1])
                report(min((c + 1) * chunk_size, num_steps), num_steps)
        jax.block_until_ready(carry)
    finally:
        if report is not None and hasattr(report, "close"):
            report.close()
    seconds = time.perf_counter() - start

    latents, log_weights, log_z, first_bad = carry
    first_bad = np.asarray(first_bad)
    if np.any(first_bad >= 0):
        bad = np.where(first_bad >= 0, first_bad, np.iinfo(np.int32).max)
        chain = int(np.argmin(bad))
        step = int(bad[chain]) + 1
        lam = lams[step]
        raise NonFiniteLogWeightError(
            step=step, lam=lam.tolist() if lam.ndim else float(lam), chain=chain,
            n_bad=int(np.sum(first_bad >= 0)), direction=description,
        )
    stacked = [np.concatenate([np.asarray(o[i]) for o in outs])[:num_steps] for i in range(5)]
    info = StepInfo(mean_increment=stacked[0], acceptance=stacked[1], ess=stacked[2], resampled=stacked[3])
    evals = chains * num_steps * (1 + int(getattr(kernel, "evals_per_step", 1)))
    return AnnealResult(
        log_weights=np.asarray(log_weights, dtype=np.float64),
        log_evidence=np.asarray(final_log_evidence(log_weights, log_z, num_particles), dtype=np.float64),
        latents=latents,
        info=info,
        increments=stacked[4] if record_increments else None,
        seconds=seconds,
        compile_seconds=compile_seconds,
        n_evals=evals,
    )


def _chunk(key, data, carry, lam_from, lam_to, active, index, *, model, kernel, rule, resampler, num_particles,
           record):
    """Advance all chains through one chunk of steps (the compiled unit)."""

    def transition(carry, t, lf, lt):
        latents, logw, log_z, first_bad = carry
        # Keys derive from the global step index, so chunking never changes the numbers.
        k_resample, k_refresh, k_move = jax.random.split(jax.random.fold_in(key, t), 3)
        chains = logw.shape[0]

        inc = jax.vmap(lambda x: rule.increment(model, x, data, lf, lt))(latents).astype(logw.dtype)
        broken = jnp.isnan(inc) | (inc == jnp.inf)
        first_bad = jnp.where((first_bad < 0) & broken, t, first_bad)
        logw = logw + inc
        if num_particles > 1:
            ess = jnp.mean(group_ess(logw.reshape(-1, num_particles)))
            latents, logw, log_z, resampled = resampler(k_resample, latents, logw, log_z, num_particles)
            resampled = jnp.mean(resampled.astype(logw.dtype))
        else:
            ess, resampled = _ess(logw), jnp.zeros((), logw.dtype)
        latents = jax.vmap(lambda k, x: rule.refresh(k, model, x, data, lf, lt))(
            jax.random.split(k_refresh, chains), latents)
        latents, info = jax.vmap(lambda k, x: kernel(k, x, data, lt))(jax.random.split(k_move, chains), latents)
        acc = jnp.mean(info.acceptance).astype(logw.dtype)
        out = (jnp.mean(inc), acc, ess, resampled, inc if record else inc[:0])
        return (latents, logw, log_z, first_bad), out

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


def _ess(logw):
    """Effective sample size of the normalized weights, exp(2 lse(w) - lse(2w)); 0 if all weights vanish."""
    lse = jax.scipy.special.logsumexp
    ess = jnp.exp(2 * lse(logw) - lse(2 * logw))
    return jnp.where(jnp.isfinite(ess), ess, 0.0)


_CACHE: dict = {}


def _compile(statics, args):
    """Compile the chunk function once per (model, kernel, rule, resampler, particles, record, shapes)."""
    leaves, treedef = jax.tree.flatten(args)
    signature = (treedef, tuple((jnp.shape(x), jnp.result_type(x), getattr(x, "dtype", None)) for x in leaves))
    cache_key = (statics, signature)
    if cache_key in _CACHE:
        return _CACHE[cache_key], 0.0
    model, kernel, rule, resampler, num_particles, record = statics
    start = time.perf_counter()
    fn = jax.jit(lambda *a: _chunk(*a, model=model, kernel=kernel, rule=rule, resampler=resampler,
                                   num_particles=num_particles, record=record))
    compiled = fn.lower(*args).compile()
    seconds = time.perf_counter() - start
    _CACHE[cache_key] = compiled
    return compiled, seconds


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


def _progress(progress, work, description, total):
    if callable(progress):
        return progress
    if progress == "auto":
        progress = sys.stderr.isatty() and work >= 2_000_000
    if not progress:
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"),
        TimeElapsedColumn(), TimeRemainingColumn(), transient=True,
    )
    bar.start()
    task = bar.add_task(description, total=total)

    class _Report:
        def __call__(self, done, _total):
            bar.update(task, completed=done)

        def close(self):
            bar.stop()

    return _Report()
