"""Kernels by name, their step sizes from a pilot: what ``bdmc audit --sampler`` and ``bdmc sandwich --kernel``
run when the user names a kernel instead of building one.

The pilot (:func:`bdmc.core.pilot.tune`) tunes HMC on one simulated data set along the annealing path. HMC keeps
the pilot's table of step sizes by lambda; NUTS, MALA and random-walk Metropolis take its value at lambda = 1,
in the units of the pilot's preconditioner (MALA's step is half its square: BlackJAX's MALA moves by
``sqrt(2 step)``; random-walk Metropolis, isotropic, scales it by the fit's typical standard deviation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contracts.capabilities import OwnKernel, supports
from ..contracts.model import simulate, validate_data
from ..errors import BDMCError
from ..kernels import HMC, MALA, NUTS, GaussianTable, RandomWalkMH, StepSizeTable
from .pilot import tune

KERNELS = ("gibbs", "hmc", "nuts", "mala", "rwm")
LABELS = {"gibbs": "the model's Gibbs kernel", "hmc": "bdmc's HMC", "nuts": "bdmc's NUTS", "mala": "bdmc's MALA",
          "rwm": "random-walk Metropolis"}
PILOT_STEPS = 100  # length of the path the step-size pilot is tuned for


def named_kernel(key, model, name: str) -> tuple[Any, dict]:
    """The kernel ``name`` for ``model``, and what was chosen (its settings, for records).

    Parameters
    ----------
    key : PRNG key
        Simulates the pilot's data set and drives the pilot.
    model : Model
    name : {"gibbs", "hmc", "nuts", "mala", "rwm"}
        ``"gibbs"``: the model's own kernel (``default_kernel``); the others bdmc's gradient or random-walk
        kernels on the model's density, tuned by the pilot.

    Returns
    -------
    (kernel, dict)
        The kernel ``kernel(key, latent, data, lam) -> (latent, info)`` and ``{"kernel": name, "repr": ...,
        "pilot_step_size_at_1": ...}``.
    """
    if name not in KERNELS:
        raise BDMCError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
    if name == "gibbs":
        if not supports(model, OwnKernel):
            raise BDMCError(f"kernel 'gibbs' needs a model with its own kernel (default_kernel); {model!r} has none: "
                            "choose nuts, hmc, mala or rwm")
        kernel = model.default_kernel()
        return kernel, {"kernel": name, "repr": repr(kernel)}
    data = validate_data(model, simulate(key, model).data)  # the pilot's own data set, from its key
    tuned = tune(key, model, data, HMC(model), PILOT_STEPS)
    table = tuned.kernel.step_size
    at_one = float(table(1.0)) if isinstance(table, StepSizeTable) else float(table)
    mass = tuned.kernel.inverse_mass
    scale = 1.0 if mass is None else float(np.exp(0.5 * np.mean(np.log(_variances_at_one(mass)))))
    kernel = {"hmc": lambda: tuned.kernel, "nuts": lambda: NUTS(model, step_size=at_one, inverse_mass=mass),
              "mala": lambda: MALA(model, step_size=0.5 * at_one**2, inverse_mass=mass),
              "rwm": lambda: RandomWalkMH(model, scale=at_one * scale)}[name]()
    return kernel, {"kernel": name, "repr": repr(kernel), "pilot_step_size_at_1": at_one}


def _variances_at_one(mass) -> np.ndarray:
    """The diagonal of an inverse mass matrix at lambda = 1 (a pilot's table, a tuple or a matrix)."""
    cov = np.asarray(mass.covariance(1.0) if isinstance(mass, GaussianTable) else mass, np.float64)
    return np.diag(cov) if cov.ndim == 2 else cov
