"""Matrix factorization in WebPPL: each term equals the NumPyro program's at the same latents, in both
representations; a wrong likelihood variance is caught; prior draws and simulated data have the model's law."""

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import dtype_tol, magnitude

from bdmc.realdata import factorization as fz
from bdmc.realdata.webppl_models import COLLAPSED_WEBPPL, webppl_factorization, webppl_latent

if shutil.which("node") is None:
    pytest.skip("the WebPPL adapter needs Node.js (`node` is not on the PATH)", allow_module_level=True)

SIZES = {"num_rows": 6, "num_cols": 4, "latent_dim": 2}  # small: the identities do not depend on the sizes


@pytest.fixture(scope="module")
def models():
    return {rep: (webppl_factorization(rep, **SIZES), fz.build(rep, "numpyro", **SIZES))
            for rep in fz.REPRESENTATIONS}


def _points(key, count=4):
    """Factors away from the prior's typical set too (scaled draws), and data that are not their own."""
    ku, kv, ky = jax.random.split(key, 3)
    N, D, K = SIZES["num_rows"], SIZES["num_cols"], SIZES["latent_dim"]
    scale = jnp.asarray([0.3, 1.0, 2.0, 3.0][:count])[:, None, None]
    U = scale * jax.random.normal(ku, (count, N, K))
    V = scale * jax.random.normal(kv, (count, K, D))
    Y = 2.0 * jax.random.normal(ky, (N, D))
    return np.asarray(U), np.asarray(V), {"Y": Y}


@pytest.mark.parametrize("rep", fz.REPRESENTATIONS)
def test_terms_equal_numpyros_at_the_same_latents(models, rep, key):
    wppl, npyro = models[rep]
    U, V, data = _points(key)
    for u, v in zip(U, V, strict=False):
        x = jnp.asarray(webppl_latent(rep, u, v), jnp.result_type(float))
        lat = fz.latent_from_factors("numpyro", rep, u, v)
        lat = jax.tree.map(lambda a: a.astype(jnp.result_type(float)), lat)
        prior_w, prior_n = float(wppl.log_prior(x)), float(npyro.log_prior(lat))
        terms_w = np.asarray(wppl.log_likelihood(x, data))
        terms_n = np.asarray(npyro.log_likelihood(lat, data))
        assert terms_w.shape == terms_n.shape == (SIZES["num_rows"],)
        tol = dtype_tol(magnitude(terms_n, prior_n))
        assert abs(prior_w - prior_n) < tol
        np.testing.assert_allclose(terms_w, terms_n, atol=tol, rtol=0)


def test_a_wrong_likelihood_variance_is_caught(key):
    # Negative control: the collapsed program with V^T V + 1.1 I differs from NumPyro's terms.
    import bdmc

    wrong = bdmc.ppl.from_webppl(COLLAPSED_WEBPPL.replace("idMatrix(D))", "T.mul(idMatrix(D), 1.1))"),
                                 {"N": 6, "D": 4, "K": 2, "Y": np.zeros((6, 4))}, observed="Y")
    npyro = fz.build("collapsed", "numpyro", **SIZES)
    _, V, data = _points(key, 1)
    x = jnp.asarray(webppl_latent("collapsed", None, V[0]), jnp.result_type(float))
    diff = np.asarray(wrong.log_likelihood(x, data)) - np.asarray(npyro.log_likelihood({"V": jnp.asarray(V[0])}, data))
    assert np.max(np.abs(diff)) > 1e-2


@pytest.mark.parametrize("rep", fz.REPRESENTATIONS)
def test_prior_draws_and_data_have_the_models_law(models, rep, key):
    # Standard normal factors; rows of Y with covariance V^T V + I (checked through E[y_ij^2] = |v_j|^2 + 1).
    wppl, _ = models[rep]
    keys = jax.random.split(key, 200)
    draws = np.asarray(jax.vmap(wppl.sample_prior)(keys), np.float64)
    n = draws.size
    assert abs(draws.mean()) < 4 / np.sqrt(n) and abs(draws.var() - 1) < 4 * np.sqrt(2 / n)
    x = draws[0]
    K, D = SIZES["latent_dim"], SIZES["num_cols"]
    V = x[-K * D:].reshape(K, D)
    Y = np.asarray(jax.vmap(lambda k: wppl.sample_data(k, jnp.asarray(x))["Y"])(jax.random.split(key, 300)),
                   np.float64)
    expected = (V**2).sum(0) + 1.0  # per column
    if rep == "uncollapsed":  # U is fixed by the latent: y_ij ~ N(u_i v_j, 1)
        U = x[:-K * D].reshape(SIZES["num_rows"], K)
        resid = Y - U @ V
        assert abs(resid.mean()) < 4 / np.sqrt(resid.size) and abs(resid.var() - 1) < 4 * np.sqrt(2 / resid.size)
    else:
        second = (Y**2).mean(axis=(0, 1))
        se = np.sqrt(2.0 / (Y.shape[0] * Y.shape[1])) * expected
        assert np.all(np.abs(second - expected) < 4 * se), (second, expected)
