"""PyMC programs of the bug corpus, each beside its correct twin (``bug=False``).

PyMC draws and scores one graph, so its users' bugs sit where they write both halves by hand:
``pm.CustomDist`` with a ``logp`` and a ``random`` of their own. Each builder returns ``(model, None)``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

import bdmc

N = 20
X = np.linspace(-1.0, 1.0, N)


# ------------------------------------------------------------------- a truncated prior without its truncation term
def _truncated_normal_random(mu, sigma, rng=None, size=None):
    lower = (0.0 - mu) / sigma
    return stats.truncnorm.rvs(lower, np.inf, loc=mu, scale=sigma, size=size, random_state=rng)


def _normal_logp(value, mu, sigma):  # the bug: the normal's density on (0, inf), without - log P(x > 0)
    return pm.logp(pm.Normal.dist(mu, sigma), value)


def truncation(bug: bool):
    """A rate-like mean mu ~ N(-1, 1) truncated to (0, inf): the program draws the truncated normal but scores the
    untruncated density, whose mass on (0, inf) is Phi(-1) = 0.16 (log: -1.84 nats)."""
    with pm.Model() as program:
        if bug:
            mu = pm.CustomDist("mu", -1.0, 1.0, logp=_normal_logp, random=_truncated_normal_random,
                               transform=pm.distributions.transforms.log)
        else:
            mu = pm.Truncated("mu", pm.Normal.dist(-1.0, 1.0), lower=0.0)
        pm.Normal("y", mu, 1.0, observed=np.zeros(10))
    return bdmc.ppl.from_pymc(program, observed="y"), None


# ----------------------------------------------------------------- a simulator using a scale for a variance
def _variance_logp(value, mu, variance):
    return pm.logp(pm.Normal.dist(mu, pt.sqrt(variance)), value)


def _variance_random_bug(mu, variance, rng=None, size=None):
    return rng.normal(mu, variance, size=size)  # the bug: numpy's normal takes a standard deviation


def _variance_random(mu, variance, rng=None, size=None):
    return rng.normal(mu, np.sqrt(variance), size=size)


def scale_for_variance(bug: bool):
    with pm.Model() as program:
        a = pm.Normal("a", 0.0, 2.5)
        b = pm.Normal("b", 0.0, 2.5)
        s2 = pm.HalfNormal("s2", 1.0)
        pm.CustomDist("y", a + b * X, s2, logp=_variance_logp,
                      random=_variance_random_bug if bug else _variance_random, observed=np.zeros(N))
    return bdmc.ppl.from_pymc(program, observed="y"), None


# ------------------------------------------------------------ a broadcast that sums n x n likelihood terms
def _case_logp_bug(value, mu, sigma):  # every case against every mean, as when x is an (n, 1) column
    return pm.logp(pm.Normal.dist(mu[None, :], sigma), value[:, None]).sum(axis=1)


def _case_logp(value, mu, sigma):
    return pm.logp(pm.Normal.dist(mu, sigma), value)


def _case_random(mu, sigma, rng=None, size=None):
    return rng.normal(mu, sigma, size=size)


def broadcast(bug: bool):
    with pm.Model() as program:
        a = pm.Normal("a", 0.0, 2.5)
        b = pm.Normal("b", 0.0, 2.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.CustomDist("y", a + b * X, sigma, logp=_case_logp_bug if bug else _case_logp, random=_case_random,
                      observed=np.zeros(N))
    return bdmc.ppl.from_pymc(program, observed="y"), None


PROGRAMS = {"truncation": truncation, "scale-for-variance": scale_for_variance, "broadcast": broadcast}
