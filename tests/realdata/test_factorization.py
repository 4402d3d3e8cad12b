"""Collapsed and uncollapsed matrix factorization (bdmc.realdata.factorization) in NumPyro, PyMC and Stan.

The collapsed row likelihood is checked against the uncollapsed model through Bayes' identity (an exact
identity, not a numerical integral), the PPLs against each other at the same point, and the shared simulation
by whitening its rows with the true covariance (a KS test with a wrong-covariance negative control).
Tests that need the compiled Stan programs are marked slow.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc.kernels import HMC
from bdmc.realdata import factorization as fz

pytest.importorskip("numpyro")

N, D, K = 50, 25, 5


@pytest.fixture(scope="module")
def shared():
    return fz.simulate_shared(jax.random.key(11))


@pytest.fixture(scope="module")
def numpyro_models():
    return {rep: fz.build(rep, "numpyro") for rep in fz.REPRESENTATIONS}


def _random_point(seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, K)), 1.3 * rng.normal(size=(K, D))


def test_collapsed_row_likelihood_is_the_marginal_of_the_uncollapsed_row(shared, numpyro_models):
    """log p(y_i | V) = log p(y_i | u, V) + log p(u) - log p(u | y_i, V) for any u (Bayes' identity)."""
    U_any, V = _random_point(0)
    Y = np.asarray(shared.data["Y"])
    collapsed = np.asarray(numpyro_models["collapsed"].log_likelihood({"V": jnp.asarray(V)}, shared.data))
    conditional = np.asarray(numpyro_models["uncollapsed"].log_likelihood(
        {"U": jnp.asarray(U_any), "V": jnp.asarray(V)}, shared.data))
    precision = np.eye(K) + V @ V.T  # posterior of u_i given y_i and V: N(P^-1 V y_i, P^-1)
    cov = np.linalg.inv(precision)
    identity = np.array([
        conditional[i] + stats.multivariate_normal(np.zeros(K), np.eye(K)).logpdf(U_any[i])
        - stats.multivariate_normal(cov @ V @ Y[i], cov).logpdf(U_any[i]) for i in range(N)])
    assert collapsed.shape == (N,)
    np.testing.assert_allclose(collapsed, identity, rtol=1e-10, atol=1e-9)
    # and against an independent implementation of the Gaussian density itself
    direct = stats.multivariate_normal(np.zeros(D), V.T @ V + np.eye(D)).logpdf(Y)
    np.testing.assert_allclose(collapsed, direct, rtol=1e-10, atol=1e-9)
    # negative control: the noise variance 10% off changes the rows' terms far beyond the tolerance
    wrong = stats.multivariate_normal(np.zeros(D), V.T @ V + 1.1 * np.eye(D)).logpdf(Y)
    assert np.min(np.abs(wrong - collapsed)) > 1e-3


@pytest.mark.parametrize("representation", fz.REPRESENTATIONS)
def test_numpyro_and_pymc_agree_at_the_same_point(representation, shared):
    pytest.importorskip("pymc")
    U, V = _random_point(1)
    values = {}
    for ppl in ("numpyro", "pymc"):
        model = fz.build(representation, ppl)
        latent = fz.latent_from_factors(ppl, representation, U, V)
        values[ppl] = (float(model.log_prior(latent)), np.asarray(model.log_likelihood(latent, shared.data)))
    assert values["numpyro"][1].shape == (N,)
    np.testing.assert_allclose(values["pymc"][0], values["numpyro"][0], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(values["pymc"][1], values["numpyro"][1], rtol=1e-12, atol=1e-9)
    # the prior is the standard normal density of every latent entry (normalized)
    entries = np.concatenate(([U.ravel()] if representation == "uncollapsed" else []) + [V.ravel()])
    np.testing.assert_allclose(values["numpyro"][0], stats.norm.logpdf(entries).sum(), rtol=1e-12)


def _whitened(Y, V, noise_var=1.0):
    L = np.linalg.cholesky(V.T @ V + noise_var * np.eye(V.shape[1]))
    return np.linalg.solve(L, np.asarray(Y).T).ravel()


def test_shared_rows_have_covariance_vtv_plus_identity_given_v():
    """Whitened by chol(V^T V + I) the rows are iid N(0, 1); whitened with 0.7 I instead they are not."""
    good, bad = [], []
    for seed in range(8):
        s = fz.simulate_shared(jax.random.key(seed))
        V = np.asarray(s.V)
        good.append(_whitened(s.data["Y"], V))
        bad.append(_whitened(s.data["Y"], V, noise_var=0.7))
        np.testing.assert_allclose(np.asarray(s.data["Y"]).shape, (N, D))
    assert stats.kstest(np.concatenate(good), "norm").pvalue > 1e-3
    assert stats.kstest(np.concatenate(bad), "norm").pvalue < 1e-6


def test_collapsed_models_simulate_rows_with_the_collapsed_covariance(numpyro_models):
    """The collapsed model's own sample_data (U is not a latent there) draws rows from N(0, V^T V + I)."""
    model = numpyro_models["collapsed"]
    V = _random_point(2)[1]
    draws = jax.vmap(lambda k: model.sample_data(k, {"V": jnp.asarray(V)})["Y"])(
        jax.random.split(jax.random.key(3), 8))
    z = np.concatenate([_whitened(y, V) for y in np.asarray(draws)])
    assert stats.kstest(z, "norm").pvalue > 1e-3
    z_bad = np.concatenate([_whitened(y, V, noise_var=0.7) for y in np.asarray(draws)])
    assert stats.kstest(z_bad, "norm").pvalue < 1e-6


def test_stan_simulator_draws_from_the_collapsed_model():
    simulate = fz._stan_simulator("collapsed", N, D, K)
    V = _random_point(4)[1]
    rng = np.random.default_rng(5)
    z = np.concatenate([_whitened(simulate(rng, {"V": V})[1]["Y"], V) for _ in range(8)])
    assert stats.kstest(z, "norm").pvalue > 1e-3
    params, obs = simulate(rng)
    assert set(params) == {"V"} and params["V"].shape == (K, D) and obs["Y"].shape == (N, D)
    params, _ = fz._stan_simulator("uncollapsed", N, D, K)(rng)
    assert params["U"].shape == (N, K)


@pytest.mark.parametrize("ppl", fz.PPLS)
@pytest.mark.parametrize("representation", fz.REPRESENTATIONS)
def test_exact_sample_mapping_round_trips(ppl, representation, shared):
    latent = fz.latent_from_factors(ppl, representation, shared.U, shared.V)
    U, V = fz.factors_from_latent(ppl, representation, latent)
    np.testing.assert_array_equal(np.asarray(V), np.asarray(shared.V))
    if representation == "uncollapsed":
        np.testing.assert_array_equal(np.asarray(U), np.asarray(shared.U))
    else:
        assert U is None
    if ppl == "stan":  # Stan's layout is column-major, U before V
        assert latent.shape == ((N * K if representation == "uncollapsed" else 0) + K * D,)
        assert float(latent[-1]) == float(shared.V[K - 1, D - 1])
        assert float(latent[-2]) == float(shared.V[K - 2, D - 1])


def test_errors_name_the_culprit():
    with pytest.raises(bdmc.BDMCError, match="unknown ppl 'jags'"):
        fz.uncollapsed("jags")
    with pytest.raises(bdmc.BDMCError, match="unknown representation 'folded'"):
        fz.build("folded")
    with pytest.raises(bdmc.DataError, match="latent_dim must be a positive integer"):
        fz.collapsed(latent_dim=0)
    with pytest.raises(bdmc.BDMCError, match="needs U"):
        fz.latent_from_factors("numpyro", "uncollapsed", None, np.zeros((K, D)))


@pytest.mark.slow
def test_bread_bound_falls_with_more_steps(shared, numpyro_models):
    """B-hat at T = 300 lies far below B-hat at T = 10 (HMC on the uncollapsed NumPyro model)."""
    model = numpyro_models["uncollapsed"]
    exact = fz.latent_from_factors("numpyro", "uncollapsed", shared.U, shared.V)
    kernel = HMC(model, step_size=0.05, num_integration_steps=10)
    table = bdmc.bread(jax.random.key(7), model, shared.data, exact, steps=[10, 300], num_runs=8, kernel=kernel,
                       progress=False).table
    short, long = table.iloc[0], table.iloc[1]
    assert long["b_hat"] >= -4 * long["b_hat_stderr"]
    gap = short["b_hat"] - long["b_hat"]
    assert gap > 5 * np.hypot(short["b_hat_stderr"], long["b_hat_stderr"])
    assert not table["alarm"].any()


# ------------------------------------------------------------------------------------------ slow: Stan


@pytest.mark.slow
@pytest.mark.parametrize("representation", fz.REPRESENTATIONS)
def test_stan_agrees_with_numpyro_at_the_same_point(representation, shared, numpyro_models):
    pytest.importorskip("stan")
    stan_model = fz.build(representation, "stan")
    reference = numpyro_models[representation]
    for U, V in (_random_point(6), (np.asarray(shared.U), np.asarray(shared.V))):
        x = fz.latent_from_factors("stan", representation, U, V)
        params = {"U": U, "V": V} if representation == "uncollapsed" else {"V": V}
        np.testing.assert_allclose(stan_model.unconstrain(params), np.asarray(x), rtol=0, atol=1e-12)
        back = stan_model.constrain(x)
        for name, value in params.items():
            np.testing.assert_allclose(back[name], value, rtol=0, atol=1e-12)
        latent = fz.latent_from_factors("numpyro", representation, U, V)
        np.testing.assert_allclose(float(stan_model.log_prior(x)), float(reference.log_prior(latent)),
                                   rtol=1e-11, atol=1e-9)
        stan_lik = np.asarray(stan_model.log_likelihood(x, shared.data))
        assert stan_lik.shape == (1,)  # Stan reports one term
        np.testing.assert_allclose(stan_lik[0], float(jnp.sum(reference.log_likelihood(latent, shared.data))),
                                   rtol=1e-11, atol=1e-9)
