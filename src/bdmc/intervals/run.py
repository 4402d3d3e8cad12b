"""``bdmc.evidence``: one call for a two-sided interval on log p(y) of a data set, escalated until it is narrow.

Each round runs ``num_runs`` independent forward runs (tempered SMC by default) and as many reverse runs, each
started from its own posterior draw (real data: the user's draws, or NUTS's), or from the one exact latent
(simulated data). The forward runs give a certified lower bound, the reverse runs a certified upper bound
(:mod:`bdmc.intervals.bounds`: the tightest of the order-statistic bounds of the runs and Markov's, the side's
level split over them). A round narrower than ``tolerance`` ends the call; otherwise the next round doubles the
budget where it buys most width: the temperatures (or the particles) when the runs' spread and the two directions'
disagreement dominate, the runs when the certificates' slack ``log(1/a) / n`` dominates.

With posterior draws, a first stage fits a Gaussian to half of them and runs importance sampling from it forward
and reciprocal importance sampling on the held-out half in reverse (:mod:`bdmc.intervals.proposal`): some 70,000
density evaluations, enough where the posterior is close to Gaussian on the latent space.

Every round's interval is certified at its own share of ``level``, fixed before any round runs: the proposal stage
``level / 2`` (half per side), tempered round ``r`` ``rest / 2^(r+1)`` of the rest. The shares sum to ``level``, so
every round's interval holds at once with probability at least ``1 - level``, and the result is their
intersection (the best lower side and the best upper side, from whichever rounds gave them); stopping when it is
narrow enough is then free. Each halving of a share costs ``log(2) / n`` nats per side.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax

from ..bracketing.model_draws import bracket_model
from ..contracts.estimate import log_harmonic_mean, log_mean_exp
from ..contracts.model import simulate, validate_data
from ..core.ais import forward_ais, reverse_ais
from ..core.tempered import reverse_tempered_smc, tempered_smc
from ..errors import OptionError, RunHealthWarning, UntrustedStderrWarning
from .bounds import certified_lower, certified_upper, order_ranks, order_statistic_margin
from .draws import check_draws, nuts_draws, posterior_draws
from .proposal import continuous, proposal_runs
from .result import CROSSED, INTERVAL, WIDE, EvidenceResult, EvidenceRound

METHODS = ("auto", "tempered-smc", "ais")
CHECK_DRAWS = 64  # draws the stationarity check moves (spread over the chains)
BRACKET_DRAWS = 2000  # the bracketing bound's own draws from its fitted Gaussian
QUICK_ROUND = 5.0  # seconds: a round this short grows fourfold rather than twofold


class DrawsCheckWarning(RunHealthWarning):
    """The posterior draws failed the stationarity check: the upper side rests on draws that may not be exact."""


class BoundsCrossedWarning(RunHealthWarning):
    """The certified lower bound lies above the upper bound: the upper side's assumption failed; no interval."""


def evidence(key, model, data=None, *, draws=None, exact_latent=None, tolerance: float = 0.5, level: float = 0.01,
             max_seconds: float | None = None, max_rounds: int = 10, method: str = "auto", num_steps: int = 32,
             num_runs: int = 32, num_particles: int = 16, bracket: bool = True,
             on_round: Callable[[EvidenceRound], None] | None = None, progress: Any = "auto") -> EvidenceResult:
    """A two-sided interval on ``log p(y)``, escalated until it is narrower than ``tolerance`` nats.

    Parameters
    ----------
    key : PRNG key
    model
        A bdmc Model (built in, or a program through :mod:`bdmc.ppl`).
    data : pytree, optional
        The observed data. None: data are simulated from ``key`` and the exact latent that generated them starts
        the reverse runs (the certified sandwich of simulated data).
    draws : optional
        Posterior draws for the reverse runs on real data: a dict of arrays, ArviZ InferenceData or a posteriordb
        reference posterior (:func:`bdmc.intervals.draws.posterior_draws`). None on real data: NUTS draws
        (:func:`bdmc.intervals.draws.nuts_draws`), said so in the result.
    exact_latent : optional
        The latent that generated ``data`` (simulated data): every reverse run starts there.
    tolerance : float
        Width in nats at which the escalation stops.
    level : float
        The interval fails with probability at most ``level`` (each side at most ``level / 2``), given exact draws.
    max_seconds : float, optional
        Stop escalating when the next round (estimated at twice the last) would end past this budget.
    max_rounds : int
        At most this many rounds.
    method : {"auto", "tempered-smc", "ais"}
        The forward runs and their reverse; "auto": tempered SMC (with the model's own kernel where it has one).
    num_steps, num_runs, num_particles : int
        The first round's temperatures, runs per direction and particles per tempered-SMC run.
    bracket : bool
        Also compute the bracketing upper bound from the draws (for information).
    on_round : callable, optional
        Called with each :class:`~bdmc.intervals.result.EvidenceRound` as it ends.
    progress : bool or "auto"
        The runs' progress bars.

    Returns
    -------
    EvidenceResult

    Raises
    ------
    bdmc.errors.OptionError
        An option out of range, or both ``draws`` and ``exact_latent``.
    bdmc.DataError
        Draws that cannot be read onto the model's latent space (names, shapes, NaN, outside the support).
    """
    began = time.perf_counter()
    _check_options(tolerance=tolerance, level=level, max_seconds=max_seconds, max_rounds=max_rounds, method=method,
                   num_steps=num_steps, num_runs=num_runs, num_particles=num_particles)
    if draws is not None and exact_latent is not None:
        raise OptionError("give draws (real data) or exact_latent (simulated data), not both")
    k_data, k_draws, k_check, k_bracket, k_rounds, k_proposal = jax.random.split(key, 6)
    if data is None:
        if draws is not None or exact_latent is not None:
            raise OptionError("draws and exact_latent describe given data: pass data too")
        data, exact_latent = simulate(k_data, model)
    data = validate_data(model, data)
    # Tempered SMC (with the model's own kernel where it has one): its resampling keeps the runs' spread small,
    # and the extreme-of-runs certificates pay for that spread (AIS's falls only as 1 / sqrt(T)).
    method = "tempered-smc" if method == "auto" else method

    bracket_value = None
    if exact_latent is not None:
        posterior = None
        rests_on = ("the exact latent that generated the data (simulated data); the reverse runs share it, so "
                    "only Markov's inequality bounds their mean")
        record: dict = {"source": "exact latent (simulated data)"}
    else:
        posterior = (posterior_draws(model, draws, data=data) if draws is not None
                     else nuts_draws(k_draws, model, data))
        available = int(jax.tree.leaves(posterior.latents)[0].shape[0])
        checked = check_draws(k_check, model, data, posterior.spaced(min(CHECK_DRAWS, available)), level=level)
        record = {"source": posterior.source, "num_draws": available, "diagnostics": posterior.diagnostics,
                  "check": dataclasses.asdict(checked)}
        rests_on = (f"the draws ({posterior.source}) being exact, independent posterior draws (as BREAD's "
                    "real-data protocol assumes)")
        if not checked.passed:
            rests_on += "; they FAILED the stationarity check, so the upper side is in doubt"
            warnings.warn(DrawsCheckWarning(f"posterior draws: {checked.message()}"), stacklevel=2)
        if bracket:
            bracket_value = float(bracket_model(k_bracket, model, data, posterior.latents,
                                                num_draws=BRACKET_DRAWS).upper.value)

    rounds: list[EvidenceRound] = []
    note = ""
    best_lower = best_upper = None

    def keep(this: EvidenceRound, lower, upper) -> float:
        """Record a round; every round's interval holds at once (their levels sum to ``level``), so the result is
        their intersection. Returns its width."""
        nonlocal best_lower, best_upper
        rounds.append(this)
        best_lower = lower if best_lower is None or lower.value > best_lower.value else best_lower
        best_upper = upper if best_upper is None or upper.value < best_upper.value else best_upper
        if on_round is not None:
            on_round(this)
        return best_upper.value - best_lower.value

    rest = level
    if posterior is not None and continuous(posterior.latents) and available >= 4:
        # A proposal fitted to half the draws: cheap, and tight where the posterior is close to Gaussian.
        rest = level / 2
        began_stage = time.perf_counter()
        fitted = proposal_runs(k_proposal, model, data, posterior, level=level / 4)
        lower = certified_lower(fitted.forward, level=level / 4)
        upper = certified_upper(fitted.reverse, level=level / 4, independent=True)
        width = keep(EvidenceRound(round=0, kind="proposal", num_steps=0, num_runs=len(fitted.reverse),
                                   num_particles=fitted.forward_draws, lower=lower.value, upper=upper.value,
                                   forward=log_mean_exp(fitted.forward), reverse=log_harmonic_mean(fitted.reverse),
                                   seconds=time.perf_counter() - began_stage), lower, upper)
    steps, runs, particles = int(num_steps), int(num_runs), int(num_particles)
    most_runs = math.inf if posterior is None else available
    runs = int(min(runs, most_runs))
    for r in range(int(max_rounds)):
        if rounds and width <= tolerance:
            break
        round_began = time.perf_counter()
        side_level = rest / 2 ** (r + 2)  # this round's share of what is left, halved between the two sides
        starts = exact_latent if posterior is None else posterior.spaced(runs)
        k_forward, k_reverse = jax.random.split(jax.random.fold_in(k_rounds, r))
        with warnings.catch_warnings():  # the certificates never use a run's ±, so its health is not in question
            warnings.simplefilter("ignore", UntrustedStderrWarning)
            forward, reverse = _runs(method, k_forward, k_reverse, model, data, starts, steps=steps, runs=runs,
                                     particles=particles, progress=progress)
        lower = certified_lower(forward.runs, level=side_level)
        upper = certified_upper(reverse.runs, level=side_level, independent=posterior is not None)
        this = EvidenceRound(round=len(rounds), kind=method, num_steps=steps, num_runs=runs,
                             num_particles=particles if method == "tempered-smc" else 1,
                             lower=lower.value, upper=upper.value, forward=float(forward.value),
                             reverse=float(reverse.value), seconds=time.perf_counter() - round_began)
        width = keep(this, lower, upper)
        if width <= tolerance:  # narrow, or crossed (negative): more rounds cannot mend a failed assumption
            break
        # The width is the certificates' slack (log(1/a) / n per side for the run-extreme rules, log(1/a) for
        # Markov's) plus what better runs remove: the runs' spread and the two directions' disagreement.
        run_slack = order_statistic_margin(runs, 1, side_level / (len(order_ranks(runs)) + 1))  # min-of-runs's
        fixed = 0.0 if posterior is not None else math.log(1 / side_level)  # Markov's on one shared latent
        slack = run_slack * (2 if posterior is not None else 1)
        reducible = this.width - slack - fixed
        if fixed and reducible <= tolerance:
            note = (f"the upper side starts from one exact latent, so only Markov's inequality bounds it: "
                    f"log(1/a) = {fixed:.2f} nats at this round's level, more than the tolerance; give independent "
                    "posterior draws (draws=) for a narrow interval")
            break
        spent = time.perf_counter() - began
        if max_seconds is not None and spent + 2 * this.seconds > max_seconds:
            note = f"max_seconds ({max_seconds:g} s) would be passed by another round"
            break
        if r == max_rounds - 1:
            note = f"max_rounds ({max_rounds}) reached"
            break
        # Doubling the runs halves the slack; doubling the temperatures shrinks the runs' spread by about
        # 1 - 1/sqrt(2) (its variance falls as 1/T) and, roughly, halves the directions' disagreement.
        disagreement = min(max(this.reverse - this.forward, 0.0), reducible)
        gain_runs = slack / 2 if runs * 2 <= most_runs else 0.0
        gain_steps = (1 - 1 / math.sqrt(2)) * (reducible - disagreement) + disagreement / 2
        # A quick round grows fourfold (both moves): the call's time is its last round's, whatever the path.
        quick = this.seconds < QUICK_ROUND
        if gain_runs > gain_steps or (quick and gain_runs > 0):
            runs *= 2
        if gain_runs <= gain_steps or quick:
            if method == "tempered-smc" and steps >= 4 * particles:
                particles *= 2  # a run's variance falls as 1 / particles too: keep the two balanced
            else:
                steps *= 2
    last = rounds[-1]
    crossed = best_lower.value > best_upper.value
    narrow = width <= tolerance and not crossed
    estimate = min(max(0.5 * (last.forward + last.reverse), best_lower.value), best_upper.value)
    if crossed:
        # The lower side rests on the model's density alone: the upper side's assumption is what failed.
        estimate = last.forward
        note = (f"Crossed sides happen with probability at most {level:g} when the upper side's assumption holds "
                f"({rests_on}), so it does not: MCMC stuck in one mode or a label-switched copy, draws of another "
                "model or data set, or draws of a density other than the model's")
        warnings.warn(BoundsCrossedWarning(
            f"no interval: the certified sides crossed by {best_lower.value - best_upper.value:.3g} nats. {note}"),
            stacklevel=2)
    return EvidenceResult(
        lower=best_lower, upper=best_upper, estimate=float(estimate),
        status=CROSSED if crossed else INTERVAL if narrow else WIDE,
        tolerance=float(tolerance), level=float(level), method=method, upper_rests_on=rests_on, draws=record,
        note="" if narrow else note, bracket=bracket_value, rounds=tuple(rounds), seconds=time.perf_counter() - began,
        settings={"tolerance": tolerance, "level": level, "max_seconds": max_seconds, "max_rounds": max_rounds,
                  "method": method, "num_steps": num_steps, "num_runs": num_runs, "num_particles": num_particles})


def _runs(method, k_forward, k_reverse, model, data, starts, *, steps, runs, particles, progress):
    """One round's forward runs and reverse runs (one start each)."""
    if method == "ais":
        forward = forward_ais(k_forward, model, data, num_steps=steps, num_runs=runs, progress=progress)
        reverse = reverse_ais(k_reverse, model, data, exact_latent=starts, num_steps=steps, num_runs=runs,
                              progress=progress)
    else:
        forward = tempered_smc(k_forward, model, data, num_steps=steps, num_runs=runs, num_particles=particles,
                               progress=progress)
        reverse = reverse_tempered_smc(k_reverse, model, data, exact_latent=starts, num_steps=steps, num_runs=runs,
                                       num_particles=particles, progress=progress)
    return forward, reverse


def _check_options(*, tolerance, level, max_seconds, max_rounds, method, num_steps, num_runs, num_particles):
    if not (isinstance(tolerance, (int, float)) and tolerance > 0 and math.isfinite(tolerance)):
        raise OptionError(f"tolerance must be a positive number of nats, got {tolerance!r}")
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise OptionError(f"level must lie in (0, 1), got {level!r}")
    if max_seconds is not None and not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise OptionError(f"max_seconds must be a positive number of seconds, got {max_seconds!r}")
    if method not in METHODS:
        raise OptionError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    for name, value, least in (("max_rounds", max_rounds, 1), ("num_steps", num_steps, 2), ("num_runs", num_runs, 1),
                               ("num_particles", num_particles, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise OptionError(f"{name} must be an integer >= {least}, got {value!r}")
