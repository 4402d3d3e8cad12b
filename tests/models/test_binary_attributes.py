"""The binary attributes model (BG + G) with A collapsed: conditionals, Geweke, collapsed density, exact log-ML."""

import dataclasses
import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as st
from scipy.special import betaln, gammaln, logsumexp, roots_hermite

import bdmc
from bdmc.checks import conditional_consistency, geweke
from bdmc.models.binary_attributes import BinaryAttributes, BinaryAttributesHyper

TINY = BinaryAttributes(n=4, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.5)
PER_ROW_LAM = np.array([0.0, 0.7, 1.0, 0.0])  # some exact zeros, one 1, one fractional


def _problem(model, seed=1):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    return np.asarray(data), latent


def _log_prior_np(model, z):
    return float(np.sum(np.where(z == 1, np.log(model.pi), np.log1p(-model.pi))))


def _tempered_marginal_np(model, z, y, lam):
    """log INT p(A) prod_i N(y_i; z_i A, s^2)^lam_i dA by another route (scipy, dense covariance).

    For lam_i > 0, ``N(y; m, s^2)^lam = c(lam) N(y; m, s^2 / lam)`` with
    ``log c = D/2 [(1 - lam) log(2 pi s^2) - log lam]``; rows with lam = 0 drop out; A then integrates to a
    Gaussian in the remaining rows with covariance ``sigma_a^2 Z Z^T + diag(s^2 / lam)`` per column.
    """
    on = lam > 0
    if not on.any():
        return 0.0
    zs, ys, ls = z[on].astype(float), y[on], lam[on]
    s2 = model.sigma_n**2
    log_c = 0.5 * model.dim * np.sum((1 - ls) * np.log(2 * np.pi * s2) - np.log(ls))
    cov = model.sigma_a**2 * zs @ zs.T + np.diag(s2 / ls)
    mvn = st.multivariate_normal(np.zeros(len(ls)), cov)
    return log_c + sum(mvn.logpdf(ys[:, j]) for j in range(model.dim))


def _random_z(key, model):
    return np.asarray(model.sample_prior(key)["Z"])


# ------------------------------------------------------------------------------------------------------
# 3. the collapsed density


@pytest.mark.parametrize("lam", [0.3, 1.0, PER_ROW_LAM], ids=["0.3", "1", "per-row"])
def test_collapsed_density_matches_dense_gaussian_route(lam):
    data, _ = _problem(TINY)
    for s in range(5):
        z = _random_z(jax.random.key(100 + s), TINY)
        lam_rows = np.broadcast_to(lam, (TINY.n,)).astype(float)
        want = _log_prior_np(TINY, z) + _tempered_marginal_np(TINY, z, data, lam_rows)
        got = float(TINY.log_density({"Z": jnp.asarray(z)}, data, jnp.asarray(lam)))
        assert got == pytest.approx(want, abs=1e-9)


def test_collapsed_density_matches_numerical_integration_over_a():
    # Uncollapsed joint integrated over A by Gauss-Hermite quadrature (K = 2: one 2-d integral per column).
    model = BinaryAttributes(n=3, dim=2, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.7)
    data, _ = _problem(model, seed=3)
    lam = np.array([0.6, 0.0, 1.0])
    x, w = roots_hermite(80)
    a1, a2 = np.meshgrid(np.sqrt(2) * model.sigma_a * x, np.sqrt(2) * model.sigma_a * x, indexing="ij")
    log_w = np.log(np.outer(w, w) / np.pi)
    for s in range(4):
        z = _random_z(jax.random.key(200 + s), model)
        total = _log_prior_np(model, z)
        for j in range(model.dim):
            mean = z[:, 0, None, None] * a1 + z[:, 1, None, None] * a2  # (n, grid, grid)
            loglik = st.norm.logpdf(data[:, j, None, None], mean, model.sigma_n)
            total += logsumexp(log_w + np.sum(np.where(lam[:, None, None] == 0, 0.0, lam[:, None, None] * loglik), 0))
        got = float(model.log_density({"Z": jnp.asarray(z)}, data, jnp.asarray(lam)))
        assert got == pytest.approx(total, abs=1e-8)


def test_collapsed_density_is_normalized_at_zero_and_the_joint_at_one():
    data, _ = _problem(TINY)
    all_z = np.array(list(itertools.product((0, 1), repeat=TINY.n * TINY.k))).reshape(-1, TINY.n, TINY.k)
    at_zero = jax.vmap(lambda z: TINY.log_density({"Z": z}, data, 0.0))(jnp.asarray(all_z))
    priors = jax.vmap(lambda z: TINY.log_prior({"Z": z}))(jnp.asarray(all_z))
    np.testing.assert_array_equal(np.asarray(at_zero), np.asarray(priors))  # lam = 0 adds exactly nothing
    assert float(logsumexp(np.asarray(priors))) == pytest.approx(0.0, abs=1e-12)
    for z in all_z[::37]:
        joint = _log_prior_np(TINY, z) + _tempered_marginal_np(TINY, z, data, np.ones(TINY.n))
        assert float(TINY.log_density({"Z": jnp.asarray(z)}, data, 1.0)) == pytest.approx(joint, abs=1e-9)


def test_log_likelihood_is_the_chain_rule_of_the_collapsed_marginal():
    data, latent = _problem(TINY)
    terms = np.asarray(TINY.log_likelihood(latent, data))
    z = np.asarray(latent["Z"])
    for i in range(TINY.n):
        prefix = (np.arange(TINY.n) <= i).astype(float)
        before = (np.arange(TINY.n) < i).astype(float)
        want = _tempered_marginal_np(TINY, z, data, prefix) - _tempered_marginal_np(TINY, z, data, before)
        assert terms[i] == pytest.approx(want, abs=1e-9)


def test_sweep_rank_one_statistics_match_recomputation():
    model = BinaryAttributes(n=12, dim=5, k=4, pi=0.5, sigma_a=1.0, sigma_n=0.5)
    data, latent = _problem(model)
    lam = jnp.asarray(np.linspace(0.0, 1.0, model.n))
    z, carried = model.sweep(jax.random.key(0), latent["Z"], data, lam, return_stats=True)
    fresh = model.stats(z, data, lam)
    assert not np.array_equal(np.asarray(z), np.asarray(latent["Z"]))  # the sweep moved
    np.testing.assert_allclose(carried.minv, fresh.minv, atol=1e-12)
    np.testing.assert_allclose(carried.h, fresh.h, atol=1e-12)


# ------------------------------------------------------------------------------------------------------
# log predictive


def test_log_predictive_matches_brute_force_and_dense_gaussians():
    data, latent = _problem(TINY)
    z = np.asarray(latent["Z"])
    rows = np.array(list(itertools.product((0, 1), repeat=TINY.k)))
    # Fractional weights: ratio of collapsed marginals with row i switched on and off, z_i enumerated.
    lam = np.array([0.5, 1.0, 0.0, 0.8])
    for i in range(TINY.n):
        off = lam.copy()
        off[i] = 0.0
        on = off.copy()
        on[i] = 1.0
        terms = []
        for r in rows:
            zi = z.copy()
            zi[i] = r
            terms.append(_log_prior_np(TINY, r[None]) + _tempered_marginal_np(TINY, zi, data, on)
                         - _tempered_marginal_np(TINY, zi, data, off))
        got = float(TINY.log_predictive(latent, data, jnp.asarray(lam), i))
        assert got == pytest.approx(logsumexp(terms), abs=1e-9)
    # The largest default-size instance (2**10 rows of z_i) against the same identity via log_density.
    big = BinaryAttributes(n=6, dim=4, k=10)
    bdata, blatent = _problem(big)
    blam = jnp.asarray([1.0, 0.3, 0.0, 1.0, 0.0, 0.9])
    i = 2
    allrows = jnp.asarray(list(itertools.product((0, 1), repeat=big.k)), jnp.int32)
    on, off = blam.at[i].set(1.0), blam.at[i].set(0.0)

    def term(r):
        zi = blatent["Z"].at[i].set(r)
        log_p_row = jnp.sum(jnp.where(r == 1, big.log_pi, big.log_1m_pi))
        return big.log_density({"Z": zi}, bdata, on) - big.log_density({"Z": zi}, bdata, off) + log_p_row

    want = logsumexp(np.asarray(jax.vmap(term)(allrows)))
    # log_density includes log p(Z) on both sides (cancels); the prior of z_i is added explicitly.
    assert float(big.log_predictive(blatent, bdata, blam, i)) == pytest.approx(want, abs=1e-9)


# ------------------------------------------------------------------------------------------------------
# 1. conditionals against the joint


# Each check compiles anew, so the instance is the smallest with more than one row and more than one bit.
SMALL = BinaryAttributes(n=2, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.5)
CONSISTENCY_LAMS = {"0.3": 0.3, "1": 1.0, "per-row": np.array([0.0, 0.6])}
# Built once: the check compiles once per conditional object and lam shape (lam is traced), so the scalar-lam
# cases share their programs instead of compiling the same conditionals again.
SMALL_CONDITIONALS = SMALL.conditionals()


@pytest.mark.parametrize("lam", list(CONSISTENCY_LAMS), ids=list(CONSISTENCY_LAMS))
def test_every_bit_conditional_matches_the_joint(lam, key):
    data, _ = _problem(SMALL)
    lam = jnp.asarray(CONSISTENCY_LAMS[lam])
    for cond in SMALL_CONDITIONALS:
        res = conditional_consistency(key, SMALL, cond, data, lam=lam, num_triples=32)
        assert res.passed, (cond.name, res.worst)
    # Both values of a bit occur among the redraws, so the identity compares different states.
    cond = SMALL.site_conditional(1, 1)
    draws = jax.vmap(lambda k: cond.update(k, SMALL.sample_prior(k), data, lam)["Z"][1, 1])(
        jax.random.split(key, 64))
    assert 0 < int(jnp.sum(draws)) < 64


@pytest.mark.parametrize("field", ["sigma_n", "sigma_a"])
def test_conditional_with_a_variance_ten_percent_off_fails(field, key):
    data, _ = _problem(SMALL)
    wrong = dataclasses.replace(SMALL, **{field: getattr(SMALL, field) * np.sqrt(1.1)})
    res = conditional_consistency(key, SMALL, wrong.site_conditional(1, 0), data, lam=1.0, num_triples=32)
    assert not res.passed and res.worst > 1e-3


# ------------------------------------------------------------------------------------------------------
# 2. Geweke tests of the collapsed sweep

# N = 4 close to K = 3 and D = 20: with N >> K the data have N - K noise-only directions per column that
# pin the noise level whatever Z is, so a wrong noise variance barely moves Z; with N ~ K the whole
# covariance sigma_a^2 Z Z^T + sigma_n^2 I is explained through Z and a 10% noise error shifts the bits.
GEWEKE_MODEL = BinaryAttributes(n=4, dim=20, k=3, pi=0.5, sigma_a=1.0, sigma_n=1.0)
GEWEKE_KW = dict(num_samples=3000, num_steps=40)


def _geweke_stats(latent, y):
    z = latent["Z"].astype(y.dtype)
    return {
        "mean Z": jnp.mean(z),
        "co-active": jnp.mean(z[:, :-1] * z[:, 1:]),
        "mean square data": jnp.mean(y**2),
        "log-likelihood": jnp.sum(GEWEKE_MODEL.log_likelihood(latent, y)),
    }


GEWEKE_LAMS = {"0.3": 0.3, "1": 1.0, "per-row": np.array([1.0, 0.0, 0.5, 1.0])}


@pytest.mark.parametrize("lam", list(GEWEKE_LAMS), ids=list(GEWEKE_LAMS))
def test_geweke_collapsed_sweep(lam):
    res = geweke(jax.random.key(11), GEWEKE_MODEL, GEWEKE_MODEL.default_kernel(), lam=GEWEKE_LAMS[lam],
                 statistics=_geweke_stats, **GEWEKE_KW)
    assert res.passed, (res.names, res.z)


def test_geweke_fails_for_noise_variance_ten_percent_off():
    # The sweep of a model whose sigma_n^2 is 1.1 times the truth leaves the wrong posterior invariant;
    # data resampling amplifies the bias. Power, measured with keys 11, 12, 13 at these sizes: the mean-Z
    # z-score is +6.3, +6.1, +5.0 and the log-likelihood's -6.5, -4.9, -5.9, against a threshold of 3.7
    # (Bonferroni over 4 statistics at 1e-3), so the failure does not hinge on the key.
    wrong = dataclasses.replace(GEWEKE_MODEL, sigma_n=GEWEKE_MODEL.sigma_n * np.sqrt(1.1))
    res = geweke(jax.random.key(11), GEWEKE_MODEL, wrong.default_kernel(), lam=1.0, statistics=_geweke_stats,
                 **GEWEKE_KW)
    assert not res.passed, res.z


# ------------------------------------------------------------------------------------------------------
# 4. exact log-ML by enumeration, and the AIS sandwich


def test_exact_log_marginal_matches_scipy_enumeration():
    data, _ = _problem(TINY)
    want = []
    for bits in itertools.product((0, 1), repeat=TINY.n * TINY.k):
        z = np.array(bits).reshape(TINY.n, TINY.k)
        cov = TINY.sigma_a**2 * z @ z.T + TINY.sigma_n**2 * np.eye(TINY.n)
        mvn = st.multivariate_normal(np.zeros(TINY.n), cov)
        want.append(_log_prior_np(TINY, z) + sum(mvn.logpdf(data[:, j]) for j in range(TINY.dim)))
    assert float(TINY.exact_log_marginal(data)) == pytest.approx(logsumexp(want), abs=1e-9)


def test_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="2\\*\\*500"):
        BinaryAttributes().exact_log_marginal(np.zeros((50, 25)))


SANDWICH_MODEL = BinaryAttributes(n=5, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.4)


def test_ais_sandwiches_and_converges_to_the_enumerated_log_marginal(key):
    data, latent = _problem(SANDWICH_MODEL, seed=2)
    exact = float(SANDWICH_MODEL.exact_log_marginal(data))
    res = bdmc.sandwich(key, SANDWICH_MODEL, data, latent, steps=[3, 1000], num_chains=64)
    t = res.table.set_index(["num_steps", "direction"])
    assert res.exact == pytest.approx(exact)
    fwd, rev = t.loc[(3, "forward")], t.loc[(3, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert t.loc[(1000, "forward")].gap_single < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(1000, direction)].value - exact) < 0.1


# ======================================================================================================
# BinaryAttributesHyper: pi ~ Beta (collapsed), variances ~ InvGamma (latent logs, moved by MH)

HYPER_SMALL = BinaryAttributesHyper(n=3, dim=3, k=2)
HYPER_TWO_ROWS = BinaryAttributesHyper(n=2, dim=3, k=2)  # for the conditional checks (one compile per site)
HYPER_TWO_ROWS_CONDITIONALS = HYPER_TWO_ROWS.conditionals()  # built once: the scalar-lam cases share programs


def _hyper_latent(key, model=HYPER_TWO_ROWS):
    """Any latent will do for identities; this avoids compiling the Beta and InvGamma samplers each time."""
    k_z, k_v = jax.random.split(key)
    z = jax.random.bernoulli(k_z, 0.5, (model.n, model.k)).astype(jnp.int32)
    log_v = 1.5 * jax.random.normal(k_v, (2,))
    return {"Z": z, "log_sigma_a2": log_v[0], "log_sigma_n2": log_v[1]}


@dataclasses.dataclass(frozen=True)
class _WrongNoiseHyper(BinaryAttributesHyper):
    """Test-only: every computation uses a noise variance 10% too large."""

    def fixed(self, latent):
        return super().fixed({**latent, "log_sigma_n2": latent["log_sigma_n2"] + np.log(1.1)})


def _hyper_tempered_marginal_np(model, latent, y, lam):
    z = np.asarray(latent["Z"])
    fixed = BinaryAttributes(n=model.n, dim=model.dim, k=model.k, sigma_a=float(np.exp(0.5 * latent["log_sigma_a2"])),
                             sigma_n=float(np.exp(0.5 * latent["log_sigma_n2"])))
    return _tempered_marginal_np(fixed, z, y, np.broadcast_to(lam, (model.n,)).astype(float))


def _hyper_log_prior_np(model, latent):
    m = np.asarray(latent["Z"]).sum(0)
    log_z = np.sum(betaln(m + model.a, model.n - m + model.b) - betaln(model.a, model.b))
    log_v = sum(st.invgamma(shape, scale=scale).logpdf(np.exp(u)) + u for u, shape, scale in (
        (float(latent["log_sigma_a2"]), model.shape_a, model.scale_a),
        (float(latent["log_sigma_n2"]), model.shape_n, model.scale_n)))
    return log_z + log_v


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, np.array([0.0, 0.6, 1.0])], ids=["0", "0.3", "1", "per-row"])
def test_hyper_density_matches_dense_gaussian_route(lam):
    data, _ = _problem(HYPER_SMALL)
    for s in range(4):
        latent = _hyper_latent(jax.random.key(300 + s), HYPER_SMALL)
        want = _hyper_log_prior_np(HYPER_SMALL, latent) + _hyper_tempered_marginal_np(HYPER_SMALL, latent, data, lam)
        got = float(HYPER_SMALL.log_density(latent, data, jnp.asarray(lam)))
        assert got == pytest.approx(want, abs=1e-9)
        if np.all(np.asarray(lam) == 0):
            assert got == float(HYPER_SMALL.log_prior(latent))


def test_hyper_prior_is_normalized():
    # Sum over Z of the beta-binomial prior is 1, and each log-variance density integrates to 1.
    all_z = np.array(list(itertools.product((0, 1), repeat=6))).reshape(-1, 3, 2)
    zero = {"log_sigma_a2": 0.0, "log_sigma_n2": 0.0}
    logp = [float(HYPER_SMALL.log_prior({"Z": jnp.asarray(z), **zero})) for z in all_z]
    log_v0 = _hyper_log_prior_np(HYPER_SMALL, {"Z": all_z[0], **zero}) - float(
        np.sum(betaln(np.zeros(2) + 1, 4) - betaln(1, 1)))
    assert logsumexp(logp) - log_v0 == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("lam", list(CONSISTENCY_LAMS), ids=list(CONSISTENCY_LAMS))
def test_hyper_every_bit_conditional_matches_the_joint(lam, key):
    data, _ = _problem(HYPER_TWO_ROWS)
    for cond in HYPER_TWO_ROWS_CONDITIONALS:
        res = conditional_consistency(key, HYPER_TWO_ROWS, cond, data, lam=jnp.asarray(CONSISTENCY_LAMS[lam]),
                                      num_triples=32, sample_latent=_hyper_latent)
        assert res.passed, (cond.name, res.worst)


def test_hyper_conditional_with_noise_variance_ten_percent_off_fails(key):
    data, _ = _problem(HYPER_TWO_ROWS)
    wrong = _WrongNoiseHyper(n=2, dim=3, k=2)
    res = conditional_consistency(key, HYPER_TWO_ROWS, wrong.site_conditional(1, 0), data, lam=1.0, num_triples=32,
                                  sample_latent=_hyper_latent)
    assert not res.passed and res.worst > 1e-3


# sigma_n is a latent here, and the tempered likelihood normalized in y has normalizer
# Z_lam(x) = INT prod_i p(y_i | x)^lam_i dy  proportional to  (sigma_n^2)^q,  q = sum_{lam_i > 0} (1 - lam_i) D / 2.
# The Geweke joint p(x) p_lam(y | x) then has conditional p(x) Z_lam(x)^-1 ... != f(x; lam) unless the forward
# draws of x come from the tilted prior p(x) Z_lam(x): with InvGamma(shape_n, scale_n) on sigma_n^2 that is
# InvGamma(shape_n - q, scale_n) (proper only for shape_n > q, hence the strong prior of this test instance;
# q = 28 at lam = 0.3). Under it the joint's conditional of x given y is exactly f(x; lam).
HYPER_GEWEKE = BinaryAttributesHyper(n=4, dim=20, k=3, shape_n=30.0, scale_n=30.0)


@dataclasses.dataclass(frozen=True)
class _TiltedForward:
    """Forward simulation of (x, y) whose conditional of x is f(x; lam) when sigma_n is latent (see above)."""

    model: BinaryAttributesHyper
    lam: tuple

    def sample_prior(self, key):
        k_x, k_n = jax.random.split(key)
        lam = np.asarray(self.lam, float)
        q = 0.5 * self.model.dim * float(np.sum(np.where(lam > 0, 1.0 - lam, 0.0)))
        latent = self.model.sample_prior(k_x)
        gamma = jax.random.gamma(k_n, self.model.shape_n - q)
        return {**latent, "log_sigma_n2": jnp.log(self.model.scale_n) - jnp.log(gamma)}

    def sample_data_tempered(self, key, latent, lam):
        return self.model.sample_data_tempered(key, latent, lam)

    def log_likelihood(self, latent, data):
        return self.model.log_likelihood(latent, data)


def _hyper_geweke_stats(latent, y):
    z = latent["Z"].astype(y.dtype)
    return {
        "mean Z": jnp.mean(z),
        "log sigma_a^2": latent["log_sigma_a2"],
        "log sigma_n^2": latent["log_sigma_n2"],
        "log mean square data": jnp.log(jnp.mean(y**2)),
    }


@pytest.mark.slow  # simulation test of the hyper model: kept out of the ~90 s default budget
@pytest.mark.parametrize("lam", list(GEWEKE_LAMS), ids=list(GEWEKE_LAMS))
def test_hyper_geweke(lam):
    lam = GEWEKE_LAMS[lam]
    forward = _TiltedForward(HYPER_GEWEKE, tuple(np.broadcast_to(lam, (HYPER_GEWEKE.n,)).tolist()))
    res = geweke(jax.random.key(11), forward, HYPER_GEWEKE.default_kernel(), lam=lam,
                 statistics=_hyper_geweke_stats, **GEWEKE_KW)
    assert res.passed, (res.names, res.z)


@pytest.mark.slow  # simulation test of the hyper model: kept out of the ~90 s default budget
def test_hyper_geweke_needs_the_tilted_forward_prior():
    # Negative control for the construction above: with the plain prior the lam = 0.3 joint is the wrong one.
    res = geweke(jax.random.key(11), HYPER_GEWEKE, HYPER_GEWEKE.default_kernel(), lam=0.3,
                 statistics=_hyper_geweke_stats, **GEWEKE_KW)
    assert not res.passed, res.z


@pytest.mark.slow  # simulation test of the hyper model: kept out of the ~90 s default budget
def test_hyper_geweke_fails_for_noise_variance_ten_percent_off():
    wrong = _WrongNoiseHyper(n=4, dim=20, k=3, shape_n=30.0, scale_n=30.0)
    res = geweke(jax.random.key(11), HYPER_GEWEKE, wrong.default_kernel(), lam=1.0,
                 statistics=_hyper_geweke_stats, **GEWEKE_KW)
    assert not res.passed, res.z


# ======================================================================================================
# 5. paper size (slow)


@pytest.mark.slow
def test_paper_size_forward_and_reverse_ais_agree(key):
    # N = 50, D = 25, K = 10 and the default hyperparameters; sigmoidal schedule, 16 chains per direction.
    # Measured: at T = 3000 the single-run gap is still ~0.9 nat, so T = 10000 leaves a margin.
    model = BinaryAttributes()
    data, latent = bdmc.simulate(jax.random.fold_in(key, 1), model)
    T, chains = 10_000, 16
    run_key = jax.random.fold_in(key, T)
    start = time.perf_counter()
    fwd = bdmc.forward_ais(run_key, model, data, num_steps=T, num_runs=chains, progress=False)
    rev = bdmc.reverse_ais(run_key, model, data, exact_latent=latent, num_steps=T, num_runs=chains, progress=False)
    wall = time.perf_counter() - start
    truth = 0.5 * (fwd.value + rev.value)
    print(f"\npaper size T={T} chains={chains}: forward {fwd.value:.3f} +- {fwd.stderr:.3f} (single "
          f"{fwd.mean_single:.3f}), reverse {rev.value:.3f} +- {rev.stderr:.3f} (single {rev.mean_single:.3f}), "
          f"ground truth {truth:.3f}, gap {rev.value - fwd.value:.3f}, single gap "
          f"{rev.mean_single - fwd.mean_single:.3f}, seconds {fwd.seconds:.1f}+{rev.seconds:.1f} (wall {wall:.1f}), "
          f"evaluations {fwd.n_evals}+{rev.n_evals}")
    assert abs(rev.value - fwd.value) < 1.0
    assert rev.mean_single - fwd.mean_single < 1.0
    # The single-run gap estimates a Jeffreys divergence: negative beyond noise would flag a bug.
    assert rev.mean_single > fwd.mean_single - 3 * np.hypot(rev.stderr_single, fwd.stderr_single)


def _hyper_log_marginal_scipy(model, y):
    """log p(y) by adaptive quadrature (scipy) over the log variances, Z enumerated, A via eigenvalues of Z Z^T."""
    from scipy import integrate

    all_z = np.array(list(itertools.product((0, 1), repeat=model.n * model.k))).reshape(-1, model.n, model.k)
    m = all_z.sum(1)
    log_pz = np.sum(betaln(m + model.a, model.n - m + model.b) - betaln(model.a, model.b), axis=1)
    eig, vec = np.linalg.eigh(np.einsum("zik,zjk->zij", all_z, all_z).astype(float))
    proj2 = np.einsum("zir,id->zrd", vec, y) ** 2  # (Z, n, D): squared coordinates of each column

    def log_ig_of_log(u, shape, scale):  # log InvGamma(e^u) + u, written out; checked against scipy below
        return shape * np.log(scale) - gammaln(shape) - shape * u - scale * np.exp(-u)

    assert log_ig_of_log(0.3, 2.0, 1.5) == pytest.approx(st.invgamma(2.0, scale=1.5).logpdf(np.exp(0.3)) + 0.3)
    const = -0.5 * model.n * model.dim * np.log(2 * np.pi)

    def g(ua, un):
        var = np.exp(ua) * eig + np.exp(un)  # (Z, n) eigenvalues of the column covariance
        log_y = const - 0.5 * (model.dim * np.log(var).sum(1) + (proj2 / var[:, :, None]).sum((1, 2)))
        log_v = log_ig_of_log(ua, model.shape_a, model.scale_a) + log_ig_of_log(un, model.shape_n, model.scale_n)
        return log_v + logsumexp(log_pz + log_y)

    grid = np.linspace(-12, 20, 65)
    coarse = np.array([[g(a, b) for b in grid] for a in grid])
    ia, ib = np.unravel_index(np.argmax(coarse), coarse.shape)
    peak = coarse[ia, ib]
    inner = lambda ua: integrate.quad(lambda un: np.exp(g(ua, un) - peak), -12, 20, points=[grid[ib]],  # noqa: E731
                                      limit=200, epsabs=0, epsrel=1e-9)[0]
    total = integrate.quad(inner, -12, 20, points=[grid[ia]], limit=200, epsabs=0, epsrel=1e-9)[0]
    return peak + np.log(total)


def test_hyper_exact_log_marginal_matches_scipy_quadrature():
    data, _ = _problem(HYPER_SMALL)
    got = float(HYPER_SMALL.exact_log_marginal(data))
    assert got == pytest.approx(_hyper_log_marginal_scipy(HYPER_SMALL, data), abs=1e-5)
    with pytest.raises(ValueError, match="limit"):
        BinaryAttributesHyper().exact_log_marginal(np.zeros((50, 25)))


@pytest.mark.slow  # simulation test of the hyper model: kept out of the ~90 s default budget
def test_hyper_ais_sandwiches_and_converges_to_the_exact_log_marginal(key):
    data, latent = _problem(HYPER_SMALL, seed=2)
    exact = float(HYPER_SMALL.exact_log_marginal(data))
    # The log variances move by random-walk MH, so the hyper model needs longer chains than the fixed one.
    res = bdmc.sandwich(key, HYPER_SMALL, data, latent, steps=[3, 4000], num_chains=64)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(3, "forward")], t.loc[(3, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert t.loc[(4000, "forward")].gap_single < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(4000, direction)].value - exact) < 0.1
