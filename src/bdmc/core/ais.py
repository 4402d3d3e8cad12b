"""Forward and reverse annealed importance sampling: stochastic lower and upper bounds on log p(y)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from ..contracts.capabilities import OwnKernel, supports
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.model import log_density, n_cases, validate_data
from ..contracts.nonfinite import describe_nonfinite
from ..errors import BDMCError, NonFiniteLogDensityError
from . import schedules
from .engine import anneal
from .health import divergence_fields, warn_if_unhealthy
from .pilot import Pilot, refuse_in_chain_adaptation
from .pilot import tune as tune_run
from .prior import prior_draws
from .prior_check import PRIOR_CHECK_DRAWS

SCHEDULES = {"sigmoidal": schedules.sigmoidal, "linear": schedules.linear, "geometric": schedules.geometric}


def make_path(schedule, num_steps: int | None, *, num_cases: int | None = None) -> np.ndarray:
    """A validated forward path from a schedule name (with ``num_steps``) or an explicit array."""
    if isinstance(schedule, str):
        if schedule not in SCHEDULES:
            raise BDMCError(f"unknown schedule {schedule!r}; choose one of {sorted(SCHEDULES)} or pass an array")
        if num_steps is None:
            raise BDMCError(f"schedule {schedule!r} needs num_steps")
        return schedules.validate(SCHEDULES[schedule](num_steps))
    path = schedules.validate(schedule, num_cases=num_cases)
    if num_steps is not None and path.shape[0] != num_steps:
        raise BDMCError(f"num_steps={num_steps} disagrees with the explicit path of length {path.shape[0]}")
    return path


def default_kernel(model):
    """The model's own kernel if it ships one, else HMC on its unconstrained latents."""
    if supports(model, OwnKernel):
        return model.default_kernel()
    from ..kernels import HMC

    return HMC(model)


@register_estimator("ais", label="AIS", knob="num_steps", knobs=(10, 100, 1000), bound="lower")
def forward_ais(
    key,
    model,
    data,
    *,
    exact_latent=None,
    num_steps: int | None = 1000,
    num_runs: int = 16,
    kernel: Any = None,
    schedule="auto",
    tune: str | Pilot = "auto",
    record_increments: bool = False,
    progress="auto",
) -> Estimate:
    """Forward AIS from prior draws: a stochastic lower bound on ``log p(y)`` (BDMC paper, Alg. 1).

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its observed data.
    exact_latent : optional
        Not used (forward AIS starts from prior draws); accepted so every estimator has one call shape.
    num_steps : int
        Number of intermediate distributions T (the knob), ignored when ``schedule`` is an array.
    num_runs : int
        Independent chains, one estimate each, combined by log-mean-exp.
    kernel : optional
        Transition operator; defaults to the model's own (or HMC).
    schedule : str or array
        "auto" (the pilot's schedule when a pilot runs, else sigmoidal), "sigmoidal" (delta = 4), "linear",
        "geometric", or an explicit path of shape (T,) or (T, N).
    tune : "auto", "pilot", "off" or Pilot
        Pilot-tuned, then frozen (:mod:`bdmc.core.pilot`): a pilot run with its own keys chooses the
        schedule (with ``schedule="auto"``) and a step size for each lambda, used frozen by the run, so the
        bound keeps its guarantee. "auto" pilots the default gradient kernel (models without a kernel of
        their own); a :class:`Pilot` sets its size. The pilot's time and evaluations are included in the
        estimate's. "in-chain" adaptation is refused.

    Returns
    -------
    Estimate
        ``bound="lower"``; ``details`` is the engine's AnnealResult (final states, per-step diagnostics).
    """
    data = validate_data(model, data)
    path, kernel, tuned = plan(key, model, data, kernel, schedule, num_steps, tune)
    init, key_run = prior_draws(key, model, num_runs)
    result = anneal(key_run, model, data, kernel, path, init, prior_check=PRIOR_CHECK_DRAWS,
                    record_increments=record_increments,
                    progress=progress, description=f"forward AIS T={path.shape[0]}")
    return _estimate(result, result.log_weights, "lower", key, tuned,
                     _settings("forward", path, num_runs, kernel, tuned))


@register_estimator("rev-ais", label="rev AIS", knob="num_steps", knobs=(10, 100, 1000), bound="upper",
                    needs_exact=True)
def reverse_ais(
    key,
    model,
    data,
    *,
    exact_latent=None,
    num_steps: int | None = 1000,
    num_runs: int = 16,
    kernel: Any = None,
    schedule="auto",
    tune: str | Pilot = "auto",
    record_increments: bool = False,
    progress="auto",
) -> Estimate:
    """Reverse AIS from the exact posterior sample: a stochastic upper bound on ``log p(y)`` (Eqs. 27-29).

    Runs the engine along the reversed path starting every chain at ``exact_latent`` (the latent that
    generated the simulated data). Each chain's log-weight estimates ``log 1/p(y)``; its negation is a
    single-run upper bound, and runs combine by log-harmonic-mean.

    Parameters are as for :func:`forward_ais`, plus ``exact_latent``: one exact posterior sample, or a batch
    with a leading axis of length ``num_runs``.
    """
    require_exact_latent(exact_latent, "reverse AIS")
    data = validate_data(model, data)
    path, kernel, tuned = plan(key, model, data, kernel, schedule, num_steps, tune)
    init = broadcast_latent(model, exact_latent, num_runs)
    check_exact_latent(model, data, exact_latent, init, path[-1], description="reverse AIS")
    result = anneal(key, model, data, kernel, path[::-1], init, prior_check=PRIOR_CHECK_DRAWS,
                    record_increments=record_increments,
                    progress=progress, description=f"reverse AIS T={path.shape[0]}")
    return _estimate(result, -result.log_weights, "upper", key, tuned,
                     _settings("reverse", path, num_runs, kernel, tuned))


def plan(key, model, data, kernel, schedule, num_steps, tune):
    """The run's path and kernel, pilot-tuned when ``tune`` asks for it: ``(path, kernel, Tuned or None)``.

    The pilot draws on ``fold_in(key, PILOT_STREAM)``, never on the run's own keys.
    """
    if isinstance(tune, str) and tune == "in-chain":
        refuse_in_chain_adaptation("tune='in-chain'")
    if not (isinstance(tune, Pilot) or tune in ("auto", "pilot", "off")):
        raise BDMCError(f"tune must be 'auto', 'pilot', 'off' or a Pilot, got {tune!r}")
    piloted = isinstance(tune, Pilot) or tune == "pilot" or (
        tune == "auto" and kernel is None and not supports(model, OwnKernel))
    kernel = default_kernel(model) if kernel is None else kernel
    named = isinstance(schedule, str)
    auto = named and schedule == "auto"
    if auto and not piloted:
        schedule = "sigmoidal"
    if not piloted:
        return make_path(schedule, num_steps if named else None, num_cases=n_cases(model, data)), kernel, None
    if auto and num_steps is None:
        raise BDMCError("schedule 'auto' needs num_steps")
    path = None if auto else make_path(schedule, num_steps if named else None,
                                                      num_cases=n_cases(model, data))
    tuned = tune_run(key, model, data, kernel, num_steps if path is None else path.shape[0],
                     pilot=tune if isinstance(tune, Pilot) else None)
    return (tuned.path if path is None else path), tuned.kernel, tuned


def _estimate(result, runs, bound, key, tuned, settings):
    extra = (tuned.seconds - tuned.compile_seconds, tuned.compile_seconds, tuned.n_evals) if tuned else (0, 0, 0)
    estimate = Estimate.from_runs(
        runs, bound=bound, seconds=result.seconds + extra[0], compile_seconds=result.compile_seconds + extra[1],
        n_evals=result.n_evals + extra[2], settings=settings, seed=seed_of(key), details=result,
        compiled=result.compiled, **divergence_fields(result))
    return warn_if_unhealthy(estimate, f"{settings['direction']} AIS T={settings['num_steps']}", stacklevel=4)


def require_exact_latent(exact_latent, who: str) -> None:
    """Refuse a missing exact posterior sample, naming the estimator that needs it."""
    if exact_latent is None:
        raise BDMCError(f"{who} starts from the exact posterior sample: pass exact_latent=... (the latent that "
                        "generated the simulated data, as bdmc.simulate returns it)")


def broadcast_latent(model, latent, num_chains):
    """Give one latent a leading chain axis, or check an already batched one."""
    single = latent_shape(model)
    leaves, ref = jax.tree.leaves(latent), jax.tree.leaves(single)
    if jax.tree.structure(latent) != jax.tree.structure(single):
        raise BDMCError(f"exact latent has structure {jax.tree.structure(latent)}, "
                        f"the model's latents have {jax.tree.structure(single)}")
    batched = all(np.ndim(x) == len(r.shape) + 1 for x, r in zip(leaves, ref, strict=False))
    if batched:
        if any(np.shape(x)[0] != num_chains for x in leaves):
            raise BDMCError(f"a batched exact latent needs leading axis num_chains={num_chains}")
        return latent
    for x, r in zip(leaves, ref, strict=False):
        if tuple(np.shape(x)) != tuple(r.shape):
            raise BDMCError(f"exact latent leaf has shape {np.shape(x)}, the model's has {r.shape}")
    return jax.tree.map(lambda x: jax.numpy.broadcast_to(x, (num_chains,) + np.shape(x)), latent)


def check_exact_latent(model, data, exact_latent, init, lam, *, description: str) -> None:
    """Refuse an exact sample whose log density at the path's start is NaN, +inf or -inf, naming the term.

    A reverse run's weights start from this density: NaN or +inf is a bug in the model, and -inf (zero
    density) means the sample could not have generated the data, which would make the upper bound +inf.
    """
    batched = init is exact_latent
    density = _densities(model, batched)
    values = np.atleast_1d(np.asarray(density(init if batched else exact_latent, data, lam)))
    if np.all(np.isfinite(values)):
        return
    chain = int(np.argmax(~np.isfinite(values)))
    latent = jax.tree.map(lambda a: a[chain], init) if batched else exact_latent
    term, case, value = describe_nonfinite(model, latent, data, lam, zero=True) or ("log density", None,
                                                                                   float(values[chain]))
    if value == -np.inf:
        what = f"{term} case {case}" if case is not None else term
        where = f" (chain {chain})" if batched else ""
        raise BDMCError(
            f"{description}: the exact latent{where} has zero density under the posterior ({what} is -inf): it "
            "cannot have generated the data, and every reverse weight would be zero (an upper bound of +inf). "
            "Check that the model's sample_prior and sample_data agree with its log_prior and log_likelihood."
        )
    raise NonFiniteLogDensityError(term=term, value=value, case=case, step=None,
                                   lam=float(lam) if np.ndim(lam) == 0 else np.asarray(lam).tolist(),
                                   chain=chain if batched else None, evaluated_by="exact latent",
                                   direction=description)


@functools.lru_cache(maxsize=256)
def latent_shape(model):
    """Shapes and dtypes of one latent of ``model`` (a prior draw), computed once per model."""
    return jax.eval_shape(model.sample_prior, jax.random.key(0))


@functools.lru_cache(maxsize=256)
def _densities(model, batched: bool):
    fn = lambda x, data, lam: log_density(model, x, data, lam)  # noqa: E731
    return jax.jit(jax.vmap(fn, (0, None, None)) if batched else fn)


def _settings(direction, path, num_runs, kernel, tuned=None):
    settings = {"direction": direction, "num_steps": int(path.shape[0]), "num_runs": int(num_runs),
                "per_case_path": path.ndim == 2, "kernel": type(kernel).__name__}
    return settings | (tuned.settings() if tuned is not None else {"tuned": "off"})
