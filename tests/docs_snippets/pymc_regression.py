"""The docs' regression in PyMC, built from the ``--data`` arrays (``bdmc audit --pymc model.py:build``)."""

import numpy as np
import pymc as pm


def build(x):
    with pm.Model() as regression:
        s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0)
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(0.1 * s2), shape=x.shape[1])
        pm.Normal("y", x @ beta, pm.math.sqrt(s2), observed=np.zeros(x.shape[0]))  # placeholder: bdmc simulates y
    return regression
