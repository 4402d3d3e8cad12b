"""Step sizes for per-image AIS: one table by annealing weight, chosen by pilot runs and then frozen.

The table is shared by all images of a call. Each of the first ``pilot_images`` images gets a pilot run
(:func:`bdmc.core.pilot.tune`, with its own keys ``fold_in(fold_in(key, i), PILOT_STREAM)``, never the run's)
that steers HMC's step size to the acceptance target along a grid of annealing weights; the tables are
combined by the geometric mean at each weight. A shared table keeps every image's kernel a function of
beta alone, fixed before the run, so each image's weights stay unbiased; per-image tables would serve very
different images better, at the cost of one pilot per image (``pilot_images`` sets the trade-off: images
of one data set tend to want similar step sizes). Adapting a step size inside a chain from its own
acceptance history is refused (:func:`bdmc.core.pilot.refuse_in_chain_adaptation`).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from ..core.pilot import Pilot, refuse_in_chain_adaptation, tune
from ..core.prior_check import PRIOR_CHECK_DRAWS
from ..errors import BDMCError
from ..kernels.step_sizes import StepSizeTable


def resolve_tune(tune_option, target_acceptance: float):
    """``("pilot", Pilot)``, ``("off", None)`` or ``("table", StepSizeTable)`` from a ``tune=`` option."""
    if isinstance(tune_option, str) and tune_option == "in-chain":
        refuse_in_chain_adaptation("tune='in-chain'")
    if isinstance(tune_option, StepSizeTable):
        return "table", tune_option
    if isinstance(tune_option, Pilot):
        return "pilot", tune_option
    if tune_option == "pilot":
        return "pilot", Pilot(target_acceptance=float(target_acceptance))
    if tune_option == "off":
        return "off", None
    raise BDMCError(f"tune must be 'pilot', 'off', a Pilot or a StepSizeTable, got {tune_option!r}")


def pilot_table(key, model, cases, kernel, pilot: Pilot):
    """A frozen step-size table from pilot runs on ``cases`` (one single-image data each).

    Returns ``(table, seconds, compile_seconds, n_evals)``.

    Raises
    ------
    BDMCError
        If a pilot met a NaN or +inf log density: a bug in the decoder or its parameters, which a tuned
        step size would only hide.
    """
    # One step-size table on the pilot's fixed grid, averaged over images: no fitted mass matrix (whose adaptive
    # levels differ by image), so the runs' HMC keeps the identity mass of the paper's evaluation.
    pilot = dataclasses.replace(pilot, mass="identity")
    sizes, seconds, compile_seconds, evals, lams = [], 0.0, 0.0, 0, None
    for i, data in enumerate(cases):
        tuned = tune(jax.random.fold_in(key, i), model, data, kernel, int(pilot.num_steps), pilot=pilot,
                     prior_check=PRIOR_CHECK_DRAWS // 8)
        if not tuned.healthy:
            raise BDMCError(f"the step-size pilot met a NaN or +inf log density on image {i}: check the decoder "
                            "and its parameters (a log density may be -inf, never NaN or +inf)")
        table = tuned.kernel.step_size
        lams = table.lams
        sizes.append(np.log(np.asarray(table.sizes, np.float64)))
        seconds += tuned.seconds
        compile_seconds += tuned.compile_seconds
        evals += tuned.n_evals
    if lams is None:
        raise BDMCError("the step-size pilot needs at least one image")
    combined = StepSizeTable(tuple(lams), tuple(float(s) for s in np.exp(np.mean(sizes, axis=0))))
    return combined, seconds, compile_seconds, evals
