"""Check 1 of an audit: the program's simulator and conditionals against its log density.

Where the model has Gibbs conditionals, each is checked against the joint density by the exact identity
``p(x|u) / p(x'|u) = f(x, u) / f(x', u)`` (:func:`bdmc.checks.conditional_consistency`) at lambda 1 and 1/2,
on a data set simulated by the model. Otherwise the forward-simulation check that needs no conditionals
(:func:`bdmc.checks.simulator_density.simulator_density`: normalization and score identities of the
likelihood and the prior under the simulator, Holm over its tests) runs at the audit's share of its level.
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd

from ..checks import conditional_consistency
from ..checks.simulator_density import simulator_density
from ..contracts.capabilities import GibbsConditionals, supports
from ..contracts.model import simulate
from ..plotting.audit import plot_consistency, plot_simulator_density, png_bytes
from .result import CheckOutcome, Figure

NAME = "simulator-density"
LAMS = (1.0, 0.5)

MEANING_CONDITIONALS = (
    "Each Gibbs conditional p(x|u) must agree with the joint density f: for two redraws x, x' of a block given "
    "the rest u, log p(x|u) - log p(x'|u) equals log f(x, u) - log f(x', u) exactly. A conditional or a "
    "likelihood with a wrong variance, or a missing term, breaks the identity by far more than rounding. "
    "Constants cancel in the ratios, so a wrong normalizing constant is invisible here (the evidence and a "
    "second implementation see it).")
MEANING_FORWARD = (
    "The simulator (prior draws, then data given them) and the log density must describe one distribution. "
    "Without conditionals or a kernel, three families of identities are tested on simulated draws: each "
    "likelihood term integrates to one over the data (it sees a wrong constant), the score identities "
    "E[d/dy log p(y|x)] = 0 and E[(y - m) d/dy log p(y|x)] = -I under the simulator (they see a simulator and "
    "a density that disagree in location, scale or correlation), and the same for the prior. For integer data "
    "(counts, categories) the pmf summed over the values seen in simulation must match the share of fresh "
    "draws that land on them, and the fresh draws that land on them must have the mean and second moment of "
    "the pmf renormalized on those values (exact whatever the pmf's tails; a likelihood reported as one term, "
    "as Stan's, is evaluated with each seen value put into a simulated data set). Every test is a t-test over "
    "independent cells (the integer moment tests are z-tests against the pmf's own variance); Holm's procedure "
    "keeps the family-wise false-alarm rate at the level.")
REMEDY_FORWARD = (
    "The rejected tests name the part (likelihood or prior), the identity and where (a case, a coordinate). "
    "A normalization failure is a wrong constant in the log density (a missing log 2 pi, a hand-written "
    "density); a score failure at one coordinate is a variance, scale parameterization (variance vs standard "
    "deviation) or orientation that differs between the sampler and the density.")
REMEDY_FORWARD_DISCRETE = (
    "The rejected tests name the part (likelihood or prior), the identity and where (a case, a coordinate). "
    "For integer data, a failing mean or second moment is a simulator that draws another rate, probability or "
    "dispersion than the density scores: a link applied twice or not at all, a negative binomial's "
    "concentration against its dispersion, a zero-inflation probability used as its complement, categories in "
    "another order. A failing normalization is a pmf with a wrong constant (a hand-written log pmf missing "
    "log y!).")
REMEDY_CONDITIONALS = (
    "Re-derive the failing conditional from the joint density (the figure names it and the lambda): check the "
    "precision and mean of Gaussian blocks, the shape and scale of gamma blocks, and that lambda multiplies "
    "every likelihood term the conditional uses.")


def simulator_outcome(key, model, *, num_triples: int, num_latents: int, num_data: int, num_prior: int,
                      level: float) -> CheckOutcome:
    """The simulator-vs-density check of an audit (see the module docstring).

    Parameters
    ----------
    key : PRNG key
    model : Model
    num_triples : int
        Random triples per conditional and lambda.
    num_latents, num_data, num_prior : int
        Sizes of the forward-simulation check (see :func:`bdmc.checks.simulator_density.simulator_density`).
    level : float
        Family-wise false-alarm level of the forward-simulation check.

    Returns
    -------
    CheckOutcome
        Named ``"simulator-density"``; level None for the exact identity (it fires only beyond rounding),
        ``level`` for the forward-simulation check.
    """
    if supports(model, GibbsConditionals):
        return _conditionals(key, model, num_triples=num_triples)
    return _forward(key, model, num_latents=num_latents, num_data=num_data, num_prior=num_prior, level=level)


def _forward(key, model, *, num_latents, num_data, num_prior, level) -> CheckOutcome:
    res = simulator_density(key, model, num_latents=int(num_latents), num_data=int(num_data),
                            num_prior=int(num_prior), level=level)
    t = res.table
    if not len(t):
        return not_run("; ".join(f"{what}: {why}" for what, why in res.not_checked) or "no test applies")
    fired = res.fired
    worst = t.loc[t["p_value"].idxmin()]
    statistic = (f"smallest p = {worst['p_value']:.2g} ({worst['part']}: {worst['test']}, {worst['where']}) over "
                 f"{len(t)} tests; {len(fired)} rejected by Holm at {level:.2g}")
    summary = (f"simulator and density disagree: {', '.join(sorted(set(fired['part'] + ' ' + fired['test'])))}"
               if len(fired) else f"simulator and density agree in all {len(t)} tests")
    if res.not_checked:
        summary += "; not checked: " + "; ".join(what for what, _ in res.not_checked)
    fig = plot_simulator_density(t, level=level)
    caption = ("The tests with the smallest p-values (-log10 scale; red: rejected by Holm's procedure). Each test "
               "is an identity the simulator and the log density must satisfy together.")
    return CheckOutcome(
        name=NAME, title="Simulator vs density: forward-simulation identities",
        verdict="fail" if len(fired) else "pass",
        statistic=statistic, level=level, summary=summary, meaning=MEANING_FORWARD,
        remedy=REMEDY_FORWARD_DISCRETE if t["test"].str.startswith("normalization (seen").any() else REMEDY_FORWARD,
        figures=(Figure(png_bytes(fig), caption),), table=tuple(t.to_dict("records")),
        details={"form": "forward simulation", **res.settings,
                 "not_checked": [{"what": w, "why": y} for w, y in res.not_checked]})


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
