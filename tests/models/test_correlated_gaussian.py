"""CorrelatedGaussianMean: its closed form is the multivariate normal of all the data, its sampler draws the prior
covariance (and the transposed-eigenvector sampler does not, which the Geweke test sees), and its Gibbs conditional
is the Gaussian of the tempered joint.

Its conditional against the joint, the Geweke test of its kernel (and of a conditional 10% too wide) and the
exact log-ML of one more instance are in test_conformance.py, with every other built-in model."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance_cases import EigenMoments
from helpers import gaussian_target
from scipy import stats

import bdmc
from bdmc.checks import geweke
from bdmc.models import CorrelatedGaussianMean, get_model

MODELS = [CorrelatedGaussianMean(), CorrelatedGaussianMean(n=3, dim=3, prior_mean=0.7, prior_std=2.0, condition=50.0,
                                                           noise_std=0.5, rotation_angle=math.pi / 4),
          CorrelatedGaussianMean(n=4, dim=1, prior_mean=-1.0)]


@dataclasses.dataclass(frozen=True)
class Transposed(CorrelatedGaussianMean):
    """The WebPPL bug: ``V^T`` where ``V`` belongs (the density is untouched)."""

    def sample_prior(self, key):
        eps = jax.random.normal(key, (self.dim,))
        scaled = jnp.sqrt(jnp.asarray(self.eigenvalues)) * eps
        return {"x": self.prior_mean + jnp.asarray(self.eigenvectors).T @ scaled}


@pytest.mark.parametrize("model", MODELS, ids=["random-rotation", "45-degrees", "1-d"])
def test_exact_log_marginal_is_the_multivariate_normal_of_all_the_data(model):
    # vec(y) = 1_n (x) x + noise: covariance 1 1^T (x) S + noise^2 I, computed by scipy without the eigenbasis.
    n, d = model.n, model.dim
    cov = np.kron(np.ones((n, n)), model.prior_cov) + model.noise_std**2 * np.eye(n * d)
    for seed in range(3):
        data, _ = bdmc.simulate(jax.random.key(seed), model)
        want = stats.multivariate_normal(np.full(n * d, model.prior_mean), cov).logpdf(np.asarray(data).ravel())
        np.testing.assert_allclose(float(model.exact_log_marginal(data)), want, rtol=1e-10)


@pytest.mark.parametrize("model", MODELS[:2], ids=["random-rotation", "45-degrees"])
def test_prior_covariance_has_the_stated_spectrum_and_log_prior_is_its_density(model):
    S = model.prior_cov
    V = model.eigenvectors
    np.testing.assert_allclose(V @ V.T, np.eye(model.dim), atol=1e-12)
    eig = np.linalg.eigvalsh(S)
    np.testing.assert_allclose(eig.max() / eig.min(), model.condition, rtol=1e-10)
    np.testing.assert_allclose(eig.max(), model.prior_std**2, rtol=1e-10)
    assert not np.allclose(S, np.diag(np.diag(S)), atol=0.1)  # rotated: strongly correlated coordinates
    x = {"x": jnp.linspace(-2.0, 3.0, model.dim)}
    want = stats.multivariate_normal(np.full(model.dim, model.prior_mean), S).logpdf(np.asarray(x["x"]))
    np.testing.assert_allclose(float(model.log_prior(x)), want, rtol=1e-12)


def _covariance_z(draws, S):
    """z-scores of every entry of the empirical second moment around zero mean against S."""
    n = draws.shape[0]
    emp = draws.T @ draws / n
    se = np.sqrt((np.outer(np.diag(S), np.diag(S)) + S**2) / n)  # Var(x_i x_j) for a centred Gaussian
    return (emp - S) / se


def test_prior_sampler_draws_the_prior_covariance_and_the_transposed_sampler_does_not():
    model = MODELS[1]
    keys = jax.random.split(jax.random.key(0), 20_000)
    good = np.asarray(jax.vmap(model.sample_prior)(keys)["x"]) - model.prior_mean
    bad = np.asarray(jax.vmap(Transposed(**dataclasses.asdict(model)).sample_prior)(keys)["x"]) - model.prior_mean
    assert np.abs(_covariance_z(good, model.prior_cov)).max() < 4.5  # ~Bonferroni over 6 distinct entries
    assert np.abs(_covariance_z(bad, model.prior_cov)).max() > 20
    # The transposed covariance has the same eigenvalues: every trace-level moment agrees.
    np.testing.assert_allclose(np.trace(bad.T @ bad / bad.shape[0]), np.trace(model.prior_cov), rtol=0.03)


def test_tempered_conditional_is_the_gaussian_of_the_joint():
    # Mean and covariance from the Hessian of the model's own log f(.; lam), independent of the Gibbs code.
    model = MODELS[1]
    data, latent = bdmc.simulate(jax.random.key(2), model)
    for lam in (1.0, 0.3, jnp.linspace(0.0, 1.0, model.n)):
        mean, cov, _ = gaussian_target(model, data, lam, latent)
        got_mean, precision = model._x_conditional(data, lam)
        V = model.eigenvectors
        np.testing.assert_allclose(np.asarray(got_mean), mean, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose((V / np.asarray(precision)) @ V.T, cov, rtol=1e-9, atol=1e-12)


GEWEKE_MODEL = CorrelatedGaussianMean(n=5, dim=3, prior_std=2.0, condition=100.0, noise_std=1.0,
                                      rotation_angle=math.pi / 4)
GEWEKE_KW = dict(num_samples=20_000, num_steps=10, statistics=EigenMoments(GEWEKE_MODEL))
GOOD_KERNEL = GEWEKE_MODEL.default_kernel()


def test_geweke_sees_the_transposed_sampler():
    # Forward draws come from the transposed prior, successive-conditional chains drift towards the right one.
    model = GEWEKE_MODEL
    buggy = Transposed(**dataclasses.asdict(model))
    bad = geweke(jax.random.key(3), buggy, GOOD_KERNEL, lam=1.0, **GEWEKE_KW)
    assert not bad.passed, bad.worst


def test_registry_and_validation():
    assert isinstance(get_model("correlated-gaussian", dim=2), CorrelatedGaussianMean)
    with pytest.raises(bdmc.BDMCError, match="condition"):
        CorrelatedGaussianMean(condition=0.5)
    with pytest.raises(bdmc.DataError, match=r"shape \(10, 4\)"):
        bdmc.forward_ais(jax.random.key(0), CorrelatedGaussianMean(), np.zeros((10, 3)), num_steps=2, num_runs=2,
                         progress=False)
