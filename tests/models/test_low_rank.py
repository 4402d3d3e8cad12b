"""The low-rank factorization model (GG+G, BDMC paper Sec. 6): conditionals, Geweke, exact log-ML, BDMC."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as st

import bdmc
from bdmc.checks import conditional_consistency, geweke
from bdmc.kernels import Conditional, GibbsSweep
from bdmc.models.low_rank import VARIANCE_NAMES, LowRank, LowRankHyper, marginal_row_loglik

SMALL = LowRank(n=8, d=3, k=2)
TINY = LowRank(n=6, d=2, k=1)  # K * D = 2: V integrated on a grid
ROW_LAM = jnp.array([0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0, 0.0])  # some rows off, some on, some fractional
LAMS = {"0.3": 0.3, "1.0": 1.0, "per-row": ROW_LAM}


def _broken(model, factor=1.1):
    """The same model with its noise variance ``factor`` times too large (a negative control)."""
    return LowRank(n=model.n, d=model.d, k=model.k, sigma_u=model.sigma_u, sigma_v=model.sigma_v,
                   sigma_n=model.sigma_n * math.sqrt(factor))


def _lowrank_stats(model):
    """Geweke statistics: second moments of U, V and of the low-rank signal U V, the data, the log-likelihood."""

    def stats(latent, data):
        return {
            "mean U": jnp.mean(latent["U"]),
            "mean square U": jnp.mean(latent["U"] ** 2),
            "mean square V": jnp.mean(latent["V"] ** 2),
            "mean square UV": jnp.mean((latent["U"] @ latent["V"]) ** 2),
            "mean square data": jnp.mean(data**2),
            "log-likelihood": jnp.sum(model.log_likelihood(latent, data)),
        }

    return stats


@pytest.fixture(scope="module")
def small_data():
    return bdmc.simulate(jax.random.key(11), SMALL)[0]


@pytest.mark.parametrize("lam", list(LAMS))
@pytest.mark.parametrize("block", [0, 1])
def test_conditionals_match_joint(lam, block, small_data, key):
    cond = SMALL.conditionals()[block]
    res = conditional_consistency(key, SMALL, cond, small_data, lam=LAMS[lam])
    assert res.passed, (cond.name, res.worst)


@pytest.mark.parametrize("block", [0, 1])
def test_wrong_noise_variance_conditional_fails(block, small_data, key):
    # A conditional that believes the noise variance is 10% larger violates the identity by far more than rounding.
    cond = _broken(SMALL).conditionals()[block]
    res = conditional_consistency(key, SMALL, cond, small_data, lam=1.0)
    assert not res.passed and res.worst > 1e-3


# One statistics object (a fresh closure per call would defeat the Geweke program cache): the scalar-lam runs
# share one compiled simulation, lam being traced.
SMALL_STATS = _lowrank_stats(SMALL)


@pytest.mark.parametrize("lam", list(LAMS))
def test_geweke_gibbs(lam, key):
    res = geweke(key, SMALL, SMALL.default_kernel(), lam=LAMS[lam], num_samples=2000, num_steps=50,
                 statistics=SMALL_STATS)
    assert res.passed, res.worst


def test_geweke_fails_for_wrong_noise_variance(key):
    # Power: with the noise variance 10% too large the kernel shrinks U V a little each sweep; after 50
    # data/latent alternations the mean square of U V is several percent low. With 2000 chains per side its
    # z-score was 9-11 at 4000 chains in calibration runs, so about 7 here (sd 1) against a threshold of 3.6:
    # the failure is reliable, while the correct kernel stays below 2.5 at the same settings.
    res = geweke(key, SMALL, _broken(SMALL).default_kernel(), lam=1.0, num_samples=2000, num_steps=50,
                 statistics=SMALL_STATS)
    assert not res.passed
    assert res.worst[0] in ("mean square UV", "mean square V", "mean square data", "mean square U")


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


def test_quadrature_matches_prior_monte_carlo(tiny_problem):
    # Plain Monte Carlo over V from the prior (U still integrated analytically): unbiased for p(Y).
    data, _, exact = tiny_problem
    V = jax.random.normal(jax.random.key(5), (2_000_000, TINY.k, TINY.d)) * TINY.sigma_v
    logw = np.asarray(jax.jit(jax.vmap(lambda v: TINY.log_marginal_given_v(v, data)))(V))
    w = np.exp(logw - logw.max())
    est = np.log(w.mean()) + logw.max()
    stderr = w.std() / w.mean() / np.sqrt(w.size)  # delta method
    assert stderr < 0.01
    assert abs(est - exact) < 4 * stderr


def test_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="k \\* d <= 2"):
        LowRank(n=5, d=3, k=1).exact_log_marginal(jnp.zeros((5, 3)))


def test_sandwich_brackets_and_converges_to_exact(tiny_problem, key):
    data, latent, exact = tiny_problem
    res = bdmc.sandwich(key, TINY, data, latent, steps=[5, 50, 2000], num_chains=64, progress=False)
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

HYPER = LowRankHyper(n=8, d=3, k=2)
HYPER_TINY = LowRankHyper(n=6, d=1, k=1)  # k * d = 1: V, log sigma_u^2, log sigma_n^2 on a 3-D grid
HYPER_GEWEKE_SHAPE_N = 10.0  # see test_hyper_geweke_gibbs


def _noise_off(model, factor=1.1):
    """The model's Gibbs blocks with U | V and V | U using a noise variance ``factor`` too large."""

    def shifted(latent):
        return {**latent, "log_sigma_n2": latent["log_sigma_n2"] + math.log(factor)}

    def wrap(cond):
        def update(key, latent, data, lam):
            return {**cond.update(key, shifted(latent), data, lam), "log_sigma_n2": latent["log_sigma_n2"]}

        def log_prob(latent, data, lam):
            return cond.log_prob(shifted(latent), data, lam)

        return Conditional(cond.name, update, log_prob)

    conds = model.conditionals()
    return tuple(wrap(c) for c in conds[:2]) + conds[2:]


def _any_hyper_latent(key):
    """Conditioning values for the identity check (any latent will do): cheaper to compile than the prior."""
    ku, kv, ks = jax.random.split(key, 3)
    latent = {"U": jax.random.normal(ku, (HYPER.n, HYPER.k)), "V": jax.random.normal(kv, (HYPER.k, HYPER.d))}
    return {**latent, **dict(zip(VARIANCE_NAMES, jax.random.normal(ks, (3,))))}


def _hyper_stats(model):
    base = _lowrank_stats(model)

    def stats(latent, data):
        return {**base(latent, data), **{name: latent[name] for name in VARIANCE_NAMES}}

    return stats


def _with_shape_n(model, shape_n):
    return dataclasses.replace(model, shape_n=shape_n)


@pytest.fixture(scope="module")
def hyper_data():
    return bdmc.simulate(jax.random.key(12), HYPER)[0]


@pytest.mark.parametrize(
    "lam", [pytest.param("0.3", marks=pytest.mark.slow), "1.0", pytest.param("per-row", marks=pytest.mark.slow)]
)
def test_hyper_conditionals_match_joint(lam, hyper_data, key):
    for cond in HYPER.conditionals():
        res = conditional_consistency(key, HYPER, cond, hyper_data, lam=LAMS[lam], sample_latent=_any_hyper_latent)
        assert res.passed, (cond.name, res.worst)


def test_hyper_wrong_noise_variance_conditional_fails(hyper_data, key):
    for cond in _noise_off(HYPER)[:2]:
        res = conditional_consistency(key, HYPER, cond, hyper_data, lam=1.0, sample_latent=_any_hyper_latent)
        assert not res.passed and res.worst > 1e-3, cond.name


@pytest.mark.parametrize(
    "lam", [pytest.param("0.3", marks=pytest.mark.slow), "1.0", pytest.param("per-row", marks=pytest.mark.slow)]
)
def test_hyper_geweke_gibbs(lam, key):
    # At lam != 1 the tempered likelihood normalized in y, p_lam(y | x) = p(y | x)^lam / Z_lam(sigma_n^2),
    # has Z_lam proportional to (sigma_n^2)^c with c = (d / 2) sum over switched-on rows of (1 - lam_i). The
    # Geweke joint p(x) p_lam(y | x) then has the wrong sigma_n^2 conditional for f(x; lam) unless the
    # forward prior of sigma_n^2 is tilted by (sigma_n^2)^-c: InvGamma(a - c, b) instead of InvGamma(a, b).
    lam_arr = np.broadcast_to(np.asarray(LAMS[lam]), (HYPER.n,))
    c = 0.5 * HYPER.d * np.sum(np.where(lam_arr > 0, 1.0 - lam_arr, 0.0))
    target = _with_shape_n(HYPER, HYPER_GEWEKE_SHAPE_N)
    forward = _with_shape_n(HYPER, HYPER_GEWEKE_SHAPE_N - c)
    res = geweke(key, forward, target.default_kernel(), lam=LAMS[lam], num_samples=1000, num_steps=40,
                 statistics=_hyper_stats(HYPER))
    assert res.passed, res.worst


def test_hyper_geweke_fails_for_wrong_noise_variance(key):
    # Power: U and V drawn with a noise variance 10% too large fit the data less closely, so the residual
    # sum of squares seen by the sigma_n^2 update grows and log sigma_n^2 and the log-likelihood drift; in
    # calibration runs their |z| was about 18 with 2000 chains per side (about 13 expected here, threshold
    # 3.7), while the correct kernel stayed below 2.
    res = geweke(key, HYPER, GibbsSweep(_noise_off(HYPER)), lam=1.0, num_samples=1000, num_steps=40,
                 statistics=_hyper_stats(HYPER))
    assert not res.passed
    assert res.worst[0] in ("log_sigma_n2", "log-likelihood")


@pytest.fixture(scope="module")
def hyper_tiny_problem():
    data, latent = bdmc.simulate(jax.random.key(3), HYPER_TINY)
    return data, latent, float(HYPER_TINY.exact_log_marginal(data))


@pytest.mark.slow
def test_hyper_quadrature_matches_prior_monte_carlo(hyper_tiny_problem):
    # Plain Monte Carlo over (V, variances) from the prior with U integrated analytically: unbiased for p(Y).
    data, _, exact = hyper_tiny_problem
    lat = jax.vmap(HYPER_TINY.sample_prior)(jax.random.split(jax.random.key(9), 2_000_000))
    loglik = jax.jit(jax.vmap(lambda V, lu, ln: jnp.sum(marginal_row_loglik(V, data, jnp.exp(lu), jnp.exp(ln)))))
    logw = np.asarray(loglik(lat["V"], lat["log_sigma_u2"], lat["log_sigma_n2"]))
    w = np.exp(logw - logw.max())
    est = np.log(w.mean()) + logw.max()
    stderr = w.std() / w.mean() / np.sqrt(w.size)
    assert stderr < 0.002
    assert abs(est - exact) < 4 * stderr


def test_hyper_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="k \\* d <= 1"):
        LowRankHyper(n=5, d=2, k=1).exact_log_marginal(jnp.zeros((5, 2)))


def test_hyper_sandwich_brackets_and_converges_to_exact(hyper_tiny_problem, key):
    data, latent, exact = hyper_tiny_problem
    res = bdmc.sandwich(key, HYPER_TINY, data, latent, steps=[5, 2000], num_chains=64, progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(5, "forward")], t.loc[(5, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert res.table.groupby("num_steps").gap_single.first().loc[2000] < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(2000, direction)].value - exact) < 0.1
