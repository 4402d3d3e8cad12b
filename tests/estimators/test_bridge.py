"""Bridge sampling from posterior draws against closed forms.

Exact posterior draws of two conjugate models (the Gaussian mean, the normal-inverse-gamma regression) give
estimates within a few stated errors of the exact ``log p(y)``; with the exact posterior as the proposal the
estimate is exact to rounding; the log-scale fixed point equals R's iteration done on the plain scale; over many
seeds the spread of the estimates matches the stated error, for independent and for autocorrelated draws; draws
from the wrong posterior give a wrong estimate (the closed-form tests can fail); bad inputs are named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import dtype_tol, simulate_float64
from scipy import stats
from scipy.special import gammaln

import bdmc
from bdmc import BDMCError
from bdmc.contracts import log_density
from bdmc.errors import DataError, NonFiniteLogWeightError, OptionError, OptionTypeError, RunError
from bdmc.estimators import bridge_sampling
from bdmc.estimators.bridge import BridgeDetails, bridge_fixed_point
from bdmc.models import Clustering, GaussianMean, LinearRegression

GAUSSIAN = GaussianMean(n=20, dim=3)
REGRESSION = LinearRegression()


def _problem(model, seed=1):
    data, _ = simulate_float64(jax.random.key(seed), model)
    return data, float(model.exact_log_marginal(data))


# --------------------------------------------------------------------- exact posteriors, in float64 NumPy


def _gaussian_posterior(model, data):
    """Mean and standard deviation of ``mu | y`` (the same in every coordinate)."""
    data = np.asarray(data, np.float64)
    precision = 1 / model.prior_std**2 + model.n / model.noise_std**2
    mean = (model.prior_mean / model.prior_std**2 + data.sum(axis=0) / model.noise_std**2) / precision
    return mean, 1 / math.sqrt(precision)


def _gaussian_draws(model, data, num, seed, *, shift=0.0):
    mean, sd = _gaussian_posterior(model, data)
    return {"mu": mean + shift + sd * np.random.default_rng(seed).normal(size=(num, model.dim))}


def _gaussian_log_posterior(model, data, mu):
    mean, sd = _gaussian_posterior(model, data)
    return np.sum(stats.norm.logpdf(mu, mean, sd), axis=-1)


def _regression_posterior(model, data):
    """``s2 | y ~ IG(shape, scale)`` and ``beta | s2, y ~ N(mean, s2 inv(A))``."""
    X, y = np.asarray(model.design, np.float64), np.asarray(data, np.float64)
    A = X.T @ X + np.eye(model.p) / model.tau
    mean = np.linalg.solve(A, X.T @ y)
    return A, mean, model.h0 + 0.5 * model.n, model.k0 + 0.5 * (y @ y - mean @ A @ mean)


def _regression_draws(model, data, num, seed, *, shift=0.0):
    A, mean, shape, scale = _regression_posterior(model, data)
    rng = np.random.default_rng(seed)
    s2 = scale / rng.gamma(shape, size=num)
    noise = np.linalg.solve(np.linalg.cholesky(A).T, rng.normal(size=(model.p, num))).T
    return {"beta": mean + shift + np.sqrt(s2)[:, None] * noise, "log_s2": np.log(s2)}


def _regression_log_posterior(model, data, draws):
    A, mean, shape, scale = _regression_posterior(model, data)
    ls2, beta = draws["log_s2"], draws["beta"]
    log_s2 = shape * np.log(scale) - gammaln(shape) - shape * ls2 - scale * np.exp(-ls2)  # density of log s2
    r = beta - mean
    quad = np.einsum("ni,ij,nj->n", r, A, r)
    log_beta = 0.5 * np.linalg.slogdet(A)[1] - 0.5 * model.p * (math.log(2 * math.pi) + ls2) - 0.5 * quad / np.exp(ls2)
    return log_s2 + log_beta


def _log_joint(model, data, draws):
    return np.asarray(jax.jit(jax.vmap(lambda x: log_density(model, x, data, 1.0)))(
        jax.tree.map(jnp.asarray, draws)), np.float64)


# --------------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("model,draw", [(GAUSSIAN, _gaussian_draws), (REGRESSION, _regression_draws)],
                         ids=["gaussian", "regression"])
def test_exact_draws_give_the_exact_log_marginal_within_its_stated_error(model, draw):
    data, exact = _problem(model)
    for seed in range(4):
        est = bridge_sampling(jax.random.key(seed), model, data, draws=draw(model, data, 2000, seed))
        assert abs(est.value - exact) < 4 * est.stderr, (seed, est.value, exact, est.stderr)
        assert 0 < est.stderr < 0.02  # a small error: a 4-sigma window that a wrong answer would miss
        assert est.bound is None and est.combine == "mean-log" and est.runs.shape == (1,)
        (result,) = est.details.results
        assert est.value == result.log_marginal and est.stderr == pytest.approx(result.stderr, rel=1e-12)
        assert result.num_posterior == 1000 and result.num_proposals == 1000 and result.iterations < 50


@pytest.mark.parametrize("model,draw", [(GAUSSIAN, _gaussian_draws), (REGRESSION, _regression_draws)],
                         ids=["gaussian", "regression"])
def test_draws_from_the_wrong_posterior_give_a_wrong_estimate(model, draw):
    # The negative control of the test above: the same checks fail when the draws are off by 0.3 in each mean.
    data, exact = _problem(model)
    est = bridge_sampling(jax.random.key(0), model, data, draws=draw(model, data, 2000, 0, shift=0.3))
    assert abs(est.value - exact) > 20 * est.stderr and abs(est.value - exact) > 0.3


@pytest.mark.parametrize("model,draw,log_posterior", [
    (GAUSSIAN, _gaussian_draws, lambda m, d, x: _gaussian_log_posterior(m, d, x["mu"])),
    (REGRESSION, _regression_draws, _regression_log_posterior)], ids=["gaussian", "regression"])
def test_the_exact_posterior_as_proposal_gives_the_exact_value(model, draw, log_posterior):
    # q / g = p(y) at every draw: the fixed point is reached at once and the estimate is exact to rounding.
    data, exact = _problem(model)
    posterior, proposals = draw(model, data, 500, 0), draw(model, data, 700, 1)
    result = bridge_fixed_point(_log_joint(model, data, posterior), log_posterior(model, data, posterior),
                                _log_joint(model, data, proposals), log_posterior(model, data, proposals))
    assert result.log_marginal == pytest.approx(exact, abs=dtype_tol(abs(exact), floor=1e-9))
    assert result.iterations <= 2 and result.relative_mse < dtype_tol(1.0, floor=1e-20)


def test_the_log_scale_fixed_point_is_the_plain_scale_iteration():
    # R's scheme on the plain scale (well-scaled numbers, so nothing overflows), against the log-scale one; and
    # log q shifted by 1,000 nats (which overflows the plain scale) shifts the log estimate by exactly that.
    rng = np.random.default_rng(5)
    post, prop = rng.normal(size=300), 0.2 + 1.5 * rng.normal(size=400)
    log_z = -0.7
    q = lambda x: log_z + stats.norm.logpdf(x)  # noqa: E731
    g = lambda x: stats.norm.logpdf(x, 0.2, 1.5)  # noqa: E731
    l1, l2 = np.exp(q(post) - g(post)), np.exp(q(prop) - g(prop))
    n1, n2 = post.size, prop.size
    s1, s2 = n1 / (n1 + n2), n2 / (n1 + n2)
    r = 0.5
    for _ in range(1000):
        r_new = (n1 / n2) * np.sum(l2 / (s1 * l2 + s2 * r)) / np.sum(1 / (s1 * l1 + s2 * r))
        if abs((r_new - r) / r_new) < 1e-13:
            break
        r = r_new
    result = bridge_fixed_point(q(post), g(post), q(prop), g(prop), tol=1e-13)
    assert result.log_marginal == pytest.approx(math.log(r_new), abs=1e-11)
    assert abs(result.log_marginal - log_z) < 4 * result.stderr
    shifted = bridge_fixed_point(q(post) + 1000, g(post), q(prop) + 1000, g(prop), tol=1e-13)
    assert shifted.log_marginal - 1000 == pytest.approx(result.log_marginal, abs=1e-9)
    assert shifted.relative_mse == pytest.approx(result.relative_mse, rel=1e-6)


def test_proposal_draws_outside_the_support_count_as_zero_density():
    rng = np.random.default_rng(2)
    post, prop = rng.normal(size=300), rng.normal(size=300)
    q = lambda x: np.where(x < 2.5, stats.norm.logpdf(x), -np.inf)  # a truncated normal: Z = Phi(2.5)  # noqa: E731
    result = bridge_fixed_point(q(post[post < 2.5]), stats.norm.logpdf(post[post < 2.5]), q(prop),
                                stats.norm.logpdf(prop))
    assert abs(result.log_marginal - stats.norm.logcdf(2.5)) < 4 * result.stderr and result.stderr < 0.01


# -------------------------------------------------------------------------------- the error is honest


def _ar_draws(mean, sd, num, seeds, rho):
    """Chains of an AR(1) whose stationary law is the exact posterior N(mean, sd^2): autocorrelated exact draws."""
    rng = np.random.default_rng(seeds)
    x = np.empty((len(seeds), num, mean.size))
    x[:, 0] = mean + sd * rng.normal(size=(len(seeds), mean.size))
    for t in range(1, num):
        x[:, t] = mean + rho * (x[:, t - 1] - mean) + math.sqrt(1 - rho**2) * sd * rng.normal(size=x[:, t].shape)
    return x


@pytest.mark.parametrize("rho", [0.0, 0.9], ids=["independent", "autocorrelated"])
def test_the_spread_of_estimates_over_seeds_matches_the_stated_error(rho):
    # 60 data-and-proposal seeds of 200 draws: the root-mean-square stated error and the observed spread agree
    # within a factor of 1.5 (60 seeds estimate a standard deviation to about 10%). With rho = 0.9 the draws'
    # effective size is about 10 of 100, so an error that ignored the autocorrelation would be about 3x too small.
    data, exact = _problem(GAUSSIAN)
    mean, sd = _gaussian_posterior(GAUSSIAN, data)
    chains = _ar_draws(mean, sd, 200, list(range(1000, 1060)), rho)
    errors, stated = [], []
    for seed, chain in enumerate(chains):
        est = bridge_sampling(jax.random.key(seed), GAUSSIAN, data, draws={"mu": chain})
        errors.append(est.value - exact)
        stated.append(est.stderr)
    spread, rms = float(np.sqrt(np.mean(np.square(errors)))), float(np.sqrt(np.mean(np.square(stated))))
    assert 1 / 1.5 < spread / rms < 1.5, (spread, rms)
    if rho:
        assert rms > 0.1 and np.median(stated) > 3 * 0.021  # the iid case's error is about 0.021


def test_runs_share_the_posterior_draws_and_average_the_proposal_error(key):
    data, exact = _problem(GAUSSIAN)
    draws = _gaussian_draws(GAUSSIAN, data, 400, 3)
    est = bridge_sampling(key, GAUSSIAN, data, draws=draws, num_runs=4)
    assert est.runs.shape == (4,) and len(set(est.runs.tolist())) == 4 and est.value == np.mean(est.runs)
    details = est.details
    assert isinstance(details, BridgeDetails) and details.num_fit == 200
    post = np.mean([r.posterior_term for r in details.results])
    prop = np.mean([r.proposal_term for r in details.results])
    assert est.stderr == pytest.approx(math.sqrt(post + prop / 4), rel=1e-12)
    again = bridge_sampling(est.key, GAUSSIAN, data, draws=draws, num_runs=4)
    np.testing.assert_array_equal(again.runs, est.runs)
    assert again.compiled is False and est.settings["num_proposals"] == 200
    assert est.to_dict()["settings"]["method"] == "bridge_sampling"


# ---------------------------------------------------------------------------------------- bad inputs


def test_bad_draws_are_named(key):
    data, _ = _problem(GAUSSIAN)
    good = _gaussian_draws(GAUSSIAN, data, 100, 0)
    nan = {"mu": good["mu"].copy()}
    nan["mu"][71, 2] = np.nan
    with pytest.raises(DataError, match="draw 71 of .*mu.* not finite"):
        bridge_sampling(key, GAUSSIAN, data, draws=nan)
    with pytest.raises(DataError, match="at least 20 draws .* got 19"):
        bridge_sampling(key, GAUSSIAN, data, draws={"mu": good["mu"][:19]})
    with pytest.raises(DataError, match="structure"):
        bridge_sampling(key, GAUSSIAN, data, draws={"mu": good["mu"][:, :2]})
    with pytest.raises(DataError, match="structure"):
        bridge_sampling(key, GAUSSIAN, data, draws={"theta": good["mu"]})
    flat = {"mu": good["mu"].copy()}
    flat["mu"][:, 1] = 0.5  # no spread in one coordinate: no normal proposal fits
    with pytest.raises(DataError, match="singular"):
        bridge_sampling(key, GAUSSIAN, data, draws=flat)
    with pytest.raises(DataError, match="empty"):
        bridge_sampling(key, GAUSSIAN, data, draws={})


def test_bad_options_are_named(key):
    data, _ = _problem(GAUSSIAN)
    draws = _gaussian_draws(GAUSSIAN, data, 100, 0)
    with pytest.raises(OptionError, match="tol"):
        bridge_sampling(key, GAUSSIAN, data, draws=draws, tol=0.0)
    with pytest.raises(OptionTypeError, match="tol"):
        bridge_sampling(key, GAUSSIAN, data, draws=draws, tol="small")
    with pytest.raises(OptionError, match="num_proposals"):
        bridge_sampling(key, GAUSSIAN, data, draws=draws, num_proposals=1)
    with pytest.raises(BDMCError, match="num_runs"):
        bridge_sampling(key, GAUSSIAN, data, draws=draws, num_runs=0)
    with pytest.raises(RunError, match="did not converge in 1 iteration"):
        bridge_sampling(key, GAUSSIAN, data, draws=draws, max_iterations=1)
    with pytest.raises(OptionTypeError, match="continuous latent"):
        model = Clustering(n=6, k=2, dim=2)
        cdata, latent = bdmc.simulate(jax.random.key(0), model)
        bridge_sampling(key, model, cdata, draws=jax.tree.map(lambda a: jnp.stack([a] * 40), latent))


def test_bad_densities_are_named():
    ok = np.zeros(30)
    with pytest.raises(DataError, match="posterior draw 4"):
        bridge_fixed_point(np.where(np.arange(30) == 4, -np.inf, 0.0), ok, ok, ok)
    with pytest.raises(DataError, match="proposal draw 7"):
        bridge_fixed_point(ok, ok, np.where(np.arange(30) == 7, np.nan, 0.0), ok)
    with pytest.raises(RunError, match="none of the 30 proposal draws"):
        bridge_fixed_point(ok, ok, np.full(30, -np.inf), ok)
    with pytest.raises(DataError, match="one value per draw"):
        bridge_fixed_point(ok, ok[:20], ok, ok)


@dataclass(frozen=True)
class CutGaussianMean(GaussianMean):
    """The Gaussian mean model with its prior's density set to zero at ``|mu| > cut`` and NaN at ``mu_0 > nan_at``."""

    cut: float = 3.0
    nan_at: float = np.inf

    def log_prior(self, latent):
        mu = latent["mu"]
        value = jnp.where(jnp.all(jnp.abs(mu) < self.cut), super().log_prior(latent), -jnp.inf)
        return jnp.where(mu[0] > self.nan_at, jnp.nan, value)


def test_a_draw_where_the_model_has_zero_density_is_named(key):
    model = CutGaussianMean(n=20, dim=3)
    data, _ = _problem(model)
    draws = _gaussian_draws(model, data, 100, 0)
    draws["mu"][80, 1] = 5.0
    with pytest.raises(DataError, match=r"-inf \(log_prior = -inf\) at draw 80 .*positive, finite density"):
        bridge_sampling(key, model, data, draws=draws)


def test_a_nan_density_at_a_proposal_draw_is_a_bug_named(key):
    data, _ = _problem(GAUSSIAN)
    draws = _gaussian_draws(GAUSSIAN, data, 200, 0)
    mean, sd = _gaussian_posterior(GAUSSIAN, data)
    draws["mu"][:, 0] = np.minimum(draws["mu"][:, 0], mean[0] + 1.5 * sd)  # the draws stay clear of the NaN
    model = CutGaussianMean(n=20, dim=3, cut=np.inf, nan_at=float(mean[0] + 2.0 * sd))
    with pytest.raises(NonFiniteLogWeightError, match="log_prior = nan.* at proposal draw .* of run 0"):
        bridge_sampling(key, model, data, draws=draws, num_proposals=2000)
