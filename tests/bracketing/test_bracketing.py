"""Bracketing log p(D) between variational bounds (Ji, Shen, West): families, bounds, MCSA, coordinate ascent."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st
from jax.scipy.special import digamma, gammaln, multigammaln

import bdmc
from bdmc.bracketing import (
    Categorical,
    Dirichlet,
    InverseGamma,
    InverseWishart,
    MeanField,
    MultivariateNormal,
    as_sample_dict,
    coordinate_ascent,
    fit_mean_field,
    log_ratios,
    lower_bound_values,
    mcsa_diagnostic,
    mcsa_run,
    pd_logdet,
    step_sizes,
    upper_bound_values,
)
from bdmc.models import LinearRegression

LOG_2PI = math.log(2 * math.pi)

FAMILIES = {
    "mvn": MultivariateNormal(jnp.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]]),
                              jnp.array([[[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 0.7]]] * 2)),
    "ig": InverseGamma(jnp.array([3.0, 7.5]), jnp.array([2.0, 11.0])),
    "iw": InverseWishart(jnp.array([6.0, 9.0]), jnp.array([[[2.0, 0.3], [0.3, 1.0]], [[1.0, -0.6], [-0.6, 3.0]]])),
    "dir": Dirichlet(jnp.array([[2.0, 3.0, 0.5], [10.0, 1.0, 4.0]])),
    "cat": Categorical(jnp.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.05, 0.05, 0.9]])),
}


def _draws(q, key, n):
    return jax.vmap(q.sample)(jax.random.split(key, n))


def _fit(q, x):
    if isinstance(q, Categorical):
        return Categorical.fit(x, num_classes=q.probs.shape[-1])
    return type(q).fit(x)


def _expected_stats(q):
    """E_q[T] = grad A(eta), per batch element."""
    grad = jax.grad(type(q).log_partition)
    for _ in q.batch_shape:
        grad = jax.vmap(grad)
    return grad(q.natural())


# ------------------------------------------------------------------------------------------------ families


@pytest.mark.parametrize("name", list(FAMILIES))
def test_log_prob_matches_scipy_and_exponential_family_form(name, key):
    q = FAMILIES[name]
    x = _draws(q, key, 5)
    ours = np.asarray(jax.vmap(q.log_prob)(x))
    ref = np.zeros(5)
    for i in range(5):
        for b in range(q.batch_shape[0]):
            xi = np.asarray(x[i][b])
            if name == "mvn":
                ref[i] += st.multivariate_normal(q.mean[b], q.cov[b]).logpdf(xi)
            elif name == "ig":
                ref[i] += st.invgamma(float(q.shape[b]), scale=float(q.scale[b])).logpdf(xi)
            elif name == "iw":
                ref[i] += st.invwishart(float(q.df[b]), np.asarray(q.scale[b])).logpdf(xi)
            elif name == "dir":
                ref[i] += st.dirichlet(np.asarray(q.alpha[b])).logpdf(xi)
            else:
                ref[i] += math.log(float(q.probs[b, int(xi)]))
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
    # eta . T - A(eta) + log h: the form MCSA differentiates must be the same density.
    per_batch = jax.vmap(type(q)._log_prob_via_natural)  # over the batch axis of draw and parameters
    via = jax.jit(jax.vmap(lambda xi: jnp.sum(per_batch(xi, *q._params()))))(x)
    np.testing.assert_allclose(ours, via, rtol=1e-9, atol=1e-9)
    # natural -> parameters round trip
    back = type(q).from_natural(q.natural())
    for a, b in zip(q._params(), back._params(), strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_moment_matching_matches_moments_exactly_and_recovers_parameters(name, key):
    q = FAMILIES[name]
    groups, per = 16, 2000
    x = _draws(q, key, groups * per)
    # Eq. (5): the fitted q's expected sufficient statistics equal the sample means (an exact identity).
    fitted = _fit(q, x)
    if name == "cat":
        sample_mean = jnp.mean(jax.nn.one_hot(x, 3), axis=0)
    else:
        stats = jax.vmap(lambda xi: jax.vmap(type(q).stats)(xi))(x)
        sample_mean = jnp.mean(stats, axis=0)
    np.testing.assert_allclose(_expected_stats(fitted), sample_mean, rtol=1e-7, atol=1e-9)
    # Recovery: fits on 16 independent groups scatter around the truth by their own standard error.
    fits = jax.jit(jax.vmap(lambda xs: _fit(q, xs)))(x.reshape((groups, per) + x.shape[1:]))
    for j, truth in enumerate(q._params()):
        vals = np.asarray(fits._params()[j])
        se = vals.std(axis=0, ddof=1) / math.sqrt(groups)
        dev = np.abs(vals.mean(axis=0) - np.asarray(truth))
        assert np.all(dev <= 4.5 * se + 1e-12), (name, j, dev.max(), se.max())


def test_moment_matching_negative_control_wrong_moments_gives_looser_upper_bound(key):
    """Moment matching minimizes U (Eq. 5): a q fitted to rescaled draws must give a larger U."""
    y = _regression_data(key)
    X = LinearRegression().design
    post = _regression_posterior(jax.random.fold_in(key, 1), y, X, 20000)
    lj = _reduced_log_joint(y, X)
    right = fit_mean_field({"s2": post["s2"]}, {"s2": "inverse_gamma"})
    wrong = fit_mean_field({"s2": 1.3 * post["s2"]}, {"s2": "inverse_gamma"})
    evals = {"s2": _regression_posterior(jax.random.fold_in(key, 2), y, X, 20000)["s2"]}
    d = log_ratios(lj, wrong, evals) - log_ratios(lj, right, evals)  # paired on the same draws
    assert float(jnp.mean(d)) > 4 * float(jnp.std(d) / jnp.sqrt(d.size))


# ---------------------------------------------------------------------------------- regression: exact ML

TAU, H0, K0 = 0.1, 1.0, 1.0


def _regression_data(key):
    X = LinearRegression().design
    return X @ jnp.array([0.2, 2.0, -2.0, 0.5]) + jnp.sqrt(10.0) * jax.random.normal(key, (20,))


def _regression_posterior(key, y, X, num):
    n, p = X.shape
    A = X.T @ X + jnp.eye(p) / TAU
    m = jnp.linalg.solve(A, X.T @ y)
    k1, k2 = jax.random.split(key)
    s2 = (K0 + 0.5 * (y @ y - m @ A @ m)) / jax.random.gamma(k1, H0 + 0.5 * n, (num,))
    beta = m + jnp.sqrt(s2)[:, None] * (jax.random.normal(k2, (num, p)) @ jnp.linalg.cholesky(jnp.linalg.inv(A)).T)
    return {"beta": beta, "s2": s2}


def _log_ig(s2, a, b):
    return a * jnp.log(b) - gammaln(a) - (a + 1) * jnp.log(s2) - b / s2


def _full_log_joint(y, X):
    n, p = X.shape
    return lambda th: (-0.5 * n * (LOG_2PI + jnp.log(th["s2"])) - 0.5 * jnp.sum((y - X @ th["beta"]) ** 2) / th["s2"]
                       - 0.5 * p * (LOG_2PI + math.log(TAU) + jnp.log(th["s2"]))
                       - 0.5 * th["beta"] @ th["beta"] / (TAU * th["s2"])
                       + _log_ig(th["s2"], H0, K0))


def _reduced_log_joint(y, X):
    n = X.shape[0]
    C = jnp.eye(n) + TAU * X @ X.T
    logdet, quad = jnp.linalg.slogdet(C)[1], y @ jnp.linalg.solve(C, y)
    return lambda th: (-0.5 * n * (LOG_2PI + jnp.log(th["s2"])) - 0.5 * logdet - 0.5 * quad / th["s2"]
                       + _log_ig(th["s2"], H0, K0))


def _cavi_updates(y, X):
    n, p = X.shape
    A = X.T @ X + jnp.eye(p) / TAU
    mu = jnp.linalg.solve(A, X.T @ y)

    def beta(q):
        return MultivariateNormal(mu, jnp.linalg.inv(A) * q["s2"].scale / q["s2"].shape)

    def s2(q):
        m, Om = q["beta"].mean, q["beta"].cov
        r = y - X @ m
        return InverseGamma(jnp.asarray(H0 + 0.5 * (n + p)),
                            K0 + 0.5 * (r @ r + jnp.trace(X.T @ X @ Om)) + 0.5 * (m @ m + jnp.trace(Om)) / TAU)

    return {"beta": beta, "s2": s2}


def _analytic_elbo(q, y, X):
    n, p = X.shape
    m, Om, a, b = q["beta"].mean, q["beta"].cov, q["s2"].shape, q["s2"].scale
    e_inv, e_log = a / b, jnp.log(b) - digamma(a)
    r = y - X @ m
    return (-0.5 * n * (LOG_2PI + e_log) - 0.5 * e_inv * (r @ r + jnp.trace(X.T @ X @ Om))
            - 0.5 * p * (LOG_2PI + jnp.log(TAU) + e_log) - 0.5 * e_inv * (m @ m + jnp.trace(Om)) / TAU
            + H0 * jnp.log(K0) - gammaln(H0) - (H0 + 1) * e_log - K0 * e_inv
            + 0.5 * (p * (1 + LOG_2PI) + pd_logdet(Om)) + a + jnp.log(b) + gammaln(a) - (1 + a) * digamma(a))


def _mean_se(v):
    v = np.asarray(v)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


@pytest.fixture(scope="module")
def regression():
    key = jax.random.key(7)
    X = LinearRegression().design
    y = _regression_data(key)
    ml = float(LinearRegression().exact_log_marginal(y))
    post = _regression_posterior(jax.random.fold_in(key, 1), y, X, 20000)
    return X, y, ml, post


def test_bounds_bracket_the_exact_regression_marginal_likelihood(regression, key):
    X, y, ml, post = regression
    full, red = _full_log_joint(y, X), _reduced_log_joint(y, X)
    u2, q_full = upper_bound_values(post, full, {"beta": "normal", "s2": "inverse_gamma"})
    u1, q_red = upper_bound_values({"s2": post["s2"]}, red, {"s2": "inverse_gamma"})
    l3 = lower_bound_values(key, q_full, full, num_draws=20000)
    l2 = lower_bound_values(jax.random.fold_in(key, 1), q_red, red, num_draws=20000)
    (U2, se_u2), (U1, se_u1), (L3, se_l3), (L2, se_l2) = map(_mean_se, (u2, u1, l3, l2))
    # The full context has a real KL gap on both sides: strict separation by many standard errors.
    assert U2 - ml > 4 * se_u2 and ml - L3 > 4 * se_l3
    # Reduced context: the IG family contains p(s2 | y), so both bounds sit at ML up to noise; never beyond.
    assert U1 - ml > -4 * se_u1 and ml - L2 > -4 * se_l2
    # Marginalizing beta tightens both sides.
    assert U2 - 4 * math.hypot(se_u1, se_u2) > U1 and L3 + 4 * math.hypot(se_l2, se_l3) < L2


def test_negative_controls_in_sample_upper_and_wrong_entropy_lower(regression, key):
    X, y, ml, post = regression
    red, full = _reduced_log_joint(y, X), _full_log_joint(y, X)
    # Moment matching is maximum likelihood: evaluated on its own fitting draws, Eq. (6) lands *below* log p(D)
    # when the family contains the posterior (log p(theta, D) - log p(theta | D) = log p(D) for every theta).
    same, _ = upper_bound_values({"s2": post["s2"]}, red, {"s2": "inverse_gamma"}, fit="same")
    assert float(jnp.mean(same)) < ml
    cross, _ = upper_bound_values({"s2": post["s2"]}, red, {"s2": "inverse_gamma"}, fit="crossfit")
    assert float(jnp.mean(cross)) > float(jnp.mean(same))
    # A lower bound whose log q belongs to a different (wider) q than the one drawn from overstates the entropy
    # by KL(q || q_wide) and overshoots log p(D).
    q = fit_mean_field(post, {"beta": "normal", "s2": "inverse_gamma"})
    wide = q.replace(beta=MultivariateNormal(q["beta"].mean, 4.0 * q["beta"].cov))
    thetas = jax.vmap(q.sample)(jax.random.split(key, 20000))
    wrong = jax.vmap(lambda th: full(th) - wide.log_prob(th))(thetas)
    m, se = _mean_se(wrong)
    assert m - ml > 4 * se
    right = _mean_se(log_ratios(full, q, thetas))
    assert ml - right[0] > 4 * right[1]


# --------------------------------------------------------------------- other conjugate models: IW, Dirichlet


@pytest.mark.slow
def test_inverse_wishart_and_dirichlet_bounds_on_conjugate_models(key):
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    # x_i ~ N(0, Sigma), Sigma ~ IW(d, S): posterior IW(d + n, S + X^T X).
    n, p, d, S = 15, 2, 5.0, jnp.array([[1.0, 0.2], [0.2, 2.0]])
    x = jax.random.multivariate_normal(k1, jnp.zeros(p), jnp.array([[1.0, 0.5], [0.5, 1.5]]), (n,))
    Sn = S + x.T @ x
    ml = float(-0.5 * n * p * math.log(math.pi) + multigammaln((d + n) / 2, p) - multigammaln(d / 2, p)
               + 0.5 * d * jnp.linalg.slogdet(S)[1] - 0.5 * (d + n) * jnp.linalg.slogdet(Sn)[1])
    post_q = InverseWishart(jnp.asarray(d + n), Sn)
    prior = InverseWishart(jnp.asarray(d), S)
    lj = lambda th: prior.log_prob(th["Sigma"]) + jnp.sum(  # noqa: E731
        jax.vmap(lambda xi: MultivariateNormal._log_prob_event(xi, jnp.zeros(p), th["Sigma"]))(x))
    draws = {"Sigma": jax.vmap(post_q.sample)(jax.random.split(k2, 5000))}
    u, q = upper_bound_values(draws, lj, {"Sigma": "inverse_wishart"})
    lo = lower_bound_values(k3, q, lj, num_draws=5000)
    (U, su), (L, sl) = _mean_se(u), _mean_se(lo)
    assert U - ml > -4 * su and ml - L > -4 * sl and U - L < 0.01
    # pi ~ Dir(alpha), counts ~ Mult(pi): log p(D) = log B(alpha + c) - log B(alpha) (ordered sequence).
    alpha, c = jnp.array([1.0, 2.0, 0.5]), jnp.array([7.0, 1.0, 4.0])
    logB = lambda a: jnp.sum(gammaln(a)) - gammaln(jnp.sum(a))  # noqa: E731
    ml = float(logB(alpha + c) - logB(alpha))
    lj = lambda th: Dirichlet(alpha).log_prob(th["pi"]) + jnp.sum(c * jnp.log(th["pi"]))  # noqa: E731
    draws = {"pi": jax.random.dirichlet(k4, alpha + c, (20000,))}
    u, q = upper_bound_values(draws, lj, {"pi": "dirichlet"})
    lo = lower_bound_values(k5, q, lj, num_draws=20000)
    (U, su), (L, sl) = _mean_se(u), _mean_se(lo)
    assert U - ml > -4 * su and ml - L > -4 * sl and U - L < 0.01


def test_categorical_bounds_bracket_an_enumerated_collapsed_mixture(key):
    """theta = z of a 1-D two-component mixture with means and weights integrated out; log p(D) by enumeration."""
    x = jnp.array([-2.1, -1.7, -0.2, 0.4, 1.9, 2.3, 2.0])
    n, k, v, s2 = x.shape[0], 2, 0.5, 4.0  # noise variance v, mean prior N(0, s2), weights Dir(1, 1)

    def log_joint(th):
        z = th["z"]
        total = gammaln(2.0) - gammaln(n + 2.0)
        for j in range(k):
            mj = (z == j).astype(x.dtype)
            nj = mj.sum()
            r = x * mj
            quad = (jnp.sum(r**2) - s2 * jnp.sum(r) ** 2 / (v + nj * s2)) / v
            total += (gammaln(nj + 1.0) - 0.5 * nj * LOG_2PI - 0.5 * ((nj - 1) * jnp.log(v) + jnp.log(v + nj * s2))
                      - 0.5 * quad)
        return total

    configs = jnp.array(list(itertools.product(range(k), repeat=n)))
    lj_all = jax.vmap(lambda z: log_joint({"z": z}))(configs)
    ml = float(jax.nn.logsumexp(lj_all))
    k1, k2 = jax.random.split(key)
    draws = {"z": configs[jax.random.categorical(k1, lj_all, shape=(20000,))]}
    u, q = upper_bound_values(draws, log_joint, {"z": "categorical"})
    lo = lower_bound_values(k2, q, log_joint, num_draws=20000)
    (U, su), (L, sl) = _mean_se(u), _mean_se(lo)
    assert U - ml > 4 * su and ml - L > 4 * sl  # the label-symmetric posterior is far from a product
    # Exact U(gamma) for the fitted q by enumeration: Eq. (6) must estimate it.
    post = jnp.exp(lj_all - ml)
    exact_u = float(jnp.sum(post * (lj_all - jax.vmap(lambda z: q.log_prob({"z": z}))(configs))))
    assert exact_u >= ml  # Gibbs' inequality, exactly
    # The cross-fitted terms use q's fitted on half the draws, which are further from p than q: never lower.
    assert U - exact_u > -4 * su


# ---------------------------------------------------------------------------------- MCSA and coordinate ascent


def test_step_sizes_satisfy_robbins_monro_conditions():
    s = np.asarray(step_sizes(1000, step_size=0.5, decay=0.7))
    assert np.all(np.diff(s) < 0) and s[0] == pytest.approx(0.5 * 2**-0.7)
    with pytest.raises(bdmc.BDMCError, match="decay"):
        step_sizes(10, decay=0.5)
    with pytest.raises(bdmc.BDMCError, match="decay"):
        step_sizes(10, decay=1.2)


def test_mcsa_climbs_to_the_exact_posterior_when_the_family_holds_it(regression, key):
    # With beta integrated out, the posterior of s2 is inverse gamma: MCSA started at a quarter of its shape must
    # reach it (the test below climbs to the coordinate-ascent optimum with a normal factor too, but compiles for
    # ten seconds, so it is slow).
    X, y, _, _ = regression
    n, p = X.shape
    A = X.T @ X + jnp.eye(p) / TAU
    m = jnp.linalg.solve(A, X.T @ y)
    shape, scale = H0 + 0.5 * n, float(K0 + 0.5 * (y @ y - m @ A @ m))
    q0 = MeanField({"s2": InverseGamma(jnp.asarray(shape / 4), jnp.asarray(scale))})
    runs = jax.jit(jax.vmap(lambda k: mcsa_run(k, q0, _reduced_log_joint(y, X), num_iterations=500, num_draws=64)))(
        jax.random.split(key, 4))
    q_m, _, info = runs
    np.testing.assert_allclose(np.asarray(q_m["s2"].shape), shape, rtol=0.01)  # from 75% off
    np.testing.assert_allclose(np.asarray(q_m["s2"].scale), scale, rtol=0.01)
    assert all(mcsa_diagnostic(tr)["converged"] for tr in np.asarray(info.lower))


@pytest.mark.slow  # the program of the normal and inverse-gamma factors compiles for ten seconds (~50 on a busy worker)
def test_mcsa_converges_to_the_coordinate_ascent_optimum(regression, key):
    X, y, ml, post = regression
    full = _full_log_joint(y, X)
    q_u = fit_mean_field(post, {"beta": "normal", "s2": "inverse_gamma"})
    q_vb, changes = coordinate_ascent(q_u, _cavi_updates(y, X), num_iterations=200)
    assert float(changes[-1]) < 1e-10
    elbo_vb = float(_analytic_elbo(q_vb, y, X))
    assert elbo_vb < ml
    runs = jax.jit(jax.vmap(lambda k: mcsa_run(k, q_u, full, num_iterations=1500, num_draws=64)))(
        jax.random.split(key, 4))
    q_m, _, info = runs
    elbos = np.asarray(jax.vmap(lambda q: _analytic_elbo(q, y, X))(q_m))
    elbo_u = float(_analytic_elbo(q_u, y, X))
    # MCSA climbs from gamma_U to the VB optimum: the remaining deficit is a small fraction of the start's.
    assert np.all(elbos <= elbo_vb + 1e-9)
    assert np.all(elbo_vb - elbos < 0.02 * (elbo_vb - elbo_u))
    # Parameters: the IG shape must move from h0 + n/2 (gamma_U) to h0 + (n + p)/2 (VB).
    shapes = np.asarray(q_m["s2"].shape)
    assert abs(float(q_u["s2"].shape) - float(q_vb["s2"].shape)) > 1.5
    np.testing.assert_allclose(shapes, float(q_vb["s2"].shape), rtol=0.05)
    np.testing.assert_allclose(np.asarray(q_m["beta"].mean), np.broadcast_to(q_vb["beta"].mean, (4, 4)),
                               atol=0.05 * float(jnp.sqrt(jnp.max(jnp.diag(q_vb["beta"].cov)))))
    assert all(mcsa_diagnostic(tr)["converged"] for tr in np.asarray(info.lower))


def test_mcsa_diagnostic_flags_a_climbing_trace():
    rng = np.random.default_rng(0)
    flat = rng.normal(size=1000)
    climbing = flat + np.linspace(0, 20, 1000)  # 2 units between the last two windows
    assert mcsa_diagnostic(flat)["converged"] and not mcsa_diagnostic(climbing)["converged"]


# ---------------------------------------------------------------------------------------------- bracket()


def test_bracket_one_call_with_mcsa_and_marginalization(regression, key):
    X, y, ml, post = regression
    red = _reduced_log_joint(y, X)
    res = bdmc.bracket(post, red, family={"s2": "inverse_gamma"}, key=key, num_draws=4000, mcsa=True,
                       mcsa_options={"num_iterations": 200, "num_draws": 32})
    assert res.integrated_out == ("beta",)
    assert res.upper.bound == "upper" and res.lower.bound == "lower" and res.mcsa.bound == "lower"
    assert res.upper.value > ml - 4 * res.upper.stderr
    assert res.lower.value < ml + 4 * res.lower.stderr + 1e-9
    assert res.mcsa.value < ml + 4 * res.mcsa.stderr + 1e-9
    assert res.width == pytest.approx(res.upper.value - res.best_lower.value)
    t = res.table()
    assert list(t["bound"]) == ["U", "L (quasi-optimized)", "L (MCSA)"]
    with pytest.raises(bdmc.BDMCError, match="tau"):
        bdmc.bracket(post, red, family={"tau": "inverse_gamma"}, key=key)
    with pytest.raises(bdmc.BDMCError, match="unknown variational family"):
        bdmc.bracket(post, red, family={"s2": "gamma"}, key=key)


def test_samples_from_arrays_chains_and_inference_data():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 50, 2))
    out = as_sample_dict({"mu": a}, chain_axis=True)
    assert out["mu"].shape == (150, 2)
    np.testing.assert_array_equal(out["mu"][50:100], a[1])
    assert as_sample_dict(a[0])["theta"].shape == (50, 2)
    az = pytest.importorskip("arviz")
    idata = az.from_dict(posterior={"mu": a, "s2": rng.gamma(2.0, size=(3, 50))})
    out = as_sample_dict(idata)
    assert out["mu"].shape == (150, 2) and out["s2"].shape == (150,)
    np.testing.assert_array_equal(out["s2"][:50], np.asarray(idata.posterior["s2"].values[0]))
    with pytest.raises(bdmc.BDMCError, match="different numbers"):
        as_sample_dict({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(bdmc.BDMCError, match="non-finite"):
        as_sample_dict({"a": np.array([1.0, np.nan])})
