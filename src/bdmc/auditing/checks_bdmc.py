"""Check 4 of an audit: bidirectional Monte Carlo on simulated data, and BREAD's real-data protocol.

On a data set simulated by the model, forward AIS (stochastic lower bounds on log p(y)) and reverse AIS from
the exact latent that generated the data (stochastic upper bounds) run at several chain lengths. The run-level
bug alarm (:attr:`bdmc.SandwichResult.verdict`) fires when the pooled lower bounds exceed the pooled upper
bounds by more than Markov's inequality allows at the audit's level; the single-run gap B-hat bounds the
Jeffreys divergence of the AIS samples from the posterior (BREAD). With the user's real data, the real-data
protocol (:func:`bdmc.realdata.bread_real`) says whether simulated data stand in for it.
"""

from __future__ import annotations

import numpy as np

from ..checks import sandwich
from ..checks.bread import bread_table
from ..plotting import plot_bread, plot_real_data, plot_sandwich
from ..plotting.audit import png_bytes
from .result import CheckOutcome, Figure

NAME, REAL_NAME = "bdmc", "bdmc-real-data"
# Above this mean single-run gap (nats) at the longest chain the sandwich is too loose to catch a bug of a few
# nats, so bounds that do not cross are no pass: the check is inconclusive.
MAX_B_HAT = 10.0
SANDWICH_COLUMNS = ["num_steps", "direction", "value", "stderr", "mean_single", "gap_single", "gap_single_stderr",
                    "certified_b3", "alarm", "alarm_p", "seconds", "n_evals", "exact", "divergence_rate", "weight_ess",
                    "khat", "stderr_trusted"]

MEANING = (
    "On data simulated by the model, forward AIS gives stochastic lower bounds and reverse AIS, started at the "
    "latent that generated the data, stochastic upper bounds on the same log p(y). Pooled, exp(lower - upper) "
    "has mean 1 when the density, the simulator and the kernel agree, so the alarm fires only with probability "
    "at most its level on a correct program. It sees a simulator that does not draw from the density's prior "
    "and likelihood (with a kernel that mixes slowly enough to remember it) and bugs that break either bound's "
    "guarantee; it cannot see a wrong density (both sides bound that density honestly) or a kernel invariant "
    "for the wrong distribution (both sides converge to the same wrong value). B-hat, the mean single-run gap, "
    "bounds in expectation the Jeffreys divergence between the AIS samples and the posterior (BREAD): how far "
    "the annealed chains are from exact posterior samples at each chain length.")
REMEDY = (
    "When the alarm fires: check that the simulator draws latents from the prior and data from the likelihood "
    "the log density scores (variances, orientations of multivariate draws), then the kernel's acceptance "
    "ratio. When B-hat stays large at the longest chain: the AIS samples are far from the posterior; run "
    "longer chains or a better-tuned kernel before trusting posterior summaries or the evidence.")
MEANING_REAL = (
    "BREAD's verdict on simulated data carries over to the real data only if simulated data resemble it: "
    "hyperparameters are fitted on the real data by NUTS, data are simulated from the fit, and forward AIS "
    "runs on both. The two forward curves must climb alike with chain length (up to a shift, as their log p(y) "
    "differ); reverse AIS from approximate posterior samples after S NUTS steps should not depend on S.")
REMEDY_REAL = (
    "When the curves climb differently, the model is misspecified for these data or the fitted hyperparameters "
    "do not produce data like them: treat the simulated-data B-hat as optimistic for the real data, and "
    "consider the model (or which sites are fitted) before the sampler.")


def bdmc_outcome(key, model, *, kernel, steps, num_runs: int, level: float, progress=False):
    """Sandwich, B-hat and the bug alarm on a simulated data set.

    Parameters
    ----------
    key : PRNG key
    model : Model
    kernel : callable or None
        The AIS transition (None: the model's own, or the pilot-tuned HMC).
    steps : sequence of int
        Chain lengths T.
    num_runs : int
        Independent runs per direction and length.
    level : float
        The alarm's false-alarm level (the ``alpha`` of :func:`bdmc.sandwich`).
    progress : bool

    Returns
    -------
    (CheckOutcome, SandwichResult)
    """
    res = sandwich(key, model, steps=tuple(int(t) for t in steps), num_runs=int(num_runs), kernel=kernel,
                   alpha=level, progress=progress)
    table, alarm, exact = res.table, res.verdict, res.against_exact
    bread = bread_table(table)
    last = bread.iloc[-1]
    loose = bool(last["b_hat"] > MAX_B_HAT) or not np.isfinite(last["b_hat"])
    verdict = "fail" if alarm.fired else "inconclusive" if loose else "pass"
    statistic = (f"pooled lower minus upper bound {alarm.crossing:+.3g} nats (p-bound {alarm.p_bound:.2g}, fails "
                 f"below {level:.2g}); B-hat at T = {int(last['num_steps'])}: {last['b_hat']:.3g} ± "
                 f"{last['b_hat_stderr']:.2g} nats")
    summary = ("BUG ALARM: forward AIS lower bounds exceed reverse AIS upper bounds beyond chance" if alarm.fired
               else f"bounds consistent; AIS samples within B-hat = {last['b_hat']:.3g} nats (Jeffreys) of the "
                    f"posterior at T = {int(last['num_steps'])}")
    if loose and not alarm.fired:
        summary = (f"no power: B-hat = {last['b_hat']:.3g} nats at T = {int(last['num_steps'])} says the AIS chains "
                   f"are far from the posterior (above {MAX_B_HAT:g} nats), so a bug that moves log p(y) by less "
                   "than that stays unseen; the bounds do not cross. Run longer chains (--steps) or a better kernel")
    if alarm.warned:
        summary += "; warning (uncertified): forward bounds fall as the chain grows"
    if exact is not None:  # informative: two standard errors of a few runs are no calibrated test
        summary += "; " + exact.lines()[0]
    figures = (
        Figure(png_bytes(plot_sandwich(table, title="Forward and reverse AIS on simulated data")),
               f"Forward (lower) and reverse (upper) AIS bounds on log p(y) of one simulated data set against "
               f"the number of intermediate distributions T, {num_runs} runs per direction; bars are two "
               "standard errors. The bounds must not cross beyond chance."),
        Figure(png_bytes(plot_bread(bread)),
               "B-hat, the mean single-run gap between reverse and forward AIS: in expectation an upper bound on "
               "the Jeffreys divergence between the AIS samples and the posterior."),
    )
    rows = table[[c for c in SANDWICH_COLUMNS if c in table.columns]].to_dict("records")
    outcome = CheckOutcome(
        name=NAME, title="BDMC on simulated data: sandwich, B-hat and the bug alarm", verdict=verdict,
        statistic=statistic, level=level, summary=summary, meaning=MEANING, remedy=REMEDY, figures=figures,
        table=tuple(rows),
        details={"steps": [int(t) for t in steps], "num_runs": int(num_runs), "alarm": alarm.to_dict(),
                 "b_hat": [float(b) for b in bread["b_hat"]], "exact": res.exact,
                 "against_exact": exact.to_dict() if exact is not None else None,
                 "kernel": "model default (pilot-tuned)" if kernel is None else repr(kernel)})
    return outcome, res


def real_data_outcome(key, model, data, *, hyperparameters, steps, num_runs: int, mcmc_steps, num_warmup: int,
                      on_stage=None, progress=False) -> CheckOutcome:
    """BREAD's real-data protocol (forward curves on real against simulated data) as a :class:`CheckOutcome`.

    Informative (level None): ``"informative"``, or ``"inconclusive"`` when the curves climb differently or the
    reverse curves depend on S, which means the simulated-data verdict of :func:`bdmc_outcome` may not carry
    over to the real data.
    """
    from ..realdata import bread_real

    res = bread_real(key, model, data, hyperparameters=tuple(hyperparameters), steps=tuple(steps),
                     num_runs=int(num_runs), mcmc_steps=tuple(mcmc_steps), num_warmup=int(num_warmup),
                     num_samples=int(num_warmup), on_stage=on_stage, progress=progress)
    forward, reverse = res.forward, res.reverse
    agree = reverse.agree if len(reverse.table) else True
    verdict = "informative" if forward.consistent and agree else "inconclusive"
    statistic = (f"largest significant relative difference of the forward climbs {100 * forward.relative:.0f}% "
                 f"(tolerance {100 * forward.tolerance:.0f}%)")
    if len(reverse.table):
        statistic += f"; reverse spread over S {100 * reverse.relative:.0f}% of the gap (tolerance " \
                     f"{100 * reverse.tolerance:.0f}%)"
    fitted = ", ".join(f"{k} = {float(np.mean(v)):.3g}" for k, v in res.fit.hyperparameters.items()) or "none"
    summary = forward.summary() + f" (hyperparameters fitted on the real data: {fitted})"
    fig = plot_real_data(res.runs, bounds=res.bread_bounds(), verdict=forward)
    caption = ("Left: forward AIS on the real and on simulated data, each shifted by its largest estimate "
               "(medians and quartiles of single runs). Middle: reverse AIS on the simulated data from "
               "approximate posterior samples after S NUTS steps. Right: B-hat per S.")
    return CheckOutcome(
        name=REAL_NAME, title="BDMC on the real data: BREAD's real-data protocol", verdict=verdict,
        statistic=statistic, level=None, summary=summary, meaning=MEANING_REAL, remedy=REMEDY_REAL,
        figures=(Figure(png_bytes(fig), caption),), table=tuple(res.quartiles().to_dict("records")),
        details={"hyperparameters": {k: np.asarray(v).tolist() for k, v in res.fit.hyperparameters.items()},
                 "steps": [int(t) for t in steps], "num_runs": int(num_runs),
                 "mcmc_steps": [int(s) for s in mcmc_steps], "forward_consistent": forward.consistent,
                 "reverse_agree": bool(agree)})
