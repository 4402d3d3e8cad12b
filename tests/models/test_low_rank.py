"""The low-rank factorization model (GG+G, BDMC paper Sec. 6): the row marginal and predictive, the data path's
switched-off rows, the quadrature of the exact log-ML, BDMC.

Its conditionals against the joint, the Geweke tests of both Gibbs kernels and the exact log-ML against
independent quadrature and Monte Carlo are in test_conformance.py, with every other built-in model."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as st

import bdmc
from bdmc.models import LowRank, LowRankHyper
from bdmc.models.low_rank import marginal_row_loglik

SMALL = LowRank(n=8, d=3, k=2)
TINY = LowRank(n=6, d=2, k=1)  # K * D = 2: V integrated on a grid
ROW_LAM = jnp.array([0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0, 0.0])  # some rows off, some on, some fractional
LAMS = {"0.3": 0.3, "1.0": 1.0, "per-row": ROW_LAM}


@pytest.fixture(scope="module")
def small_data():
    return bdmc.simulate(jax.random.key(11), SMALL)[0]


def test_marginal_row_loglik_matches_scipy():
    key_v, key_y = jax.random.split(jax.random.key(3))
    V = jax.random.normal(key_v, (3, 5))
    Y = 2.0 * jax.random.normal(key_y, (4, 5))
    su2, sn2 = 1.7, 0.6
    cov = su2 * np.asarray(V).T @ np.asarray(V) + sn2 * np.eye(5)
    want = st.multivariate_normal(np.zeros(5), cov).logpdf(np.asarray(Y))
    np.testing.assert_allclose(marginal_row_loglik(V, Y, su2, sn2), want, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("lam", list(LAMS))
def test_log_predictive_is_the_u_marginal(lam, small_data, key):
    # Independent route: p(y_i | V) = p(y_i | u, V) p(u) / p(u | y_i, V) for any u; the conditional of u_i
    # at weight 1 on row i is the posterior given y_i alone.
    latent = SMALL.sample_prior(key)
    su2, _, sn2 = SMALL.variances
    for i in (0, 2, 7):
        got = SMALL.log_predictive(latent, small_data, LAMS[lam], i)
        V = np.asarray(latent["V"])
        cov = su2 * V.T @ V + sn2 * np.eye(SMALL.d)
        want = st.multivariate_normal(np.zeros(SMALL.d), cov).logpdf(np.asarray(small_data[i]))
        assert float(got) == pytest.approx(want, abs=1e-10)
        onehot = jnp.zeros(SMALL.n).at[i].set(1.0)
        u_block = SMALL.conditionals()[0]
        joint = SMALL.log_prior(latent) + SMALL.log_likelihood(latent, small_data)[i]
        cond_all = u_block.log_prob(latent, small_data, onehot)  # sum over rows; rows != i are at the prior
        others = jnp.delete(jnp.arange(SMALL.n), i)
        prior_others = jnp.sum(-0.5 * latent["U"][others] ** 2 / su2 - 0.5 * jnp.log(2 * jnp.pi * su2))
        v_prior = jnp.sum(-0.5 * latent["V"] ** 2 - 0.5 * jnp.log(2 * jnp.pi))
        route = joint - v_prior - prior_others - (cond_all - prior_others)
        assert float(route) == pytest.approx(want, abs=1e-9)


def test_sample_data_tempered_zeroes_switched_off_rows(key):
    latent = SMALL.sample_prior(key)
    y = SMALL.sample_data_tempered(key, latent, ROW_LAM)
    assert np.all(np.asarray(y)[np.asarray(ROW_LAM) == 0] == 0.0)
    assert np.all(np.asarray(y)[np.asarray(ROW_LAM) > 0] != 0.0)


def test_lam_zero_rows_contribute_nothing(small_data, key):
    latent = SMALL.sample_prior(key)
    cut = SMALL.conditionals()[1].log_prob(latent, small_data, ROW_LAM)
    masked = small_data.at[np.asarray(ROW_LAM) == 0].set(1e6)  # those rows must not matter
    assert float(SMALL.conditionals()[1].log_prob(latent, masked, ROW_LAM)) == pytest.approx(float(cut))


@pytest.fixture(scope="module")
def tiny_problem():
    data, latent = bdmc.simulate(jax.random.key(7), TINY)
    return data, latent, float(TINY.exact_log_marginal(data))


def test_quadrature_is_converged(tiny_problem):
    data, _, exact = tiny_problem
    assert float(TINY.exact_log_marginal(data, num_points=401, half_width=8.0)) == pytest.approx(exact, abs=1e-9)


def test_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="k \\* d <= 2"):
        LowRank(n=5, d=3, k=1).exact_log_marginal(jnp.zeros((5, 3)))


def test_sandwich_brackets_and_converges_to_exact(tiny_problem, key):
    data, latent, exact = tiny_problem
    res = bdmc.sandwich(key, TINY, data, latent, steps=[5, 50, 2000], num_runs=64, progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    assert res.exact == pytest.approx(exact)
    fwd, rev = t.loc[(5, "forward")], t.loc[(5, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert res.table.groupby("num_steps").gap_single.first().loc[2000] < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(2000, direction)].value - exact) < 0.1


@pytest.mark.slow
def test_paper_size_forward_and_reverse_ais_agree():
    # The paper's instance size (N = 50, D = 25, K = 5): forward and reverse AIS with the sigmoidal schedule
    # must agree within 1 nat at the longest chains (BDMC paper, Sec. 6: the ground-truth criterion).
    model = LowRank()
    data, latent = bdmc.simulate(jax.random.key(2015), model)
    T = 16000
    k_fwd, k_rev = jax.random.split(jax.random.fold_in(jax.random.key(1), T))
    fwd = bdmc.forward_ais(k_fwd, model, data, num_steps=T, num_runs=16, progress=False)
    rev = bdmc.reverse_ais(k_rev, model, data, exact_latent=latent, num_steps=T, num_runs=16, progress=False)
    assert abs(rev.value - fwd.value) < 1.0
    assert rev.mean_single - fwd.mean_single < 1.0
    assert fwd.mean_single < rev.mean_single + 4 * math.hypot(fwd.stderr_single, rev.stderr_single)


# --- LowRankHyper: the variances integrated out with inverse-gamma priors ---------------------------------

HYPER_TINY = LowRankHyper(n=6, d=1, k=1)  # k * d = 1: V, log sigma_u^2, log sigma_n^2 on a 3-D grid


@pytest.fixture(scope="module")
def hyper_tiny_problem():
    data, latent = bdmc.simulate(jax.random.key(3), HYPER_TINY)
    return data, latent, float(HYPER_TINY.exact_log_marginal(data))


def test_hyper_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="k \\* d <= 1"):
        LowRankHyper(n=5, d=2, k=1).exact_log_marginal(jnp.zeros((5, 2)))


# -m slow: LowRankHyper's exact value and kernel keep default tests (test_conformance.py, test_conformance_geweke.py),
# LowRank's sandwich test_sandwich_brackets_and_converges_to_exact.
@pytest.mark.slow
def test_hyper_sandwich_brackets_and_converges_to_exact(hyper_tiny_problem, key):
    data, latent, exact = hyper_tiny_problem
    res = bdmc.sandwich(key, HYPER_TINY, data, latent, steps=[5, 2000], num_runs=64, progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(5, "forward")], t.loc[(5, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert res.table.groupby("num_steps").gap_single.first().loc[2000] < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(2000, direction)].value - exact) < 0.1
