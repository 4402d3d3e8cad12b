"""The Estimate record and the log-space combinations of repeated runs."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Mapping

import numpy as np
from scipy.special import logsumexp

from .._errors import NonFiniteLogWeightError

Side = Literal["lower", "upper"]


def log_mean_exp(values) -> float:
    """``log(mean(exp(values)))``, computed stably; -inf entries count as zeros."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("log_mean_exp of an empty set of runs")
    return float(logsumexp(v) - math.log(v.size))


def log_harmonic_mean(values) -> float:
    """``-log(mean(exp(-values)))``: combines runs whose exp(-value) is an unbiased estimate of 1/Z."""
    return -log_mean_exp(-np.asarray(values, dtype=np.float64))


def log_mean_exp_stderr(values) -> float:
    """Delta-method standard error of ``log_mean_exp(values)``: ``sd(w / mean w) / sqrt(n)``."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or not np.isfinite(log_mean_exp(v)):
        return float("nan")
    normalized = np.exp(v - logsumexp(v) + math.log(v.size))  # ratios w_k / mean(w), not raw weights
    return float(np.std(normalized, ddof=1) / math.sqrt(v.size))


@dataclass(frozen=True)
class Estimate:
    """An immutable log marginal likelihood estimate.

    Attributes
    ----------
    value : float
        The combined estimate of ``log Z``: log-mean-exp of the runs for a lower bound (unbiased Z-hat),
        log-harmonic-mean for an upper bound (unbiased 1/Z-hat), the mean otherwise.
    bound : {"lower", "upper", None}
        Which side of ``log Z`` this is a stochastic bound on.
    runs : ndarray
        One ``log Z`` estimate per independent run (chain).
    stderr : float
        Standard error of ``value`` (delta method on the Z or 1/Z scale).
    seconds, compile_seconds : float
        Wall time of the runs excluding compilation, and the compilation time.
    n_evals : int
        Full-data log-likelihood (or log-density/gradient) evaluations over all runs.
    settings : mapping
        The options the estimator ran with.
    seed : tuple of int
        The raw PRNG key data.
    details : Any
        Estimator-specific extras (e.g. final states and per-step diagnostics of an annealing run).
    """

    value: float
    bound: Side | None
    runs: np.ndarray
    stderr: float
    seconds: float
    compile_seconds: float
    n_evals: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: tuple = ()
    details: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        runs = np.array(self.runs, dtype=np.float64)
        runs.setflags(write=False)
        object.__setattr__(self, "runs", runs)
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    @classmethod
    def from_runs(cls, runs, *, bound: Side | None, **kwargs) -> "Estimate":
        """Combine per-run log estimates as the bound side prescribes (BDMC paper, footnote 5).

        Runs must be finite, with one exception: a lower-bound run may be -inf (every weight zero). If all
        are, the value is -inf: a true but useless lower bound, returned with ``stderr`` NaN and a
        ``RuntimeWarning``.

        Raises
        ------
        NonFiniteLogWeightError
            If a run is NaN, a lower-bound run is +inf, an upper-bound run is infinite (a reverse weight of
            zero or infinity is impossible from an exact posterior sample), or a run of an estimate with no
            bound side is infinite. Each of these is a bug, never a result.
        """
        runs = np.asarray(runs, dtype=np.float64)
        _check_runs(runs, bound, kwargs.get("settings"))
        if bound == "lower":
            value, stderr = log_mean_exp(runs), log_mean_exp_stderr(runs)
        elif bound == "upper":
            value, stderr = log_harmonic_mean(runs), log_mean_exp_stderr(-runs)
        elif bound is None:
            value, stderr = float(np.mean(runs)), _sem(runs)
        else:
            raise ValueError(f"bound must be 'lower', 'upper' or None, got {bound!r}")
        return cls(value=value, bound=bound, runs=runs, stderr=stderr, **kwargs)

    @property
    def mean_single(self) -> float:
        """Mean of the single-run estimates (a looser bound than ``value``, by Jensen's inequality)."""
        return float(np.mean(self.runs))

    @property
    def stderr_single(self) -> float:
        """Standard error of ``mean_single``."""
        return _sem(self.runs)

    def certified(self, b: float = 3.0) -> float:
        """The Markov-tail bound: with probability at least ``1 - exp(-b)`` the truth is on the certified side.

        For a lower bound, ``P(value > log Z + b) < exp(-b)``, so ``log Z >= value - b`` with that
        probability (BDMC paper Eq. 25); for an upper bound, ``log Z <= value + b`` (Eq. 30).
        """
        if self.bound == "lower":
            return self.value - b
        if self.bound == "upper":
            return self.value + b
        raise ValueError("only a stochastic bound has a Markov tail guarantee")

    @staticmethod
    def tail_probability(b: float) -> float:
        """``exp(-b)``: the largest chance a stochastic bound overshoots ``log Z`` by more than ``b`` nats."""
        return math.exp(-b)


def _check_runs(runs, bound, settings) -> None:
    """Refuse per-run estimates that no correct run can produce (see :meth:`Estimate.from_runs`)."""
    settings = dict(settings or {})
    name = settings.get("method") or (f"{settings['direction']} AIS" if "direction" in settings else "the estimator")
    illegal = np.isnan(runs) | (runs == np.inf)
    if bound != "lower":
        illegal |= runs == -np.inf
    if np.any(illegal):
        k = int(np.argmax(illegal))
        why = {
            "lower": "A lower-bound run may be -inf (zero weight) but never NaN or +inf",
            "upper": ("An upper-bound run must be finite: +inf means the reverse chain's weight is zero, i.e. the "
                      "exact sample has zero density; -inf or NaN means a reverse weight was infinite or undefined"),
        }.get(bound, "Its runs must be finite")
        raise NonFiniteLogWeightError(
            f"{name} produced a non-finite estimate in run {k} of {runs.size} ({runs[k]}; {int(illegal.sum())} "
            f"run(s) affected). {why}: this is a bug in the model or the estimator, not a result."
        )
    if bound == "lower" and runs.size and np.all(runs == -np.inf):
        warnings.warn(f"{name}: every run has zero weight, so the lower bound is -inf (true but useless); "
                      "the chains never reached the posterior's support", RuntimeWarning, stacklevel=4)


def _sem(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")


def gap(lower: Estimate, upper: Estimate) -> tuple[float, float]:
    """The BREAD estimator B-hat: mean single-run upper minus mean single-run lower bound, with its stderr.

    In expectation it upper-bounds the Jeffreys divergence between the AIS sample distribution and the
    posterior (BREAD paper, Sec. 3.1). Runs are paired by index when both have the same count.
    """
    if lower.bound != "lower" or upper.bound != "upper":
        raise ValueError("gap needs a lower-bound estimate and an upper-bound estimate")
    lo, up = lower.runs, upper.runs
    if lo.size == up.size:
        d = up - lo
        return float(np.mean(d)), _sem(d)
    return float(np.mean(up) - np.mean(lo)), float(math.hypot(_sem(up), _sem(lo)))
