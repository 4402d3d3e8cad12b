"""The proposal family: a Gaussian mixture fitted to draws, drawn from and evaluated with Gaussian or Student-t
components, against SciPy's densities and the draws' own moments."""

import jax
import numpy as np
import pytest
from scipy import stats

from bdmc.errors import OptionError
from bdmc.intervals.mixture import Mixture, candidate_components, fit_mixture


def two_bumps():
    chols = np.stack([np.linalg.cholesky(np.array([[1.0, 0.3], [0.3, 0.5]])), 0.2 * np.eye(2)])
    return Mixture(log_weights=np.log([0.3, 0.7]), means=np.array([[0.0, 0.0], [4.0, -1.0]]), chols=chols)


@pytest.mark.parametrize("nu", [None, 5.0])
def test_log_pdf_is_the_weighted_sum_of_scipys_component_densities(nu):
    mix, scale = two_bumps(), 1.3
    x = np.random.default_rng(0).normal(size=(50, 2)) * 2 + 1
    want = np.zeros(50)
    for w, m, c in zip(np.exp(mix.log_weights), mix.means, mix.chols, strict=True):
        cov = scale * c @ c.T
        want += w * (stats.multivariate_normal(m, cov).pdf(x) if nu is None
                     else stats.multivariate_t(m, cov * (nu - 2) / nu, df=nu).pdf(x))
    np.testing.assert_allclose(mix.log_pdf(x, scale=scale, nu=nu), np.log(want), rtol=1e-10)


@pytest.mark.parametrize("nu", [None, 5.0])
def test_draws_have_the_mixtures_mean_and_covariance(nu):
    mix = two_bumps()
    x = mix.sample(jax.random.key(0), 200_000, scale=0.8, nu=nu)
    w = np.exp(mix.log_weights)
    mean = w @ mix.means
    cov = sum(wk * (0.8 * c @ c.T + np.outer(m - mean, m - mean)) for wk, m, c in zip(w, mix.means, mix.chols,
                                                                                         strict=True))
    np.testing.assert_allclose(x.mean(0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x, rowvar=False), cov, atol=0.05)


def test_a_fitted_mixture_recovers_separated_bumps_and_one_component_is_the_sample_moments():
    truth = two_bumps()
    x = truth.sample(jax.random.key(1), 20_000)
    two = fit_mixture(x, 2)
    order = np.argsort(two.means[:, 0])
    np.testing.assert_allclose(two.means[order], truth.means, atol=0.05)
    np.testing.assert_allclose(np.exp(two.log_weights[order]), [0.3, 0.7], atol=0.02)
    # Four components for two bumps: still the same density (KL(truth || fit) in nats, by fresh truth draws).
    fresh = truth.sample(jax.random.key(2), 20_000)
    assert np.mean(truth.log_pdf(fresh) - fit_mixture(x, 4).log_pdf(fresh)) < 0.01
    one = fit_mixture(x, 1)
    np.testing.assert_allclose(one.means[0], x.mean(0), atol=1e-12)
    np.testing.assert_allclose(one.chols[0] @ one.chols[0].T, np.cov(x, rowvar=False), rtol=1e-4)


def test_components_are_limited_by_the_draws_and_too_few_draws_are_refused():
    assert candidate_components(4000, 10) == (1, 4, 16)
    assert candidate_components(4000, 26) == (1, 4)
    assert candidate_components(800, 390) == (1,)
    with pytest.raises(OptionError, match="cannot fit"):
        fit_mixture(np.zeros((3, 2)), 4)
