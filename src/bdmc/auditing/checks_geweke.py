"""Check 3 of an audit: the Geweke joint-distribution test of the user's kernel against the simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..checks import geweke
from ..plotting import plot_geweke
from ..plotting.audit import png_bytes
from .result import CheckOutcome, Figure

NAME = "geweke"
MAX_PANELS = 8


MEANING = (
    "Forward simulation (x from the prior, y from the likelihood) and successive-conditional simulation (start "
    "at a forward draw, then alternate the kernel on x and a fresh y given x) must give the same joint law of "
    "(x, y) when the kernel leaves the posterior invariant. Each summary statistic's means are compared by a "
    "two-sample z-score; independent chains keep only their final states, so the samples are independent. "
    "A kernel that leaves the wrong distribution invariant (a conditional with 10% too much variance, a wrong "
    "acceptance ratio) fails it, as does a simulator inconsistent with the kernel. A bug in the log density "
    "alone is invisible when the kernel never evaluates it, and a constant is invisible to every kernel.")
REMEDY = (
    "Look at the statistic with the largest |z|: a latent's mean square points at a variance error in the "
    "kernel's move for that latent (or in the prior sampler); the log-likelihood points at the density the "
    "kernel targets. Re-run the failing block with the Metropolis-Hastings ratio checked, and the "
    "simulator-vs-density check for the conditionals.")


def geweke_outcome(key, model, kernel, *, level: float, num_samples: int, num_steps: int,
                   sampler: str) -> CheckOutcome:
    """Run :func:`bdmc.checks.geweke` at lambda 1 and describe it as a :class:`CheckOutcome`.

    Parameters
    ----------
    key : PRNG key
    model : Model
    kernel : callable
        The sampler's transition ``kernel(key, latent, data, lam)``.
    level : float
        Family-wise false-alarm level over the statistics (Bonferroni).
    num_samples, num_steps : int
        Independent chains of each simulation, and kernel/data alternations per successive chain.
    sampler : str
        The sampler's name, for the title.

    Returns
    -------
    CheckOutcome
    """
    res = geweke(key, model, kernel, lam=1.0, num_samples=int(num_samples), num_steps=int(num_steps), alpha=level)
    worst, z = res.worst
    verdict = "pass" if res.passed else "fail"
    bad = [n for n, zj in zip(res.names, res.z, strict=False) if abs(zj) >= res.threshold]
    statistic = (f"largest |z| = {abs(z):.2f} ({worst}) over {len(res.names)} statistics; fails beyond "
                 f"{res.threshold:.2f} (Bonferroni)")
    summary = (f"forward and successive-conditional simulations differ in {', '.join(bad)}" if bad else
               f"forward and successive-conditional simulations agree in all {len(res.names)} statistics")
    order = np.argsort(-np.abs(res.z))
    table = pd.DataFrame({"statistic": np.asarray(res.names)[order], "z": res.z[order],
                          "p_value": res.p_values[order],
                          "forward_mean": res.forward.mean(0)[order],
                          "successive_mean": res.successive.mean(0)[order]})
    fig = plot_geweke(res, max_panels=MAX_PANELS)
    shown = min(MAX_PANELS, len(res.names))
    caption = (f"P-P plots of the first {shown} of {len(res.names)} statistics: forward against "
               f"successive-conditional CDF ({num_samples} chains each, {num_steps} kernel steps); points off the "
               "diagonal, drawn red beyond the threshold, mean the two simulations differ.")
    return CheckOutcome(
        name=NAME, title=f"Geweke test of {sampler}", verdict=verdict, statistic=statistic, level=level,
        summary=summary, meaning=MEANING, remedy=REMEDY, figures=(Figure(png_bytes(fig), caption),),
        table=tuple(table.to_dict("records")),
        details={"num_samples": int(num_samples), "num_steps": int(num_steps), "lam": 1.0,
                 "threshold": res.threshold, "worst": worst, "worst_z": float(z)})
