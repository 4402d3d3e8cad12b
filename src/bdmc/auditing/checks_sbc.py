"""Check 2 of an audit: simulation-based calibration (:func:`bdmc.checks.sbc`) of the user's sampler."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable

import jax
import numpy as np

from ..checks.labels import Exchangeable
from ..checks.sbc import sbc
from ..contracts.capabilities import supports
from ..contracts.model import simulate
from ..contracts.sampler import DiagnosedDraws, Thinned
from ..errors import BDMCError
from ..plotting.audit import png_bytes
from ..plotting.sbc import plot_sbc_ecdf, plot_sbc_histograms
from .result import CheckOutcome, Figure

NAME = "sbc"
# The worst quantity's median ESS below this fraction of the draws: ranks of a correct sampler are not uniform,
# so the test's level does not hold and a failure is "inconclusive".
LOW_ESS = 0.5
DIAGNOSED_DATA_SETS = 20  # chains whose ArviZ R-hat and ESS the audit reports (ArviZ: ~5 ms a chain and quantity)
DIVERGENCE_DATA_SETS = 4  # data sets a NUTS that failed SBC runs on again to count its divergent transitions
MAX_THIN = 50  # cap on the automatic thinning
PILOT_REPLICATIONS = 2  # data sets of the thinning pilot (sbc needs two; the ESS is their median)
PILOT_DRAWS = 200  # at least this many unthinned draws per pilot chain, so lags up to MAX_THIN are seen

MEANING = (
    "Many data sets are simulated from the prior and the likelihood; the sampler runs on each, and the rank of "
    "each true parameter value (and of the log-likelihood at it) among the sampler's draws is recorded. If the "
    "sampler draws from the posterior, every rank is uniform, whatever the model. Each quantity's rank ECDF "
    "is tested against a simultaneous band (Sailynoja et al. 2022); a sampler that is too narrow gives "
    "U-shaped histograms, one that is too wide humped ones, and a biased one skewed ones. It audits the "
    "sampler as the user runs it (its warm-up and adaptation included) together with the simulator and "
    "density it is given.")
REMEDY = (
    "Check first that the draws are near independent (the effective sample size in the table): autocorrelated "
    "draws make ranks look miscalibrated (the verdict is then inconclusive), so thin more or run longer (the "
    "audit picks the thinning of a fixed kernel from a pilot unless the budget's sbc_thin is given). Then run "
    "longer warm-up, a smaller step size "
    "or a higher target acceptance. A mixture's components: where they are exchangeable (the same prior on each), "
    "a sampler that keeps one labelling is correct and the audit tests label-invariant quantities (it finds such "
    "components by permuting them; name them with exchangeable= or --exchangeable); where their priors differ, a "
    "chain started in the label-swapped minor mode stays there: order the means (an ordered vector) so that "
    "only one labelling exists, or compare label-invariant quantities. If the failure persists at every budget, "
    "suspect the kernel's invariance (the Geweke test localizes it) or a simulator that does not match the "
    "density.")


def pilot_thin(key, model, sampler, *, num_draws: int, cap: int = MAX_THIN) -> tuple[int, dict]:
    """The thinning that makes ``sampler``'s draws near independent, from a short unthinned pilot.

    The sampler runs unthinned (``thin=1``) on ``PILOT_REPLICATIONS`` simulated data sets for
    ``max(PILOT_DRAWS, 4 * num_draws)`` draws; SBC's own effective sample size of each quantity (every latent
    scalar and the log-likelihood) gives the ESS per draw of the worst quantity (smallest median over the data
    sets), and the thinning is ``ceil(1 / ess_per_draw)``, between 1 and ``cap``.

    Parameters
    ----------
    key : PRNG key
    model : Model
    sampler : Sampler
        A dataclass sampler with a ``thin`` field (:class:`bdmc.contracts.sampler.Thinned`, as
        :class:`bdmc.checks.samplers.KernelSampler`).
    num_draws : int
        Draws SBC will keep per data set.
    cap : int
        Largest thinning chosen (a chain this slow needs a better sampler, not more thinning).

    Returns
    -------
    (int, dict)
        The thinning and what it rests on (pilot sizes, the worst quantity and its ESS per draw).
    """
    if cap < 1:
        raise BDMCError(f"pilot_thin: cap must be >= 1, got {cap}")
    if not (dataclasses.is_dataclass(sampler) and supports(sampler, Thinned)):
        raise BDMCError(f"pilot_thin needs a sampler dataclass with a thin field, got {type(sampler).__name__}")
    length = max(PILOT_DRAWS, 4 * int(num_draws))
    res = sbc(key, model, dataclasses.replace(sampler, thin=1), num_replications=PILOT_REPLICATIONS,
              num_draws=length, level=0.5)
    per_draw = np.median(res.ess, axis=0) / length
    worst = int(np.argmin(per_draw))
    ess_per_draw = float(per_draw[worst])
    thin = cap if ess_per_draw <= 1.0 / cap else max(1, min(cap, math.ceil(1.0 / ess_per_draw)))
    return thin, {"thin": thin, "automatic": True, "cap": cap, "pilot_data_sets": PILOT_REPLICATIONS,
                  "pilot_draws": length, "worst_quantity": res.names[worst], "ess_per_draw": ess_per_draw,
                  "capped": bool(ess_per_draw * cap < 1.0)}


def sbc_outcome(key, model, sampler, *, label: str, level: float, num_replications: int,
                num_draws: int, thinning: dict | None = None,
                on_progress: Callable[[int, int], None] | None = None,
                exchangeable: Exchangeable | None = None) -> CheckOutcome:
    """Run SBC and describe it as a :class:`CheckOutcome`.

    The rank test assumes independent draws. When the worst quantity's median effective sample size is below
    ``LOW_ESS`` of the draws, ranks of a correct sampler are not uniform either, so a failure is reported as
    "inconclusive" (thin more or run longer), not "fail" -- unless that median is below one draw: chains that
    did not move from their starts do not sample the posterior, and the failure stands.

    Parameters
    ----------
    key : PRNG key
    model : Model
    sampler : Sampler
        ``draws(key, data, *, num_draws)`` (:mod:`bdmc.checks.samplers`).
    label : str
        The sampler's name, for the title.
    level : float
        Family-wise false-alarm level over the quantities.
    num_replications, num_draws : int
    thinning : dict, optional
        How the sampler's thinning was chosen (:func:`pilot_thin`), recorded in the details.
    on_progress : callable, optional
        ``on_progress(done, num_replications)`` as data sets finish (:func:`bdmc.checks.sbc`).
    exchangeable : Exchangeable, optional
        Exchangeable components: the verdict rests on label-invariant quantities, and a sampler that keeps one
        labelling while those are calibrated is reported as such (a pass), not as a failure.

    Returns
    -------
    CheckOutcome
    """
    res = sbc(key, model, sampler, num_replications=int(num_replications), num_draws=int(num_draws), level=level,
              chain_diagnostics_of=DIAGNOSED_DATA_SETS, on_progress=on_progress, exchangeable=exchangeable)
    frame = res.to_frame()
    bad = res.miscalibrated
    worst, gamma = res.worst
    ess = float(np.median(res.ess))
    by_quantity = np.median(res.ess, axis=0)
    low_q = int(np.argmin(by_quantity))
    low_ess = float(by_quantity[low_q])
    autocorrelated = low_ess < LOW_ESS * res.num_draws
    # Below one effective draw on most data sets the chains did not move from their starts: that is a sampler
    # that does not sample the posterior as configured (a fail), not a mixing one whose ranks are autocorrelated.
    frozen = low_ess < 1.0
    # Chains that never moved (ESS below one draw in some quantity): a stuck sampler, not mere autocorrelation.
    stuck = int(np.sum(res.ess.min(axis=1) < 1.0))
    thin = res.settings.get("sampler", {}).get("thin")
    ess_text = (f"median ESS of the worst quantity ({res.names[low_q]}) {low_ess:.0f} of {res.num_draws} draws"
                + (f" at thin {thin}" if thin is not None else ""))
    statistic = (f"smallest gamma {gamma:.3g} ({worst}) over {len(res.names)} quantities; "
                 f"{len(bad)} leave their simultaneous ECDF band at {level / len(res.names):.2g} each (Bonferroni)")
    if autocorrelated:
        statistic += f"; {ess_text}, below {LOW_ESS:g} of them"
    if bad and frozen:
        verdict = "fail"
        summary = (f"ranks of {_listed(bad)} are not uniform and the chains did not move on most data sets "
                   f"({ess_text}): the sampler does not sample the posterior as configured (a step size too "
                   "large, or too short a warm-up)")
    elif bad and autocorrelated:
        verdict = "inconclusive"
        summary = (f"ranks of {_listed(bad)} are not uniform, but the draws are autocorrelated ({ess_text}): "
                   "ranks of autocorrelated draws are not uniform even for a correct sampler, so the test's level "
                   "does not hold: thin more / run longer")
    elif bad:
        verdict = "fail"
        summary = f"ranks of {_listed(bad)} are not uniform: the draws are not from the posterior"
        if stuck:
            summary += (f"; on {stuck} of {res.num_replications} data sets the chain barely moved (ESS below 1): "
                        "a step size too large for those posteriors, or too short a warm-up")
    else:
        verdict = "pass"
        summary = f"ranks of all {len(res.names)} quantities are uniform within their bands"
        if res.labelling is not None:
            summary = f"ranks of all {len(res.names)} label-invariant quantities are uniform within their bands"
        if autocorrelated:
            summary += f" ({ess_text}: autocorrelated, which lowers the test's power; thin more / run longer)"
    divergences = None
    if verdict in ("fail", "inconclusive") and supports(sampler, DiagnosedDraws):
        divergences = _divergences(jax.random.fold_in(key, 1), model, sampler, int(num_draws))
        if divergences["divergences"]:
            summary += (f"; the sampler reported {divergences['divergences']} divergent transitions of "
                        f"{divergences['transitions']} on {divergences['data_sets']} data sets simulated again: it "
                        "does not sample these posteriors (a funnel's neck, curvature its step size cannot "
                        "follow), which SBC sees; that is the sampler's failure here, not a bug shown in the model: "
                        "reparametrize (non-centred), or raise the target acceptance")
    if res.labelling is not None:
        summary += "; " + _labelling_finding(res.labelling)
    diagnostics = _arviz_summary(res)
    if diagnostics:
        statistic += (f"; worst quantity's median over {DIAGNOSED_DATA_SETS} data sets: split R-hat "
                      f"{diagnostics['rhat']:.3f}, bulk ESS {diagnostics['ess_bulk']:.0f}, tail ESS "
                      f"{diagnostics['ess_tail']:.0f} (ArviZ)")
    if thinning is not None and thinning.get("automatic"):
        summary += (f"; thin {thinning['thin']} chosen by a pilot (ESS per draw {thinning['ess_per_draw']:.2g} "
                    f"of {thinning['worst_quantity']}{', capped' if thinning.get('capped') else ''})")
    return CheckOutcome(
        name=NAME, title=f"Simulation-based calibration of {label}", verdict=verdict,
        statistic=statistic, level=level, summary=summary, meaning=MEANING, remedy=REMEDY,
        figures=_figures(res), table=tuple(frame.to_dict("records")),
        details={**res.to_dict(), "median_ess": ess, "worst_median_ess": low_ess,
                 "worst_ess_quantity": res.names[low_q], "autocorrelated": autocorrelated, "thin": thin,
                 "stuck_replications": stuck, "arviz": diagnostics, "divergences": divergences,
                 "thinning": dict(thinning) if thinning is not None else None})


def _divergences(key, model, sampler, num_draws: int) -> dict:
    """Divergent transitions of a NUTS on ``DIVERGENCE_DATA_SETS`` data sets simulated afresh."""
    found, transitions = 0, 0
    for k in jax.random.split(key, DIVERGENCE_DATA_SETS):
        k_sim, k_draw = jax.random.split(k)
        _, stats = sampler.diagnosed_draws(k_draw, simulate(k_sim, model).data, num_draws=num_draws)
        found, transitions = found + int(stats["divergences"]), transitions + int(stats["transitions"])
    return {"divergences": found, "transitions": transitions, "data_sets": DIVERGENCE_DATA_SETS}


def _labelling_finding(lab: dict) -> str:
    """What the sampler's own labels show, beside the label-invariant verdict."""
    R = lab["num_replications"]
    text = (f"{', '.join(lab['sites'])} hold {lab['num_components']} exchangeable components (checked by permuting "
            "them), so the tested quantities are label-invariant: every site with its components ordered by "
            f"{lab['by']}, and the log-likelihood; the sampler kept one labelling on {lab['one_labelling']} of {R} "
            "data sets")
    if lab["raw_miscalibrated"] and 2 * lab["one_labelling"] >= R:
        text += (f". In its own labels, ranks of {_listed(lab['raw_miscalibrated'])} are not uniform: it explores "
                 "one labelling, as a correct sampler of well separated modes does (not tested)")
    elif lab["raw_miscalibrated"]:
        text += f". In its own labels, ranks of {_listed(lab['raw_miscalibrated'])} are not uniform (not tested)"
    return text


def _arviz_summary(res) -> dict | None:
    """The worst quantity's median over the diagnosed data sets of ArviZ's split R-hat (largest), bulk and tail ESS
    (smallest), and how many data sets have some R-hat above 1.01."""
    d = res.diagnostics
    if not d:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a quantity whose chains never moved: all NaN
        return _worst(d)


def _worst(d) -> dict:
    rhat = np.nanmedian(d["rhat"], axis=0)
    return {"rhat": float(np.nanmax(rhat)), "ess_bulk": float(np.nanmin(np.nanmedian(d["ess_bulk"], axis=0))),
            "ess_tail": float(np.nanmin(np.nanmedian(d["ess_tail"], axis=0))),
            "data_sets_rhat_above_1_01": int(np.sum(np.nanmax(d["rhat"], axis=1) > 1.01))}


def _listed(names) -> str:
    return f"{', '.join(names[:4])}{' ...' if len(names) > 4 else ''}"


def _figures(res) -> tuple[Figure, ...]:
    shown = min(12, len(res.names))
    return (
        Figure(png_bytes(plot_sbc_ecdf(res)),
               f"Rank ECDF minus the uniform CDF for the first {shown} of {len(res.names)} quantities, with the "
               "simultaneous band of each test: a curve leaving its band fails."),
        Figure(png_bytes(plot_sbc_histograms(res)),
               f"Rank histograms ({res.num_replications} data sets x {res.num_draws} draws) with the central 99% "
               "band of a uniform rank per bin: U shapes mean draws too narrow, humps too wide, slopes biased."),
    )
