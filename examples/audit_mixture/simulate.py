"""The Stan mixture's prior and data simulator (bdmc calls ``simulate(rng, params=None)``)."""

import numpy as np

CASES = 40


def simulate(rng, params=None):
    p = dict(params or {})
    p.setdefault("w", rng.dirichlet([2.0, 2.0]))
    p.setdefault("mu", rng.normal(0.0, 3.0, size=2))
    first = rng.uniform(size=CASES) < np.asarray(p["w"])[0]
    return p, {"y": np.where(first, p["mu"][0], p["mu"][1]) + rng.normal(size=CASES)}
