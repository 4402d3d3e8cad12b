"""The simulator of ``regression.stan`` (``--simulator sim.py:simulate``): its prior and likelihood in NumPy, at
the covariates the tests write to ``data.npz``."""

import numpy as np

x = np.linspace(-2, 2, 20)


def simulate(rng, params=None):
    params = params or {"b": rng.normal(), "s": rng.exponential()}
    return params, {"y": params["b"] * x + params["s"] * rng.normal(size=x.size)}
