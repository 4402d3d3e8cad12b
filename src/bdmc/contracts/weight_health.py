"""Whether an estimate's ± can be trusted: the effective sample size and the Pareto k-hat of its runs' weights.

A lower bound combines runs by log-mean-exp of weights ``w_k = exp(run_k)``; an upper bound by log-harmonic-mean,
a log-mean-exp of ``exp(-run_k)``. When one run carries nearly all the weight, the delta-method standard error
of a log-mean-exp is about 1 whatever the error really is, and an estimate may sit nats from the truth with a
small ±. Two diagnostics say so:

- the effective sample size ``(sum w)^2 / sum w^2`` of the weights: near 1 when one run dominates;
- the Pareto k-hat of Pareto-smoothed importance sampling (ArviZ's ``psislw``; Vehtari et al. 2024): above 0.7
  the weights' tail is too heavy for the mean to converge at a useful rate. PSIS fits the largest
  ``min(n / 5, 3 sqrt(n))`` weights, so it needs n >= 25 runs; with fewer, k-hat is not estimated (NaN).

:func:`untrusted` is the rule an estimate warns by (calibrated by ``benchmarks/weight_health.py``).
"""

from __future__ import annotations

import math

import numpy as np

KHAT_LIMIT = 0.7  # PSIS's own threshold (Vehtari et al. 2024, Sec. 3)
MIN_ESS = 4.0  # "a few chains": below it, the weights rest on one to three runs
MIN_RUNS_FOR_KHAT = 25


def logsumexp(values) -> float:
    """``log(sum(exp(values)))`` of a flat array, stably: -inf entries count as zeros, a +inf or NaN propagates.
    SciPy's general one costs a warm call of a small run about 0.2 ms each time; this is all a run's few values
    need."""
    v = np.asarray(values, dtype=np.float64).ravel()
    top = np.max(v) if v.size else -np.inf
    if not np.isfinite(top):  # all zero weights (-inf), or a +inf / NaN that must not be hidden
        return float(np.nan if np.any(np.isnan(v)) else top)
    return float(top + math.log(np.sum(np.exp(v - top))))


def log_weights(runs, bound) -> np.ndarray | None:
    """The log-weights whose mean an estimate is: the runs (lower bound), their negatives (upper), else None."""
    runs = np.asarray(runs, dtype=np.float64)
    if bound == "lower":
        return runs
    if bound == "upper":
        return -runs
    return None


def weight_ess(logw) -> float:
    """``(sum w)^2 / sum w^2`` of ``w = exp(logw)``; NaN when every weight is zero."""
    logw = np.asarray(logw, dtype=np.float64)
    if logw.size == 0 or not np.any(np.isfinite(logw)):
        return float("nan")
    return float(math.exp(2 * logsumexp(logw) - logsumexp(2 * logw)))


def log_mean_exp_summary(logw: np.ndarray) -> tuple[float, float, float]:
    """``log(mean(w))``, its delta-method stderr and the weights' ESS, for a flat float64 array of log-weights with
    no NaN or +inf: the numbers of ``log_mean_exp``, ``log_mean_exp_stderr`` (:mod:`bdmc.contracts.estimate`) and
    :func:`weight_ess`, computed by the same arithmetic with the shared parts once."""
    n = logw.size
    top = float(np.max(logw))
    if top == -np.inf:  # every weight zero
        return top, float("nan"), float("nan")
    lse = float(top + math.log(np.sum(np.exp(logw - top))))
    lse_squared = float(2 * top + math.log(np.sum(np.exp(2 * logw - 2 * top))))
    ess = math.exp(2 * lse - lse_squared)
    if n < 2:
        return lse - math.log(n), float("nan"), ess
    normalized = np.exp(logw - lse + math.log(n))  # ratios w_k / mean(w)
    return lse - math.log(n), float(np.std(normalized, ddof=1) / math.sqrt(n)), ess


def pareto_khat(logw) -> float:
    """PSIS's Pareto k-hat of the weights (ArviZ's ``psislw``), or NaN with fewer than 25 finite weights."""
    logw = np.asarray(logw, dtype=np.float64)
    logw = logw[np.isfinite(logw)]
    if logw.size < MIN_RUNS_FOR_KHAT or np.ptp(logw) == 0:
        return float("nan") if logw.size < MIN_RUNS_FOR_KHAT else float("-inf")
    return _psis_khat(logw)


def _psis_khat(logw: np.ndarray) -> float:
    """The k that ArviZ's ``psislw`` (``reff=1``) returns for a flat array of finite log-weights, by the same
    arithmetic: the tail of the ``ceil(min(n / 5, 3 sqrt(n)))`` largest weights and Zhang and Stephens' (2009)
    empirical-Bayes fit of a generalized Pareto distribution to it, with PSIS's weakly informative prior on k
    (Vehtari et al. 2024). Its smoothed weights are not needed here, and ``psislw``'s xarray wrapping costs about
    0.13 ms a call, which every estimate of 25 runs or more would pay (``tests/contracts/test_weight_health.py``
    checks that the two agree)."""
    n = logw.size
    x = logw - np.max(logw)
    ordered = np.sort(x)
    cutoff = max(ordered[n - int(np.ceil(min(n / 5.0, 3 * n**0.5))) - 1], np.log(np.finfo(float).tiny))
    tail = ordered[ordered > cutoff]
    if tail.size <= 4:  # too few tail weights to fit
        return float("inf")
    return _gpd_shape(np.exp(tail) - np.exp(cutoff))


def _gpd_shape(tail: np.ndarray) -> float:
    """Zhang and Stephens' estimate of a generalized Pareto shape from sorted exceedances, with PSIS's prior."""
    n = tail.size
    m = 30 + int(n**0.5)
    b = 1 - np.sqrt(m / (np.arange(1, m + 1, dtype=float) - 0.5))
    b /= 3 * tail[int(n / 4 + 0.5) - 1]
    b += 1 / tail[-1]
    k = np.log1p(-b[:, None] * tail).mean(axis=1)
    profile = n * (np.log(-(b / k)) - k - 1)
    weights = 1 / np.exp(profile - profile[:, None]).sum(axis=1)
    kept = weights >= 10 * np.finfo(float).eps
    weights, b = weights[kept], b[kept]
    weights /= weights.sum()
    k_post = np.log1p(-np.sum(b * weights) * tail).mean()
    return float((n * k_post + 10 * 0.5) / (n + 10))


def ess_floor(num_runs: int) -> float:
    """The weight ESS below which an estimate of ``num_runs`` runs warns: 4 or an eighth of the runs, whichever is
    larger (half the runs for fewer than eight, whose ESS cannot reach 4 however healthy)."""
    return min(max(MIN_ESS, num_runs / 8), num_runs / 2)


def untrusted(ess: float, khat: float, num_runs: int) -> str | None:
    """Why an estimate's ± is not to be trusted, or None: k-hat above 0.7, or an ESS below :func:`ess_floor`.

    Calibrated in ``benchmarks/results/weight_health/``: on exact models, of the forward estimates one nat or more
    off it leaves about 1 in 5 silent at 16 runs and 1 in 16 at 64; of those within one stderr of the truth it warns
    on about 4 in 10. Reverse estimates that are off hide it better (their decisive weights are rare): it misses
    about a third to a half of them.
    """
    reasons = []
    if np.isfinite(khat) and khat > KHAT_LIMIT:
        reasons.append(f"Pareto k-hat {khat:.2f} > {KHAT_LIMIT}")
    floor = ess_floor(num_runs)
    if not ess >= floor:
        reasons.append(f"weights' effective sample size {ess:.1f} of {num_runs} runs < {floor:g}")
    return "; ".join(reasons) or None


# A run whose log weight lies this far below the others' median, in nats and in robust standard deviations (MAD
# times 1.4826), is a straggler: a chain that never reached the posterior's mass (stuck, or trapped in a minor
# mode). It carries no weight, so it leaves the estimate and its stderr alone, and only a look at the runs shows it.
STRAGGLER_NATS = 50.0
STRAGGLER_SDS = 10.0


def stragglers(logw) -> tuple[int, float]:
    """How many runs lie far below the others (:data:`STRAGGLER_NATS` and :data:`STRAGGLER_SDS` below the
    median), and the largest such deficit in nats (0 when none). A straggler among lower-bound runs has a far
    smaller weight than its peers; among upper-bound runs (log weights ``-run``) a far larger reverse estimate."""
    logw = np.asarray(logw, dtype=np.float64)
    finite = logw[np.isfinite(logw)]
    if finite.size < 4:
        return 0, 0.0
    median = float(np.median(finite))
    spread = 1.4826 * float(np.median(np.abs(finite - median)))
    deficit = median - logw  # a -inf weight (a lower-bound run with every weight zero) is the farthest straggler
    far = deficit > max(STRAGGLER_NATS, STRAGGLER_SDS * spread)
    return int(far.sum()), float(deficit[far].max()) if far.any() else 0.0

