"""The table behind tests/models/test_conformance.py and test_conformance_geweke.py: every built-in model, a tiny
instance of it, what it declares it can do, and the independent ground truth and Geweke settings the suite checks it
against.

Adding a model to ``bdmc.models.REGISTRY`` without a row here fails ``test_every_built_in_model_has_a_row``; adding
or removing a capability method fails ``test_capabilities_match_the_table`` until the row says so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from helpers import BrokenMH
from scipy import stats as st
from scipy.special import betaln, gammaln, logsumexp

from bdmc.kernels import GibbsSweep
from bdmc.models import (
    BinaryAttributes,
    BinaryAttributesHyper,
    Clustering,
    ClusteringHyper,
    CorrelatedGaussianMean,
    FiniteMixture,
    GaussianMean,
    LinearRegression,
    LowRank,
    LowRankHyper,
    NIWMixture,
)

# Capability names as bdmc.contracts.CAPABILITIES spells them.
COLLAPSED, EXACT, GIBBS, KERNEL, TEMPERED = ("collapsed density", "exact evidence", "Gibbs conditionals",
                                             "own kernel", "tempered data")
CASE_PROPOSAL, VB, SYMMETRY, BIC, BLOCKS = ("case proposal", "VB family", "label symmetry", "BIC",
                                            "Gaussian prior blocks")
CONSTRAINED, DATA_CHECK, INDEXED = "constrained moves", "data check", "indexed conditionals"


# ----- independent ground truth (numpy/scipy only, no model code) ---------------------------------------------
#
# Each returns ``(log p(y), error bound)``: the bound is the reference's own numerical error (0 for closed forms
# and enumerations, whose only error is rounding; a quadrature's convergence estimate; 4 standard errors of a
# Monte Carlo estimate). The test adds the rounding allowance of the dtype.


def _gaussian_mean_reference(model, y):
    """Each of the dim columns of y is N(prior_mean 1, prior_std^2 1 1^T + noise_std^2 I) across the n cases."""
    cov = model.prior_std**2 * np.ones((model.n, model.n)) + model.noise_std**2 * np.eye(model.n)
    mvn = st.multivariate_normal(np.full(model.n, model.prior_mean), cov)
    return sum(mvn.logpdf(y[:, j]) for j in range(model.dim)), 0.0


def _correlated_gaussian_reference(model, y):
    """vec(y) = 1_n (x) x + noise: covariance 1 1^T (x) S + noise^2 I, S from the model's stated prior covariance."""
    n, d = model.n, model.dim
    cov = np.kron(np.ones((n, n)), model.prior_cov) + model.noise_std**2 * np.eye(n * d)
    return st.multivariate_normal(np.full(n * d, model.prior_mean), cov).logpdf(y.ravel()), 0.0


def _linear_regression_reference(model, y):
    """y | s2 ~ N(0, s2 (I + tau X X^T)) and s2 ~ IG(h0, k0): a multivariate t with 2 h0 degrees of freedom."""
    x = np.linspace(model.x_range[0], model.x_range[1], model.n)
    X = np.vander(x, model.degree + 1, increasing=True)
    shape = model.k0 / model.h0 * (np.eye(model.n) + model.tau * X @ X.T)
    return st.multivariate_t(np.zeros(model.n), shape, df=2 * model.h0).logpdf(y), 0.0


def _mixture_reference(model, y):
    """All k**n assignments enumerated; given z each column is N(0, sigma_n^2 I + sigma_theta^2 [z_i == z_j])."""
    log_w = np.asarray(model.log_weights, np.float64)
    terms = []
    for z in itertools.product(range(model.k), repeat=model.n):
        z = np.asarray(z)
        cov = model.sigma_noise**2 * np.eye(model.n) + model.sigma_theta**2 * (z[:, None] == z[None, :])
        mvn = st.multivariate_normal(np.zeros(model.n), cov)
        terms.append(log_w[z].sum() + sum(mvn.logpdf(y[:, j]) for j in range(y.shape[1])))
    return logsumexp(terms), 0.0


def _binary_reference(model, y):
    """All 2**(n k) matrices Z enumerated; given Z each column is N(0, sigma_a^2 Z Z^T + sigma_n^2 I)."""
    pi = np.broadcast_to(np.asarray(model.pi, float), (model.k,))
    terms = []
    for bits in itertools.product((0, 1), repeat=model.n * model.k):
        z = np.asarray(bits).reshape(model.n, model.k)
        log_pz = np.sum(np.where(z == 1, np.log(pi), np.log1p(-pi)))
        cov = model.sigma_a**2 * z @ z.T + model.sigma_n**2 * np.eye(model.n)
        mvn = st.multivariate_normal(np.zeros(model.n), cov)
        terms.append(log_pz + sum(mvn.logpdf(y[:, j]) for j in range(model.dim)))
    return logsumexp(terms), 0.0


def _binary_hyper_reference(model, y, h=0.1, log_range=(-12.0, 20.0)):
    """Z enumerated (beta-binomial prior), A via the eigenvalues of Z Z^T, both log variances by the trapezoid rule.

    The log-variance grid reaches far enough (to 30) that the inverse-gamma tails beyond it weigh below 1e-13; the
    error bound is the difference from a grid twice as coarse.
    """
    all_z = np.array(list(itertools.product((0, 1), repeat=model.n * model.k))).reshape(-1, model.n, model.k)
    m = all_z.sum(1)
    log_pz = np.sum(betaln(m + model.a, model.n - m + model.b) - betaln(model.a, model.b), axis=1)
    eig, vec = np.linalg.eigh(np.einsum("zik,zjk->zij", all_z, all_z).astype(float))
    eig = np.maximum(eig, 0.0)  # Z Z^T is positive semi-definite: no rounding below zero
    proj2 = np.sum(np.einsum("zir,id->zrd", vec, y) ** 2, -1)  # (Z, n): squared coordinates, summed over columns
    const = -0.5 * model.n * model.dim * np.log(2 * np.pi)

    def log_ig_of_log(u, shape, scale):  # log InvGamma(e^u) + u
        return shape * np.log(scale) - gammaln(shape) - shape * u - scale * np.exp(-u)

    def row(ua, un):  # ua scalar, un (m,)
        var = np.exp(ua) * eig[None] + np.exp(un)[:, None, None]  # (m, Z, n) eigenvalues of the column covariance
        log_y = const - 0.5 * (model.dim * np.log(var).sum(-1) + (proj2[None] / var).sum(-1))
        return (log_ig_of_log(ua, model.shape_a, model.scale_a) + log_ig_of_log(un, model.shape_n, model.scale_n)
                + logsumexp(log_pz + log_y, axis=-1))

    def trapezoid(h):
        grid = np.linspace(*log_range, round((log_range[1] - log_range[0]) / h) + 1)
        return logsumexp([row(a, grid) for a in grid]) + 2 * np.log(h)

    fine = trapezoid(h)
    return fine, abs(fine - trapezoid(2 * h))


def _low_rank_reference(model, y):
    """k = 1: y_i ~ N(0, sigma_n^2 I + sigma_u^2 v v^T) given the row v of V; v integrated by the trapezoid rule.

    Determinant and inverse by the matrix determinant lemma and Sherman-Morrison; the error bound is the
    difference from a grid with half the points per axis.
    """
    assert model.k == 1
    su2, sv2, sn2 = model.sigma_u**2, model.sigma_v**2, model.sigma_n**2

    def trapezoid(points):
        axis = np.linspace(-12 * model.sigma_v, 12 * model.sigma_v, points)
        v = np.stack(np.meshgrid(*[axis] * model.d, indexing="ij"), -1).reshape(-1, model.d)
        c = sn2 + su2 * np.sum(v**2, -1)  # sn2 + su2 |v|^2
        proj = v @ y.T  # (grid, n): v . y_i
        quad = np.sum(y**2) / sn2 - su2 * np.sum(proj**2, -1) / (sn2 * c)
        logdet = model.n * ((model.d - 1) * np.log(sn2) + np.log(c))
        loglik = -0.5 * (model.n * model.d * np.log(2 * np.pi) + logdet + quad)
        logprior = -0.5 * np.sum(v**2, -1) / sv2 - 0.5 * model.d * np.log(2 * np.pi * sv2)
        return logsumexp(loglik + logprior) + model.d * np.log(axis[1] - axis[0])

    fine = trapezoid(801)
    return fine, abs(fine - trapezoid(401))


def _low_rank_hyper_reference(model, y, num=2_000_000, seed=0):
    """k = d = 1: plain Monte Carlo over (v, sigma_u^2, sigma_v^2, sigma_n^2) from the prior, u integrated.

    y_i ~ N(0, sigma_u^2 v^2 + sigma_n^2) given them. Unbiased for p(y); the bound is 4 delta-method standard
    errors of the log of the mean.
    """
    assert model.k == 1 and model.d == 1
    rng = np.random.default_rng(seed)
    inv_gamma = lambda shape, scale: scale / rng.gamma(shape, size=num)  # noqa: E731
    su2, sv2, sn2 = (inv_gamma(model.shape_u, model.scale_u), inv_gamma(model.shape_v, model.scale_v),
                     inv_gamma(model.shape_n, model.scale_n))
    v = np.sqrt(sv2) * rng.standard_normal(num)
    var = su2 * v**2 + sn2
    logw = -0.5 * (model.n * np.log(2 * np.pi * var) + np.sum(y**2) / var)
    w = np.exp(logw - logw.max())
    stderr = w.std() / w.mean() / np.sqrt(num)
    return np.log(w.mean()) + logw.max(), 4 * stderr


# ----- Geweke settings ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiltedNoisePrior:
    """Forward simulation for a Geweke test at lam != 1 of a model whose noise variance is a latent.

    The tempered likelihood normalized in y, ``p(y_i | x)^lam_i / c_i(x)``, has ``c_i`` proportional to
    ``(sigma_n^2)^(D (1 - lam_i) / 2)`` for a D-dimensional Gaussian case, so the Geweke joint has ``f(x; lam)``
    as its conditional of x only when the forward prior is tilted by ``prod_i c_i``: for an inverse-gamma prior
    on sigma_n^2, the shape drops by ``q = D/2 sum_{lam_i > 0} (1 - lam_i)`` (cases with lam_i = 0 carry no data).
    """

    model: Any
    lam: tuple  # one weight per case (hashable)
    log_var: str  # the latent holding log sigma_n^2
    shape: str  # the model fields of its inverse-gamma prior
    scale: str
    case_dim: int

    def sample_prior(self, key):
        k1, k2 = jax.random.split(key)
        lam = np.asarray(self.lam)
        q = 0.5 * self.case_dim * float(np.sum(np.where(lam > 0, 1.0 - lam, 0.0)))
        shape = getattr(self.model, self.shape) - q
        assert shape > 1, "the tilted noise prior must stay proper with a finite mean"
        log_v = math.log(getattr(self.model, self.scale)) - jnp.log(jax.random.gamma(k2, shape))
        return {**self.model.sample_prior(k1), self.log_var: log_v}

    def sample_data_tempered(self, key, latent, lam):
        return self.model.sample_data_tempered(key, latent, lam)

    def log_likelihood(self, latent, data):
        return self.model.log_likelihood(latent, data)


@dataclass(frozen=True)
class Moments:
    """Geweke statistics: mean and mean square of chosen latent leaves, log mean square of the data, and the
    log-likelihood. Variance latents are already logs; for heavy-tailed priors (inverse gamma) only log scales
    have all their moments, so ``log_scales`` lists leaves compared by their value alone."""

    model: Any
    leaves: tuple = ()
    log_scales: tuple = ()
    products: tuple = ()  # (name, a, b): the mean square of latent[a] @ latent[b]
    loglik: bool = True

    def __call__(self, latent, data):
        dtype = jnp.result_type(float)
        out = {}
        for name in self.leaves:
            v = jnp.asarray(latent[name], dtype)
            out[f"mean {name}"] = jnp.mean(v)
            out[f"mean square {name}"] = jnp.mean(v**2)
        for name in self.log_scales:
            out[name] = jnp.asarray(latent[name], dtype)
        for name, a, b in self.products:
            out[f"mean square {name}"] = jnp.mean((latent[a] @ latent[b]) ** 2)
        out["log mean square data"] = jnp.log(jnp.mean(jnp.asarray(data, dtype) ** 2))
        if self.loglik:
            out["log-likelihood"] = jnp.sum(self.model.log_likelihood(latent, data))
        return out


@dataclass(frozen=True)
class Partition:
    """Geweke statistics of a discrete assignment ``z`` (n,) in k clusters: occupied clusters, co-clustered
    pairs, mean label; plus optional log-variance latents and the data's log mean square."""

    k: int
    log_scales: tuple = ()

    def __call__(self, latent, data):
        z = latent["z"]
        same = (z[:, None] == z[None, :]).astype(data.dtype)
        occupied = jnp.sum(jnp.any(jax.nn.one_hot(z, self.k) > 0, axis=0)).astype(data.dtype)
        out = {"occupied clusters": occupied, "co-clustered pairs": jnp.mean(same),
               "mean z": jnp.mean(z.astype(data.dtype)), "log mean square data": jnp.log(jnp.mean(data**2))}
        out.update({name: latent[name] for name in self.log_scales})
        return out


@dataclass(frozen=True)
class Bits:
    """Geweke statistics of a binary matrix ``Z`` (n, k): the on-rate and co-activation of neighbouring
    attributes, plus optional log-variance latents and the data's log mean square."""

    log_scales: tuple = ()

    def __call__(self, latent, data):
        z = latent["Z"].astype(data.dtype)
        out = {"mean Z": jnp.mean(z), "co-active": jnp.mean(z[:, :-1] * z[:, 1:]),
               "log mean square data": jnp.log(jnp.mean(data**2))}
        out.update({name: latent[name] for name in self.log_scales})
        return out


@dataclass(frozen=True)
class EigenMoments:
    """Moments of x in the prior's eigenbasis (the default statistics see only traces) and the log-likelihood."""

    model: Any

    def __call__(self, latent, data):
        z = jnp.asarray(self.model.eigenvectors).T @ (latent["x"] - self.model.prior_mean)
        out = {f"z{i}": z[i] for i in range(self.model.dim)}
        out.update({f"z{i}*z{j}": z[i] * z[j] for i in range(self.model.dim) for j in range(i, self.model.dim)})
        out["log-likelihood"] = jnp.sum(self.model.log_likelihood(latent, data))
        return out


@dataclass(frozen=True)
class Geweke:
    """How to run the Geweke test of a model's default kernel.

    ``model`` is an instance on which the test has power (the negative controls of the suite run on the same
    instances); ``lams`` maps an id to a weight (scalar or per case); ``tilt`` names the inverse-gamma noise
    prior ``(log_var, shape, scale, case_dim)`` to tilt at lam != 1 (see :class:`TiltedNoisePrior`);
    ``slow_lams`` are the ids run only with ``-m slow``.
    """

    model: Any
    num_samples: int
    num_steps: int
    statistics: Callable | None = None
    lams: tuple = ("0.3", "1", "per-case")
    slow_lams: tuple = ()
    tilt: tuple | None = None

    def forward(self, lam):
        """The model the forward draws come from at ``lam``."""
        lam = np.broadcast_to(np.asarray(lam, float), (self.model.n,))
        if self.tilt is None or np.all(lam == 1.0):
            return self.model
        log_var, shape, scale, case_dim = self.tilt
        return TiltedNoisePrior(self.model, tuple(lam.tolist()), log_var, shape, scale, case_dim)


def per_case_lam(n):
    """Per-case weights with exact zeros, exact ones and fractions: the data path's intermediate distributions."""
    return np.resize(np.array([0.0, 0.6, 1.0, 0.3, 1.0, 0.0]), n)


def lam_value(name, n):
    return {"0": 0.0, "0.3": 0.3, "1": 1.0, "per-case": per_case_lam(n)}[name]


# ----- the table ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One built-in model in the conformance suite.

    ``model`` is the tiny instance of the shape, capability and conditional checks; ``capabilities`` what it must
    declare, exactly; ``conditional_sites`` the indices of ``conditionals()`` checked against the joint (all when
    None: models with one conditional per site check a few, which share their code); ``any_latent`` draws the
    conditioning values of that check when prior draws would compile slowly; ``exact`` the instance and
    independent reference for ``exact_log_marginal`` and, for a model that integrates numerically, the keyword
    arguments of a finer run whose difference bounds the model's own error; ``geweke`` the kernel test.
    """

    name: str
    model: Any
    capabilities: frozenset
    n_cases: int
    conditional_sites: tuple | None = None
    any_latent: Callable | None = None
    exact: tuple | None = None  # (model, reference(model, y) -> (log p(y), error bound)[, refined settings])
    geweke: Geweke | None = None


def _clustering_hyper_latent(key, model):
    k1, k2 = jax.random.split(key)
    log_vars = jax.random.normal(k2, (2,))
    return {"z": jax.random.randint(k1, (model.n,), 0, model.k, jnp.int32), "log_sigma_theta2": log_vars[0],
            "log_sigma_noise2": log_vars[1]}


def _binary_hyper_latent(key, model):
    k_z, k_v = jax.random.split(key)
    log_v = 1.5 * jax.random.normal(k_v, (2,))
    return {"Z": jax.random.bernoulli(k_z, 0.5, (model.n, model.k)).astype(jnp.int32), "log_sigma_a2": log_v[0],
            "log_sigma_n2": log_v[1]}


def _low_rank_hyper_latent(key, model):
    ku, kv, ks = jax.random.split(key, 3)
    log_vars = jax.random.normal(ks, (3,))
    return {"U": jax.random.normal(ku, (model.n, model.k)), "V": jax.random.normal(kv, (model.k, model.d)),
            "log_sigma_u2": log_vars[0], "log_sigma_v2": log_vars[1], "log_sigma_n2": log_vars[2]}


@dataclass(frozen=True)
class AnyLatent:
    """``sample_latent`` for the conditional check: hashable, so the compiled check is reused across lams."""

    model: Any
    draw: Callable

    def __call__(self, key):
        return self.draw(key, self.model)


_CLUSTERING_HYPER = ClusteringHyper(n=6, dim=2, k=3)
_BINARY_HYPER = BinaryAttributesHyper(n=2, dim=3, k=2)
_LOW_RANK_HYPER = LowRankHyper(n=5, d=3, k=2)
_CORRELATED_GEWEKE = CorrelatedGaussianMean(n=5, dim=3, prior_std=2.0, condition=100.0, noise_std=1.0,
                                            rotation_angle=math.pi / 4)
_CLUSTERING_GEWEKE = Clustering(n=8, dim=100, k=3, sigma_theta=0.5, sigma_noise=1.0)
_CLUSTERING_HYPER_GEWEKE = ClusteringHyper(n=8, dim=3, k=3, noise_shape=11.0, noise_scale=10.0)
_LOW_RANK_GEWEKE = LowRank(n=8, d=3, k=2)
_LOW_RANK_HYPER_GEWEKE = LowRankHyper(n=8, d=3, k=2, shape_n=10.0)
_BINARY_GEWEKE = BinaryAttributes(n=4, dim=20, k=3, pi=0.5, sigma_a=1.0, sigma_n=1.0)
_BINARY_HYPER_GEWEKE = BinaryAttributesHyper(n=4, dim=20, k=3, shape_n=30.0, scale_n=30.0)
_LOW_RANK_VARIANCES = ("log_sigma_u2", "log_sigma_v2", "log_sigma_n2")

CASES = {c.name: c for c in [
    Case("gaussian-mean", GaussianMean(n=4, dim=2), frozenset({BIC, GIBBS, DATA_CHECK, EXACT, KERNEL, TEMPERED}), 4,
         exact=(GaussianMean(n=4, dim=2, prior_mean=0.5, prior_std=1.5, noise_std=0.7), _gaussian_mean_reference),
         geweke=Geweke(GaussianMean(n=5, dim=4), 4000, 20)),
    Case("correlated-gaussian",
         CorrelatedGaussianMean(n=3, dim=3, prior_mean=0.7, prior_std=2.0, condition=50.0, noise_std=0.5,
                                rotation_angle=math.pi / 4),
         frozenset({GIBBS, DATA_CHECK, EXACT, KERNEL, TEMPERED}), 3,
         exact=(CorrelatedGaussianMean(n=3, dim=3, prior_mean=0.7, prior_std=2.0, condition=50.0, noise_std=0.5),
                _correlated_gaussian_reference),
         geweke=Geweke(_CORRELATED_GEWEKE, 20_000, 10, EigenMoments(_CORRELATED_GEWEKE), lams=("0.3", "1"))),
    Case("linear-regression", LinearRegression(n=6, degree=2), frozenset({BIC, GIBBS, DATA_CHECK, EXACT, KERNEL}), 6,
         exact=(LinearRegression(n=7, degree=2, tau=0.5, h0=2.0, k0=1.5), _linear_regression_reference),
         geweke=Geweke(LinearRegression(n=12, degree=2), 4000, 20, lams=("1",))),
    Case("finite-mixture", FiniteMixture(n=4, k=2, dim=2),
         frozenset({BIC, GIBBS, CASE_PROPOSAL, DATA_CHECK, EXACT, KERNEL, TEMPERED}), 4,
         exact=(FiniteMixture(n=4, k=3, dim=2), _mixture_reference),
         geweke=Geweke(FiniteMixture(n=6, k=2, dim=2), 4000, 20)),
    Case("clustering", Clustering(n=6, dim=2, k=3, sigma_theta=1.0, sigma_noise=0.7),
         frozenset({BIC, GIBBS, VB, CASE_PROPOSAL, COLLAPSED, DATA_CHECK, EXACT, SYMMETRY, KERNEL, TEMPERED}), 6,
         conditional_sites=(0, 2),
         exact=(Clustering(n=6, dim=2, k=3, sigma_theta=1.0, sigma_noise=0.7), _mixture_reference),
         geweke=Geweke(_CLUSTERING_GEWEKE, 2000, 20, Partition(3), slow_lams=("0.3", "per-case"))),
    Case("clustering-hyper", _CLUSTERING_HYPER, frozenset({GIBBS, COLLAPSED, DATA_CHECK, KERNEL, TEMPERED}), 6,
         conditional_sites=(0, 2), any_latent=AnyLatent(_CLUSTERING_HYPER, _clustering_hyper_latent),
         geweke=Geweke(_CLUSTERING_HYPER_GEWEKE, 2000, 20, Partition(3, ("log_sigma_theta2", "log_sigma_noise2")),
                       slow_lams=("0.3", "per-case"), tilt=("log_sigma_noise2", "noise_shape", "noise_scale", 3))),
    Case("low-rank", LowRank(n=5, d=3, k=2),
         frozenset({BIC, BLOCKS, GIBBS, VB, CASE_PROPOSAL, CONSTRAINED, DATA_CHECK, EXACT, SYMMETRY, KERNEL,
                    TEMPERED}), 5,
         exact=(LowRank(n=6, d=2, k=1, sigma_u=1.2, sigma_v=0.9, sigma_n=0.8), _low_rank_reference),
         geweke=Geweke(_LOW_RANK_GEWEKE, 2000, 50,
                       Moments(_LOW_RANK_GEWEKE, ("U", "V"), products=(("UV", "U", "V"),)))),
    Case("low-rank-hyper", _LOW_RANK_HYPER, frozenset({GIBBS, CASE_PROPOSAL, DATA_CHECK, EXACT, KERNEL, TEMPERED}), 5,
         any_latent=AnyLatent(_LOW_RANK_HYPER, _low_rank_hyper_latent),
         exact=(LowRankHyper(n=6, d=1, k=1), _low_rank_hyper_reference),
         geweke=Geweke(_LOW_RANK_HYPER_GEWEKE, 1000, 40,
                       Moments(_LOW_RANK_HYPER_GEWEKE, ("U", "V"), _LOW_RANK_VARIANCES, (("UV", "U", "V"),)),
                       slow_lams=("0.3", "per-case"), tilt=("log_sigma_n2", "shape_n", "scale_n", 3))),
    Case("binary", BinaryAttributes(n=3, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.5),
         frozenset({BIC, GIBBS, INDEXED, VB, CASE_PROPOSAL, COLLAPSED, DATA_CHECK, EXACT, SYMMETRY, KERNEL,
                    TEMPERED}), 3,
         conditional_sites=(0, 5),
         exact=(BinaryAttributes(n=4, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.5), _binary_reference),
         geweke=Geweke(_BINARY_GEWEKE, 3000, 40, Bits(), slow_lams=("0.3", "per-case"))),
    Case("binary-hyper", _BINARY_HYPER, frozenset({GIBBS, INDEXED, COLLAPSED, DATA_CHECK, EXACT, KERNEL, TEMPERED}),
         2,
         conditional_sites=(0, 3), any_latent=AnyLatent(_BINARY_HYPER, _binary_hyper_latent),
         exact=(BinaryAttributesHyper(n=3, dim=3, k=2), _binary_hyper_reference, {"num_nodes": 320}),
         geweke=Geweke(_BINARY_HYPER_GEWEKE, 3000, 40, Bits(("log_sigma_a2", "log_sigma_n2")),
                       slow_lams=("0.3", "1", "per-case"), tilt=("log_sigma_n2", "shape_n", "scale_n", 20))),
    Case("niw-mixture", NIWMixture(n=5, dim=2, k=2), frozenset({COLLAPSED, DATA_CHECK, KERNEL}), 5,
         geweke=Geweke(NIWMixture(n=6, dim=2, k=3), 2000, 20, Partition(3), lams=("1",))),
]}


# ----- negative controls of the Geweke test: one broken kernel per kernel family ---------------------------------


@dataclass(frozen=True)
class WideCorrelated(CorrelatedGaussianMean):
    """The Gibbs conditional with 1.1 times its variance, in its draw and its log density alike."""

    def _x_conditional(self, data, lam):
        mean, precision = super()._x_conditional(data, lam)
        return mean, precision / 1.1


@dataclass(frozen=True)
class NoJacobianClusteringHyper(ClusteringHyper):
    """Slice-samples the log-variances against the inverse-gamma density of v, not of log v."""

    def _log_variance_prior(self, log_t, log_n):
        return super()._log_variance_prior(log_t, log_n) - log_t - log_n


@dataclass(frozen=True)
class WrongNoiseBinaryHyper(BinaryAttributesHyper):
    """Every computation of the kernel uses a noise variance 10% too large."""

    def fixed(self, latent):
        return super().fixed({**latent, "log_sigma_n2": latent["log_sigma_n2"] + np.log(1.1)})


def _low_rank_hyper_noise_off(model, factor=1.1):
    """LowRankHyper's Gibbs sweep with U | V and V | U using a noise variance ``factor`` too large."""

    def wrap(cond):
        def shifted(latent):
            return {**latent, "log_sigma_n2": latent["log_sigma_n2"] + math.log(factor)}

        def update(key, latent, data, lam):
            return {**cond.update(key, shifted(latent), data, lam), "log_sigma_n2": latent["log_sigma_n2"]}

        return type(cond)(cond.name + " (noise +10%)", update, lambda latent, data, lam: cond.log_prob(
            shifted(latent), data, lam))

    conds = model.conditionals()
    return GibbsSweep(tuple(wrap(c) for c in conds[:2]) + tuple(conds[2:]))


def _fields(model):
    return {f.name: getattr(model, f.name) for f in fields(model)}


@dataclass(frozen=True)
class Control:
    """A broken kernel (or forward simulation) that the Geweke test of ``case`` at ``lam`` must reject.

    ``kernel()`` builds it (None: the correct kernel with ``untilted`` forward draws); ``shows_in`` lists the
    statistics expected to carry the failure; ``slow`` runs it only with ``-m slow``.
    """

    case: str
    family: str
    bug: str
    kernel: Callable | None
    lam: str = "1"
    shows_in: tuple = ()
    untilted: bool = False
    slow: bool = False


def _broken_mh():
    return BrokenMH(CASES["gaussian-mean"].geweke.model, scale=0.5)


CONTROLS = {c.case + ": " + c.bug: c for c in [
    # Power of each, measured at these settings, is in the comment; the threshold is about 3.7.
    Control("gaussian-mean", "Metropolis-Hastings", "acceptance ratio squared", _broken_mh,
            shows_in=("mean square ['mu']",)),
    Control("correlated-gaussian", "block Gibbs sweep", "conditional variance +10%",
            lambda: WideCorrelated(**_fields(_CORRELATED_GEWEKE)).default_kernel(), lam="0.3", slow=True),
    Control("low-rank", "block Gibbs sweep", "noise variance +10%",
            lambda: replace(_LOW_RANK_GEWEKE, sigma_n=_LOW_RANK_GEWEKE.sigma_n * math.sqrt(1.1)).default_kernel(),
            shows_in=("mean square UV", "mean square V", "mean square U", "log mean square data")),
    Control("low-rank-hyper", "block Gibbs sweep", "noise variance +10% in U, V",
            lambda: _low_rank_hyper_noise_off(_LOW_RANK_HYPER_GEWEKE), shows_in=("log_sigma_n2", "log-likelihood"),
            slow=True),
    Control("clustering", "collapsed site sweep", "noise variance +10%",
            lambda: replace(_CLUSTERING_GEWEKE, sigma_noise=_CLUSTERING_GEWEKE.sigma_noise * math.sqrt(1.1))
            .default_kernel(), shows_in=("co-clustered pairs", "occupied clusters")),
    Control("binary", "collapsed bit sweep", "noise variance +10%",
            lambda: replace(_BINARY_GEWEKE, sigma_n=_BINARY_GEWEKE.sigma_n * math.sqrt(1.1)).default_kernel(),
            slow=True),  # the same bug in clustering's collapsed sweep stays in the default suite
    Control("clustering-hyper", "slice sampling within Gibbs", "log-variance Jacobian missing",
            lambda: NoJacobianClusteringHyper(**_fields(_CLUSTERING_HYPER_GEWEKE)).default_kernel(),
            shows_in=("log_sigma_theta2", "log_sigma_noise2"), slow=True),
    Control("binary-hyper", "Metropolis-Hastings within Gibbs", "noise variance +10%",
            lambda: WrongNoiseBinaryHyper(**_fields(_BINARY_HYPER_GEWEKE)).default_kernel(), slow=True),
    Control("low-rank-hyper", "tilted forward simulation", "untilted noise prior at lam = 0.3", None, lam="0.3",
            untilted=True, slow=True),
    Control("binary-hyper", "tilted forward simulation", "untilted noise prior at lam = 0.3", None, lam="0.3",
            untilted=True, slow=True),
]}
