"""The BDMC bug alarm: reverse estimates below forward ones by more than chance allows mean a bug.

Forward runs give ``exp(l_k)`` with mean ``Z``; reverse runs give ``exp(-u_k)`` with mean ``1/Z``. The two
sets are independent, so ``exp(L - U)`` -- with ``L`` the log-mean-exp of the forward runs and ``U`` the
log-harmonic-mean of the reverse runs -- has mean exactly 1, whatever the sampler's quality, and Markov's
inequality gives

    P(L - U >= c) <= exp(-c).

A crossing of ``c`` nats therefore has probability at most ``exp(-c)`` if the model, kernel and exact
sample are all correct (the "certificate"). A smaller crossing can still be telling: the per-pair gap
B-hat = u_k - l_k has a non-negative expectation (it bounds a Jeffreys divergence; BREAD paper, Sec. 3.1),
so a mean gap many standard errors below zero is strong, though not certified, evidence of a bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .estimate import Estimate, gap

ALPHA = 0.01  # certificate level: alarm when the crossing has probability below this under correctness
Z_CRITICAL = 5.0  # the per-pair gap's z-score below which the alarm also fires (no certificate)


@dataclass(frozen=True)
class BugAlarm:
    """Whether a pair of forward / reverse estimates contradicts the sandwich.

    Attributes
    ----------
    crossing : float
        ``lower.value - upper.value`` in nats (positive when the combined bounds cross).
    p_bound : float
        ``exp(-crossing)`` (capped at 1): the largest probability of so large a crossing if all is correct.
    gap_z : float
        Mean per-pair gap divided by its standard error (negative when reverse runs sit below forward ones).
    fired : bool
        ``p_bound < alpha`` or ``gap_z < -z_critical``.
    """

    crossing: float
    p_bound: float
    gap_z: float
    alpha: float = ALPHA
    z_critical: float = Z_CRITICAL

    @property
    def certified(self) -> bool:
        """The crossing alone is improbable at level ``alpha`` under correctness (Markov's inequality)."""
        return self.p_bound < self.alpha

    @property
    def fired(self) -> bool:
        return self.certified or self.gap_z < -self.z_critical

    def message(self) -> str:
        """One sentence a person can act on."""
        if not self.fired:
            return "no sign of a bug: the reverse bound is not below the forward bound by more than chance allows"
        why = (f"the combined bounds cross by {self.crossing:.3g} nats, which has probability <= "
               f"{self.p_bound:.2g} if everything is correct" if self.certified else
               f"reverse runs sit {-self.gap_z:.1f} standard errors below forward runs on average")
        return (f"BUG ALARM: {why}. Suspect the model's log density, the kernel (does it leave every "
                "intermediate distribution invariant?) or the exact sample (was it really drawn with the data?).")


def bug_alarm(lower: Estimate, upper: Estimate, *, alpha: float = ALPHA, z_critical: float = Z_CRITICAL) -> BugAlarm:
    """Check a forward (lower) and a reverse (upper) estimate for a crossing that chance cannot explain.

    Parameters
    ----------
    lower, upper : Estimate
        Independent runs bounding ``log p(y)`` from below and above (AIS / SMC and reverse AIS / SHME).
    alpha : float
        Level of the Markov certificate.
    z_critical : float
        Threshold on the per-pair gap's z-score.
    """
    crossing = lower.value - upper.value
    p_bound = math.exp(-crossing) if crossing > 0 else 1.0
    mean, se = gap(lower, upper)
    gap_z = mean / se if se > 0 else (0.0 if mean >= 0 else -math.inf)
    return BugAlarm(crossing=crossing, p_bound=min(p_bound, 1.0), gap_z=gap_z, alpha=alpha, z_critical=z_critical)
