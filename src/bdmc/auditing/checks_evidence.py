"""Check 5 of an audit: the evidence log p(y) of the user's data, certified from below, and bracketed.

Forward AIS gives ``exp(L)`` with mean ``p(y)``, so Markov's inequality certifies ``log p(y) >= L - b`` with
probability at least ``1 - exp(-b)`` (BDMC paper, Eq. 25). Where posterior draws of the user's sampler exist,
the bracketing bounds of Ji, Shen and West (:func:`bdmc.bracketing.bracket`, a Gaussian fitted to the draws on
the unconstrained space) add an upper bound (valid in expectation for exact posterior draws) and a lower bound.
"""

from __future__ import annotations

import functools
import math
import warnings

import jax
import numpy as np
import pandas as pd

from ..bracketing import bracket_model, posterior_draws_flat
from ..bracketing.model_draws import label_symmetric_bounds
from ..checks.labels import Exchangeable, permutations, relabel_latent
from ..checks.sandwich import exact_log_marginal_or_none
from ..checks.sbc import chain_diagnostics
from ..core.ais import forward_ais
from ..errors import BDMCError
from ..plotting.audit import plot_evidence, png_bytes
from .result import CheckOutcome, Figure

NAME = "evidence"
MARKOV_B = 3.0  # certified with probability >= 1 - e^-3 = 0.950

MEANING = (
    "The log marginal likelihood log p(y) of the data, the number model comparison needs. Forward AIS is a "
    "stochastic lower bound: by Markov's inequality the truth lies above the certified value (the estimate "
    "minus b = 3 nats) with probability at least 1 - e^-3 = 95%, whatever the kernel and schedule, so it is "
    "safe to quote. Where posterior draws exist, the bracketing bounds from a Gaussian fitted to them give an "
    "upper bound (valid in expectation when the draws are exact posterior samples) and another lower bound; "
    "the width of the bracket says how much the certified value could still improve.")
REMEDY = (
    "A low or noisy bound: run longer chains (more intermediate distributions) or more of them. An AIS lower "
    "bound above the bracketing upper bound means the posterior draws miss part of the posterior (the upper "
    "bound needs exact draws): check the sampler's convergence (SBC) before using them.")


def _symmetric(key, model, data, draws, br, spec: Exchangeable, num_draws: int) -> dict:
    """The label-symmetrized bracketing, or a ``note`` saying why the plain bounds stand alone."""
    try:
        sym = label_symmetric_bounds(jax.random.fold_in(key, 1), model, data, draws, br.q_upper,
                                     relabel=functools.partial(relabel_latent, model, spec),
                                     permutations=permutations(spec.num_components), num_draws=num_draws)
    except TypeError:  # a program whose constrain leaves JAX (Stan's): the relabelling cannot be compiled
        return {"note": f"not symmetrized over the labellings of {spec.describe()}: this program's values are "
                        "mapped on the host; from draws that keep one labelling the bounds may sit up to "
                        f"log {spec.num_components}! = {spec.log_labellings:.2f} low"}
    if not all(math.isfinite(v) for v in sym.values()):
        return {"note": "the label-symmetrized bounds were not finite (a relabelled draw outside the support): the "
                        f"plain bounds may sit up to log {spec.num_components}! = {spec.log_labellings:.2f} low"}
    return sym


def draw_diagnostics(draws, sampler_stats: dict | None = None) -> dict:
    """ArviZ's worst split R-hat and smallest bulk and tail ESS over the coordinates of one chain's ``draws`` (a
    pytree stacked on a leading axis), with its divergences where the sampler reported them."""
    flat = np.asarray(posterior_draws_flat(draws)[0], np.float64)
    out = {"rhat": None, "ess_bulk": None, "ess_tail": None, "draws": int(flat.shape[0])}
    found = chain_diagnostics(flat[None])
    if found is not None:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a stuck chain: every value NaN
            out.update(rhat=float(np.nanmax(found["rhat"])), ess_bulk=float(np.nanmin(found["ess_bulk"])),
                       ess_tail=float(np.nanmin(found["ess_tail"])))
    if sampler_stats:
        out.update(divergences=int(sampler_stats["divergences"]), transitions=int(sampler_stats["transitions"]))
    return out


def describe_draws(d: dict) -> str:
    text = ("too few draws for R-hat and ESS" if d["rhat"] is None else
            f"worst split R-hat {d['rhat']:.3f}, smallest bulk / tail ESS {d['ess_bulk']:.0f} / {d['ess_tail']:.0f} "
            "(ArviZ)")
    if "divergences" in d:
        text += f", {d['divergences']} divergent transition(s) of {d['transitions']}"
    return text


def evidence_outcome(key, model, data, *, kernel, num_steps: int, num_runs: int, data_label: str,
                     draws=None, num_draws: int = 2000, sampler_stats: dict | None = None, sampler: str = "the sampler",
                     exact: float | None | str = "compute", progress=False,
                     exchangeable: Exchangeable | None = None) -> CheckOutcome:
    """The certified lower bound on ``log p(y)`` and, with ``draws``, the bracketing bounds.

    Parameters
    ----------
    key : PRNG key
    model, data
        The model and the data whose evidence is wanted.
    kernel : callable or None
        The AIS transition (None: the model's own, or the pilot-tuned HMC).
    num_steps, num_runs : int
        Intermediate distributions T and independent runs of the forward AIS estimate.
    data_label : str
        What the data are, for the reader ("the user's data", "a simulated data set").
    draws : pytree, optional
        Posterior draws (latents stacked on a leading axis) of ``model`` given ``data``.
    num_draws : int
        Draws of the fitted Gaussian for the bracketing lower bound.
    sampler_stats : dict, optional
        ``{"divergences", "transitions"}`` of the chain behind ``draws`` (a PPL's NUTS reports them).
    sampler : str
        The audited sampler's name, for the diagnostics of its draws (ArviZ's split R-hat, bulk and tail ESS).
    exact : float, None or "compute"
        The exact ``log p(y)`` of these data where a check found it already (None: the model has none), or
        ``"compute"``: ask the model.
    exchangeable : Exchangeable, optional
        Exchangeable components: the bracketing's Gaussian is then symmetrized over their ``K!`` labellings
        (:func:`bdmc.bracketing.model_draws.label_symmetric_bounds`), so draws that keep one labelling do not
        leave the bounds ``log K!`` low.

    Returns
    -------
    CheckOutcome
        Informative (level None): ``"informative"``, or ``"inconclusive"`` when the certified AIS bound lies above the
        bracketing upper bound.
    """
    k_ais, k_bracket = jax.random.split(key)
    est = forward_ais(k_ais, model, data, num_steps=int(num_steps), num_runs=int(num_runs), kernel=kernel,
                      progress=progress)
    certified = est.certified(MARKOV_B)
    rows = [{"label": f"forward AIS, T = {num_steps}, {num_runs} runs", "side": "lower", "value": est.value,
             "stderr": est.stderr, "certified": certified, "seconds": est.seconds + est.compile_seconds}]
    verdict, extra = "informative", ""
    details = {"num_steps": int(num_steps), "num_runs": int(num_runs), "markov_b": MARKOV_B,
               "certified_probability": 1 - math.exp(-MARKOV_B), "lower": est.value, "certified": certified,
               "divergences": est.divergences, "divergence_rate": est.divergence_rate,
               "weight_ess": est.weight_ess, "khat": est.khat, "stderr_warning": est.stderr_warning}
    if est.stderr_warning is not None:  # the certified bound holds whatever the weights; the ± does not
        extra += f"; the forward estimate's {est.stderr_warning.split(':')[0]}"
    if est.straggler_warning is not None:
        extra += f"; {est.straggler_warning.split(': chains')[0]} (stuck chains)"
        details["stragglers"] = est.straggler_warning
    if est.divergence_rate and est.divergence_rate > 0.1:
        extra += f"; {est.divergence_rate:.0%} of its transitions diverged (rejected proposals)"
    br = None
    if draws is not None:
        count = len(jax.tree.leaves(draws)[0])
        diagnosed = draw_diagnostics(draws, sampler_stats)
        details["draws_diagnostics"] = diagnosed
        extra += f"; {sampler}'s {count} draws on these data: " + describe_draws(diagnosed)
        try:
            br = bracket_model(k_bracket, model, data, draws, num_draws=num_draws)
        except BDMCError as err:  # uncertified and optional: the certified bound above stands without it
            details["bracket_error"] = str(err)
            extra += (f"; no bracketing bounds from the {count} posterior draws ({err}: draws that repeat one state, "
                      "as a stuck chain's do, make the fitted Gaussian singular)")
    if br is not None:
        upper, upper_stderr = br.upper.value, br.upper.stderr
        sym = None if exchangeable is None else _symmetric(k_bracket, model, data, draws, br, exchangeable, num_draws)
        if sym is None or "note" not in sym:
            for label, e in (("bracketing upper bound U (Gaussian fit to the draws)", br.upper),
                             ("bracketing lower bound L (draws of that Gaussian)", br.lower)):
                rows.append({"label": label, "side": e.bound, "value": e.value, "stderr": e.stderr,
                             "certified": math.nan, "seconds": e.seconds})
        details.update(bracket_upper=br.upper.value, bracket_lower=br.lower.value, num_posterior_draws=count)
        extra += f"; bracketing from {count} posterior draws: {br.lower.value:.2f} .. {br.upper.value:.2f}"
        if sym is not None and "note" in sym:
            extra += f" ({sym['note']})"
            details["label_symmetry"] = sym
        elif sym is not None:
            upper, upper_stderr = sym["upper"], sym["upper_stderr"]
            for label, side in (("bracketing upper bound U, Gaussian symmetrized over the labellings", "upper"),
                                ("bracketing lower bound L, Gaussian symmetrized over the labellings", "lower")):
                rows.append({"label": label, "side": side, "value": sym[side], "stderr": sym[f"{side}_stderr"],
                             "certified": math.nan, "seconds": math.nan})
            details["label_symmetry"] = sym
            extra += (f"; components {exchangeable.describe()} are exchangeable, and with the Gaussian symmetrized "
                      f"over their {math.factorial(exchangeable.num_components)} labellings the bracketing is "
                      f"{sym['lower']:.2f} .. {sym['upper']:.2f} (draws that keep one labelling leave the plain "
                      f"bounds up to log {exchangeable.num_components}! = {exchangeable.log_labellings:.2f} low)")
        if certified > upper + 2 * upper_stderr:
            verdict = "inconclusive"
            extra += " (the certified AIS bound lies above the bracketing upper bound: the draws miss posterior mass)"
    exact = exact_log_marginal_or_none(model, data) if exact == "compute" else exact
    if exact is not None:
        rows.append({"label": "exact log p(y) (closed form)", "side": "exact", "value": exact, "stderr": 0.0,
                     "certified": math.nan, "seconds": 0.0})
        details["exact"] = exact
    table = pd.DataFrame(rows)
    statistic = (f"log p(y) >= {certified:.3f} with probability >= {1 - math.exp(-MARKOV_B):.3f} (forward AIS "
                 f"{est.value:.3f} ± {est.stderr:.2g}, minus b = {MARKOV_B:g} nats)")
    summary = f"certified lower bound on log p(y) of {data_label}: {certified:.2f} nats" + extra
    fig = plot_evidence(table)
    caption = (f"Bounds on log p(y) of {data_label}: the forward AIS estimate with its certified value (open "
               "triangle; the truth lies to its right with probability >= 95%)"
               + (" and the bracketing bounds from posterior draws" if br is not None else "") + ".")
    return CheckOutcome(
        name=NAME, title=f"Evidence: log p(y) of {data_label}", verdict=verdict, statistic=statistic, level=None,
        summary=summary, meaning=MEANING, remedy=REMEDY, figures=(Figure(png_bytes(fig), caption),),
        table=tuple(table.to_dict("records")), details=details)
