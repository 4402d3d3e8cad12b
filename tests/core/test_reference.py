"""The path from a fitted Student-t reference to the whole posterior: bounds on log p(y) with no prior split."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import simulate_float64
from scipy import stats

import bdmc
from bdmc import BDMCError
from bdmc.core.reference import ReferencePath, reference_path
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=20, dim=3)
pytestmark = pytest.mark.float64


def test_the_reference_density_is_the_normalized_student_t_it_samples():
    mean = (0.5, -1.0, 2.0)
    tril = ((1.0, 0.0, 0.0), (0.3, 0.5, 0.0), (-0.2, 0.1, 2.0))
    path = ReferencePath(MODEL, mean, tril, df=4.0)
    scipy_t = stats.multivariate_t(loc=mean, shape=np.asarray(tril) @ np.asarray(tril).T, df=4.0)
    draws = jax.vmap(path.sample_prior)(jax.random.split(jax.random.key(0), 20_000))["mu"]
    ours = np.asarray(jax.vmap(lambda x: path.log_prior({"mu": x}))(draws[:50]))
    np.testing.assert_allclose(ours, scipy_t.logpdf(np.asarray(draws[:50])), rtol=1e-10)
    # The draws follow it: the mean and, for df = 4, the covariance shape * df / (df - 2).
    np.testing.assert_allclose(np.mean(draws, 0), mean, atol=0.08)
    np.testing.assert_allclose(np.cov(np.asarray(draws).T), scipy_t.shape * 2.0, rtol=0.15, atol=0.05)


def test_forward_and_reverse_ais_from_the_reference_sandwich_the_exact_evidence():
    data, latent = simulate_float64(jax.random.key(3), MODEL)
    exact = float(MODEL.exact_log_marginal(data))
    path = reference_path(jax.random.key(1), MODEL, data)
    kw = dict(num_steps=100, num_runs=32, progress=False)
    lower = bdmc.forward_ais(jax.random.key(4), path, data, **kw)
    upper = bdmc.reverse_ais(jax.random.key(5), path, data, exact_latent=latent, **kw)
    assert lower.certified(3.0) <= exact <= upper.certified(3.0)
    assert abs(lower.value - exact) < 4 * lower.stderr + 0.02
    assert upper.value > exact - 4 * upper.stderr - 0.02
    assert upper.value - lower.value < 0.1  # a Gaussian posterior: the reference is nearly it
    with pytest.raises(BDMCError, match="simulate data with the model itself"):
        bdmc.simulate(jax.random.key(0), path)


@pytest.mark.slow  # 14 s; the default suite keeps the path's exact-evidence test on a built-in model
def test_a_numpyro_program_runs_on_the_path_from_its_reference():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    def program(y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
        with numpyro.plate("n", 30):
            numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    y = 3.0 + 2.0 * np.random.default_rng(0).standard_normal(30)
    X = np.ones((30, 1))
    exact = bdmc.exact.regression_half_normal_scale_log_marginal(y, X, prior_sd=10.0, sigma_scale=5.0)
    model = bdmc.ppl.from_numpyro(program, observed="y")
    path = reference_path(jax.random.key(0), model, {"y": jnp.asarray(y)}, num_starts=3)
    est = bdmc.forward_ais(jax.random.key(1), path, {"y": jnp.asarray(y)}, num_steps=100, num_runs=32,
                           progress=False)
    assert abs(est.value - exact) < 4 * est.stderr + 0.05, (est.value, exact, est.stderr)
    assert math.isfinite(est.khat) and est.divergences is not None
