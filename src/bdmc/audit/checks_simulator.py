"""Check 1 of an audit: the program's simulator and conditionals against its log density.

Where the model has Gibbs conditionals, each is checked against the joint density by the exact identity
``p(x|u) / p(x'|u) = f(x, u) / f(x', u)`` (:func:`bdmc.checks.conditional_consistency`) at lambda 1 and 1/2,
on a data set simulated by the model. Otherwise the forward-simulation check that needs no conditionals
(:mod:`bdmc.checks.simulator_density`) runs when it is available.
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd

from ..checks import conditional_consistency
from ..contracts.capabilities import GibbsConditionals, supports
from ..contracts.model import simulate
from ..plotting.audit import plot_consistency, png_bytes
from .result import CheckOutcome, Figure

NAME = "simulator-density"
LAMS = (1.0, 0.5)

MEANING_CONDITIONALS = (
    "Each Gibbs conditional p(x|u) must agree with the joint density f: for two redraws x, x' of a block given "
    "the rest u, log p(x|u) - log p(x'|u) equals log f(x, u) - log f(x', u) exactly. A conditional or a "
    "likelihood with a wrong variance, or a missing term, breaks the identity by far more than rounding. "
    "Constants cancel in the ratios, so a wrong normalizing constant is invisible here (the evidence and a "
    "second implementation see it).")
REMEDY_CONDITIONALS = (
    "Re-derive the failing conditional from the joint density (the figure names it and the lambda): check the "
    "precision and mean of Gaussian blocks, the shape and scale of gamma blocks, and that lambda multiplies "
    "every likelihood term the conditional uses.")


def simulator_outcome(key, model, *, num_triples: int) -> CheckOutcome:
    """The simulator-vs-density check of an audit (see the module docstring).

    Parameters
    ----------
    key : PRNG key
    model : Model
    num_triples : int
        Random triples per conditional and lambda.

    Returns
    -------
    CheckOutcome
        Named ``"simulator-density"``; level None for the exact identity (it fires only beyond rounding).
    """
    if supports(model, GibbsConditionals):
        return _conditionals(key, model, num_triples=num_triples)
    return not_run("the model has no Gibbs conditionals, and the forward-simulation check "
                   "(bdmc.checks.simulator_density) is not available in this version")


def not_run(reason: str) -> CheckOutcome:
    """The outcome when neither form of the check applies."""
    return CheckOutcome(name=NAME, title="Simulator vs density", verdict="not run", statistic="-", level=None,
                        summary=f"not run: {reason}")


def _conditionals(key, model, *, num_triples: int) -> CheckOutcome:
    data = simulate(jax.random.fold_in(key, 1), model).data
    rows, tol = [], 0.0
    for c, conditional in enumerate(model.conditionals()):
        for lam in LAMS:
            res = conditional_consistency(jax.random.fold_in(jax.random.fold_in(key, 2), c), model, conditional,
                                          data, lam=lam, num_triples=num_triples)
            tol = max(tol, res.tol)
            rows += [{"conditional": res.name, "lam": lam, "violation": float(v), "tol": res.tol}
                     for v in res.violations]
    table = pd.DataFrame(rows)
    worst = table.loc[table["violation"].idxmax()]
    failed = table[table["violation"] > table["tol"]]
    names = sorted(set(failed["conditional"]))
    verdict = "fail" if len(failed) else "pass"
    statistic = (f"largest violation {worst['violation']:.2g} nats ({worst['conditional']}, λ = {worst['lam']:g}) "
                 f"against a rounding tolerance of {tol:.0e}")
    summary = (f"conditional(s) {', '.join(names)} disagree with the joint density" if names else
               f"all {table['conditional'].nunique()} conditionals agree with the joint density to rounding")
    fig = plot_consistency(table, tol=tol)
    caption = (f"Violations of the conditional-vs-joint identity, {num_triples} random triples per conditional "
               f"and lambda (log axis; the dashed line is the rounding tolerance).")
    per_block = (table.groupby(["conditional", "lam"], sort=False)["violation"].max().reset_index()
                 .rename(columns={"violation": "worst_violation"}))
    return CheckOutcome(
        name=NAME, title="Simulator vs density: Gibbs conditionals against the joint", verdict=verdict,
        statistic=statistic, level=None, summary=summary, meaning=MEANING_CONDITIONALS,
        remedy=REMEDY_CONDITIONALS, figures=(Figure(png_bytes(fig), caption),),
        table=tuple(per_block.assign(tol=tol).to_dict("records")),
        details={"form": "conditional-vs-joint", "num_triples": int(num_triples), "lams": list(LAMS),
                 "tolerance": tol, "worst": float(np.max(table["violation"]))})
