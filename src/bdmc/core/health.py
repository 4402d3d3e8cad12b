"""What a finished annealing run says about itself: its divergences and its weights' health, as warnings.

A divergent transition is a rejected proposal (a NaN or +inf density, or an energy error past the kernel's
threshold): the kernel still leaves its target invariant, so the bounds hold, but chains that diverge often
barely move and the bound is loose. A ± resting on one or two runs' weights is not an error bar at all
(:mod:`bdmc.contracts.weight_health`).
"""

from __future__ import annotations

import warnings

from ..contracts.estimate import Estimate
from ..errors import DivergenceWarning, UntrustedStderrWarning

DIVERGENCE_WARNING_RATE = 0.1  # of all transitions


def divergence_fields(result) -> dict:
    """``divergences`` and ``divergence_rate`` of an engine result, as Estimate keywords."""
    return {"divergences": int(result.divergences.sum()), "divergence_rate": result.divergence_rate}


def warn_if_unhealthy(estimate: Estimate, what: str, *, stacklevel: int = 3) -> Estimate:
    """Warn when ``estimate``'s runs diverged often or its ± is not to be trusted; return it unchanged."""
    rate = estimate.divergence_rate
    if rate is not None and rate > DIVERGENCE_WARNING_RATE:
        warnings.warn(
            f"{what}: {rate:.0%} of transitions diverged ({estimate.divergences} rejected proposals: a NaN or "
            "infinite density, or an energy error above 1000). The bound still holds, but the chains barely moved: "
            "try more pilot steps (tune=bdmc.core.pilot.Pilot(num_steps=64)), the pilot's preconditioner for a "
            "kernel without one (Pilot(mass='dense')), or a model in better-scaled units.", DivergenceWarning,
            stacklevel=stacklevel)
    why = estimate.stderr_warning
    if why is not None:
        warnings.warn(f"{what}: {why}", UntrustedStderrWarning, stacklevel=stacklevel)
    return estimate
