"""NumPyro ports of small posteriordb posteriors (a few parameters each): rates, capture-recapture, the dogs'
avoidance learning, GLMs and normal mixtures.

Conventions as in :mod:`posteriordb_models`: the Stan programs' priors and likelihoods with NumPyro's normalized
densities, Stan's parameter names as site names, one likelihood term per data case. A parameter that the Stan
program leaves without a prior is bounded here, so it is uniform on its bounds (a proper prior whose density
``1 / (b - a)`` NumPyro keeps and Stan drops; a flat simplex is a ``Dirichlet(1, ..., 1)``, density ``(K - 1)!``).
Where the Stan program marginalizes a discrete variable with ``log_sum_exp`` (the number of surveys, whether an
animal is present, the mixture component), the observed site's distribution is that marginal: a mixture,
:class:`BinomialUnknownTrials` or :class:`CaptureHistory`. Where a trial's probability depends on the earlier
trials of the same series (the dogs, the trap response), the series is one case whose distribution,
:class:`AvoidanceSeries` / :class:`CaptureHistory`, draws it trial by trial.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import posteriordb_models as pm
from jax.scipy.special import logsumexp
from numpyro.distributions import constraints

from bdmc.errors import OptionError

C = 0.5 * math.log(2 * math.pi)
LOG2 = math.log(2.0)


# ------------------------------------------------------------------------------------------- distributions


def _bernoulli_log_prob(value, probs):
    """log p or log(1 - p), unclamped (Stan's bernoulli); the branch not taken sees a safe probability, so that
    a certain trial (p = 1 or 0) has a finite gradient."""
    one = value == 1
    return jnp.where(one, jnp.log(jnp.where(one, probs, 1.0)), jnp.log1p(-jnp.where(one, 0.0, probs)))


class CaptureHistory(dist.Distribution):
    """The capture history (``T`` occasions, 1 = captured) of one individual of a data-augmented population.

    The individual is present with probability ``omega``; a present one is captured on occasion ``j`` with
    probability ``p[j]``, or ``c`` when it was captured on occasion ``j - 1`` (a trap response; ``c=None``: none).
    An absent one is never captured, so an all-zero history has mass ``1 - omega + omega * p(no capture)``: the
    Stan programs' ``log_sum_exp`` over the presence indicator.
    """

    arg_constraints = {}
    reparametrized_params = []
    support = constraints.independent(constraints.boolean, 1)

    def __init__(self, omega, p, c=None, *, T: int, validate_args=None):
        self.omega = jnp.asarray(omega)
        self.p = jnp.broadcast_to(jnp.asarray(p), (T,))
        self.c = None if c is None else jnp.asarray(c)
        super().__init__(batch_shape=jnp.shape(self.omega), event_shape=(T,), validate_args=validate_args)

    def _p_eff(self, previous):
        return self.p if self.c is None else jnp.where(previous == 1, self.c, self.p)

    def log_prob(self, value):
        previous = jnp.concatenate([jnp.zeros_like(value[..., :1]), value[..., :-1]], -1)
        present = jnp.log(self.omega) + jnp.sum(_bernoulli_log_prob(value, self._p_eff(previous)), -1)
        never = jnp.all(value == 0, -1)
        return jnp.where(never, jnp.logaddexp(present, jnp.log1p(-self.omega)), present)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        key_z, key_y = jax.random.split(key)
        z = jax.random.bernoulli(key_z, self.omega, shape)

        def step(previous, x):
            u, p_j = x
            y = (u < jnp.where(previous == 1, self.c, p_j) if self.c is not None else u < p_j).astype(float)
            return y, y

        u = jax.random.uniform(key_y, (self.event_shape[0],) + shape)
        _, ys = jax.lax.scan(step, jnp.zeros(shape), (u, self.p))
        return jnp.moveaxis(ys, 0, -1) * z[..., None]


class AvoidanceSeries(dist.Distribution):
    """One dog's ``T`` trials (1 = shocked, 0 = avoided): trial ``t`` is Bernoulli given the numbers of earlier
    avoidances and shocks, with ``probs(n_avoid, n_shock)`` or ``logits(n_avoid, n_shock)``.

    The probabilities are not clamped away from 0 and 1 (NumPyro's ``Bernoulli(probs)`` clamps them to machine
    epsilon): ``log p`` and ``log(1 - p)`` as Stan's ``bernoulli`` computes them."""

    arg_constraints = {}
    reparametrized_params = []
    support = constraints.independent(constraints.boolean, 1)

    def __init__(self, *, probs=None, logits=None, T: int, batch_shape=(), validate_args=None):
        if (probs is None) == (logits is None):
            raise OptionError("AvoidanceSeries takes one of probs, logits")
        self.probs_fn, self.logits_fn = probs, logits
        super().__init__(batch_shape=tuple(batch_shape), event_shape=(T,), validate_args=validate_args)

    def _log_prob_trials(self, value, n_avoid, n_shock):
        if self.logits_fn is not None:
            x = self.logits_fn(n_avoid, n_shock)
            return value * x - jax.nn.softplus(x)
        return _bernoulli_log_prob(value, self.probs_fn(n_avoid, n_shock))

    def log_prob(self, value):
        n_shock = jnp.cumsum(value, -1) - value
        n_avoid = jnp.arange(self.event_shape[0]) - n_shock
        return jnp.sum(self._log_prob_trials(value, n_avoid, n_shock), -1)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape

        def step(counts, u):
            n_avoid, n_shock = counts
            if self.logits_fn is not None:
                p = jax.nn.sigmoid(self.logits_fn(n_avoid, n_shock))
            else:
                p = self.probs_fn(n_avoid, n_shock)
            y = (u < p).astype(float)
            return (n_avoid + 1.0 - y, n_shock + y), y

        u = jax.random.uniform(key, (self.event_shape[0],) + shape)
        _, ys = jax.lax.scan(step, (jnp.zeros(shape), jnp.zeros(shape)), u)
        return jnp.moveaxis(ys, 0, -1)


class BinomialUnknownTrials(dist.Distribution):
    """``m`` counts, each ``Binomial(n, probs)`` given ``n``, with the number of trials ``n`` uniform on
    ``1..nmax`` and marginalized (so the counts are dependent): the event is the ``m`` counts."""

    arg_constraints = {"probs": constraints.unit_interval}
    reparametrized_params = []
    support = constraints.independent(constraints.nonnegative_integer, 1)

    def __init__(self, probs, *, nmax: int, m: int, validate_args=None):
        self.probs, self.nmax = jnp.asarray(probs), nmax
        super().__init__(batch_shape=jnp.shape(self.probs), event_shape=(m,), validate_args=validate_args)

    def log_prob(self, value):
        n = jnp.arange(1, self.nmax + 1)
        probs = self.probs[..., None, None]
        terms = dist.Binomial(n[:, None], probs).log_prob(jnp.minimum(value[..., None, :], n[:, None]))
        possible = n >= jnp.max(value, -1)[..., None]  # no more returns than surveys
        log_n = jnp.where(possible, jnp.sum(terms, -1), -jnp.inf)
        return logsumexp(log_n, -1) - jnp.log(self.nmax)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        key_n, key_k = jax.random.split(key)
        n = jax.random.randint(key_n, shape, 1, self.nmax + 1)
        trials = jnp.broadcast_to(n[..., None], shape + self.event_shape)
        return dist.Binomial(trials, self.probs[..., None]).sample(key_k)


# ------------------------------------------------------------------------------------------- models


def rate_1(n, k=None):
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    numpyro.sample("k", dist.Binomial(n, theta), obs=k)


def rate_common(n, k=None):
    """One rate theta behind both counts k[0] of n[0] and k[1] of n[1] (Rate_3, Rate_5)."""
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    numpyro.sample("k", dist.Binomial(n, theta), obs=k)


def rate_2(n, k=None):
    theta1 = numpyro.sample("theta1", dist.Beta(1.0, 1.0))
    theta2 = numpyro.sample("theta2", dist.Beta(1.0, 1.0))
    numpyro.sample("k", dist.Binomial(n, jnp.stack([theta1, theta2])), obs=k)


def rate_4(n, k=None):
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    numpyro.sample("thetaprior", dist.Beta(1.0, 1.0))
    numpyro.sample("k", dist.Binomial(n, theta), obs=k)


def survey(nmax, m, k=None):
    """m returns k of an unknown number n of surveys (uniform on 1..nmax), each returned with probability
    theta; n is marginalized: one case, the m counts jointly."""
    theta = numpyro.sample("theta", dist.Uniform(0.0, 1.0))
    numpyro.sample("k", BinomialUnknownTrials(theta, nmax=nmax, m=m), obs=k)


def m0(M, T, s=None):
    """Capture-recapture, constant detection: s[i] (captures of individual i in T occasions) is zero-inflated
    binomial, the zero inflation being the absent individuals of the augmented population."""
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    p = numpyro.sample("p", dist.Uniform(0.0, 1.0))
    with numpyro.plate("individuals", M):
        numpyro.sample("s", dist.ZeroInflatedDistribution(dist.Binomial(T, p), gate=1.0 - omega), obs=s)


def mt(M, T, y=None):
    """Capture-recapture, detection probability p[j] per occasion."""
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    p = numpyro.sample("p", dist.Uniform(0.0, 1.0).expand([T]).to_event(1))
    with numpyro.plate("individuals", M):
        numpyro.sample("y", CaptureHistory(omega, p, T=T), obs=y)


def mb(M, T, y=None):
    """Capture-recapture with a trap response: capture probability c after a capture, p otherwise."""
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    p = numpyro.sample("p", dist.Uniform(0.0, 1.0))
    c = numpyro.sample("c", dist.Uniform(0.0, 1.0))
    with numpyro.plate("individuals", M):
        numpyro.sample("y", CaptureHistory(omega, p, c, T=T), obs=y)


def dogs(n_dogs, n_trials, y=None):
    """Avoidance learning: logit P(shock) = beta[0] + beta[1] n_avoid + beta[2] n_shock; one case per dog."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 100.0).expand([3]).to_event(1))
    series = AvoidanceSeries(logits=lambda a, s: beta[0] + beta[1] * a + beta[2] * s,
                             T=n_trials, batch_shape=(n_dogs,))
    numpyro.sample("y", series, obs=y)


def dogs_hierarchical(n_dogs, n_trials, y=None):
    """Avoidance learning: P(shock) = a^n_shock b^n_avoid; one case per dog."""
    a = numpyro.sample("a", dist.Uniform(0.0, 1.0))
    b = numpyro.sample("b", dist.Uniform(0.0, 1.0))
    series = AvoidanceSeries(probs=lambda n_avoid, n_shock: a**n_shock * b**n_avoid,
                             T=n_trials, batch_shape=(n_dogs,))
    numpyro.sample("y", series, obs=y)


def glm_binomial(year, N, C=None):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 100.0))
    beta1 = numpyro.sample("beta1", dist.Normal(0.0, 100.0))
    beta2 = numpyro.sample("beta2", dist.Normal(0.0, 100.0))
    numpyro.sample("C", dist.Binomial(N, logits=alpha + beta1 * year + beta2 * year ** 2), obs=C)


def normal_mixture(N, y=None):
    """Two unit-variance normals, unknown weight and means."""
    theta = numpyro.sample("theta", dist.Uniform(0.0, 1.0))
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    mixture = dist.MixtureSameFamily(dist.Categorical(probs=jnp.stack([theta, 1.0 - theta])), dist.Normal(mu, 1.0))
    with numpyro.plate("cases", N):
        numpyro.sample("y", mixture, obs=y)


def low_dim_gauss_mix_collapse(N, y=None):
    """Two normals with unordered means (the label-switching version of low_dim_gauss_mix)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    mixture = dist.MixtureSameFamily(dist.Categorical(probs=jnp.stack([theta, 1.0 - theta])),
                                     dist.Normal(mu, sigma))
    with numpyro.plate("cases", N):
        numpyro.sample("y", mixture, obs=y)


def normal_mixture_k(K, N, y=None):
    """K normals: flat simplex weights, normal(0, 10) means, sds uniform on (0, 10)."""
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.ones(K)))
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0).expand([K]).to_event(1))
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, 10.0).expand([K]).to_event(1))
    with numpyro.plate("cases", N):
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=theta), dist.Normal(mu, sigma)), obs=y)


# ------------------------------------------------------------------------------------------- data


def _ints(x):
    return jnp.asarray(np.asarray(x), dtype=int)  # the default integer type (64 bits under x64, as Binomial needs)


def _pair_args(d):
    return {"n": _ints([d["n1"], d["n2"]]), "k": pm.floats([d["k1"], d["k2"]])}


def _survey_args(d):
    return {"nmax": int(d["nmax"]), "m": int(d["m"]), "k": pm.floats(d["k"])}


def _capture_args(d, sums=False):
    y = np.asarray(d["y"], float)
    out = {"M": int(d["M"]), "T": int(d["T"])}
    if sums:
        out["s"] = pm.floats(y.sum(1))
    else:
        out["y"] = pm.floats(y)
    return out


def _dogs_args(d):
    return {"n_dogs": int(d["n_dogs"]), "n_trials": int(d["n_trials"]), "y": pm.floats(d["y"])}


def _lchoose(n, k):
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _sum_lchoose(n, k):
    return float(sum(_lchoose(a, b) for a, b in zip(n, k, strict=True)))


def _log_beta(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


_RATES = [("Rate_1_data-Rate_1_model", rate_1, lambda d: {"n": int(d["n"]), "k": float(d["k"])},
           {"theta": ()}),
          ("Rate_3_data-Rate_3_model", rate_common, _pair_args, {"theta": ()}),
          ("Rate_5_data-Rate_5_model", rate_common, _pair_args, {"theta": ()}),
          ("Rate_2_data-Rate_2_model", rate_2, _pair_args, {"theta1": (), "theta2": ()}),
          ("Rate_4_data-Rate_4_model", rate_4, lambda d: {"n": int(d["n"]), "k": float(d["k"])},
           {"theta": (), "thetaprior": ()})]

ENTRIES = [
    *(pm.build_entry(name, model, ["k"], args, sites) for name, model, args, sites in _RATES),
    pm.build_entry("Survey_data-Survey_model", survey, ["k"], _survey_args, {"theta": ()}),
    pm.build_entry("M0_data-M0_model", m0, ["s"], lambda d: _capture_args(d, sums=True), {"omega": (), "p": ()}),
    pm.build_entry("dogs-dogs_hierarchical", dogs_hierarchical, ["y"], _dogs_args, {"a": (), "b": ()}),
    pm.build_entry("GLM_Binomial_data-GLM_Binomial_model", glm_binomial, ["C"],
                   lambda d: {"year": pm.floats(d["year"]), "N": _ints(d["N"]), "C": pm.floats(d["C"])},
                   {"alpha": (), "beta1": (), "beta2": ()}),
    pm.build_entry("Mb_data-Mb_model", mb, ["y"], _capture_args, {"omega": (), "p": (), "c": ()}),
    pm.build_entry("dogs-dogs", dogs, ["y"], _dogs_args, {"beta": (3,)}),
    pm.build_entry("normal_2-normal_mixture", normal_mixture, ["y"],
                   lambda d: {"N": int(d["N"]), "y": pm.floats(d["y"])}, {"theta": (), "mu": (2,)}),
    pm.build_entry("Mt_data-Mt_model", mt, ["y"], _capture_args, {"omega": (), "p": (3,)}),
    pm.build_entry("low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse", low_dim_gauss_mix_collapse, ["y"],
                   lambda d: {"N": int(d["N"]), "y": pm.floats(d["y"])}, {"mu": (2,), "sigma": (2,), "theta": ()}),
    pm.build_entry("normal_5-normal_mixture_k", normal_mixture_k, ["y"],
                   lambda d: {"K": int(d["K"]), "N": int(d["N"]), "y": pm.floats(d["y"])},
                   {"theta": (5,), "mu": (5,), "sigma": (5,)}),
]

_BINOMIAL = "`~ binomial` drops the binomial coefficient"

EXPECTED = {
    "Rate_1_data-Rate_1_model": (
        lambda d: _lchoose(d["n"], d["k"]),
        f"{_BINOMIAL} log C(n, k) (data); beta(1, 1) is the uniform density 1."),
    "Rate_3_data-Rate_3_model": (
        lambda d: _lchoose(d["n1"], d["k1"]) + _lchoose(d["n2"], d["k2"]),
        f"{_BINOMIAL}s log C(n1, k1) + log C(n2, k2) (data); beta(1, 1) is the uniform density 1."),
    "Rate_5_data-Rate_5_model": (
        lambda d: _lchoose(d["n1"], d["k1"]) + _lchoose(d["n2"], d["k2"]),
        f"{_BINOMIAL}s log C(n1, k1) + log C(n2, k2) (both 0 for k1 = 0, k2 = n2 = 10); beta(1, 1) is the "
        "uniform density 1."),
    "Rate_2_data-Rate_2_model": (
        lambda d: _lchoose(d["n1"], d["k1"]) + _lchoose(d["n2"], d["k2"]),
        f"{_BINOMIAL}s log C(n1, k1) + log C(n2, k2) (data); beta(1, 1) on theta1, theta2 is the uniform "
        "density 1."),
    "Rate_4_data-Rate_4_model": (
        lambda d: _lchoose(d["n"], d["k"]),
        f"{_BINOMIAL} log C(n, k) (data); beta(1, 1) on theta and thetaprior is the uniform density 1."),
    "Survey_data-Survey_model": (
        lambda d: 0.0,
        "Normalized: the likelihood is target += log_sum_exp of log(1/nmax) + binomial_lpmf (every constant "
        "kept), and theta, with no prior statement on (0, 1), is uniform (density 1)."),
    "M0_data-M0_model": (
        lambda d: 0.0,
        "Normalized: every likelihood statement is target += *_lpmf, and omega and p, with no prior statement "
        "on (0, 1), are uniform (density 1)."),
    "Mb_data-Mb_model": (
        lambda d: 0.0,
        "Normalized: every likelihood statement is target += *_lpmf, and omega, p and c, with no prior "
        "statement on (0, 1), are uniform (density 1)."),
    "Mt_data-Mt_model": (
        lambda d: 0.0,
        "Normalized: every likelihood statement is target += *_lpmf, and omega and p[1..3], with no prior "
        "statement on (0, 1), are uniform (density 1)."),
    "dogs-dogs_hierarchical": (
        lambda d: 0.0,
        "Normalized: `~ bernoulli` has no constant to drop, and a and b, with no prior statement on (0, 1), "
        "are uniform (density 1)."),
    "dogs-dogs": (
        lambda d: 3 * (-C - math.log(100.0)),
        "`~` drops normal(0, 100)'s -log sqrt(2 pi) - log 100 on beta[1..3]; bernoulli_logit has no constant."),
    "GLM_Binomial_data-GLM_Binomial_model": (
        lambda d: 3 * (-C - math.log(100.0)) + _sum_lchoose(d["N"], d["C"]),
        "`~` drops normal(0, 100)'s -log sqrt(2 pi) - log 100 on alpha, beta1, beta2 and binomial_logit's "
        "log C(N_i, C_i) per year (data)."),
    "normal_2-normal_mixture": (
        lambda d: 2 * (-C - math.log(10.0)),
        "`~` drops normal(0, 10)'s -log sqrt(2 pi) - log 10 on mu[1..2] (and uniform(0, 1)'s log 1 on theta); "
        "the mixture likelihood is target += log_mix of normal_lpdf (normalized)."),
    "low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse": (
        lambda d: 2 * (LOG2 - C - LOG2) + 2 * (-C - LOG2) - _log_beta(5.0, 5.0),
        "`~` drops normal(0, 2)'s -log sqrt(2 pi) - log 2 on sigma[1..2] and mu[1..2] and beta(5, 5)'s "
        "-log B(5, 5) on theta; NumPyro adds the half-normal's log 2 per sigma (the mixture likelihood is "
        "target += log_mix, normalized)."),
    "normal_5-normal_mixture_k": (
        lambda d: math.lgamma(d["K"]) + d["K"] * (-C - math.log(10.0)) - d["K"] * math.log(10.0),
        "The simplex theta has no prior statement: Stan's density 1 on the simplex is NumPyro's Dirichlet(1, "
        "..., 1) up to its normalizer log (K - 1)! = log 24; `~` drops normal(0, 10)'s -log sqrt(2 pi) - log 10 "
        "on mu[1..5]; sigma[1..5] on (0, 10) have no prior statement: uniform, density 1/10 each that NumPyro "
        "keeps. The likelihood is target += log_sum_exp (normalized)."),
}

N_CASES = {
    "Rate_1_data-Rate_1_model": lambda d: 1,
    "Rate_3_data-Rate_3_model": lambda d: 2,
    "Rate_5_data-Rate_5_model": lambda d: 2,
    "Rate_2_data-Rate_2_model": lambda d: 2,
    "Rate_4_data-Rate_4_model": lambda d: 1,
    "Survey_data-Survey_model": lambda d: 1,
    "M0_data-M0_model": lambda d: d["M"],
    "Mb_data-Mb_model": lambda d: d["M"],
    "Mt_data-Mt_model": lambda d: d["M"],
    "dogs-dogs_hierarchical": lambda d: d["n_dogs"],
    "dogs-dogs": lambda d: d["n_dogs"],
    "GLM_Binomial_data-GLM_Binomial_model": lambda d: d["nyears"],
}
