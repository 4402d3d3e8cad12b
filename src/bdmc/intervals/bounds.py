"""Certified bounds on ``log p(y)`` from independent runs, each with a stated level.

A forward run (AIS, tempered SMC) returns ``Z_i >= 0`` with ``E Z_i = p(y)``; a reverse run started from an exact
posterior draw returns ``W_i >= 0`` with ``E W_i = 1/p(y)``, reported as ``log U_i = -log W_i``. Each rule below
turns n such runs into a bound that is on the wrong side of ``log p(y)`` with probability at most its level ``a``:

- **quantile-of-runs**, the k-th order statistic: by Markov's inequality ``P(Z_i > c p(y)) <= 1/c`` for each run,
  so for n independent runs the number above ``c p(y)`` is stochastically at most ``Binomial(n, 1/c)``. The k-th
  smallest ``log Z_(k)`` exceeds ``log p(y) + log c`` only if at least ``n - k + 1`` runs exceed ``c p(y)``, so
  ``log Z_(k) - log c_k`` is a lower bound with probability at least ``1 - a`` when
  ``P(Binomial(n, 1/c_k) >= n - k + 1) = a`` (:func:`order_statistic_margin`; that tail is the regularized
  incomplete beta function, so ``1/c_k`` is a beta quantile). On the upper side, the k-th largest ``log U_i`` plus
  ``log c_k``. It needs the runs to be independent.
- **min-of-runs** (Gogate, Bidyuk and Dechter 2007) is its k = 1 case: ``c_1^-n = a``, so
  ``min_i log Z_i - log(1/a)/n`` (upper: **max-of-runs**, ``max_i log U_i + log(1/a)/n``). Its margin shrinks as
  ``1/n``, but it pays for the single worst run; a larger k lets up to ``k - 1`` runs fall far low for a somewhat
  larger margin.
- **markov**: Markov's inequality on the mean, ``log mean_i Z_i - log(1/a)`` (lower) and
  ``-log mean_i W_i + log(1/a)`` (upper). It needs only each run to be unbiased, so it holds when the reverse runs
  share their start (the one exact latent of simulated data); its margin does not shrink with n, but it is not
  sunk by runs far below the others.

The rules are fixed before the runs are seen, by n alone (:func:`order_ranks`): k = 1, ``ceil(n/8)`` and
``ceil(n/4)`` (duplicates dropped), and markov. Taking the tightest of m bounds, each at level ``a``, could fail
with probability up to ``m a``, so each rule is computed at ``a/m`` (a union bound) and the tightest is taken: the
result holds at ``a``. Choosing k after seeing the runs would void this. When the reverse runs share their start
only the Markov rule applies, at the whole ``a``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType

import numpy as np
from scipy import stats

from ..caching import cached
from ..contracts.estimate import DEFAULT_COMBINE, Estimate, log_harmonic_mean, log_mean_exp
from ..errors import NonFiniteLogWeightError, OptionError, OptionTypeError

__all__ = ["CertifiedBound", "certified_lower", "certified_upper", "order_ranks", "order_statistic_margin"]

SIDES = ("lower", "upper")


@dataclass(frozen=True)
class CertifiedBound:
    """A bound on ``log p(y)`` that is on the wrong side with probability at most :attr:`level`.

    Attributes
    ----------
    value : float
        The bound on ``log p(y)``: -inf (a lower bound) or +inf (an upper bound) is true but says nothing.
    side : {"lower", "upper"}
    rule : str
        The rule taken, the tightest of :attr:`candidates`: ``"markov"``, ``"min-of-runs"`` (lower) or
        ``"max-of-runs"`` (upper), or ``"quantile-of-runs (k=K)"``, the K-th smallest ``log Z_i`` (lower) or K-th
        largest ``log U_i`` (upper) moved by its margin (:func:`order_statistic_margin`).
    level : float
        ``a``: ``P(the bound is on the wrong side of log p(y)) <= a``, over the runs.
    num_runs : int
        The runs it was computed from.
    candidates : mapping of str to float
        Every rule that applies and its value at its share of the level, :attr:`share`: ``a/m`` each with m rules
        (markov and the order statistics :func:`order_ranks` gives for n runs; ``a`` when markov is alone).
    """

    value: float
    side: str
    rule: str
    level: float
    num_runs: int
    candidates: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        if self.side not in SIDES:
            raise OptionError(f"side must be 'lower' or 'upper', got {self.side!r}")
        object.__setattr__(self, "candidates", MappingProxyType(dict(self.candidates)))

    @property
    def share(self) -> float:
        """The level each candidate rule was computed at: ``level / len(candidates)``."""
        return self.level / len(self.candidates)

    def holds(self, truth: float) -> bool:
        """Whether ``truth`` (a value of ``log p(y)``) lies on the bound's side: ``truth >= value`` for a lower
        bound, ``truth <= value`` for an upper.

        Parameters
        ----------
        truth : float

        Returns
        -------
        bool

        Raises
        ------
        OptionError
            If ``truth`` is NaN.
        """
        truth = float(truth)
        if math.isnan(truth):
            raise OptionError("truth is NaN: there is no side of it to be on")
        return truth >= self.value if self.side == "lower" else truth <= self.value


def order_ranks(num_runs: int) -> tuple[int, ...]:
    """The order statistics the certified bounds use for ``num_runs`` runs: k = 1, ``ceil(n/8)``, ``ceil(n/4)``.

    Fixed by n alone, before any run is seen (a k picked after looking would inflate the level); duplicates, which
    small n gives, are dropped.

    Parameters
    ----------
    num_runs : int
        n, at least 1.

    Returns
    -------
    tuple of int
        The distinct ranks, ascending: ``(1,)`` for n <= 4, ``(1, 2)`` for n = 5 to 8, ``(1, 8, 16)`` for n = 64.

    Raises
    ------
    OptionError
        If ``num_runs`` is below 1.
    """
    n = int(num_runs)
    if n < 1:
        raise OptionError(f"num_runs must be at least 1, got {num_runs}")
    return tuple(sorted({1, -(-n // 8), -(-n // 4)}))


@cached(maxsize=256)
def order_statistic_margin(num_runs: int, rank: int, level: float) -> float:
    """``log c_k``: the margin of the k-th order statistic of n independent runs at level ``a``.

    The smallest ``c`` with ``P(Binomial(n, 1/c) >= n - k + 1) <= a``: at most that chance do ``n - k + 1`` runs
    (those from the k-th smallest up) exceed ``c p(y)`` when each does with probability at most ``1/c``. The
    binomial tail ``P(Binomial(n, q) >= m)`` is the regularized incomplete beta function ``I_q(m, n - m + 1)``,
    increasing in ``q``, so ``1/c_k = beta.ppf(a, n - k + 1, k)`` solves it with equality; for k = 1 that is
    ``a^(1/n)``, computed in closed form: ``log c_1 = log(1/a)/n`` (min-of-runs).

    Parameters
    ----------
    num_runs : int
        n, at least 1.
    rank : int
        k in 1..n (the k-th smallest ``log Z_i``, or the k-th largest ``log U_i``).
    level : float
        ``a`` in (0, 1).

    Returns
    -------
    float
        ``log c_k > 0``, the distance the k-th order statistic is moved.

    Raises
    ------
    OptionError
        If ``rank`` is not in 1..n or ``level`` not in (0, 1).
    """
    n, k, a = int(num_runs), int(rank), _level(level)
    if not 1 <= k <= n:
        raise OptionError(f"rank must be in 1..{n} (an order statistic of {n} runs), got {rank}")
    if k == 1:
        return math.log(1 / a) / n
    return -math.log(float(stats.beta.ppf(a, n - k + 1, k)))


def certified_lower(log_estimates, *, level: float) -> CertifiedBound:
    """A lower bound on ``log p(y)`` from independent forward runs, wrong with probability at most ``level``.

    Each run's ``exp(log Z_i)`` must be an unbiased (or downward-biased) estimate of ``p(y)``, independent of the
    others: forward AIS, tempered SMC or SMC runs, each from its own prior draws. With m rules (markov and one per
    rank of :func:`order_ranks`), each is computed at ``level / m`` and the tightest (highest) is taken:
    min-of-runs ``min_i log Z_i - log(m/level)/n``, quantile-of-runs (k) ``log Z_(k) - log c_k`` (the k-th smallest
    run, :func:`order_statistic_margin` at ``level / m``) or markov ``log mean_i Z_i - log(m/level)``. On a tie,
    markov, then the smaller k.

    Parameters
    ----------
    log_estimates : array-like of shape (n,) or Estimate
        Per-run ``log Z_i``, or an :class:`~bdmc.Estimate` with ``bound="lower"`` whose runs combine by
        log-mean-exp (its :attr:`~bdmc.Estimate.runs` are used). A run may be -inf (zero weight: a run that found
        no mass): min-of-runs is then -inf (true, and useless), quantile-of-runs (k) too once k or more runs are,
        while markov counts them as zeros and stays finite unless every run is -inf.
    level : float
        ``a`` in (0, 1).

    Returns
    -------
    CertifiedBound
        ``side="lower"``.

    Raises
    ------
    OptionError
        If ``level`` is not in (0, 1), there is no run, the runs are not one-dimensional, or an Estimate is not a
        lower bound that combines by log-mean-exp.
    OptionTypeError
        If ``level`` is not a real number.
    NonFiniteLogWeightError
        If a run is NaN or +inf (no correct run produces either).
    """
    runs = _runs(log_estimates, "lower")
    a = _level(level)
    ranks = order_ranks(runs.size)
    share = a / (len(ranks) + 1)
    ascending = np.sort(runs)
    candidates = {"markov": log_mean_exp(runs) - math.log(1 / share)}
    for k in ranks:
        candidates[_rule_name(k, "lower")] = float(ascending[k - 1]) - order_statistic_margin(runs.size, k, share)
    rule = max(candidates, key=candidates.get)  # the first of the highest: markov, then the smaller k, wins a tie
    return CertifiedBound(value=candidates[rule], side="lower", rule=rule, level=a, num_runs=int(runs.size),
                          candidates=candidates)


def certified_upper(log_estimates, *, level: float, independent: bool) -> CertifiedBound:
    """An upper bound on ``log p(y)`` from reverse runs, wrong with probability at most ``level``.

    Each run's ``W_i = exp(-log U_i)`` must be an unbiased (or upward-biased) estimate of ``1/p(y)``: a reverse
    run (reverse AIS, reverse tempered SMC) started from an exact posterior draw. With ``independent=True`` (each
    run from its own independent exact draw, and its own random numbers) the rules mirror
    :func:`certified_lower`'s, each at ``level / m`` with m rules, and the tightest (lowest) is taken: max-of-runs
    ``max_i log U_i + log(m/level)/n``, quantile-of-runs (k) the k-th largest ``log U_i`` plus ``log c_k``, or
    markov ``-log mean_i W_i + log(m/level)``; on a tie, markov, then the smaller k. With ``independent=False``
    (the runs share their start, e.g. the one exact latent of simulated data) only markov holds, at the whole
    level: ``-log mean_i W_i + log(1/level)``.

    Parameters
    ----------
    log_estimates : array-like of shape (n,) or Estimate
        Per-run ``log U_i = -log W_i``, or an :class:`~bdmc.Estimate` with ``bound="upper"`` whose runs combine by
        log-harmonic-mean (its :attr:`~bdmc.Estimate.runs` are ``log U_i``). A run may be +inf (``W_i = 0``: a
        reverse run that found no mass): max-of-runs is then +inf (true, and useless), quantile-of-runs (k) too
        once k or more runs are, while markov counts them as zero ``W_i`` and stays finite unless every run is
        +inf.
    level : float
        ``a`` in (0, 1).
    independent : bool
        Whether every run started from its own independent exact posterior draw.

    Returns
    -------
    CertifiedBound
        ``side="upper"``.

    Raises
    ------
    OptionError
        If ``level`` is not in (0, 1), there is no run, the runs are not one-dimensional, or an Estimate is not an
        upper bound that combines by log-harmonic-mean.
    OptionTypeError
        If ``level`` is not a real number or ``independent`` not a bool.
    NonFiniteLogWeightError
        If a run is NaN or -inf (``W_i = +inf``, which no run with ``E W_i = 1/p(y)`` produces).
    """
    if not isinstance(independent, (bool, np.bool_)):
        raise OptionTypeError(f"independent must be True or False, got {independent!r}")
    runs = _runs(log_estimates, "upper")
    a = _level(level)
    ranks = order_ranks(runs.size) if independent else ()
    share = a / (len(ranks) + 1)
    descending = -np.sort(-runs)
    candidates = {"markov": log_harmonic_mean(runs) + math.log(1 / share)}
    for k in ranks:
        candidates[_rule_name(k, "upper")] = float(descending[k - 1]) + order_statistic_margin(runs.size, k, share)
    rule = min(candidates, key=candidates.get)  # the first of the lowest: markov, then the smaller k, wins a tie
    return CertifiedBound(value=candidates[rule], side="upper", rule=rule, level=a, num_runs=int(runs.size),
                          candidates=candidates)


def _rule_name(rank: int, side: str) -> str:
    if rank == 1:
        return "min-of-runs" if side == "lower" else "max-of-runs"
    return f"quantile-of-runs (k={rank})"


def _level(level) -> float:
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (Real, np.floating, np.integer)):
        raise OptionTypeError(f"level must be a number in (0, 1), got {level!r}")
    level = float(level)
    if not 0 < level < 1:
        raise OptionError(f"level must be in (0, 1) (the chance the bound is on the wrong side), got {level}")
    return level


def _runs(log_estimates, side: str) -> np.ndarray:
    """The per-run log estimates as a 1-D float64 array, refusing what no correct run of ``side`` produces."""
    if isinstance(log_estimates, Estimate):
        if log_estimates.bound != side or log_estimates.combine != DEFAULT_COMBINE[side]:
            raise OptionError(
                f"a certified {side} bound needs an Estimate with bound={side!r} whose runs combine by "
                f"{DEFAULT_COMBINE[side]} (each run unbiased for {'p(y)' if side == 'lower' else '1/p(y)'}); got "
                f"bound={log_estimates.bound!r}, combine={log_estimates.combine!r}")
        log_estimates = log_estimates.runs
    try:
        runs = np.asarray(log_estimates, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise OptionTypeError(f"log_estimates must be a 1-D array of per-run log estimates: {error}") from error
    if runs.ndim != 1:
        raise OptionError(f"log_estimates must be one-dimensional (one value per run), got shape {runs.shape}")
    if runs.size < 1:
        raise OptionError("log_estimates holds no run: a certified bound needs at least one")
    wrong = np.inf if side == "lower" else -np.inf
    illegal = np.isnan(runs) | (runs == wrong)
    if np.any(illegal):
        k = int(np.argmax(illegal))
        why = ("a lower-bound run may be -inf (zero weight) but never NaN or +inf" if side == "lower" else
               "an upper-bound run log U_i = -log W_i may be +inf (W_i = 0) but never NaN or -inf (W_i = +inf, "
               "impossible when E W_i = 1/p(y))")
        raise NonFiniteLogWeightError(f"run {k} of {runs.size} is {runs[k]} ({int(illegal.sum())} run(s) affected): "
                                      f"{why}; this is a bug in the model or the estimator, not a result")
    return runs
