"""An audit check: does the program's prior density integrate to one? (:mod:`bdmc.checks.prior_normalization`)

Forward and reverse AIS between a reference fitted to simulator draws and the prior density bracket the log of
the prior's integral; a prior that lost a constant (Stan's half-normal on a ``<lower=0>`` parameter without its
``log 2``, a truncation without its term, ``~`` statements) shifts every evidence of the program and fails here,
at the audit's share of its level. Models without an exact simulator of the prior are not checked.
"""

from __future__ import annotations

import math

import pandas as pd

from ..checks.prior_normalization import ADVICE, NOT_NORMALIZED, prior_normalization
from ..errors import BDMCError
from ..plotting.audit import plot_evidence, png_bytes
from .result import CheckOutcome, Figure

NAME = "prior-normalization"
TITLE = "Prior normalization: does the prior density integrate to one?"
MEANING = (
    "The evidence log p(y) of a program is only comparable with another's (a Bayes factor) when its prior density "
    "integrates to one. Sampling cannot tell: a lost constant changes no posterior. Forward AIS from a reference "
    "fitted to the simulator's prior draws to the prior density is a stochastic lower bound on the log of its "
    "integral, reverse AIS from the simulator's exact draws an upper bound; zero must lie between them. The "
    "verdict is a t-interval on the two sides' mean log weights (asymptotic level); the Markov-certified interval "
    "is reported beside it.")


def prior_outcome(key, model, *, num_steps: int, num_runs: int, level: float) -> CheckOutcome:
    """Run :func:`bdmc.checks.prior_normalization.prior_normalization` and describe it for the audit."""
    try:
        res = prior_normalization(key, model, num_steps=num_steps, num_runs=num_runs, level=level)
    except BDMCError as err:
        if "simulat" not in str(err).lower():
            raise
        return CheckOutcome(name=NAME, title=TITLE, verdict="not run", statistic="-", level=None,
                            summary=f"not run: the prior needs an exact simulator ({err})")
    verdict = "fail" if res.verdict == NOT_NORMALIZED else "pass"
    statistic = (f"log integral {res.estimate:+.3f} nats, t-interval [{res.interval_low:+.3f}, "
                 f"{res.interval_high:+.3f}] (Markov-certified [{res.certified_low:+.2f}, {res.certified_high:+.2f}])")
    health = res.details["weight_health"]
    table = pd.DataFrame([
        {"label": "forward AIS from the reference (mean log weight)", "side": "lower", "value": res.forward_mean,
         "stderr": res.forward_stderr, "certified": res.certified_low, **health["forward"]},
        {"label": "reverse AIS from simulator draws (mean log weight)", "side": "upper", "value": res.reverse_mean,
         "stderr": res.reverse_stderr, "certified": res.certified_high, **health["reverse"]},
        {"label": "a normalized prior", "side": "exact", "value": 0.0, "stderr": 0.0, "certified": math.nan}])
    fig = plot_evidence(table, title="Prior normalization: the log of the prior density's integral")
    fig.axes[0].set_xlabel("log of the prior's integral (nats; bars: 2 standard errors; open triangles: certified)")
    caption = ("The forward (lower) and reverse (upper) mean log weights between a reference fitted to the "
               "simulator's draws and the prior density; a normalized prior puts 0 between them.")
    return CheckOutcome(name=NAME, title=TITLE, verdict=verdict, statistic=statistic, level=level,
                        summary=res.summary(), meaning=MEANING, remedy=ADVICE, table=tuple(table.to_dict("records")),
                        figures=(Figure(png_bytes(fig), caption),),
                        details={"estimate": res.estimate, "interval": [res.interval_low, res.interval_high],
                                 "certified": [res.certified_low, res.certified_high], "num_steps": res.num_steps,
                                 "num_runs": res.num_runs, "weight_health": health})
