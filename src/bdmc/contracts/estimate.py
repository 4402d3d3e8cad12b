"""The Estimate record, the log-space combinations of repeated runs, and the estimator protocol.

Every estimator is a function ``estimator(key, model, data, *, exact_latent=None, num_runs=..., <knob>=...,
...) -> Estimate`` that declares itself in :data:`ESTIMATORS` with :func:`register_estimator`, beside its
definition. Registration wraps the function so that every :class:`Estimate` it returns records the registry
name it came from (:attr:`Estimate.estimator`). ``tests/contracts/test_estimator_protocol.py`` walks the registry
and checks the call shape, the combination rule and that the recorded seed reproduces the run. Estimator pairs (a
lower and an upper estimator that sandwich ``log p(y)``) are registered in :mod:`bdmc.contracts.pairs`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import jax
import numpy as np

from ..errors import NonFiniteLogWeightError, OptionError, OptionTypeError
from . import weight_health
from .weight_health import logsumexp

Side = Literal["lower", "upper"]
Combine = Literal["log-mean-exp", "log-harmonic-mean", "mean-log", "max"]
# Which rule combines independent runs of each kind (BDMC paper, footnote 5): unbiased estimates of Z by
# log-mean-exp, unbiased estimates of 1/Z by log-harmonic-mean, deterministic lower bounds (VB) by the max,
# and everything else (nested sampling, BIC) by the mean of the logs.
DEFAULT_COMBINE: dict = {"lower": "log-mean-exp", "upper": "log-harmonic-mean", None: "mean-log"}


def log_mean_exp(values) -> float:
    """``log(mean(exp(values)))``, computed stably; -inf entries count as zeros."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise OptionError("log_mean_exp of an empty set of runs")
    return float(logsumexp(v) - math.log(v.size))


def log_harmonic_mean(values) -> float:
    """``-log(mean(exp(-values)))``: combines runs whose exp(-value) is an unbiased estimate of 1/Z."""
    return -log_mean_exp(-np.asarray(values, dtype=np.float64))


def log_mean_exp_stderr(values) -> float:
    """Delta-method standard error of ``log_mean_exp(values)``: ``sd(w / mean w) / sqrt(n)``."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or not np.isfinite(log_mean_exp(v)):
        return float("nan")
    return weight_health.log_mean_exp_summary(v)[1]  # sd of the ratios w_k / mean(w), not of raw weights


def combine_runs(values, rule: Combine) -> float:
    """Combine per-run log estimates by ``rule`` (see :data:`DEFAULT_COMBINE`)."""
    values = np.asarray(values, dtype=np.float64)
    if rule == "log-mean-exp":
        return log_mean_exp(values)
    if rule == "log-harmonic-mean":
        return log_harmonic_mean(values)
    if rule == "mean-log":
        return float(np.mean(values))
    if rule == "max":
        return float(np.max(values))
    raise OptionError(f"unknown combination rule {rule!r}; choose one of {COMBINE_RULES}")


COMBINE_RULES = ("log-mean-exp", "log-harmonic-mean", "mean-log", "max")
_WEIGHT_RULES = ("log-mean-exp", "log-harmonic-mean")


def _combined_stderr(values, rule: Combine) -> float:
    if rule == "log-mean-exp":
        return log_mean_exp_stderr(values)
    if rule == "log-harmonic-mean":
        return log_mean_exp_stderr(-np.asarray(values, dtype=np.float64))
    if rule == "mean-log":
        return _sem(values)
    return float("nan")  # the max of deterministic bounds has no sampling error to speak of


# Compiled: an eager key_data works out the key's sharding on every call (14 us a fresh key; this, 5 us).
_key_data = jax.jit(jax.random.key_data)


def seed_of(key) -> tuple:
    """The raw data of a PRNG key as a tuple of ints: what :attr:`Estimate.seed` records."""
    try:
        data = _key_data(key)
    except TypeError:
        data = key
    return tuple(int(v) for v in np.asarray(data).ravel())


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
        The raw data of the key the estimator was called with: :attr:`key` rebuilds it, and the same call
        with that key reproduces the runs.
    details : Any
        Estimator-specific extras (e.g. the :class:`~bdmc.AnnealResult` of an annealing run, with final
        states and per-step diagnostics); not part of :meth:`to_dict`.
    combine : {"log-mean-exp", "log-harmonic-mean", "mean-log", "max"}
        How ``runs`` combine into ``value`` (BDMC paper, footnote 5).
    compiled : bool or None
        Whether this call compiled its program (False: a cached one was reused, ``compile_seconds`` is 0).
    divergences : int or None
        Transitions whose proposal diverged (a NaN or +inf density, or an energy error beyond the kernel's
        threshold), over all chains: each was rejected. None for an estimator that runs no kernel.
    divergence_rate : float or None
        ``divergences`` as a fraction of all transitions of all chains.
    estimator : str or None
        The name in :data:`ESTIMATORS` of the estimator that returned it (set by the registry's wrapper; None for
        an estimate built by hand).

    Weight health (computed from ``runs`` on first access): :attr:`weight_ess`, :attr:`khat` and
    :attr:`stderr_warning`, which says when ``stderr`` is not to be trusted.
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
    combine: Combine = "mean-log"
    compiled: bool | None = None
    divergences: int | None = None
    divergence_rate: float | None = None
    estimator: str | None = None

    def __post_init__(self):
        if self.combine not in COMBINE_RULES:
            raise OptionError(f"unknown combination rule {self.combine!r}; choose one of {COMBINE_RULES}")
        freeze(self, ("runs",))

    @classmethod
    def from_runs(cls, runs, *, bound: Side | None, combine: Combine | None = None, who: str | None = None,
                  **kwargs) -> Estimate:
        """Combine per-run log estimates by ``combine``, by default the rule of the bound side (footnote 5).

        ``who`` names the estimator in errors and warnings (default: ``estimator``, else ``settings["method"]``).

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
        if bound not in DEFAULT_COMBINE:
            raise OptionError(f"bound must be 'lower', 'upper' or None, got {bound!r}")
        runs = np.asarray(runs, dtype=np.float64)
        _check_runs(runs, bound, who or kwargs.get("estimator") or dict(kwargs.get("settings") or {}).get("method"))
        rule = DEFAULT_COMBINE[bound] if combine is None else combine
        if rule not in _WEIGHT_RULES or runs.ndim != 1 or runs.size == 0:
            return cls(value=combine_runs(runs, rule), bound=bound, runs=runs, stderr=_combined_stderr(runs, rule),
                       combine=rule, **kwargs)
        # Weights averaged: the value, its stderr and the weights' ESS from one pass (a warm call's host work).
        sign = 1.0 if rule == "log-mean-exp" else -1.0
        value, stderr, ess = weight_health.log_mean_exp_summary(sign * runs)
        estimate = cls(value=sign * value, bound=bound, runs=runs, stderr=stderr, combine=rule, **kwargs)
        if bound == ("lower" if sign > 0 else "upper"):  # the weights weight_ess is of (weight_health.log_weights)
            estimate.__dict__["weight_ess"] = ess
            if runs.size < weight_health.MIN_RUNS_FOR_KHAT:  # too few runs for a k-hat: NaN without a look
                estimate.__dict__["khat"] = float("nan")
        return estimate

    @functools.cached_property
    def weight_ess(self) -> float:
        """Effective sample size of the weights the runs combine by (``exp(runs)`` for a lower bound,
        ``exp(-runs)`` for an upper); NaN for an estimate that does not average weights."""
        logw = weight_health.log_weights(self.runs, self.bound)
        return float("nan") if logw is None else weight_health.weight_ess(logw)

    @functools.cached_property
    def khat(self) -> float:
        """PSIS Pareto k-hat of those weights (ArviZ's ``psislw``); NaN with fewer than 25 runs or no bound."""
        logw = weight_health.log_weights(self.runs, self.bound)
        return float("nan") if logw is None else weight_health.pareto_khat(logw)

    @property
    def stderr_warning(self) -> str | None:
        """Why ``stderr`` is not to be trusted (one run carries the weight, or a heavy tail), with what to try;
        None when the weights look healthy or the estimate does not average weights."""
        if self.bound is None or self.combine not in ("log-mean-exp", "log-harmonic-mean"):
            return None
        why = weight_health.untrusted(self.weight_ess, self.khat, self.runs.size)
        if why is None:
            return None
        return (f"the ± is not to be trusted ({why}): a few runs carry the weight, so the estimate may be off by "
                "more than its stderr. Try more steps (num_steps), more runs, or SMC.")

    @property
    def straggler_warning(self) -> str | None:
        """Runs far below the others (:func:`bdmc.contracts.weight_health.stragglers`): chains that never reached
        the posterior's mass, which the combined estimate hides; None when there are none."""
        logw = weight_health.log_weights(self.runs, self.bound)
        if logw is None:
            return None
        count, deficit = weight_health.stragglers(logw)
        if not count:
            return None
        return (f"{count} of {self.runs.size} runs lie far below the others (the farthest by {deficit:,.0f} nats): "
                "chains stuck or trapped in a minor mode, which the combined estimate hides. Try longer chains, a "
                "better kernel, or look at those runs.")

    @property
    def key(self) -> jax.Array:
        """The PRNG key the estimator was called with, rebuilt from :attr:`seed`."""
        return jax.random.wrap_key_data(np.asarray(self.seed, dtype=np.uint32))

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready Python values (``details`` left out; non-finite floats as strings)."""
        return {
            "value": _json_float(self.value), "bound": self.bound, "combine": self.combine,
            "stderr": _json_float(self.stderr), "runs": [_json_float(v) for v in self.runs],
            "seconds": self.seconds, "compile_seconds": self.compile_seconds, "compiled": self.compiled,
            "n_evals": int(self.n_evals), "settings": {k: _json_value(v) for k, v in self.settings.items()},
            "seed": list(self.seed), "divergences": self.divergences,
            "divergence_rate": None if self.divergence_rate is None else _json_float(self.divergence_rate),
            "weight_ess": _json_float(self.weight_ess), "khat": _json_float(self.khat),
            "estimator": self.estimator,
        }

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
        raise OptionError("only a stochastic bound has a Markov tail guarantee")

    @staticmethod
    def tail_probability(b: float) -> float:
        """``exp(-b)``: the largest chance a stochastic bound overshoots ``log Z`` by more than ``b`` nats."""
        return math.exp(-b)


def _json_float(v) -> float | str:
    v = float(v)
    return v if math.isfinite(v) else str(v)


def _json_value(v):
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, float):
        return _json_float(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _json_value(x) for k, x in v.items()}
    if hasattr(v, "tolist"):
        return _json_value(v.tolist())
    return repr(v)


def freeze(record, arrays: tuple[str, ...]) -> None:
    """Make a frozen record's ``arrays`` read-only float64 copies and its ``settings`` a read-only mapping."""
    for name in arrays:
        value = np.array(getattr(record, name), dtype=np.float64)
        value.setflags(write=False)
        object.__setattr__(record, name, value)
    object.__setattr__(record, "settings", MappingProxyType(dict(record.settings)))


def _check_runs(runs, bound, who: str | None) -> None:
    """Refuse per-run estimates that no correct run can produce (see :meth:`Estimate.from_runs`)."""
    name = who or "the estimator"
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
        raise OptionError("gap needs a lower-bound estimate and an upper-bound estimate")
    lo, up = lower.runs, upper.runs
    if lo.size == up.size:
        d = up - lo
        return float(np.mean(d)), _sem(d)
    return float(np.mean(up) - np.mean(lo)), float(math.hypot(_sem(up), _sem(lo)))


# ------------------------------------------------------------------------------------ estimator registry


@dataclass(frozen=True)
class EstimatorInfo:
    """How an estimator is called and what it returns: one entry of :data:`ESTIMATORS`.

    Attributes
    ----------
    name, label : str
        Registry name (``bdmc bench --estimators``) and the label of figures (the paper's abbreviations).
    fn : callable
        ``fn(key, model, data, *, exact_latent=None, num_runs=..., <knob>=..., ...) -> Estimate``.
    knob : str
        The keyword of the budget a benchmark varies.
    knobs : tuple of int
        The budgets of a default sweep.
    bound : {"lower", "upper", None}
        Which side of ``log Z`` one run bounds stochastically.
    combine : str
        How the runs combine (:data:`COMBINE_RULES`).
    needs_exact : bool
        Whether ``exact_latent`` (the exact posterior sample of simulated data) is required.
    requires : tuple of type
        Capability protocols the model must support.
    kernel_requires : tuple of type
        Capability protocols the model's default kernel must support.
    options : mapping
        Keywords always passed (``vb+sym`` is ``variational_bayes`` with ``symmetric=True``).
    """

    name: str
    label: str
    fn: Callable
    knob: str
    knobs: tuple
    bound: Side | None
    combine: Combine
    needs_exact: bool = False
    requires: tuple = ()
    kernel_requires: tuple = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, key, model, data, **kwargs) -> Estimate:
        return self.fn(key, model, data, **{**self.options, **kwargs})


ESTIMATORS: dict[str, EstimatorInfo] = {}


def register_estimator(name: str, *, label: str, knob: str, knobs: tuple, bound: Side | None,
                       combine: Combine | None = None, needs_exact: bool = False, requires: tuple = (),
                       kernel_requires: tuple = (), options: Mapping[str, Any] | None = None):
    """Declare an estimator in :data:`ESTIMATORS`; used as a decorator beside its definition.

    The function must take ``(key, model, data)`` positionally and everything else by keyword, including
    ``exact_latent=None`` (an estimator with ``needs_exact=True`` raises a BDMCError when it is missing),
    ``num_runs`` and ``knob``. Returns the function wrapped so that its estimates record ``name``
    (:attr:`Estimate.estimator`); the wrapper keeps its name, signature and docstring.
    """
    def decorate(fn):
        params = inspect.signature(fn).parameters
        positional = [p for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        keyword = {p.name for p in params.values() if p.kind is p.KEYWORD_ONLY}
        problems = []
        if [p.name for p in positional] != ["key", "model", "data"]:
            problems.append(f"positional parameters {[p.name for p in positional]}, not ['key', 'model', 'data']")
        problems += [f"no keyword-only {k!r}" for k in ("exact_latent", "num_runs", knob) if k not in keyword]
        if "exact_latent" in keyword and params["exact_latent"].default is not None:
            problems.append("exact_latent must default to None")
        if problems:
            raise OptionTypeError(f"estimator {name!r} ({fn.__qualname__}) breaks the estimator protocol: "
                                  + "; ".join(problems))
        if name in ESTIMATORS and _origin(ESTIMATORS[name].fn) != _origin(fn):
            raise OptionError(f"estimator name {name!r} is already registered by "
                              f"{ESTIMATORS[name].fn.__qualname__}")

        @functools.wraps(fn)
        def estimator(key, model, data, **kwargs) -> Estimate:
            estimate = fn(key, model, data, **kwargs)
            return estimate if estimate.estimator == name else _named(estimate, name)

        ESTIMATORS[name] = EstimatorInfo(
            name=name, label=label, fn=estimator, knob=knob, knobs=tuple(knobs), bound=bound,
            combine=DEFAULT_COMBINE[bound] if combine is None else combine, needs_exact=needs_exact,
            requires=tuple(requires), kernel_requires=tuple(kernel_requires), options=dict(options or {}))
        return estimator

    return decorate


def _named(estimate: Estimate, name: str) -> Estimate:
    """A copy of ``estimate`` with ``estimator=name``: a shallow copy (its arrays and settings are read-only, and the
    weight health it already computed comes along), not ``dataclasses.replace``, which would validate and copy
    them again on every call."""
    named = copy.copy(estimate)
    object.__setattr__(named, "estimator", name)
    return named


def unregister_estimator(name: str) -> None:
    """Remove ``name`` from :data:`ESTIMATORS` (a test's teardown); nothing happens for an unknown name."""
    ESTIMATORS.pop(name, None)


def _origin(fn) -> tuple:
    """Where a function was defined: a module reloaded registers its estimators again, anything else may not."""
    fn = inspect.unwrap(fn)
    return fn.__module__, fn.__qualname__
