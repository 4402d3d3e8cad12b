"""The collapsed clustering model (MG+G): the Gibbs sweep, the collapsed density and predictive, BDMC.

Its conditionals against the joint, the Geweke tests of both kernels and the exact log-ML against enumeration
are in test_conformance.py, with every other built-in model."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

import bdmc
from bdmc.models import Clustering, ClusteringHyper

TINY = Clustering(n=6, dim=2, k=3, sigma_theta=1.0, sigma_noise=0.7)
ROW_LAM = jnp.array([0.0, 0.5, 1.0, 0.0, 0.2, 1.0])


def _problem(model, seed=1):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    return data, latent


def _mvn_log_joint(model, z, y):
    """log p(z, y) from the marginal covariance sigma_n^2 I + sigma_theta^2 [z_i == z_j] of each column."""
    z, y = np.asarray(z), np.asarray(y)
    cov = model.sigma_noise**2 * np.eye(model.n) + model.sigma_theta**2 * (z[:, None] == z[None, :])
    mvn = stats.multivariate_normal(np.zeros(model.n), cov)
    return float(np.sum(np.asarray(model.log_weights)[z])) + sum(mvn.logpdf(y[:, j]) for j in range(model.dim))


# ----- 1. the sweep -------------------------------------------------------------------------------------------


def _sequential_sweep(model, key, latent, data, lam):
    """The sweep rebuilt from the tested site conditionals: z_i = argmax_c log p(z_i = c | rest) + Gumbel noise."""
    gumbel = np.asarray(jax.random.gumbel(key, (model.n, model.k)))
    z = latent["z"]
    for i in range(model.n):
        log_probs = _site_log_probs(model, latent, z, i, data, lam)
        z = z.at[i].set(int(np.argmax(np.asarray(log_probs) + gumbel[i])))
    return z


def _site_log_probs(model, latent, z, i, data, lam):
    """``log p(z_i = c | rest)`` for every class c, from the site conditional."""
    cond = model.site_conditional(i)
    values = jnp.arange(model.k, dtype=jnp.int32)
    return jax.vmap(lambda c: cond.log_prob({**latent, "z": z.at[i].set(c)}, data, lam))(values)


def test_the_scanned_sweep_is_the_site_conditionals_in_turn(key):
    # Same Gumbel noise, same draws: the incremental statistics of the scan equal recomputing them per site.
    data, latent = _problem(TINY)
    for k in jax.random.split(key, 2):
        np.testing.assert_array_equal(TINY.sweep(k, latent, data, ROW_LAM)["z"],
                                      _sequential_sweep(TINY, k, latent, data, ROW_LAM))


# ----- 2. the collapsed density ---------------------------------------------------------------------------


def test_log_density_is_normalized_at_zero_and_is_the_joint_at_one():
    data, latent = _problem(TINY)
    assert float(TINY.log_density(latent, data, 0.0)) == float(TINY.log_prior(latent))
    for seed in range(5):
        z = TINY.sample_prior(jax.random.key(seed))
        exact = _mvn_log_joint(TINY, z["z"], data)
        assert float(TINY.log_density(z, data, 1.0)) == pytest.approx(exact, abs=1e-10)
        # The chain-rule terms sum to the collapsed log p(y | z).
        chain = float(TINY.log_prior(z) + jnp.sum(TINY.log_likelihood(z, data)))
        assert chain == pytest.approx(exact, abs=1e-10)


def test_log_density_equals_the_uncollapsed_joint_integrated_numerically():
    # Integrate each centre coordinate out of p(theta) prod_i N(y_i; theta_{z_i}, sigma_n^2)^{lam_i} by quadrature.
    data, latent = _problem(TINY)
    y, z, lam = np.asarray(data), np.asarray(latent["z"]), np.asarray(ROW_LAM)
    total = float(np.sum(np.asarray(TINY.log_weights)[z]))
    for c in range(TINY.k):
        for j in range(TINY.dim):
            rows = np.flatnonzero(z == c)

            def integrand(t, rows=rows, j=j):
                log = stats.norm.logpdf(t, 0.0, TINY.sigma_theta)
                log += sum(lam[i] * stats.norm.logpdf(y[i, j], t, TINY.sigma_noise) for i in rows)
                return np.exp(log)

            total += np.log(integrate.quad(integrand, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0])
    assert float(TINY.log_density(latent, data, ROW_LAM)) == pytest.approx(total, abs=1e-8)


def test_log_predictive_matches_the_gaussian_predictive_and_the_density_ratio(key):
    data, latent = _problem(TINY)
    y, z, lam = np.asarray(data), np.asarray(latent["z"]), np.asarray(ROW_LAM)
    s2, v = TINY.sigma_theta**2, TINY.sigma_noise**2
    for i in range(TINY.n):
        # Independent route: each cluster's centre posterior N(m, 1/P) from the other rows, predictive N(m, v + 1/P).
        terms = []
        for c in range(TINY.k):
            w = np.where((z == c) & (np.arange(TINY.n) != i), lam, 0.0)
            P = 1 / s2 + w.sum() / v
            mean = (w @ y) / v / P
            terms.append(np.log(1 / TINY.k) + stats.norm.logpdf(y[i], mean, np.sqrt(v + 1 / P)).sum())
        brute = logsumexp(terms)
        got = float(TINY.log_predictive(latent, data, ROW_LAM, i))
        assert got == pytest.approx(brute, abs=1e-10)
        # Second route: ratio of collapsed densities with row i switched on and off, z_i summed over.
        on, off = ROW_LAM.at[i].set(1.0), ROW_LAM.at[i].set(0.0)
        ratios = [TINY.log_density({"z": latent["z"].at[i].set(c)}, data, on) for c in range(TINY.k)]
        via_density = logsumexp(np.asarray(ratios)) - float(TINY.log_density(latent, data, off)) \
            + float(TINY.log_weights[z[i]])
        assert got == pytest.approx(via_density, abs=1e-10)


# ----- 3. exact log-ML and the sandwich ---------------------------------------------------------------------


def test_exact_log_marginal_refuses_big_instances():
    with pytest.raises(ValueError, match="10\\*\\*50"):
        Clustering().exact_log_marginal(np.zeros((50, 25)))


def test_sandwich_brackets_and_converges_to_the_enumerated_log_marginal(key):
    data, latent = _problem(TINY)
    exact = float(TINY.exact_log_marginal(data))
    res = bdmc.sandwich(key, TINY, data, latent, steps=[5, 50, 2000], num_runs=64, progress=False)
    t = res.table.set_index(["num_steps", "direction"])
    fwd, rev = t.loc[(5, "forward")], t.loc[(5, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single
    assert rev.mean_single > exact + rev.stderr_single
    gaps = res.table.groupby("num_steps").gap_single.first()
    assert gaps.is_monotonic_decreasing and gaps.loc[2000] < 0.1
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(2000, direction)].value - exact) < 0.1


def test_data_path_sandwiches_the_enumerated_log_marginal(key):
    # The per-row path (SMC with one particle) through the collapsed density.
    data, latent = _problem(TINY)
    exact = float(TINY.exact_log_marginal(data))
    path = bdmc.schedules.data_path(TINY.n, steps_per_case=50)
    f = bdmc.forward_ais(key, TINY, data, schedule=path, num_runs=64, progress=False)
    r = bdmc.reverse_ais(key, TINY, data, exact_latent=latent, schedule=path, num_runs=64, progress=False)
    assert f.mean_single < exact < r.mean_single
    assert r.mean_single - f.mean_single < 0.1


# ----- the hyperparameter-integrated variant ----------------------------------------------------------------

HYPER = ClusteringHyper(n=6, dim=2, k=3)


def test_hyper_log_prior_and_density_against_independent_formulas():
    data, latent = _problem(HYPER)
    assert float(HYPER.log_density(latent, data, 0.0)) == float(HYPER.log_prior(latent))
    dm = stats.dirichlet_multinomial(np.full(HYPER.k, HYPER.alpha), HYPER.n)
    ig = stats.invgamma(HYPER.noise_shape, scale=HYPER.noise_scale)
    for seed in range(5):
        lat = HYPER.sample_prior(jax.random.key(seed))
        z = np.asarray(lat["z"])
        counts = np.bincount(z, minlength=HYPER.k)
        # A sequence's probability is the counts' probability over the number of sequences with those counts.
        log_z = dm.logpmf(counts) - (math.lgamma(HYPER.n + 1) - sum(math.lgamma(c + 1) for c in counts))
        lt, ln = float(lat["log_sigma_theta2"]), float(lat["log_sigma_noise2"])
        log_vars = (stats.invgamma(HYPER.theta_shape, scale=HYPER.theta_scale).logpdf(np.exp(lt)) + lt
                    + ig.logpdf(np.exp(ln)) + ln)
        assert float(HYPER.log_prior(lat)) == pytest.approx(log_z + log_vars, abs=1e-10)
        fixed = Clustering(n=HYPER.n, dim=HYPER.dim, k=HYPER.k, sigma_theta=np.exp(lt / 2), sigma_noise=np.exp(ln / 2))
        joint = _mvn_log_joint(fixed, z, data) - float(fixed.log_prior({"z": lat["z"]})) + log_z + log_vars
        assert float(HYPER.log_density(lat, data, 1.0)) == pytest.approx(joint, abs=1e-9)
        assert float(HYPER.log_prior(lat) + jnp.sum(HYPER.log_likelihood(lat, data))) == pytest.approx(joint, abs=1e-9)


def test_hyper_log_predictive_is_a_ratio_of_collapsed_densities():
    data, latent = _problem(HYPER)
    for i in range(HYPER.n):
        on, off = ROW_LAM.at[i].set(1.0), ROW_LAM.at[i].set(0.0)
        # sum_c f(z_i = c; row i on) / sum_c f(z_i = c; row i off): the prior of z_i given the rest cancels.
        log_on = [float(HYPER.log_density({**latent, "z": latent["z"].at[i].set(c)}, data, on)) for c in range(HYPER.k)]
        log_off = [float(HYPER.log_density({**latent, "z": latent["z"].at[i].set(c)}, data, off))
                   for c in range(HYPER.k)]
        expected = logsumexp(log_on) - logsumexp(log_off)
        assert float(HYPER.log_predictive(latent, data, ROW_LAM, i)) == pytest.approx(expected, abs=1e-10)


def _hyper_log_marginal_by_quadrature(model, data, *, lo=-6.0, hi=16.0, step=0.04):
    """log p(y): all k**n assignments enumerated, both log-variances integrated by the trapezoid rule."""
    grid = jnp.arange(lo, hi + step / 2, step)
    lt, ln = (x.ravel() for x in jnp.meshgrid(grid, grid))
    zs = jnp.asarray(list(itertools.product(range(model.k), repeat=model.n)), jnp.int32)
    weight = jnp.log(jnp.where((grid == grid[0]) | (grid == grid[-1]), 0.5, 1.0) * step)
    log_w = (weight[:, None] + weight[None, :]).ravel()

    def one(z):
        f = jax.vmap(lambda a, b: model.log_density({"z": z, "log_sigma_theta2": a, "log_sigma_noise2": b}, data, 1.0))
        return jax.scipy.special.logsumexp(f(lt, ln) + log_w)

    return float(jax.scipy.special.logsumexp(jax.lax.map(one, zs)))


@pytest.mark.slow
def test_hyper_sandwich_agrees_with_quadrature_over_the_log_variances(key):
    # (Seed 1: both variances near 1; a data set drawn with an extreme noise variance has a posterior over the
    # variances so broad that 64 chains of length 2000 scatter by ~0.8 nats.)
    model = ClusteringHyper(n=8, dim=4, k=2)
    data, latent = _problem(model, seed=1)
    exact = _hyper_log_marginal_by_quadrature(model, data, step=0.08)
    # The quadrature has converged: a grid twice as coarse gives the same number.
    assert _hyper_log_marginal_by_quadrature(model, data, step=0.16) == pytest.approx(exact, abs=1e-6)
    fwd5 = bdmc.forward_ais(key, model, data, num_steps=5, num_runs=64, progress=False)
    rev5 = bdmc.reverse_ais(key, model, data, exact_latent=latent, num_steps=5, num_runs=64, progress=False)
    assert fwd5.mean_single < exact - fwd5.stderr_single
    assert rev5.mean_single > exact + rev5.stderr_single
    fwd = bdmc.forward_ais(key, model, data, num_steps=2000, num_runs=64, progress=False)
    rev = bdmc.reverse_ais(key, model, data, exact_latent=latent, num_steps=2000, num_runs=64, progress=False)
    assert rev.mean_single - fwd.mean_single < 0.1
    assert abs(fwd.value - exact) < 0.1 and abs(rev.value - exact) < 0.1


# ----- 4. paper size ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_paper_size_forward_and_reverse_ais_agree(key):
    model = Clustering()
    data, latent = bdmc.simulate(jax.random.key(0), model)
    T = 3000
    f = bdmc.forward_ais(jax.random.key(1), model, data, num_steps=T, num_runs=32, progress=False)
    r = bdmc.reverse_ais(jax.random.key(2), model, data, exact_latent=latent, num_steps=T, num_runs=32, progress=False)
    print(f"\nclustering paper size T={T}: forward {f.value:.2f} +- {f.stderr:.2f}, reverse {r.value:.2f} +- "
          f"{r.stderr:.2f}, gap {r.value - f.value:.2f} (single-run means {r.mean_single - f.mean_single:.2f}), "
          f"ground truth {(f.value + r.value) / 2:.2f}, "
          f"seconds {f.seconds + r.seconds:.1f}, evals {f.n_evals + r.n_evals}")
    # The single-run gap is non-negative in expectation only: allow 4 standard errors below zero.
    se = math.hypot(f.stderr_single, r.stderr_single)
    assert -4 * se < r.mean_single - f.mean_single < 1.0
    assert abs(r.value - f.value) < 1.0
