"""Is a ``log p(y)`` from another tool right? Its value against bdmc's certified bounds, with a stated level.

Forward runs (AIS, SMC, tempered SMC) give ``exp(L)`` with mean ``p(y)``; reverse runs from the exact latent
that simulated the data give ``exp(-U)`` with mean ``1 / p(y)``. Markov's inequality then certifies each side:

    P(log p(y) < L - b) <= exp(-b),        P(log p(y) > U + b) <= exp(-b),

whatever the kernel, schedule and number of runs. At level ``alpha`` each side gets ``alpha / 2``. A value
below the certified lower bound is "too low", above the certified upper bound "too high", else "consistent";
a correct value is called wrong with probability at most ``alpha``. With the other tool's standard error
``stderr``, each side's ``alpha / 2`` is split between Markov and a Gaussian allowance of ``z * stderr`` for
the value's own noise (the tool's claim that its error is Gaussian with that spread is then part of the level).

On the user's data there is no exact latent and so no certified upper bound: the value is checked against the
certified lower bound, and (when posterior draws are given or drawn) against the bracketing upper bound of Ji,
Shen and West (:func:`bdmc.bracketing.bracket`), which holds in expectation only for exact posterior draws:
its side is reported as uncertified and never makes the verdict.

"consistent" is not a certificate that the value is right: it says the bounds cannot tell; their width
(:attr:`EstimateCheck.width`) says how much they could. Longer runs (``num_steps``) narrow them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import jax
from scipy import stats

from ..bracketing import bracket_model
from ..contracts.pairs import estimator_pair
from ..errors import BDMCError
from .sandwich import plan_sandwich, run_plan

CONSISTENT, TOO_HIGH, TOO_LOW = "consistent", "too high", "too low"


@dataclass(frozen=True)
class EstimateCheck:
    """The verdict on another tool's ``log p(y)``, with the bounds it rests on.

    Attributes
    ----------
    verdict : {"consistent", "too high", "too low"}
    value, stderr : float
        The checked estimate and its stated standard error (0 when none was given).
    level : float
        The probability of a wrong "too high" or "too low" for a correct value (at most; Markov on each side).
    lower, upper : float
        bdmc's pooled lower and upper estimates (``upper`` NaN on the user's data).
    certified_lower, certified_upper : float
        ``lower - b`` and ``upper + b``: ``log p(y)`` lies between them with probability at least ``1 - level``
        (``certified_upper`` is NaN on the user's data).
    markov_b : float
        The b of each side: ``log(2 / level)``, or ``log(4 / level)`` with a standard error.
    z : float
        The multiple of ``stderr`` allowed for the value's own noise (0 without one).
    bracket_upper : float
        The bracketing upper bound from posterior draws (NaN when none was computed): uncertified.
    above_bracket : bool
        Whether the value lies above the bracketing upper bound (beyond twice its standard error): a warning
        that does not change the verdict.
    exact : float or None
        The model's exact ``log p(y)`` where it is known (for tests and benchmarks).
    method, num_steps, num_runs : str, int, int
        The pair of estimators bdmc ran and its knob.
    two_sided : bool
        Whether an exact latent gave the upper bound.
    """

    verdict: str
    value: float
    stderr: float
    level: float
    lower: float
    upper: float
    certified_lower: float
    certified_upper: float
    markov_b: float
    z: float
    bracket_upper: float
    above_bracket: bool
    exact: float | None
    method: str
    num_steps: int
    num_runs: int
    two_sided: bool
    details: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def width(self) -> float:
        """``certified_upper - certified_lower`` (inf on the user's data): how small an error the check can see."""
        return self.certified_upper - self.certified_lower if self.two_sided else math.inf

    def for_value(self, value: float, *, stderr: float | None = None) -> EstimateCheck:
        """The verdict on another value of the same ``log p(y)``, against the same bounds (no new runs)."""
        value = _finite(value, "value")
        stderr = _stderr(stderr)
        lo, hi, b, z, verdict = _verdict(self.lower, self.upper, value, stderr, self.level, self.two_sided)
        above = (math.isfinite(self.bracket_upper) and value - z * stderr > self.bracket_upper
                 + 2 * float(self.details.get("bracket", {}).get("upper_stderr", 0.0)))
        return dataclasses.replace(self, verdict=verdict, value=value, stderr=stderr, certified_lower=lo,
                                   certified_upper=hi, markov_b=b, z=z, above_bracket=bool(above))

    def summary(self) -> str:
        """One sentence: the verdict, the value against the certified interval, the level."""
        given = f"{self.value:.3f}" + (f" ± {self.stderr:.3g}" if self.stderr > 0 else "")
        if self.two_sided:
            where = f"certified interval [{self.certified_lower:.3f}, {self.certified_upper:.3f}]"
        else:
            where = f"certified lower bound {self.certified_lower:.3f} (the user's data: no certified upper bound)"
        text = (f"{self.verdict}: log p(y) = {given} against bdmc's {where}, at level {self.level:g} "
                f"({self.method}, {self.num_runs} runs at {estimator_pair(self.method).symbol} = {self.num_steps})")
        if math.isfinite(self.bracket_upper):
            text += (f"; the bracketing upper bound (uncertified) is {self.bracket_upper:.3f}"
                     + (", below the value" if self.above_bracket else ""))
        return text


def check_estimate(key, model, data, value: float, *, stderr: float | None = None, exact_latent=None,
                   level: float = 0.01, method: str = "auto", num_steps: int | None = None, num_runs: int = 16,
                   kernel=None, num_particles: int | None = None, draws=None, bracket_draws: int = 2000,
                   progress="auto") -> EstimateCheck:
    """Check another tool's ``log p(y)`` against bdmc's certified bounds.

    Parameters
    ----------
    key : PRNG key
    model : Model
    data : pytree
        The data the value is the evidence of.
    value : float
        The other tool's estimate of ``log p(y)``.
    stderr : float, optional
        Its standard error, if the tool gives one (e.g. from repeated runs).
    exact_latent : pytree, optional
        The latent that simulated ``data`` (simulated data): then both bounds are certified. Without it (the
        user's data) only the lower bound is.
    level : float
        The largest probability that a correct value is called "too high" or "too low".
    method : {"auto", "ais", "tempered-smc", "smc"}
        bdmc's pair of estimators (:func:`bdmc.sandwich`; "auto" by model class).
    num_steps : int, optional
        The pair's knob (T, or moves per case for "smc"); default 1,000 for AIS, 100 for tempered SMC.
    num_runs : int
        Independent runs per direction.
    kernel, num_particles
        As for :func:`bdmc.sandwich`.
    draws : pytree, optional
        Posterior draws of the model given ``data`` (latents on a leading axis), for the bracketing upper bound
        on the user's data (uncertified).
    bracket_draws : int
        Draws of the Gaussian fitted to ``draws`` (the bracketing lower bound's Monte Carlo).

    Returns
    -------
    EstimateCheck

    Raises
    ------
    BDMCError
        A value or standard error that is not finite, a level outside (0, 1).
    """
    value = _finite(value, "value")
    stderr = _stderr(stderr)
    if not 0 < level < 1:
        raise BDMCError(f"level must lie in (0, 1), got {level}")
    if data is None:
        raise BDMCError("check_estimate needs the data the value is the evidence of (simulate them with "
                        "bdmc.simulate and pass its exact latent too, for both certified bounds)")
    k_runs, k_bracket = jax.random.split(key)
    two_sided = exact_latent is not None
    plan = plan_sandwich(k_runs, model, data, exact_latent, method=method, num_particles=num_particles,
                         kernel=kernel, forward_only=not two_sided)
    # The pair's own default knob: long enough on the peers' problems to bound within a few nats.
    knob = plan.pair.default_knob if num_steps is None else int(num_steps)
    result = run_plan(k_runs, model, plan, steps=[knob], num_runs=num_runs, forward_only=not two_sided,
                      progress=progress)
    table = result.table
    forward = table[table["direction"] == "forward"].iloc[-1]
    lower = float(forward["value"])
    upper = float(table[table["direction"] == "reverse"].iloc[-1]["value"]) if two_sided else math.nan
    certified_lower, certified_upper, markov_b, z, verdict = _verdict(lower, upper, value, stderr, level, two_sided)
    bracket_upper, above = math.nan, False
    details: dict[str, Any] = {"table": table.to_dict("records")}
    if draws is not None:
        br = bracket_model(k_bracket, model, result.data, draws, num_draws=bracket_draws)
        bracket_upper = float(br.upper.value)
        above = bool(value - z * stderr > bracket_upper + 2 * float(br.upper.stderr))
        details["bracket"] = {"upper": bracket_upper, "upper_stderr": float(br.upper.stderr),
                              "lower": float(br.lower.value)}
    return EstimateCheck(verdict=verdict, value=value, stderr=stderr, level=level, lower=lower, upper=upper,
                         certified_lower=certified_lower, certified_upper=certified_upper, markov_b=markov_b, z=z,
                         bracket_upper=bracket_upper, above_bracket=above, exact=result.exact, method=plan.method,
                         num_steps=knob, num_runs=int(num_runs), two_sided=two_sided, details=details)


def _verdict(lower, upper, value, stderr, level, two_sided):
    """``(certified_lower, certified_upper, b, z, verdict)``: each side at ``level / 2``; with a standard error,
    half of a side's level to Markov and half to the value's Gaussian noise."""
    side = level / 2
    markov_b = math.log(1 / (side / 2 if stderr > 0 else side))
    z = float(stats.norm.isf(side / 2)) if stderr > 0 else 0.0
    certified_lower = lower - markov_b
    certified_upper = upper + markov_b if two_sided else math.nan
    if value + z * stderr < certified_lower:
        verdict = TOO_LOW
    elif two_sided and value - z * stderr > certified_upper:
        verdict = TOO_HIGH
    else:
        verdict = CONSISTENT
    return certified_lower, certified_upper, markov_b, z, verdict


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
