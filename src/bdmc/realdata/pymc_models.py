"""The BREAD paper's linear and logistic regressions (Appendix C) written in PyMC.

The same priors as the NumPyro programs of :mod:`bdmc.realdata.models`: the variances ``sigma_sq`` and
``scale_sq`` are inverse-gamma(1, 1), the intercept ``alpha`` and the weights ``beta`` (shape ``(K,)``) are
normal with variance ``scale_sq``. The observed variable ``y`` has the data cases on its leading axis. PyMC
puts the variances on the log scale (value variables ``sigma_sq_log__``, ``scale_sq_log__``), as NumPyro and
Stan do, so the three implementations have the same unconstrained densities. PyMC is imported only when a
builder is called.
"""

from __future__ import annotations

import numpy as np

from ..errors import require
from ..ppl.registry import PPLS
from .models import checked_array


def _regression(x, *, logistic: bool):
    pm = require("pymc", extra=PPLS["pymc"].extra)
    from ..ppl.pymc import from_pymc

    x = checked_array(x, "x", ndim=2)
    num_cases, num_inputs = x.shape
    with pm.Model() as model:
        if not logistic:
            sigma_sq = pm.InverseGamma("sigma_sq", alpha=1.0, beta=1.0)
        scale_sq = pm.InverseGamma("scale_sq", alpha=1.0, beta=1.0)
        alpha = pm.Normal("alpha", 0.0, pm.math.sqrt(scale_sq))
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(scale_sq), shape=num_inputs)
        mean = pm.math.dot(x, beta) + alpha
        if logistic:  # the zeros are placeholders fixing the shape: bdmc scores the data it is given
            pm.Bernoulli("y", logit_p=mean, observed=np.zeros(num_cases, dtype=np.int64))
        else:
            pm.Normal("y", mean, pm.math.sqrt(sigma_sq), observed=np.zeros(num_cases))
    return from_pymc(model, observed="y")


def linear_regression(x):
    """:func:`bdmc.realdata.linear_regression` (NHEFS in the paper) in PyMC, for a design ``x`` (N, K).

    The model, its argument and its errors are the NumPyro builder's; PyMC is needed (``pip install -e
    '.[pymc]'``).

    Returns
    -------
    bdmc.ppl.pymc.PyMCModel
        Data ``{"y": (N,)}``; latents ``sigma_sq_log__, scale_sq_log__, alpha, beta``; free variables (the
        names :meth:`~bdmc.ppl.pymc.PyMCModel.sample_prior_given` and ``constrain`` use) ``sigma_sq, scale_sq,
        alpha, beta``.
    """
    return _regression(x, logistic=False)


def logistic_regression(x):
    """:func:`bdmc.realdata.logistic_regression` (Pima in the paper) in PyMC, for a design ``x`` (N, K).

    The model, its argument and its errors are the NumPyro builder's; PyMC is needed, as for
    :func:`linear_regression`.

    Returns
    -------
    bdmc.ppl.pymc.PyMCModel
        Data ``{"y": (N,)}`` of 0/1 labels; latents ``scale_sq_log__, alpha, beta``; free variables ``scale_sq,
        alpha, beta``.
    """
    return _regression(x, logistic=True)
