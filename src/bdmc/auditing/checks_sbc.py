"""Check 2 of an audit: simulation-based calibration (:func:`bdmc.checks.sbc`) of the user's sampler."""

from __future__ import annotations

import numpy as np

from ..checks.sbc import sbc
from ..plotting.audit import png_bytes
from ..plotting.sbc import plot_sbc_ecdf, plot_sbc_histograms
from .result import CheckOutcome, Figure

NAME = "sbc"
LOW_ESS = 0.5  # median ESS below this fraction of the draws: autocorrelation can fail a correct sampler

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
    "draws make ranks look miscalibrated, so raise the thinning. Then run longer warm-up, a smaller step size "
    "or a higher target acceptance; if the failure persists at every budget, suspect the kernel's invariance "
    "(the Geweke test localizes it) or a simulator that does not match the density.")


def sbc_outcome(key, model, sampler, *, label: str, level: float, num_replications: int,
                num_draws: int) -> CheckOutcome:
    """Run SBC and describe it as a :class:`CheckOutcome`.

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

    Returns
    -------
    CheckOutcome
    """
    res = sbc(key, model, sampler, num_replications=int(num_replications), num_draws=int(num_draws), level=level)
    frame = res.to_frame()
    bad = res.miscalibrated
    worst, gamma = res.worst
    ess = float(np.median(res.ess))
    statistic = (f"smallest gamma {gamma:.3g} ({worst}) over {len(res.names)} quantities; "
                 f"{len(bad)} leave their simultaneous ECDF band at {level / len(res.names):.2g} each (Bonferroni)")
    summary = (f"ranks of {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''} are not uniform: the draws are "
               "not from the posterior" if bad else
               f"ranks of all {len(res.names)} quantities are uniform within their bands")
    if ess < LOW_ESS * res.num_draws:
        summary += f" (median ESS {ess:.0f} of {res.num_draws} draws: autocorrelated; raise the thinning)"
    return CheckOutcome(
        name=NAME, title=f"Simulation-based calibration of {label}", verdict="fail" if bad else "pass",
        statistic=statistic, level=level, summary=summary, meaning=MEANING, remedy=REMEDY,
        figures=_figures(res), table=tuple(frame.to_dict("records")),
        details={**res.to_dict(), "median_ess": ess})


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
