"""What :func:`bdmc.evidence` hands back: a two-sided interval on log p(y), what each side rests on, and how it
was reached (one row per round of the escalation)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .bounds import CertifiedBound

# The status: narrower than the tolerance; the budget ran out first; the certified sides crossed (no interval).
INTERVAL, WIDE, CROSSED = "interval", "wide", "crossed"


@dataclass(frozen=True)
class EvidenceRound:
    """One round of the escalation: the runs of both directions at one budget, and the interval they give.

    Attributes
    ----------
    round : int
        0 for the first.
    kind : str
        ``"proposal"``: importance sampling from a Gaussian fitted to half the draws, reciprocal importance sampling
        on the other half (:mod:`bdmc.intervals.proposal`; ``num_particles`` then counts proposal draws per forward
        run and ``num_runs`` the reverse runs); else the runs' method, ``"tempered-smc"`` or ``"ais"``.
    num_steps, num_runs, num_particles : int
        The budget: temperatures (or AIS distributions), independent runs per direction, particles per run (1
        for AIS).
    lower, upper : float
        The certified bounds of this round.
    forward, reverse : float
        The combined forward (log-mean-exp) and reverse (log-harmonic-mean) estimates.
    seconds : float
        Wall-clock time of the round (both directions, compilation included).
    """

    round: int
    kind: str
    num_steps: int
    num_runs: int
    num_particles: int
    lower: float
    upper: float
    forward: float
    reverse: float
    seconds: float

    @property
    def width(self) -> float:
        return self.upper - self.lower

    def describe(self) -> str:
        """The round's budget in words."""
        if self.kind == "proposal":
            return (f"importance sampling from the draws' fit ({self.num_particles} draws per forward run; "
                    f"{self.num_runs} reverse runs)")
        particles = f" x {self.num_particles} particles" if self.num_particles > 1 else ""
        return f"{self.kind}, {self.num_steps} steps x {self.num_runs} runs{particles}"


@dataclass(frozen=True)
class EvidenceResult:
    """A two-sided interval on ``log p(y)``: ``lower <= log p(y) <= upper`` with probability at least
    ``1 - level`` under the assumption ``upper_rests_on`` states. Every round's interval holds at once (their levels
    sum to ``level``), so the result is their intersection: each side from the round that gave it.

    Attributes
    ----------
    lower, upper : CertifiedBound
        The certified sides: each with its value, the rule taken (``min-of-runs``/``max-of-runs``,
        ``quantile-of-runs (k=K)`` or ``markov``) and every rule's value (``candidates``).
    estimate : float
        The point estimate: the midpoint of the last round's combined forward and reverse estimates, within the
        interval.
    status : {"interval", "wide", "crossed"}
        ``interval`` when the width is at most ``tolerance``; ``wide`` when the budget (``max_seconds`` or
        ``max_rounds``) ran out first: the interval still holds, it is only wider than asked; ``crossed`` when the
        certified lower side lies above the upper side: the upper side's assumption (``upper_rests_on``) fails, or
        the model's density is not what its draws were drawn from, and there is no interval (``note`` says by how
        much).
    tolerance, level : float
    method : str
        The estimator pair: ``"tempered-smc"`` or ``"ais"`` (forward runs and their reverse).
    note : str
        Why the escalation stopped short of the tolerance (empty for an ``interval``).
    upper_rests_on : str
        What the upper side assumes, in words: exact posterior draws (the user's, or NUTS's), or the one exact
        latent of simulated data.
    draws : dict
        Where the reverse runs started (``source``), the draws' diagnostics (R-hat, ESS, divergences where known)
        and the stationarity check of the draws (``check``), or the exact latent.
    bracket : float or None
        The bracketing upper bound (Ji, Shen and West) from the same draws, for information: an upper bound in
        expectation, not part of the certified interval.
    rounds : tuple of EvidenceRound
    seconds : float
        Wall-clock time of the whole call.
    settings : dict
        The options of the call.
    """

    lower: CertifiedBound
    upper: CertifiedBound
    estimate: float
    status: str
    tolerance: float
    level: float
    method: str
    upper_rests_on: str
    note: str
    draws: dict
    bracket: float | None
    rounds: tuple
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def width(self) -> float:
        """``upper - lower`` in nats."""
        return self.upper.value - self.lower.value

    @property
    def crossed(self) -> bool:
        """Whether the certified sides crossed: no interval, the upper side's assumption failed."""
        return self.status == CROSSED

    @property
    def converged(self) -> bool:
        """Whether the interval is at most ``tolerance`` wide."""
        return self.status == INTERVAL

    def contains(self, value: float) -> bool:
        """Whether ``value`` (an exact log p(y), another tool's estimate) lies inside the interval."""
        return self.lower.value <= value <= self.upper.value

    def summary(self) -> str:
        """The result in a few lines of plain words."""
        last = self.rounds[-1]
        if self.crossed:
            return "\n".join([
                f"NO INTERVAL: the certified lower bound {self.lower.value:.3f} lies above the upper bound "
                f"{self.upper.value:.3f} by {self.lower.value - self.upper.value:.3g} nats. {self.note}",
                f"lower: {self.lower.rule} of {self.lower.num_runs} forward runs at level {self.lower.level:g} "
                "(rests on nothing but the model's density)",
                f"upper: {self.upper.rule} of {self.upper.num_runs} reverse runs; rested on {self.upper_rests_on}",
                f"{len(self.rounds)} round(s); {self.seconds:.1f} s"])
        lines = [
            f"log p(y) in [{self.lower.value:.3f}, {self.upper.value:.3f}] (width {self.width:.3f} nats, estimate "
            f"{self.estimate:.3f}), with probability >= {1 - self.level:g}"
            + ("" if self.converged else f"; wider than the tolerance {self.tolerance:g}: {self.note}"),
            f"lower: {self.lower.rule} of {self.lower.num_runs} forward runs at level {self.lower.level:g}",
            f"upper: {self.upper.rule} of {self.upper.num_runs} reverse runs at level {self.upper.level:g}; "
            f"rests on {self.upper_rests_on}",
            f"{len(self.rounds)} round(s), the last {last.describe()}; {self.seconds:.1f} s",
        ]
        if self.bracket is not None:
            lines.append(f"bracketing upper bound from the same draws (in expectation): {self.bracket:.3f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the interval, its sides and rounds."""
        finite = (lambda x: x if x is None or math.isfinite(x) else str(x))  # noqa: E731
        return {"lower": finite(self.lower.value), "upper": finite(self.upper.value), "estimate": self.estimate,
                "width": finite(self.width), "status": self.status, "tolerance": self.tolerance,
                "level": self.level, "method": self.method, "lower_rule": self.lower.rule,
                "upper_rule": self.upper.rule, "lower_candidates": self.lower.candidates,
                "upper_candidates": self.upper.candidates, "upper_rests_on": self.upper_rests_on, "note": self.note,
                "draws": self.draws, "bracket": self.bracket, "seconds": self.seconds,
                "rounds": [asdict(r) for r in self.rounds], "settings": self.settings}
