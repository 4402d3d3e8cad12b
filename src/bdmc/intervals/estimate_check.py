"""Is a ``log p(y)`` from another tool right? Its value against bdmc's own interval, with a stated level and tier.

**Simulated data** (the latent that generated them is known). n forward runs (AIS, SMC, tempered SMC) give
``Z_i`` with mean ``p(y)``, independent; n reverse runs from the exact latent give ``W_i`` with mean ``1 / p(y)``,
all from that one latent. Two tiers judge the value, each side of each tier at a quarter of ``level``:

- **certified** (holds whatever the kernel, schedule or model): the lower side is the best of min-of-runs,
  quantile-of-runs and Markov (:func:`bdmc.intervals.bounds.certified_lower`): min-of-runs pays
  ``log(1/a)/n`` (0.23 nat at the default 32 runs and level 0.01) plus the lowest run's shortfall, so a value 1 nat
  too low is caught. The upper side can only
  use Markov's inequality on the pooled ``W``, ``-log mean W_i + log(1/a)`` (6 nats at level 0.01): the reverse
  runs share one exact latent, so they are not independent, and one latent is one posterior draw whatever the
  number of runs that start from it. No certified upper side tighter than ``log(1/a)`` exists from one latent.
- **calibrated** (simulated data only): the two pooled estimates widened by a Student-t multiple of each one's
  standard error from the runs (and of the value's stated error): ``[L - t se_L, U + t se_U]``, or where the
  estimates cross (noise on a near-exact sandwich) ``[U - t se_L, L + t se_U]``. ``E L <= log p(y) <= E U``
  (Jensen), so only the runs' noise can put the truth outside; its false-verdict rate is *measured*, not
  assumed: ``benchmarks/check_estimate_level.py`` counts it over 1,000 simulated data sets per model
  (``docs/checks.md`` gives the figures). It is how a value 1 nat too high is caught.

A correct value is called wrong by the certified tier with probability at most ``level / 2``, whatever the model;
by either tier at a rate the level benchmark measured below ``level`` on its models.

**The user's data** (no exact latent): :func:`bdmc.evidence` gives the interval, at ``level / 2`` (the other half
is left for the value's stated error): its lower side certified from the model's density alone, its upper side
from reverse runs started at posterior draws, which holds if those draws are exact (``upper_rests_on`` says
whose draws). A value above it is "too high" in the tier ``draws``.

"consistent" is not a certificate that the value is right: it says the interval cannot tell; its width says how
much it could.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from scipy import stats

from ..checks.sandwich import exact_log_marginal_or_none, plan_sandwich
from ..contracts.estimate import log_harmonic_mean, log_mean_exp, log_mean_exp_stderr
from ..contracts.pairs import estimator_pair
from ..errors import BDMCError
from .bounds import certified_lower, certified_upper
from .run import evidence

CONSISTENT, TOO_HIGH, TOO_LOW, UNDECIDED = "consistent", "too high", "too low", "undecided"
CERTIFIED, CALIBRATED, DRAWS = "certified", "calibrated", "draws"
TIER_MEANS = {
    CERTIFIED: "certified: holds at its level whatever the model and kernel",
    CALIBRATED: "calibrated: its level measured over simulated data sets, not guaranteed",
    DRAWS: "rests on the posterior draws being exact",
}


@dataclass(frozen=True)
class EstimateCheck:
    """The verdict on another tool's ``log p(y)``, the tier that called it and bdmc's own interval.

    Attributes
    ----------
    verdict : {"consistent", "too high", "too low", "undecided"}
        ``undecided`` when bdmc's own certified sides cross (or its interval on the user's data crossed): its runs
        failed, and no value is judged against them.
    tier : {"certified", "calibrated", "draws"} or None
        What called the value wrong (None when consistent): the certified bounds, the calibrated interval
        (simulated data), or the upper side from posterior draws (the user's data). :data:`TIER_MEANS` says what
        each rests on.
    value, stderr : float
        The checked estimate and its stated standard error (0 when none was given).
    level : float
        The stated false-verdict level: the certified tier at most ``level / 2`` (simulated data), the calibrated
        tier at ``level / 2`` nominally and as measured; on the user's data bdmc's interval at ``level / 2``.
    estimate : float
        bdmc's own point estimate of ``log p(y)``.
    lower, upper : float
        bdmc's pooled forward (lower) and reverse (upper) estimates.
    certified_lower, certified_upper : float
        bdmc's interval: ``log p(y)`` lies in it with probability at least ``1 - level / 2`` (on the user's data,
        the upper side rests on ``upper_rests_on``). NaN where a side could not be computed.
    calibrated_lower, calibrated_upper : float
        The calibrated tier's interval (NaN on the user's data).
    z : float
        The multiple of ``stderr`` the certified tier allows for the value's own noise.
    upper_rests_on : str
        What the upper side assumes.
    exact : float or None
        The model's exact ``log p(y)`` where it is known (for tests and benchmarks).
    method, num_steps, num_runs : str, int, int
        bdmc's pair of estimators, its knob and runs per direction.
    two_sided : bool
        Whether an exact latent gave the upper side (simulated data).
    bracket_upper : float
        The bracketing upper bound from the draws (the user's data; NaN otherwise), for information.
    evidence : EvidenceResult or None
        bdmc's interval on the user's data.
    """

    verdict: str
    tier: str | None
    value: float
    stderr: float
    level: float
    estimate: float
    lower: float
    upper: float
    certified_lower: float
    certified_upper: float
    calibrated_lower: float
    calibrated_upper: float
    z: float
    upper_rests_on: str
    exact: float | None
    method: str
    num_steps: int
    num_runs: int
    two_sided: bool
    bracket_upper: float = math.nan
    evidence: Any = field(default=None, repr=False, compare=False)
    details: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def wrong(self) -> bool:
        """Whether the value was called wrong (too high or too low)."""
        return self.verdict in (TOO_HIGH, TOO_LOW)

    @property
    def width(self) -> float:
        """``certified_upper - certified_lower``: how large an error the certified tier can see at least."""
        return self.certified_upper - self.certified_lower

    def for_value(self, value: float, *, stderr: float | None = None) -> EstimateCheck:
        """The verdict on another value of the same ``log p(y)``, from the same runs (no new runs)."""
        value, stderr = _finite(value, "value"), _stderr(stderr)
        if self.two_sided:
            sides = _simulated_sides(self.details["forward_runs"], self.details["reverse_runs"], self.level, stderr)
        else:
            sides = _real_sides(self.evidence, self.level)
        verdict = _judge(value, stderr, sides, two_sided=self.two_sided)
        return dataclasses.replace(self, value=value, stderr=stderr, **sides, **verdict)

    def summary(self) -> str:
        """The verdict, the tier that called it, bdmc's interval and estimate, in a few lines."""
        given = f"{self.value:.3f}" + (f" ± {self.stderr:.3g}" if self.stderr > 0 else "")
        head = f"{self.verdict}: log p(y) = {given}"
        if self.verdict == UNDECIDED:
            head += (f"; bdmc's own certified sides cross ({self.certified_lower:.3f} above {self.certified_upper:.3f}"
                     "): its runs failed (a bug alarm on bdmc's side), and no value is judged against them")
        elif self.tier is not None:
            head += f", called by the {self.tier} tier ({TIER_MEANS[self.tier]})"
        lines = [head,
                 f"bdmc: log p(y) in [{self.certified_lower:.3f}, {self.certified_upper:.3f}] with probability >= "
                 f"{1 - self.level / 2:g}, estimate {self.estimate:.3f}; the upper side rests on {self.upper_rests_on}"]
        if self.two_sided:
            lines.append(f"calibrated interval [{self.calibrated_lower:.3f}, {self.calibrated_upper:.3f}] "
                         f"(level measured, not guaranteed); {self.method}, {self.num_runs} runs each way at "
                         f"{estimator_pair(self.method).symbol} = {self.num_steps}; stated level {self.level:g}")
        else:
            lines.append(f"stated level {self.level:g}: bdmc's interval at {self.level / 2:g}, the rest for the "
                         f"value's stated error; {self.evidence.rounds[-1].describe()}")
            if math.isfinite(self.bracket_upper):
                lines.append(f"bracketing upper bound from the same draws (in expectation): {self.bracket_upper:.3f}")
        if self.verdict == CONSISTENT:
            lines.append(f"consistent is not a certificate: bdmc's interval is {self.width:.2f} nats wide")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the verdict, tier, value and bdmc's interval."""
        names = ("verdict", "tier", "value", "stderr", "level", "estimate", "lower", "upper", "certified_lower",
                 "certified_upper", "calibrated_lower", "calibrated_upper", "z", "upper_rests_on", "exact", "method",
                 "num_steps", "num_runs", "two_sided", "bracket_upper")
        return {k: getattr(self, k) for k in names}


def check_estimate(key, model, data, value: float, *, stderr: float | None = None, exact_latent=None,
                   level: float = 0.01, method: str = "auto", num_steps: int | None = None, num_runs: int = 32,
                   kernel=None, num_particles: int | None = None, draws=None, max_seconds: float | None = None,
                   progress="auto") -> EstimateCheck:
    """Check another tool's ``log p(y)`` against bdmc's interval: consistent, too high or too low.

    Parameters
    ----------
    key : PRNG key
    model : Model
    data : pytree
        The data the value is the evidence of.
    value : float
        The other tool's estimate of ``log p(y)``.
    stderr : float, optional
        Its standard error, if the tool gives one.
    exact_latent : pytree, optional
        The latent that simulated ``data``: then both tiers judge (module docstring). Without it (the user's
        data) :func:`bdmc.evidence` gives the interval.
    level : float
        The stated probability of calling a correct value wrong (module docstring for how it is shared).
    method : {"auto", "ais", "tempered-smc", "smc"}
        bdmc's pair of estimators on simulated data (:func:`bdmc.sandwich`; "auto" by model class).
    num_steps : int, optional
        The pair's knob on simulated data; default the pair's own (1,000 for AIS).
    num_runs : int
        Independent runs per direction on simulated data (32: the certified lower side's margin shrinks as 1/n).
    kernel, num_particles
        As for :func:`bdmc.sandwich`.
    draws : optional
        Posterior draws for the reverse runs on the user's data (as :func:`bdmc.evidence` takes them); None: NUTS.
    max_seconds : float, optional
        The budget of :func:`bdmc.evidence` on the user's data.

    Returns
    -------
    EstimateCheck

    Raises
    ------
    BDMCError
        A value or standard error that is not finite, a level outside (0, 1), no data, draws with an exact latent.
    """
    value, stderr = _finite(value, "value"), _stderr(stderr)
    if not 0 < level < 1:
        raise BDMCError(f"level must lie in (0, 1), got {level}")
    if data is None:
        raise BDMCError("check_estimate needs the data the value is the evidence of (simulate them with "
                        "bdmc.simulate and pass its exact latent too, for both tiers)")
    if exact_latent is None:
        return _check_real(key, model, data, value, stderr, level=level, draws=draws, max_seconds=max_seconds,
                           progress=progress)
    if draws is not None:
        raise BDMCError("give draws (the user's data) or exact_latent (simulated data), not both")
    plan = plan_sandwich(key, model, data, exact_latent, method=method, num_particles=num_particles, kernel=kernel)
    knob = plan.pair.default_knob if num_steps is None else int(num_steps)
    if int(num_runs) != num_runs or num_runs < 2:
        raise BDMCError(f"num_runs must be an integer >= 2 (the calibrated tier needs a spread), got {num_runs}")
    k_forward, k_reverse = jax.random.split(jax.random.fold_in(key, 1))
    options = {"kernel": plan.kernel, "num_particles": plan.num_particles, "progress": progress}
    forward = plan.pair.run("forward", k_forward, model, plan.data, knob=knob, num_runs=num_runs, **options)
    reverse = plan.pair.run("reverse", k_reverse, model, plan.data, knob=knob, num_runs=num_runs,
                            exact_latent=plan.exact_latent, **options)
    runs = {"forward_runs": np.asarray(forward.runs, dtype=np.float64),
            "reverse_runs": np.asarray(reverse.runs, dtype=np.float64)}
    sides = _simulated_sides(runs["forward_runs"], runs["reverse_runs"], level, stderr)
    return EstimateCheck(value=value, stderr=stderr, level=level, **sides,
                         **_judge(value, stderr, sides, two_sided=True),
                         upper_rests_on="the one exact latent that simulated the data (Markov's inequality only)",
                         exact=plan.exact, method=plan.method, num_steps=knob, num_runs=int(num_runs), two_sided=True,
                         details=runs)


def _check_real(key, model, data, value, stderr, *, level, draws, max_seconds, progress) -> EstimateCheck:
    result = evidence(key, model, data, draws=draws, level=level / 2, max_seconds=max_seconds, progress=progress)
    sides = _real_sides(result, level)
    last = result.rounds[-1]
    exact = exact_log_marginal_or_none(model, data)
    return EstimateCheck(value=value, stderr=stderr, level=level, **sides,
                         **_judge(value, stderr, sides, two_sided=False), upper_rests_on=result.upper_rests_on,
                         exact=None if exact is None else float(exact),
                         method=result.method, num_steps=int(last.num_steps), num_runs=int(last.num_runs),
                         two_sided=False, bracket_upper=math.nan if result.bracket is None else float(result.bracket),
                         evidence=result)


def _simulated_sides(forward_runs, reverse_runs, level: float, stderr: float) -> dict:
    """bdmc's interval and calibrated interval from the runs; each side of each tier at ``level / 4``, split
    between the bound and the value's Gaussian noise when it states an error."""
    share = level / 4
    bound_level = share / 2 if stderr > 0 else share
    lower = certified_lower(forward_runs, level=bound_level)
    upper = certified_upper(reverse_runs, level=bound_level, independent=False)
    pooled_lower, pooled_upper = log_mean_exp(forward_runs), log_harmonic_mean(reverse_runs)
    se_lower, se_upper = log_mean_exp_stderr(forward_runs), log_mean_exp_stderr(-np.asarray(reverse_runs))
    t = float(stats.t.isf(share, df=len(forward_runs) - 1))
    return {"lower": float(pooled_lower), "upper": float(pooled_upper), "estimate": (pooled_lower + pooled_upper) / 2,
            "certified_lower": lower.value, "certified_upper": upper.value,
            # The hull of the two estimates: where they cross (noise, on a near-exact sandwich) the truth may lie
            # anywhere between them. A standard error the runs cannot give (a run with no mass) silences that side.
            "calibrated_lower": float(min(pooled_lower, pooled_upper)
                                      - t * math.hypot(_finite_or(se_lower, math.inf), stderr)),
            "calibrated_upper": float(max(pooled_lower, pooled_upper)
                                      + t * math.hypot(_finite_or(se_upper, math.inf), stderr)),
            "z": float(stats.norm.isf(share / 2)) if stderr > 0 else 0.0}


def _real_sides(result, level: float) -> dict:
    """bdmc's evidence interval (at ``level / 2``) and the value's noise allowance (``level / 4`` a side)."""
    last = result.rounds[-1]
    return {"lower": float(last.forward), "upper": float(last.reverse), "estimate": float(result.estimate),
            "certified_lower": float(result.lower.value),
            "certified_upper": math.nan if result.crossed else float(result.upper.value),
            "calibrated_lower": math.nan, "calibrated_upper": math.nan, "z": float(stats.norm.isf(level / 4))}


def _judge(value: float, stderr: float, sides: dict, *, two_sided: bool) -> dict:
    """The verdict and its tier: the certified bounds first, then the calibrated interval. A NaN side (crossed
    sides on the user's data, no calibrated tier there) never calls."""
    allow = sides["z"] * stderr
    upper_tier = CERTIFIED if two_sided else DRAWS
    if sides["certified_upper"] < sides["certified_lower"]:
        return {"verdict": UNDECIDED, "tier": None}
    if value + allow < sides["certified_lower"]:
        return {"verdict": TOO_LOW, "tier": CERTIFIED}
    if value - allow > sides["certified_upper"]:
        return {"verdict": TOO_HIGH, "tier": upper_tier}
    if value < sides["calibrated_lower"]:
        return {"verdict": TOO_LOW, "tier": CALIBRATED}
    if value > sides["calibrated_upper"]:
        return {"verdict": TOO_HIGH, "tier": CALIBRATED}
    return {"verdict": CONSISTENT, "tier": None}


def _finite_or(x: float, default: float) -> float:
    return float(x) if math.isfinite(x) else default


def _stderr(stderr) -> float:
    stderr = 0.0 if stderr is None else _finite(stderr, "stderr")
    if stderr < 0:
        raise BDMCError(f"stderr must be >= 0, got {stderr}")
    return stderr


def _finite(x, name: str) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise BDMCError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(x):
        raise BDMCError(f"{name} must be finite, got {x}: a tool that returned it has failed, not estimated")
    return x
