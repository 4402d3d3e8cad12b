"""Ports of further posteriordb posteriors: LDA on other corpora, GLMs and the BUGS examples with vague priors
(dugongs, surgical, seeds), the dogs' log-linear learning model and the bones graded-response model.

The LDA posteriors run the program of ``three_docs1200-ldaK2`` (:mod:`posteriordb_ports.hierarchical`) on other
data. Several of the others give their parameters very vague priors (``normal(0, 1000)``, ``gamma(1e-3, 1e-3)``):
their prior draws reach log densities where rounding swamps a comparison with Stan, so they are checked at posterior
draws of the port (``posteriordb_check.py check --source posterior``; :data:`CHECKED_AT_POSTERIOR_DRAWS`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import posteriordb_models as pm
from numpyro.distributions import constraints

from posteriordb_ports import hierarchical
from posteriordb_ports.small import AvoidanceSeries

C = 0.5 * math.log(2 * math.pi)


# ------------------------------------------------------------------------------------------- distributions


class GradedResponse(dist.Distribution):
    """One child's grades on ``nInd`` indicators (the bones model): indicator ``j`` has ``ncat[j]`` ordered grades,
    ``P(grade > k) = inv_logit(delta[j] (theta - gamma[j, k]))`` for ``k = 1 .. ncat[j] - 1``, so grade ``k`` has
    probability ``Q[k - 1] - Q[k]`` (``Q[0] = 1``, ``Q[ncat] = 0``) as the Stan program computes it. A missing grade
    (``missing[j]``, coded -1 in the data) adds nothing, and is simulated as -1. Batch (children,), event
    (indicators,)."""

    arg_constraints = {}
    reparametrized_params = []
    support = constraints.independent(constraints.integer_interval(-1, 5), 1)

    def __init__(self, theta, delta, gamma, ncat, missing, *, validate_args=None):
        self.theta, self.delta, self.gamma = jnp.asarray(theta), jnp.asarray(delta), jnp.asarray(gamma)
        self.ncat, self.missing = jnp.asarray(ncat), jnp.asarray(missing)
        super().__init__(batch_shape=jnp.shape(self.theta), event_shape=jnp.shape(self.delta),
                         validate_args=validate_args)

    def _cumulative(self):
        """Q[..., j, k] for k = 0 .. 5: 1, the indicator's exceedance probabilities, then 0 past ncat - 1."""
        q = jax.nn.sigmoid(self.delta[:, None] * (self.theta[..., None, None] - self.gamma))
        q = jnp.where(jnp.arange(1, self.gamma.shape[-1] + 1) < self.ncat[:, None], q, 0.0)
        ones, zeros = jnp.ones_like(q[..., :1]), jnp.zeros_like(q[..., :1])
        return jnp.concatenate([ones, q, zeros], -1)

    def log_prob(self, value):
        q = self._cumulative()
        grade = jnp.clip(jnp.asarray(value, jnp.result_type(int)), 1, self.gamma.shape[-1] + 1)
        upper = jnp.take_along_axis(q, (grade - 1)[..., None], -1)[..., 0]
        lower = jnp.take_along_axis(q, grade[..., None], -1)[..., 0]
        # a missing grade's (clipped) probability is never used: a safe 1 keeps its gradient finite
        p = jnp.where(self.missing, 1.0, upper - lower)
        return jnp.sum(jnp.where(self.missing, 0.0, jnp.log(p)), -1)

    def sample(self, key, sample_shape=()):
        q = self._cumulative()[..., 1:-1]
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        u = jax.random.uniform(key, shape)
        grade = 1 + jnp.sum(u[..., None] < q, -1)  # the thresholds increase: Q decreases in k
        return jnp.where(self.missing, -1, grade)


# ------------------------------------------------------------------------------------------- programs


def glm_poisson(year, C=None):
    """Poisson counts with a cubic trend in year; the coefficients' bounds are their (uniform) priors."""
    alpha = numpyro.sample("alpha", dist.Uniform(-20.0, 20.0))
    beta1 = numpyro.sample("beta1", dist.Uniform(-10.0, 10.0))
    beta2 = numpyro.sample("beta2", dist.Uniform(-10.0, 10.0))
    beta3 = numpyro.sample("beta3", dist.Uniform(-10.0, 10.0))
    log_lambda = alpha + beta1 * year + beta2 * year ** 2 + beta3 * year ** 3
    numpyro.sample("C", dist.Poisson(jnp.exp(log_lambda)), obs=C)


def dogs_log(n_dogs, n_trials, y=None):
    """Avoidance learning: logit P(shock) = beta[0] n_avoid + beta[1] n_shock; one case per dog."""
    beta = numpyro.sample("beta", dist.Uniform(jnp.array([-100.0, 0.0]), jnp.array([0.0, 100.0])).to_event(1))
    series = AvoidanceSeries(logits=lambda n_avoid, n_shock: beta[0] * n_avoid + beta[1] * n_shock,
                             T=n_trials, batch_shape=(n_dogs,))
    numpyro.sample("y", series, obs=y)


def dugongs(x, Y=None):
    """Length against age: Y ~ normal(alpha - beta lambda^x, 1 / sqrt(tau))."""
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1000.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 1000.0))
    lam = numpyro.sample("lambda", dist.Uniform(0.5, 1.0))
    tau = numpyro.sample("tau", dist.Gamma(1e-4, 1e-4))
    numpyro.sample("Y", dist.Normal(alpha - beta * lam ** x, 1.0 / jnp.sqrt(tau)), obs=Y)


def bones(delta, gamma, ncat, missing, grade=None):
    """Skeletal maturity theta per child from graded indicators (a graded-response model)."""
    theta = numpyro.sample("theta", dist.Normal(0.0, 36.0).expand([missing.shape[0]]).to_event(1))
    numpyro.sample("grade", GradedResponse(theta, delta, gamma, ncat, missing), obs=grade)


def surgical(n, r=None):
    """Mortality per hospital: r ~ binomial_logit(n, b), b ~ normal(mu, sqrt(sigmasq))."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1000.0))
    sigmasq = numpyro.sample("sigmasq", dist.InverseGamma(0.001, 0.001))
    b = numpyro.sample("b", dist.Normal(mu, jnp.sqrt(sigmasq)).expand([n.shape[0]]).to_event(1))
    numpyro.sample("r", dist.Binomial(n, logits=b), obs=r)


def seeds(N, x1, x2, n=None):
    """Germination per plate: logistic regression on seed and extract, with a precision-tau plate effect b."""
    alpha0 = numpyro.sample("alpha0", dist.Normal(0.0, 1000.0))
    alpha1 = numpyro.sample("alpha1", dist.Normal(0.0, 1000.0))
    alpha12 = numpyro.sample("alpha12", dist.Normal(0.0, 1000.0))
    alpha2 = numpyro.sample("alpha2", dist.Normal(0.0, 1000.0))
    tau = numpyro.sample("tau", dist.Gamma(1e-3, 1e-3))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0 / jnp.sqrt(tau)).expand([N.shape[0]]).to_event(1))
    numpyro.sample("n", dist.Binomial(N, logits=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1 * x2 + b), obs=n)


# ------------------------------------------------------------------------------------------- data


def _ints(x):
    return jnp.asarray(np.asarray(x, dtype=int), dtype=jnp.result_type(int))  # NumPyro's binomial wants int64


def _lfact(x):
    return float(sum(math.lgamma(v + 1) for v in np.ravel(x)))


def _lchoose(n, k):
    return float(sum(math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
                     for a, b in zip(np.ravel(n), np.ravel(k), strict=True)))


def _log_gamma_const(a, b):
    """The constant of gamma(a, b) (or inv_gamma(a, b)) that ``~`` drops: a log b - log Gamma(a)."""
    return a * math.log(b) - math.lgamma(a)


def _bones_args(d):
    grade = np.asarray(d["grade"], int)
    return {"delta": pm.floats(d["delta"]), "gamma": pm.floats(d["gamma"]), "ncat": _ints(d["ncat"]),
            "missing": jnp.asarray(grade == -1), "grade": _ints(grade)}


_LDA = next(e for e in hierarchical.ENTRIES if e.name == "three_docs1200-ldaK2")
_LDA_DATA = ("three_men1", "three_men2", "three_men3")
_LDA_SIZES = {"three_men1": 6, "three_men2": 14, "three_men3": 9}  # M documents; V = 249 words in each

ENTRIES = [
    *(pm.build_entry(f"{data}-ldaK2", _LDA.model, ["w"], _LDA.args,
                     {"theta": (_LDA_SIZES[data], 2), "phi": (2, 249)}) for data in _LDA_DATA),
    pm.build_entry("GLM_Poisson_Data-GLM_Poisson_model", glm_poisson, ["C"],
                   lambda d: {"year": pm.floats(d["year"]), "C": _ints(d["C"])},
                   {"alpha": (), "beta1": (), "beta2": (), "beta3": ()}),
    pm.build_entry("dogs-dogs_log", dogs_log, ["y"],
                   lambda d: {"n_dogs": int(d["n_dogs"]), "n_trials": int(d["n_trials"]), "y": pm.floats(d["y"])},
                   {"beta": (2,)}),
    pm.build_entry("dugongs_data-dugongs_model", dugongs, ["Y"],
                   lambda d: {"x": pm.floats(d["x"]), "Y": pm.floats(d["Y"])},
                   {"alpha": (), "beta": (), "lambda": (), "tau": ()}),
    pm.build_entry("bones_data-bones_model", bones, ["grade"], _bones_args, {"theta": (13,)}),
    pm.build_entry("surgical_data-surgical_model", surgical, ["r"],
                   lambda d: {"n": _ints(d["n"]), "r": _ints(d["r"])}, {"mu": (), "sigmasq": (), "b": (12,)}),
    pm.build_entry("seeds_data-seeds_model", seeds, ["n"],
                   lambda d: {"N": _ints(d["N"]), "x1": pm.floats(d["x1"]), "x2": pm.floats(d["x2"]),
                              "n": _ints(d["n"])},
                   {"alpha0": (), "alpha1": (), "alpha12": (), "alpha2": (), "tau": (), "b": (21,)}),
]

_LDA_WHY = ("`~` drops dirichlet(1)'s normalizer log Gamma(V) = log 248! on phi[1..2] (and log Gamma(K) = 0 on each "
            "theta[m]); the likelihood is target += log_sum_exp (normalized).")

EXPECTED = {
    **{f"{data}-ldaK2": (lambda d: 2 * math.lgamma(d["V"]) + d["M"] * math.lgamma(2), _LDA_WHY) for data in _LDA_DATA},
    "GLM_Poisson_Data-GLM_Poisson_model": (
        lambda d: -math.log(40.0) - 3 * math.log(20.0) - _lfact(d["C"]),
        "alpha on (-20, 20) and beta1..beta3 on (-10, 10) have no prior statement: uniform, densities 1/40 and "
        "1/20 that NumPyro keeps and Stan drops; `~ poisson_log` drops -log C! per count."),
    "dogs-dogs_log": (
        lambda d: -2 * math.log(100.0),
        "`~ uniform(-100, 0)` and `~ uniform(0, 100)` drop -log 100 each on beta[1], beta[2]; bernoulli has no "
        "constant."),
    "dugongs_data-dugongs_model": (
        lambda d: 2 * (-C - math.log(1000.0)) + math.log(2.0) + _log_gamma_const(1e-4, 1e-4) - d["N"] * C,
        "`~` drops normal(0, 1000)'s -log sqrt(2 pi) - log 1000 on alpha and beta, uniform(0.5, 1)'s "
        "-log 0.5 = log 2 on lambda, gamma(1e-4, 1e-4)'s a log b - log Gamma(a) on tau and -log sqrt(2 pi) per Y "
        "(27; sigma = 1 / sqrt(tau) is a parameter)."),
    "bones_data-bones_model": (
        lambda d: d["nChild"] * (-C - math.log(36.0)),
        "`~` drops normal(0, 36)'s -log sqrt(2 pi) - log 36 per theta (13); the likelihood is target += log p "
        "(normalized)."),
    "surgical_data-surgical_model": (
        lambda d: -C - math.log(1000.0) + _log_gamma_const(0.001, 0.001) - d["N"] * C + _lchoose(d["n"], d["r"]),
        "`~` drops normal(0, 1000)'s -log sqrt(2 pi) - log 1000 on mu, inv_gamma(0.001, 0.001)'s a log b - "
        "log Gamma(a) on sigmasq, -log sqrt(2 pi) per b (12; sigma is a parameter) and binomial_logit's "
        "log C(n, r) per hospital."),
    "seeds_data-seeds_model": (
        lambda d: 4 * (-C - math.log(1000.0)) + _log_gamma_const(1e-3, 1e-3) - d["I"] * C
        + _lchoose(d["N"], d["n"]),
        "`~` drops normal(0, 1000)'s -log sqrt(2 pi) - log 1000 on alpha0, alpha1, alpha2, alpha12, "
        "gamma(0.001, 0.001)'s a log b - log Gamma(a) on tau, -log sqrt(2 pi) per b (21; sigma is a parameter) "
        "and binomial_logit's log C(N, n) per plate."),
}

N_CASES = {
    "GLM_Poisson_Data-GLM_Poisson_model": lambda d: d["n"],
    "dogs-dogs_log": lambda d: d["n_dogs"],
    "bones_data-bones_model": lambda d: d["nChild"],
    "seeds_data-seeds_model": lambda d: d["I"],
}

# Checked at posterior draws of the port (``posteriordb_check.py check --source posterior``): their vague priors put
# prior draws where the log density is astronomically large or not finite.
CHECKED_AT_POSTERIOR_DRAWS = ("GLM_Poisson_Data-GLM_Poisson_model", "dogs-dogs_log", "dugongs_data-dugongs_model",
                              "bones_data-bones_model")

# Written but not registered: the check's adapter step draws from the prior, where inverse-gamma(0.001, 0.001) /
# gamma(0.001, 0.001) scales overflow and the logits are not finite; they stay "not ported" until that step draws
# from the posterior too.
NOT_REGISTERED = ("surgical_data-surgical_model", "seeds_data-seeds_model")
ENTRIES = [e for e in ENTRIES if e.name not in NOT_REGISTERED]
EXPECTED = {k: v for k, v in EXPECTED.items() if k not in NOT_REGISTERED}
N_CASES = {k: v for k, v in N_CASES.items() if k not in NOT_REGISTERED}
