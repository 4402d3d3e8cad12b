"""The binary attributes model (BG + G) with A collapsed: the collapsed density, the sweep's statistics, the
predictive, BDMC.

Its conditionals against the joint, the Geweke tests of both kernels (and of the tilted forward simulation the
hyper model needs at lam < 1) and the exact log-ML against enumeration and quadrature are in test_conformance.py,
with every other built-in model."""

import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as st
from scipy.special import betaln, logsumexp, roots_hermite

import bdmc
from bdmc.models import BinaryAttributes, BinaryAttributesHyper

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
# 1. the collapsed density


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
# 2. the AIS sandwich around the exact log-ML


def test_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="2\\*\\*500"):
        BinaryAttributes().exact_log_marginal(np.zeros((50, 25)))


SANDWICH_MODEL = BinaryAttributes(n=5, dim=3, k=2, pi=0.4, sigma_a=1.0, sigma_n=0.4)


def test_ais_sandwiches_and_converges_to_the_enumerated_log_marginal(key):
    data, latent = _problem(SANDWICH_MODEL, seed=2)
    exact = float(SANDWICH_MODEL.exact_log_marginal(data))
    res = bdmc.sandwich(key, SANDWICH_MODEL, data, latent, steps=[3, 1000], num_runs=64)
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


def _hyper_latent(key, model=HYPER_SMALL):
    """Any latent will do for identities; this avoids compiling the Beta and InvGamma samplers each time."""
    k_z, k_v = jax.random.split(key)
    z = jax.random.bernoulli(k_z, 0.5, (model.n, model.k)).astype(jnp.int32)
    log_v = 1.5 * jax.random.normal(k_v, (2,))
    return {"Z": z, "log_sigma_a2": log_v[0], "log_sigma_n2": log_v[1]}


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


def test_hyper_exact_log_marginal_refuses_large_instances():
    with pytest.raises(ValueError, match="limit"):
        BinaryAttributesHyper().exact_log_marginal(np.zeros((50, 25)))


def test_hyper_prior_is_normalized():
    # Sum over Z of the beta-binomial prior is 1, and each log-variance density integrates to 1.
    all_z = np.array(list(itertools.product((0, 1), repeat=6))).reshape(-1, 3, 2)
    zero = {"log_sigma_a2": 0.0, "log_sigma_n2": 0.0}
    logp = [float(HYPER_SMALL.log_prior({"Z": jnp.asarray(z), **zero})) for z in all_z]
    log_v0 = _hyper_log_prior_np(HYPER_SMALL, {"Z": all_z[0], **zero}) - float(
        np.sum(betaln(np.zeros(2) + 1, 4) - betaln(1, 1)))
    assert logsumexp(logp) - log_v0 == pytest.approx(0.0, abs=1e-12)


# ======================================================================================================
# 3. paper size (slow)


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


@pytest.mark.slow  # simulation test of the hyper model: kept out of the ~90 s default budget
def test_hyper_ais_sandwiches_and_converges_to_the_exact_log_marginal(key):
    data, latent = _problem(HYPER_SMALL, seed=2)
    exact = float(HYPER_SMALL.exact_log_marginal(data))
    # The log variances move by random-walk MH, so the hyper model needs longer chains than the fixed one.
    res = bdmc.sandwich(key, HYPER_SMALL, data, latent, steps=[3, 4000], num_runs=64)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(3, "forward")], t.loc[(3, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    assert t.loc[(4000, "forward")].gap_single < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(4000, direction)].value - exact) < 0.1
