"""The ground truth of the estimator benchmark (BDMC paper Sec. 6.4), its budget and the harness's errors.

The ground truth never settles for less than the best available: the model's closed form where it has one
(with the AIS sandwich reported beside it), else forward and reverse AIS at the harness's own budget
``truth_steps`` (never an estimator's knob), refused when the two disagree by more than ``truth_tol`` or when
the bug alarm fires on them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import jax

from ..checks.alarm import bug_alarm
from ..core.ais import forward_ais, reverse_ais
from ..errors import BDMCError, RunHealthWarning

TRUTH_STEPS, TRUTH_RUNS, TRUTH_TOL = 10_000, 25, 1.0  # the ground truth's own budget, not an estimator's
CLOSED_FORM, AIS = "closed form", "AIS"  # where the ground truth comes from


class GroundTruthError(BDMCError, RuntimeError):
    """Forward and reverse AIS disagree by more than the tolerance: there is no ground truth to score against."""


class BenchSettingsError(BDMCError, ValueError):
    """An output directory holds a benchmark made with other settings, or the request is malformed."""


@dataclass(frozen=True)
class GroundTruth:
    """The ground truth of a benchmark: the closed form where the model has one, else BDMC (paper Sec. 6.4).

    Attributes
    ----------
    value : float
        The truth the estimators are scored against: ``exact`` when ``source`` is ``"closed form"``, else
        ``(forward + reverse) / 2``.
    forward, reverse : float
        Combined forward (lower) and reverse (upper) AIS estimates at the ground truth's own budget.
    num_steps, num_runs : int
        That budget.
    tol : float
        The agreement required of ``reverse - forward``, in nats, when AIS is the truth.
    seconds : float
        Wall time of both AIS runs, compilation excluded.
    source : {"closed form", "AIS"}
        Where ``value`` comes from.
    exact : float or None
        The model's closed-form log p(y), when it has one.
    alarm : dict or None
        The bug alarm's verdict on the two AIS runs (:meth:`bdmc.checks.BugAlarm.to_dict`).
    """

    value: float
    forward: float
    reverse: float
    num_steps: int
    num_runs: int
    tol: float
    seconds: float
    source: str = AIS  # files written before the closed form was used hold AIS truths
    exact: float | None = None
    alarm: dict | None = None

    @property
    def gap(self) -> float:
        """``reverse - forward``: by the sandwich, the AIS truth's error is at most about this (Sec. 4.1)."""
        return self.reverse - self.forward

    @property
    def ais(self) -> float:
        """The AIS ground truth ``(forward + reverse) / 2``, reported beside a closed form."""
        return 0.5 * (self.forward + self.reverse)

    @property
    def ais_agrees(self) -> bool:
        """Forward and reverse AIS lie within ``tol`` of each other."""
        return abs(self.gap) <= self.tol


def ground_truth(key, model, data, exact_latent, *, num_steps: int = TRUTH_STEPS, num_runs: int = TRUTH_RUNS,
                 tol: float = TRUTH_TOL, exact: float | None = None) -> GroundTruth:
    """The closed form when given, else forward and reverse AIS accepted only when they agree.

    Forward and reverse AIS run in both cases: beside a closed form they are reported (and must not raise the
    bug alarm); without one their average is the truth, refused when they are more than ``tol`` apart.

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and data simulated from it.
    exact_latent : pytree
        The latent that generated ``data`` (an exact posterior sample), where reverse AIS starts.
    num_steps, num_runs : int
        The largest AIS budget: intermediate distributions and chains per direction.
    tol : float
        Largest accepted distance, in nats, between the combined forward and reverse estimates when they are
        the truth.
    exact : float, optional
        The model's closed-form log p(y) for ``data`` (see :func:`bdmc.checks.sandwich.exact_log_marginal_or_none`).

    Returns
    -------
    GroundTruth

    Raises
    ------
    GroundTruthError
        When the bug alarm fires on the two runs, or (without a closed form) when they are more than ``tol``
        nats apart: the harness then refuses to score.
    """
    check_truth_settings(num_steps=num_steps, num_runs=num_runs, tol=tol)
    k_fwd, k_rev = jax.random.split(key)
    # The truth rests on the two bounds meeting, not on their ±: a run-health warning is held back and said
    # in the refusal, or passed on when the truth is accepted, so a refusal stays one message.
    with warnings.catch_warnings(record=True) as held:
        warnings.simplefilter("always", RunHealthWarning)
        lower = forward_ais(k_fwd, model, data, num_steps=num_steps, num_runs=num_runs, progress=False)
        upper = reverse_ais(k_rev, model, data, exact_latent=exact_latent, num_steps=num_steps, num_runs=num_runs,
                            progress=False)
    health = [w for w in held if issubclass(w.category, RunHealthWarning)]
    why = "".join(f" ({w.message})" for w in health)
    verdict = bug_alarm(lower, upper)
    if verdict.fired:
        raise GroundTruthError(f"no ground truth: the bug alarm fired on the ground-truth runs at T={num_steps}; "
                               f"the harness refuses to score. {verdict.message()}{why}")
    distance = abs(upper.value - lower.value)
    if exact is None and not distance <= tol:  # also refuses NaN
        raise GroundTruthError(
            f"no ground truth: forward AIS ({lower.value:.4f}) and reverse AIS ({upper.value:.4f}) at "
            f"T={num_steps} with {num_runs} chains are {distance:.4g} nats apart, more than the tolerance "
            f"{tol:g}; the harness refuses to score against it. Raise the ground-truth budget (truth_steps).{why}")
    for w in held:  # accepted: nothing held back is lost
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    ais = 0.5 * (lower.value + upper.value)
    return GroundTruth(value=float(exact) if exact is not None else ais, forward=lower.value, reverse=upper.value,
                       num_steps=int(num_steps), num_runs=int(num_runs), tol=float(tol),
                       seconds=lower.seconds + upper.seconds, source=CLOSED_FORM if exact is not None else AIS,
                       exact=None if exact is None else float(exact), alarm=verdict.to_dict())


def check_truth_settings(*, num_steps, num_runs, tol) -> None:
    """Refuse a ground-truth budget that cannot give a truth, before any work.

    Raises
    ------
    BenchSettingsError
    """
    if int(num_steps) != num_steps or num_steps < 2:
        raise BenchSettingsError(f"truth_steps (--truth-steps) must be an integer >= 2, got {num_steps}")
    if int(num_runs) != num_runs or num_runs < 1:
        raise BenchSettingsError(f"truth_runs (--truth-runs) must be an integer >= 1, got {num_runs}")
    if not (tol > 0 and math.isfinite(tol)):
        raise BenchSettingsError(f"truth_tol (--truth-tol) must be a positive number of nats, got {tol}")
