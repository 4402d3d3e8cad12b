"""Annealed importance sampling, forward and reverse: the pair of stochastic lower and upper bounds on log p(y).

One function, :func:`annealed_importance_sampling`, runs either direction on the bidirectional runner
(:mod:`bdmc.core.runner`); :func:`forward_ais` and :func:`reverse_ais` are its two directions, registered as the
estimators ``ais`` and ``rev-ais`` and as the sandwich pair ``ais`` (:data:`AIS_PAIR`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..caching import cached
from ..contracts.capabilities import OwnKernel, supports
from ..contracts.estimate import Estimate
from ..contracts.model import n_cases, validate_data
from ..contracts.pairs import EstimatorPair, direction_of, register_pair
from ..errors import BDMCError
from . import runner, schedules
from .pilot import Pilot, pilot_key, refuse_in_chain_adaptation
from .pilot import tune as tune_run
from .runner import broadcast_latent, require_exact_latent

__all__ = ["AIS_PAIR", "SCHEDULES", "annealed_importance_sampling", "broadcast_latent", "default_kernel",
           "forward_ais", "make_path", "plan", "require_exact_latent", "reverse_ais"]

SCHEDULES = {"sigmoidal": schedules.sigmoidal, "linear": schedules.linear, "geometric": schedules.geometric}


def make_path(schedule, num_steps: int | None, *, num_cases: int | None = None) -> np.ndarray:
    """A validated forward path from a schedule name (with ``num_steps``) or an explicit array."""
    if isinstance(schedule, str):
        if schedule not in SCHEDULES:
            raise BDMCError(f"unknown schedule {schedule!r}; choose one of {sorted(SCHEDULES)} or pass an array")
        if num_steps is None:
            raise BDMCError(f"schedule {schedule!r} needs num_steps")
        return _named_path(schedule, int(num_steps))
    path = schedules.validate(schedule, num_cases=num_cases)
    if num_steps is not None and path.shape[0] != num_steps:
        raise BDMCError(f"num_steps={num_steps} disagrees with the explicit path of length {path.shape[0]}")
    return path


@cached(maxsize=256)
def _named_path(schedule: str, num_steps: int) -> np.ndarray:
    """A named schedule's validated path, read-only: made once (a warm call of a sweep asks for the same one)."""
    path = schedules.validate(SCHEDULES[schedule](num_steps))
    path.setflags(write=False)
    return path


@cached(maxsize=256)
def default_kernel(model):
    """The model's own kernel if it ships one, else HMC on its unconstrained latents; made once per model (kernels
    are immutable, and a model's own may take microseconds to build, on every warm call)."""
    if supports(model, OwnKernel):
        return model.default_kernel()
    from ..kernels import HMC

    return HMC(model)


def annealed_importance_sampling(
    key,
    model,
    data,
    *,
    direction: str,
    exact_latent=None,
    num_steps: int | None = 1000,
    num_runs: int = 16,
    kernel: Any = None,
    schedule="auto",
    tune: str | Pilot = "auto",
    record_increments: bool = False,
    progress="auto",
) -> Estimate:
    """AIS in either direction: forward from prior draws (a stochastic lower bound on ``log p(y)``, BDMC paper
    Alg. 1) or in reverse from the exact posterior sample (an upper bound, Eqs. 27-29).

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its observed data.
    direction : {"forward", "reverse"}
        Forward: every chain starts at a prior draw and its log-weight estimates ``log p(y)``; runs combine by
        log-mean-exp. Reverse: every chain starts at ``exact_latent`` (the latent that generated the simulated
        data) and walks the reversed path; its log-weight estimates ``log 1/p(y)``, its negation is a single-run
        upper bound, and runs combine by log-harmonic-mean.
    exact_latent : optional
        The exact posterior sample (reverse only; forward ignores it): one latent, or a batch with a leading
        axis of length ``num_runs``.
    num_steps : int
        Number of intermediate distributions T (the knob), ignored when ``schedule`` is an array.
    num_runs : int
        Independent chains, one estimate each.
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
    record_increments : bool
        Also keep every chain's log-weight increment at every step (in ``details``).
    progress : bool, "auto" or callable

    Returns
    -------
    Estimate
        ``bound="lower"`` forward, ``"upper"`` in reverse; ``details`` is the engine's AnnealResult (final
        states, per-step diagnostics).
    """
    side = direction_of(direction)
    name = f"{side.name} AIS"
    data = validate_data(model, data)
    begun = runner.start(side, key, model, data, chains=num_runs, exact_latent=exact_latent, name=name)
    path, kernel, tuned = plan(model, data, kernel, schedule, num_steps, tune)
    settings = {"direction": side.name, "num_steps": int(path.shape[0]), "num_runs": int(num_runs),
                "per_case_path": path.ndim == 2, "kernel": type(kernel).__name__}
    return runner.run(side, model, data, begun, runner.Route(path, kernel, tuned), name=name,
                      detail=f"T={path.shape[0]}", settings=settings, record_increments=record_increments,
                      progress=progress)


FORWARD_DOC = """Forward AIS from prior draws: a stochastic lower bound on ``log p(y)`` (BDMC paper, Alg. 1).

    ``forward_ais(key, model, data, *, num_steps=1000, num_runs=16, kernel=None, schedule="auto", tune="auto",
    record_increments=False, progress="auto")``: every chain starts at a prior draw; runs combine by
    log-mean-exp. ``exact_latent`` is accepted (so every estimator has one call shape) and not used. The
    parameters are those of :func:`annealed_importance_sampling`.

    Returns
    -------
    Estimate
        ``bound="lower"``; ``details`` is the engine's AnnealResult (final states, per-step diagnostics).
    """

REVERSE_DOC = """Reverse AIS from the exact posterior sample: a stochastic upper bound on ``log p(y)`` (Eqs. 27-29).

    Runs the engine along the reversed path starting every chain at ``exact_latent`` (the latent that
    generated the simulated data). Each chain's log-weight estimates ``log 1/p(y)``; its negation is a
    single-run upper bound, and runs combine by log-harmonic-mean. The parameters are those of
    :func:`annealed_importance_sampling`; ``exact_latent`` is one exact posterior sample, or a batch with a
    leading axis of length ``num_runs``.

    Returns
    -------
    Estimate
        ``bound="upper"``.
    """

AIS_PAIR = EstimatorPair(
    "ais", lower="ais", upper="rev-ais", knob="num_steps", symbol="T", nouns=("chain length", "chain lengths"),
    axis="intermediate distributions T", labels=("forward AIS", "reverse AIS"),
    remedy="Longer chains (a larger T), more runs (--runs) or --method smc",
    summary="forward/reverse AIS, --steps = T", smallest=2, default_knob=1000,
    styles=(("#1f77b4", "o"), ("#d62728", "s")))
forward_ais, reverse_ais = register_pair(AIS_PAIR, annealed_importance_sampling, knobs=(10, 100, 1000),
                                         estimator_labels=("AIS", "rev AIS"), docs=(FORWARD_DOC, REVERSE_DOC),
                                         names=("forward_ais", "reverse_ais"))


DEFAULT_PILOT = Pilot()


def plan(model, data, kernel, schedule, num_steps, tune):
    """The run's path and kernel, pilot-tuned when ``tune`` asks for it: ``(path, kernel, Tuned or None)``.

    The pilot draws on its own key (:func:`bdmc.core.pilot.pilot_key` of ``Pilot.seed``), never on the caller's:
    its choice depends on the model, data and options alone.
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
    cases = None if named else n_cases(model, data)  # a named schedule is one path for every data shape
    if not piloted:
        return make_path(schedule, num_steps if named else None, num_cases=cases), kernel, None
    if auto and num_steps is None:
        raise BDMCError("schedule 'auto' needs num_steps")
    path = None if auto else make_path(schedule, num_steps if named else None, num_cases=cases)
    pilot = tune if isinstance(tune, Pilot) else DEFAULT_PILOT
    tuned = tune_run(pilot_key(pilot.seed), model, data, kernel, num_steps if path is None else path.shape[0],
                     pilot=pilot)
    return (tuned.path if path is None else path), tuned.kernel, tuned
