"""Mean-field VB for the low-rank, binary-attribute and clustering models: the bounds, the updates, the hint
start and the estimator.

The analytic bounds are checked against Monte Carlo estimates computed with scipy from the uncollapsed
joint, the updates against the bound they must increase (and its gradient, which must vanish on the block
just updated), the hint starts against the models' collapsed joint densities, the bounds against exact
log p(y) on tiny instances, and broken variants must fail.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

import bdmc
from bdmc import BDMCError
from bdmc.estimators import variational_bayes
from bdmc.estimators.vb import coordinate_ascent, symmetry_correction
from bdmc.models import BinaryAttributes, Clustering, LowRank
from bdmc.models.binary_attributes import vb as bvb
from bdmc.models.clustering import vb as cvb
from bdmc.models.low_rank import vb as lvb

# Non-default variances (and per-attribute pi) so that a swapped or dropped hyperparameter shows up.
LOW_RANK = LowRank(n=5, d=4, k=2, sigma_u=1.3, sigma_v=0.8, sigma_n=0.7)
BINARY = BinaryAttributes(n=5, dim=4, k=3, pi=(0.2, 0.5, 0.7), sigma_a=1.3, sigma_n=0.6)
CLUSTERING = Clustering(n=7, dim=3, k=3, sigma_theta=1.7, sigma_noise=0.6, weights=(0.5, 0.3, 0.2))
MC_SAMPLES = 40_000


def _random_spd(rng, batch, k, scale):
    L = scale * rng.normal(size=batch + (k, k))
    return L @ np.swapaxes(L, -1, -2) + 0.2 * scale**2 * np.eye(k)


def _random_low_rank_q(rng, model):
    """An arbitrary q: random means and a different random covariance for every row and column."""
    n, d, k = model.n, model.d, model.k
    return lvb.LowRankVBParams(rng.normal(size=(n, k)), _random_spd(rng, (n,), k, 0.5),
                               rng.normal(size=(k, d)), _random_spd(rng, (d,), k, 0.5))


def _random_binary_q(rng, model):
    return bvb.BinaryVBParams(rng.uniform(0.05, 0.95, size=(model.n, model.k)),
                              rng.normal(size=(model.k, model.dim)), _random_spd(rng, (), model.k, 0.5))


def _mc_low_rank(rng, model, q, y):
    """Samples of log p(Y, U, V) - log q(U, V) for (U, V) ~ q, from scipy densities alone."""
    su, sv, sn = model.sigma_u, model.sigma_v, model.sigma_n
    eps_u = rng.normal(size=(MC_SAMPLES, model.n, model.k))
    eps_v = rng.normal(size=(MC_SAMPLES, model.d, model.k))
    U = q.u_mean + np.einsum("nij,snj->sni", np.linalg.cholesky(q.u_cov), eps_u)
    Vc = q.v_mean.T + np.einsum("dij,sdj->sdi", np.linalg.cholesky(q.v_cov), eps_v)  # columns of V
    V = np.swapaxes(Vc, 1, 2)
    log_p = (norm.logpdf(y, U @ V, sn).sum((1, 2)) + norm.logpdf(U, 0, su).sum((1, 2))
             + norm.logpdf(V, 0, sv).sum((1, 2)))
    log_q = sum(multivariate_normal(q.u_mean[i], q.u_cov[i]).logpdf(U[:, i]) for i in range(model.n))
    log_q = log_q + sum(multivariate_normal(q.v_mean[:, j], q.v_cov[j]).logpdf(Vc[:, j]) for j in range(model.d))
    return log_p - log_q


def _mc_binary(rng, model, q, y):
    """Samples of log p(Y, Z, A) - log q(Z, A) with A explicit (the uncollapsed joint), from scipy densities."""
    pi = np.broadcast_to(np.asarray(model.pi, float), (model.k,))
    Z = (rng.uniform(size=(MC_SAMPLES, model.n, model.k)) < q.nu).astype(float)
    eps = rng.normal(size=(MC_SAMPLES, model.k, model.dim))
    A = q.a_mean + np.einsum("kl,sld->skd", np.linalg.cholesky(q.a_cov), eps)
    log_p = (norm.logpdf(y, Z @ A, model.sigma_n).sum((1, 2)) + norm.logpdf(A, 0, model.sigma_a).sum((1, 2))
             + (Z * np.log(pi) + (1 - Z) * np.log1p(-pi)).sum((1, 2)))
    log_q = (Z * np.log(q.nu) + (1 - Z) * np.log1p(-q.nu)).sum((1, 2))
    log_q = log_q + sum(multivariate_normal(q.a_mean[:, j], q.a_cov).logpdf(A[:, :, j]) for j in range(model.dim))
    return log_p - log_q


@pytest.mark.parametrize("model, random_q, mc, scaled", [
    (LOW_RANK, _random_low_rank_q, _mc_low_rank, lambda q: q._replace(u_cov=1.1 * q.u_cov, v_cov=1.1 * q.v_cov)),
    (BINARY, _random_binary_q, _mc_binary, lambda q: q._replace(a_cov=1.1 * q.a_cov)),
], ids=["low-rank", "binary"])
def test_analytic_bound_equals_a_monte_carlo_estimate_at_random_q(model, random_q, mc, scaled):
    rng = np.random.default_rng(7)
    y, _ = bdmc.simulate(jax.random.key(3), model)
    bound = jax.jit(lambda p: model.vb_bound(p, y))
    for _ in range(2):
        q = random_q(rng, model)
        samples = mc(rng, model, q, np.asarray(y))
        estimate, se = samples.mean(), samples.std() / math.sqrt(MC_SAMPLES)
        analytic = float(bound(jax.tree.map(jnp.asarray, q)))
        assert abs(analytic - estimate) < 4 * se, (analytic, estimate, se)
        # Negative control: the bound of q with its covariances 10% off is resolved from that of q.
        wrong = float(bound(jax.tree.map(jnp.asarray, scaled(q))))
        assert abs(wrong - estimate) > 4 * se, (wrong, estimate, se)


def test_binary_bound_at_a_point_mass_equals_the_collapsed_joint():
    # With q(Z) a point mass and q(A) = p(A | Z, Y), the bound is log p(Z, Y) with A integrated out exactly:
    # an identity against the model's own collapsed density, computed by different algebra.
    both = jax.jit(lambda z, y: (BINARY.vb_bound(bvb.init_from_latent(BINARY, {"Z": z}, y), y),
                                 BINARY.log_density({"Z": z}, y, 1.0)))
    for seed in range(3):
        y, latent = bdmc.simulate(jax.random.key(seed), BINARY)
        z = jax.random.bernoulli(jax.random.key(100 + seed), 0.5, (BINARY.n, BINARY.k)).astype(jnp.int32)
        for zz in (latent["Z"], z):
            vb, collapsed = both(zz, y)
            np.testing.assert_allclose(float(vb), float(collapsed), rtol=1e-12)


def test_clustering_bound_at_a_point_mass_equals_the_collapsed_joint():
    # q(z) a point mass at z and q(theta) = p(theta | z, y): the bound is log p(z, y) with the centres integrated
    # out, which the model computes from cluster statistics by different algebra (Clustering.log_density). Random
    # z leave some clusters empty (their q(theta_k) must be the prior) and, with unequal weights, differ from
    # relabelings of the generating z. Negative control: q(theta)'s variances 10% off break the identity.
    def both(z, y):
        r, m, v = cvb.init_from_latent(CLUSTERING, {"z": z}, y)
        return (CLUSTERING.vb_bound((r, m, v), y), CLUSTERING.vb_bound((r, m, 1.1 * v), y),
                CLUSTERING.log_density({"z": z}, y, 1.0), r)

    both = jax.jit(both)
    for seed in range(3):
        y, latent = bdmc.simulate(jax.random.key(seed), CLUSTERING)
        z = jax.random.randint(jax.random.key(100 + seed), (CLUSTERING.n,), 0, CLUSTERING.k // 2 + 1, jnp.int32)
        for zz in (latent["z"], z):
            vb, wrong, collapsed, r = both(zz, y)
            np.testing.assert_array_equal(np.asarray(r), np.eye(CLUSTERING.k)[np.asarray(zz)])
            np.testing.assert_allclose(float(vb), float(collapsed), rtol=1e-12)
            assert abs(float(wrong) - float(collapsed)) > 1e-3


def _low_rank_blocks(model, data, factor=1.0):
    """The coordinate updates of one sweep; ``factor = 1.1`` breaks q(U)'s covariance by 10% (a traced value)."""

    def u_step(p):
        p = lvb.update_u(model, p, data)
        return p._replace(u_cov=factor * p.u_cov)

    return [u_step, lambda p: lvb.update_v(model, p, data)]


def _binary_blocks(model, data, factor=1.0):
    def a_step(p):
        p = bvb.update_a(model, p, data)
        return p._replace(a_cov=factor * p.a_cov)

    columns = [lambda p, c=c: bvb.update_z_column(model, p, data, c) for c in range(model.k)]
    return columns + [a_step]


def _bounds_after_every_block(model, data, blocks, sweeps=40):
    """Compiled ``(starts, factor) -> bounds (starts, 1 + sweeps * len(blocks))``: the start, then the bound
    after every single coordinate update. ``factor`` is traced, so the correct and the broken run share it."""

    def run(p, factor):
        def sweep(p, _):
            out = []
            for block in blocks(model, data, factor):
                p = block(p)
                out.append(model.vb_bound(p, data))
            return p, jnp.stack(out)

        _, bounds = jax.lax.scan(sweep, p, None, length=sweeps)
        return jnp.concatenate([model.vb_bound(p, data)[None], bounds.ravel()])

    return jax.jit(jax.vmap(run, in_axes=(0, None)))


def _min_relative_step(bounds):
    bounds = np.asarray(bounds)
    return np.min(np.diff(bounds, axis=1) / np.abs(bounds[:, :-1]))


@pytest.mark.parametrize("model, blocks", [(LOW_RANK, _low_rank_blocks), (BINARY, _binary_blocks)],
                         ids=["low-rank", "binary"])
def test_every_coordinate_update_never_decreases_the_bound_and_a_wrong_one_does(model, blocks):
    y, _ = bdmc.simulate(jax.random.key(5), model)
    # 32 starts: half from vb_init, half arbitrary q (per-row covariances, nu anywhere in (0, 1)).
    rng = np.random.default_rng(11)
    random_q = _random_low_rank_q if model is LOW_RANK else _random_binary_q
    arbitrary = [jax.tree.map(jnp.asarray, random_q(rng, model)) for _ in range(16)]
    inits = [model.vb_init(k, y) for k in jax.random.split(jax.random.key(12), 16)]
    starts = jax.tree.map(lambda *xs: jnp.stack(xs), *(arbitrary + inits))
    run = _bounds_after_every_block(model, y, blocks)
    bounds = np.asarray(run(starts, 1.0))
    assert np.all(np.isfinite(bounds))
    assert _min_relative_step(bounds) > -1e-8, _min_relative_step(bounds)
    assert np.all(bounds[:, -1] > bounds[:, 0])
    # Negative control: the same harness with one covariance update 10% off sees the bound go down.
    broken = run(starts, 1.1)
    assert _min_relative_step(broken) < -1e-6, _min_relative_step(broken)


def test_each_update_is_a_stationary_point_of_the_bound_in_its_block():
    # d F / d(block) = 0 right after the block's update: the updates maximize the analytic bound exactly.
    rng = np.random.default_rng(13)
    y, _ = bdmc.simulate(jax.random.key(6), LOW_RANK)
    q = jax.tree.map(jnp.asarray, _random_low_rank_q(rng, LOW_RANK))
    grad = jax.grad(lambda p: LOW_RANK.vb_bound(p, y))
    broken_u = _low_rank_blocks(LOW_RANK, y, 1.1)[0]
    before, after_u, after_v, wrong = jax.jit(lambda q: (
        grad(q), grad(lvb.update_u(LOW_RANK, q, y)), grad(lvb.update_v(LOW_RANK, q, y)), grad(broken_u(q))))(q)
    scale = max(float(jnp.max(jnp.abs(g))) for g in before)
    assert scale > 1.0  # the random start is far from stationary
    for g in (after_u.u_mean, after_u.u_cov, after_v.v_mean, after_v.v_cov):
        assert float(jnp.max(jnp.abs(g))) < 1e-10 * scale
    assert float(jnp.max(jnp.abs(wrong.u_cov))) > 1e-3 * scale  # negative control

    y, _ = bdmc.simulate(jax.random.key(6), BINARY)
    q = jax.tree.map(jnp.asarray, _random_binary_q(rng, BINARY))
    grad = jax.grad(lambda p: BINARY.vb_bound(p, y))
    before, after_z, after_a = jax.jit(lambda q: (
        grad(q), [grad(bvb.update_z_column(BINARY, q, y, c)).nu[:, c] for c in range(BINARY.k)],
        grad(bvb.update_a(BINARY, q, y))))(q)
    scale = max(float(jnp.max(jnp.abs(g))) for g in before)
    assert scale > 1.0
    for g in after_z + [after_a.a_mean, after_a.a_cov]:
        assert float(jnp.max(jnp.abs(g))) < 1e-10 * scale


# Tiny instances with exact log p(y): quadrature over the k * d = 2 entries of V for low rank, enumeration of
# the 2**15 binary matrices Z for binary. The same models and data serve the restart test, so the two tests
# share one compiled VB run. Binary has two attributes sharing pi = 0.3, so only they are exchangeable.
TINY = [(LowRank(n=8, d=1, k=2), 2 * math.log(2) + math.log(2)),
        (BinaryAttributes(n=5, dim=4, k=3, pi=(0.3, 0.3, 0.5)), math.log(2))]


@pytest.mark.parametrize("model", [m for m, _ in TINY], ids=["low-rank", "binary"])
def test_bound_is_below_the_exact_log_marginal_and_close_on_tiny_instances(model):
    y, _ = bdmc.simulate(jax.random.key(0), model)
    exact = float(model.exact_log_marginal(y, num_points=201) if isinstance(model, LowRank)
                  else model.exact_log_marginal(y))
    est = variational_bayes(jax.random.key(1), model, y, num_restarts=10)
    gap = exact - est.value
    print(f"{type(model).__name__}: exact {exact:.4f}, VB {est.value:.4f}, gap {gap:.3f} nats")
    # KL(q || posterior) > 0, and a few nats at most on these tiny problems.
    assert 0.0 < gap < 5.0


@pytest.mark.parametrize("model, constant", TINY, ids=["low-rank", "binary"])
def test_restarts_improve_the_best_bound_and_the_symmetry_correction_adds_its_constant(model, constant):
    # Restart keys are prefix-stable (split(key, 1)[0] == split(key, 10)[0]), so 10 restarts include the one.
    y, _ = bdmc.simulate(jax.random.key(0), model)
    key = jax.random.key(1)
    one = variational_bayes(key, model, y, num_restarts=1)
    ten = variational_bayes(key, model, y, num_restarts=10)
    sym = variational_bayes(key, model, y, num_restarts=10, symmetric=True)
    assert ten.value >= one.value - 1e-9 * abs(one.value)
    # log(2^k k!) for low rank; for binary the permutations of the attributes that share a pi.
    np.testing.assert_allclose(sym.value - ten.value, constant, rtol=1e-12)
    assert sym.settings["symmetry_correction"] == pytest.approx(constant, rel=1e-12)
    assert sym.settings["method"] == "vb+sym" and ten.settings["method"] == "vb"


def test_symmetry_correction_defaults_and_errors():
    assert symmetry_correction(LowRank(k=5)) == pytest.approx(5 * math.log(2) + math.lgamma(6), rel=1e-14)
    assert symmetry_correction(BinaryAttributes(k=10)) == pytest.approx(math.lgamma(11), rel=1e-14)
    assert symmetry_correction(Clustering(k=3)) == pytest.approx(math.log(6), rel=1e-14)  # log 3!

    class NoLabels:
        pass

    with pytest.raises(BDMCError, match="NoLabels to define vb_log_symmetries"):
        symmetry_correction(NoLabels())
    with pytest.raises(BDMCError, match=r"latent\['V'\] has shape \(2, 3\), expected \(2, 4\)"):
        lvb.init_from_latent(LOW_RANK, {"U": jnp.zeros((5, 2)), "V": jnp.zeros((2, 3))}, jnp.zeros((5, 4)))
    with pytest.raises(BDMCError, match=r"latent\['Z'\] has shape"):
        bvb.init_from_latent(BINARY, {"Z": jnp.zeros((5, 2), jnp.int32)}, jnp.zeros((5, 4)))
    # A one-hot (n, k) array in place of the labels is refused, not broadcast into a different q.
    with pytest.raises(BDMCError, match=r"latent\['z'\] has shape \(7, 3\), expected \(7,\)"):
        cvb.init_from_latent(CLUSTERING, {"z": jnp.zeros((7, 3), jnp.int32)}, jnp.zeros((7, 3)))


@pytest.mark.parametrize("model, hint", [(BinaryAttributes(n=5, dim=4, k=3), bvb.init_from_latent),
                                         (Clustering(n=6, dim=2, k=3), cvb.init_from_latent)],
                         ids=["binary", "clustering"])
def test_hint_start_converges_to_a_fixed_point_below_the_exact_value(model, hint):
    # The paper's "hint" experiment on tiny instances: start at the generating latent, run to convergence.
    y, latent = bdmc.simulate(jax.random.key(0), model)
    start = hint(model, latent, y)
    params, bound, iterations = jax.jit(lambda p: coordinate_ascent(model, y, p))(start)
    assert float(model.vb_bound(start, y)) <= float(bound) < float(model.exact_log_marginal(y))
    np.testing.assert_allclose(float(bound), float(model.vb_bound(params, y)), rtol=1e-14)
    assert 50 <= int(iterations) < 5000
