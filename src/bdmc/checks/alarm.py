"""The BDMC bug alarm: a run's lower bounds above its upper bounds by more than chance allows mean a bug.

Every forward run (AIS at any chain length, SMC at any number of moves) gives ``exp(l)`` with mean ``Z``;
every reverse run (reverse AIS or SHME, from the exact posterior sample) gives ``exp(-u)`` with mean ``1/Z``.
Pool a run's lower estimates ``L_1..L_m`` and upper estimates ``U_1..U_n`` (each already a combination of
chains) with equal weights,

    L = log mean_i exp(L_i),        U = -log mean_j exp(-U_j).

By linearity ``exp(L)`` has mean ``Z`` and ``exp(-U)`` mean ``1/Z``, however the estimates within a set depend
on each other (reverse chains share the one exact latent; all of them may share it). The two sets are run
with independent keys, so ``exp(L - U)`` has mean exactly 1 given the data, and Markov's inequality gives

    P(L - U >= c) <= exp(-c)        under correctness.

The alarm fires when ``exp(-(L - U)) < alpha``: its false-alarm probability is at most ``alpha`` for any model,
kernel, schedule and number of chains, at every chain length at once (``benchmarks/alarm_calibration.py``
measures it). Pooling costs at most ``log m + log n`` nats against the worst single pair, and it is never
weaker than testing every pair with a Bonferroni correction: a pair crossing by ``log(m n / alpha)`` puts the
pooled statistic above ``log(1 / alpha)``.

What is *not* an alarm: a mean per-pair gap (B-hat) many standard errors below zero. Reverse runs that share
one exact latent are not independent, so such a z-score has no known level (at T = 2 on weak data it reached
-13.6 on a correct model). It is reported, never acted on.

A separate, uncertified warning: forward estimates whose single-run mean falls as the chain grows. Longer
chains usually raise the expected log-weight, but no theorem says they must, so a fall beyond chance (a
one-sided Welch t-test on independent forward chains, Bonferroni over the pairs of chain lengths) and of at
least ``FALLING_MIN_NATS`` is a reason to look, not a verdict. Its false-warning rate is measured, not
guaranteed (``benchmarks/results/alarm_calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats

from ..contracts.estimate import Estimate, log_harmonic_mean, log_mean_exp
from ..contracts.pairs import pair_of
from ..errors import BDMCError

ALPHA = 0.01  # false-alarm level of the certified alarm (Markov's inequality)
FALLING_ALPHA = 0.01  # nominal level of the uncertified falling-forward warning (Welch t approximation)
# Falls smaller than this are immaterial for a log-ML estimate, and with few chains the t approximation of
# skewed log-weights is too optimistic for them: 16 chains on weak data gave 4% false warnings without it.
FALLING_MIN_NATS = 0.1


@dataclass(frozen=True)
class Crossing:
    """One lower estimate against one upper estimate: ``nats = lower - upper`` (positive when they cross)."""

    lower: str
    upper: str
    nats: float
    p_bound: float


@dataclass(frozen=True)
class Falling:
    """A forward estimate whose single-run mean is lower at a longer chain than at a shorter one."""

    shorter: str
    longer: str
    drop: float
    t: float
    p_value: float


@dataclass(frozen=True)
class BugAlarm:
    """The run-level verdict on a set of lower and upper estimates of one ``log p(y)``.

    Attributes
    ----------
    crossing : float
        Pooled lower minus pooled upper estimate, ``L - U``, in nats (positive when the pooled bounds cross).
    p_bound : float
        ``min(1, exp(-crossing))``: the largest probability of so large a crossing if everything is correct.
    alpha : float
        Level of the alarm: it fires when ``p_bound < alpha``, so it fires on a correct run with probability
        at most ``alpha``.
    num_lower, num_upper : int
        How many lower and upper estimates were pooled.
    worst : Crossing or None
        The pair with the largest crossing (the one to look at when the alarm fires).
    falling : tuple of Falling
        Uncertified warnings: forward estimates that fall as the chain grows by at least ``FALLING_MIN_NATS``
        and beyond chance at level ``falling_alpha`` (Bonferroni over pairs, Welch t approximation).
    falling_alpha : float
    """

    crossing: float
    p_bound: float
    alpha: float = ALPHA
    num_lower: int = 1
    num_upper: int = 1
    worst: Crossing | None = None
    falling: tuple = ()
    falling_alpha: float = FALLING_ALPHA

    @property
    def certified(self) -> bool:
        """The pooled crossing alone is improbable at level ``alpha`` under correctness (Markov)."""
        return self.p_bound < self.alpha

    @property
    def fired(self) -> bool:
        """The alarm: certified, false-alarm probability at most ``alpha``."""
        return self.certified

    @property
    def warned(self) -> bool:
        """An uncertified warning was raised (forward estimates falling as the chain grows)."""
        return bool(self.falling)

    def message(self) -> str:
        """One or two sentences a person can act on."""
        n = f"{self.num_lower} lower and {self.num_upper} upper estimate(s)"
        if self.fired:
            w = self.worst
            where = f"; worst pair: {w.lower} above {w.upper} by {w.nats:.3g} nats" if w is not None else ""
            text = (f"BUG ALARM: pooled over {n}, the lower bounds exceed the upper bounds by {self.crossing:.3g} "
                    f"nats, which has probability <= {self.p_bound:.2g} if everything is correct (alarm level "
                    f"{self.alpha:g}){where}. Suspect the model's log density, the simulator (is the exact "
                    "sample really drawn with the data?) or the kernel.")
        else:
            text = (f"no bug detected: pooled over {n}, the lower bounds do not exceed the upper bounds by more "
                    f"than chance allows (alarm level {self.alpha:g}; p-bound {self.p_bound:.2g})")
        for f in self.falling:
            text += (f"\nwarning (uncertified): the forward estimate falls from {f.shorter} to {f.longer} by "
                     f"{f.drop:.3g} nats (t = {f.t:.1f}, adjusted p = {f.p_value:.2g}); longer chains should "
                     "not do worse: check the kernel's mixing and the schedule")
        return text

    def to_dict(self) -> dict:
        """A JSON-ready summary."""
        out = asdict(self)
        out.update(fired=self.fired, warned=self.warned, message=self.message())
        out["falling"] = [asdict(f) for f in self.falling]
        return out


class Bound(NamedTuple):
    """What the alarm needs of one estimate: its combined value and its single-run mean and stderr."""

    label: str
    value: float
    mean_single: float
    stderr_single: float
    method: str | None = None  # estimates of one method are compared across knob values for the warning
    knob: int | None = None  # the pair's knob value: chain length T (AIS), moves per case (SMC), ...
    num_runs: int = 0  # independent runs behind mean_single (0: unknown, no falling test)


def bug_alarm(
    lower: Estimate | Sequence[Estimate],
    upper: Estimate | Sequence[Estimate],
    *,
    alpha: float = ALPHA,
    falling_alpha: float = FALLING_ALPHA,
) -> BugAlarm:
    """The run-level bug alarm over every lower and every upper estimate of one ``log p(y)``.

    Parameters
    ----------
    lower, upper : Estimate or sequence of Estimate
        Stochastic lower bounds (forward AIS, SMC; any chain lengths) and upper bounds (reverse AIS, SHME from
        the exact posterior sample). The lower set must be run with randomness independent of the upper set;
        within a set, estimates may share anything (the upper ones share the exact latent).
    alpha : float
        Level of the alarm: its probability of firing when everything is correct is at most ``alpha``.
    falling_alpha : float
        Level of the uncertified falling-forward warning.

    Returns
    -------
    BugAlarm
    """
    lowers, uppers = _as_list(lower), _as_list(upper)
    for e in lowers:
        if e.bound != "lower":
            raise BDMCError(f"a lower estimate has bound={e.bound!r}; pass forward AIS / SMC estimates as lower")
    for e in uppers:
        if e.bound != "upper":
            raise BDMCError(f"an upper estimate has bound={e.bound!r}; pass reverse AIS / SHME estimates as upper")
    return alarm_from_bounds([_bound(e) for e in lowers], [_bound(e) for e in uppers], alpha=alpha,
                             falling_alpha=falling_alpha)


def alarm_from_bounds(lowers: Sequence[Bound], uppers: Sequence[Bound], *, alpha: float = ALPHA,
                      falling_alpha: float = FALLING_ALPHA) -> BugAlarm:
    """The run-level alarm from plain :class:`Bound` records (see :func:`bug_alarm`; a sandwich table's rows
    become them in :func:`bdmc.checks.sandwich.alarm_from_table`)."""
    if not lowers or not uppers:
        raise BDMCError("the bug alarm needs at least one lower and one upper estimate")
    if not 0 < alpha < 1 or not 0 < falling_alpha < 1:
        raise BDMCError(f"alpha and falling_alpha must lie in (0, 1), got {alpha} and {falling_alpha}")
    lo_values = np.array([b.value for b in lowers], dtype=np.float64)
    up_values = np.array([b.value for b in uppers], dtype=np.float64)
    if np.isnan(lo_values).any() or np.isnan(up_values).any() or np.isposinf(up_values).any():
        raise BDMCError("an estimate is NaN (or an upper bound is +inf): a bug, not a result")
    crossing = log_mean_exp(lo_values) - log_harmonic_mean(up_values)
    diffs = lo_values[:, None] - up_values[None, :]
    i, j = np.unravel_index(int(np.argmax(np.where(np.isnan(diffs), -np.inf, diffs))), diffs.shape)
    worst = Crossing(lower=lowers[i].label, upper=uppers[j].label, nats=float(diffs[i, j]),
                     p_bound=crossing_p_bound(diffs[i, j]))
    return BugAlarm(crossing=float(crossing), p_bound=crossing_p_bound(crossing), alpha=alpha, num_lower=len(lowers),
                    num_upper=len(uppers), worst=worst, falling=falling_forward(lowers, alpha=falling_alpha),
                    falling_alpha=falling_alpha)


def falling_forward(lowers: Sequence[Bound], *, alpha: float = FALLING_ALPHA,
                    min_nats: float = FALLING_MIN_NATS) -> tuple:
    """Pairs of forward estimates of one method whose single-run mean falls as the knob grows, beyond chance.

    Forward chains are independent (each starts from its own prior draw), so the difference of two single-run
    means has the Welch standard error. The test is one-sided at level ``alpha`` with a Bonferroni correction
    over the compared pairs, with Student t quantiles at the Welch-Satterthwaite degrees of freedom, and a
    fall must also reach ``min_nats``. It assumes that the expected log-weight does not fall as the chain
    grows, which is usual but not a theorem: hence a warning, never the alarm.
    """
    groups: dict = {}
    for b in lowers:
        if b.knob is not None and b.num_runs > 1 and np.isfinite(b.mean_single) and np.isfinite(b.stderr_single):
            groups.setdefault(b.method, []).append(b)
    pairs = []
    for members in groups.values():
        members.sort(key=lambda m: m.knob)
        pairs += [(a, c) for k, a in enumerate(members) for c in members[k + 1:] if c.knob > a.knob]
    out = []
    for a, c in pairs:
        va, vc = a.stderr_single ** 2, c.stderr_single ** 2
        if not va + vc > 0:
            continue
        drop = a.mean_single - c.mean_single
        t = drop / math.sqrt(va + vc)
        df = (va + vc) ** 2 / (va ** 2 / (a.num_runs - 1) + vc ** 2 / (c.num_runs - 1))
        p = min(1.0, float(stats.t.sf(t, df)) * len(pairs))
        if drop >= min_nats and p < alpha:
            out.append(Falling(shorter=a.label, longer=c.label, drop=float(drop), t=float(t), p_value=p))
    return tuple(out)


def _as_list(x) -> list[Estimate]:
    return [x] if isinstance(x, Estimate) else list(x)


def crossing_p_bound(crossing) -> float:
    """``min(1, exp(-crossing))``: Markov's bound on the probability of a crossing this large under correctness."""
    return 1.0 if not crossing > 0 else min(1.0, math.exp(-float(crossing)))


def _bound(est: Estimate) -> Bound:
    """An estimate's alarm record, named by the pair its estimator belongs to and that pair's knob value."""
    paired = pair_of(est.estimator)
    method, knob = None, None
    if paired is None:
        name = f"{est.estimator or est.bound} estimate"
    else:
        pair, direction = paired
        method, knob = pair.name, int(est.settings[pair.knob])
        name = pair.label(direction, knob)
    ok = est.runs.size > 1 and np.all(np.isfinite(est.runs))
    return Bound(name, est.value, est.mean_single if ok else math.nan, est.stderr_single if ok else math.nan,
                 method, knob, int(est.runs.size))
