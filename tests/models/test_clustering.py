"""The collapsed clustering model (MG+G): conditionals, Gibbs sweep, collapsed density, exact log-ML, BDMC."""

import itertools
import math
from dataclasses import dataclass, fields, replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

import bdmc
from bdmc.checks import conditional_consistency, geweke
from bdmc.models.clustering import Clustering, ClusteringHyper

TINY = Clustering(n=6, dim=2, k=3, sigma_theta=1.0, sigma_noise=0.7)
ROW_LAM = jnp.array([0.0, 0.5, 1.0, 0.0, 0.2, 1.0])
LAMS = {"0.3": 0.3, "1.0": 1.0, "per-row": ROW_LAM}
# Built once: the consistency check compiles once per conditional object and lam shape, so the scalar-lam
# cases share their compiled programs (lam is traced) instead of rebuilding the same conditional.
TINY_SITES = TINY.conditionals()


def _problem(model, seed=1):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    return data, latent


def _mvn_log_joint(model, z, y):
    """log p(z, y) from the marginal covariance sigma_n^2 I + sigma_theta^2 [z_i == z_j] of each column."""
    z, y = np.asarray(z), np.asarray(y)
    cov = model.sigma_noise**2 * np.eye(model.n) + model.sigma_theta**2 * (z[:, None] == z[None, :])
    mvn = stats.multivariate_normal(np.zeros(model.n), cov)
    return float(np.sum(np.asarray(model.log_weights)[z])) + sum(mvn.logpdf(y[:, j]) for j in range(model.dim))


# ----- 1. conditionals against the joint ------------------------------------------------------------------


@pytest.mark.parametrize("lam", list(LAMS), ids=list(LAMS))
def test_every_site_conditional_matches_the_collapsed_joint(lam, key):
    # Every site at the per-row weights (zero, fractional and unit weights at once), the first and last sites
    # at the scalar weights: each check compiles afresh, and all sites share their code.
    data, _ = _problem(TINY)
    for i in (range(TINY.n) if lam == "per-row" else (0, TINY.n - 1)):
        res = conditional_consistency(jax.random.fold_in(key, i), TINY, TINY_SITES[i], data, lam=LAMS[lam])
        assert res.passed, (res.name, res.worst)


@pytest.mark.parametrize("wrong", [{"sigma_noise": 0.7 * np.sqrt(1.1)}, {"sigma_theta": np.sqrt(1.1)}],
                         ids=["noise variance +10%", "prior variance +10%"])
def test_a_wrong_site_conditional_fails_the_consistency_check(wrong, key):
    data, _ = _problem(TINY)
    broken = replace(TINY, **wrong).site_conditional(2)
    res = conditional_consistency(key, TINY, broken, data, lam=1.0)
    assert not res.passed and res.worst > 1e3 * res.tol


def _sequential_sweep(model, key, latent, data, lam):
    """The sweep rebuilt from the tested site conditionals: z_i = argmax_c log p(z_i = c | rest) + Gumbel noise."""
    gumbel = np.asarray(jax.random.gumbel(key, (model.n, model.k)))
    z = latent["z"]
    for i in range(model.n):
        cond = model.site_conditional(i)
        values = jnp.arange(model.k, dtype=jnp.int32)
        log_probs = jax.vmap(lambda c: cond.log_prob({**latent, "z": z.at[i].set(c)}, data, lam))(values)
        z = z.at[i].set(int(np.argmax(np.asarray(log_probs) + gumbel[i])))
    return z


def test_the_scanned_sweep_is_the_site_conditionals_in_turn(key):
    # Same Gumbel noise, same draws: the incremental statistics of the scan equal recomputing them per site.
    data, latent = _problem(TINY)
    for k in jax.random.split(key, 2):
        np.testing.assert_array_equal(TINY.sweep(k, latent, data, ROW_LAM)["z"],
                                      _sequential_sweep(TINY, k, latent, data, ROW_LAM))


# ----- 2. Geweke ------------------------------------------------------------------------------------------

# Many dimensions with small centres: each assignment's log-odds are sums of D quadratic terms that nearly
# cancel, so a 10% error in the noise variance shifts them by about 0.1 * D * sigma_theta^2 / sigma_n^2 (about
# 2.5 nats here) while the posterior stays uncertain. Data are regenerated from the correct p(y | z), so only
# the marginal of z can drift; with this instance the wrong kernel's co-clustering fraction is off by about
# 12 standard errors (occupied clusters by about 9) at 2000 chains, against a threshold of 3.7.
GEWEKE = Clustering(n=8, dim=100, k=3, sigma_theta=0.5, sigma_noise=1.0)
GEWEKE_LAMS = {"0.3": 0.3, "1.0": 1.0, "per-row": jnp.array([0.0, 1.0, 1.0, 0.4, 0.0, 1.0, 1.0, 1.0])}


def _partition_statistics(model):
    def statistics(latent, data):
        z = latent["z"]
        same = (z[:, None] == z[None, :]).astype(data.dtype)
        occupied = jnp.sum(jnp.any(jax.nn.one_hot(z, model.k) > 0, axis=0)).astype(data.dtype)
        return {"occupied clusters": occupied, "co-clustered pairs": jnp.mean(same),
                "mean z": jnp.mean(z.astype(data.dtype)), "mean square data": jnp.mean(data**2),
                "log-likelihood": jnp.sum(model.log_likelihood(latent, data))}

    return statistics


# One statistics object (a fresh closure per call would defeat the Geweke program cache): the scalar-lam runs
# share one compiled simulation, lam being traced.
GEWEKE_STATISTICS = _partition_statistics(GEWEKE)


def _geweke(key, kernel, lam):
    return geweke(key, GEWEKE, kernel, lam=lam, num_samples=2000, num_steps=20, statistics=GEWEKE_STATISTICS)


@pytest.mark.parametrize("lam", list(GEWEKE_LAMS), ids=list(GEWEKE_LAMS))
def test_gibbs_sweep_passes_geweke(lam, key):
    res = _geweke(key, GEWEKE.default_kernel(), GEWEKE_LAMS[lam])
    assert res.passed, res.worst


def test_geweke_catches_a_sweep_with_noise_variance_ten_percent_off(key):
    broken = replace(GEWEKE, sigma_noise=GEWEKE.sigma_noise * np.sqrt(1.1)).default_kernel()
    res = _geweke(key, broken, 1.0)
    assert not res.passed
    assert abs(res.z[res.names.index("co-clustered pairs")]) > 2 * res.threshold


# ----- 3. the collapsed density ---------------------------------------------------------------------------


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


# ----- 4. exact log-ML and the sandwich ---------------------------------------------------------------------


def test_exact_log_marginal_matches_an_independent_enumeration():
    data, _ = _problem(TINY)
    joint = [_mvn_log_joint(TINY, np.array(z), data) for z in itertools.product(range(TINY.k), repeat=TINY.n)]
    assert float(TINY.exact_log_marginal(data)) == pytest.approx(logsumexp(joint), abs=1e-9)


def test_exact_log_marginal_refuses_big_instances():
    with pytest.raises(ValueError, match="10\\*\\*50"):
        Clustering().exact_log_marginal(np.zeros((50, 25)))


def test_sandwich_brackets_and_converges_to_the_enumerated_log_marginal(key):
    data, latent = _problem(TINY)
    exact = float(TINY.exact_log_marginal(data))
    res = bdmc.sandwich(key, TINY, data, latent, steps=[5, 50, 2000], num_chains=64, progress=False)
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


def _noise_off(conditional, factor):
    """A z conditional that (wrongly) scores with the noise variance multiplied by ``factor``."""
    shift = lambda latent: {**latent, "log_sigma_noise2": latent["log_sigma_noise2"] + np.log(factor)}  # noqa: E731

    def update(key, latent, data, lam):
        return {**latent, "z": conditional.update(key, shift(latent), data, lam)["z"]}

    return type(conditional)(conditional.name + " (noise +10%)", update,
                             lambda latent, data, lam: conditional.log_prob(shift(latent), data, lam))


def _any_hyper_latent(key):
    """Conditioning values for the identity, which must hold for any: cheaper to compile than prior draws."""
    k1, k2 = jax.random.split(key)
    log_vars = jax.random.normal(k2, (2,))
    return {"z": jax.random.randint(k1, (HYPER.n,), 0, HYPER.k, jnp.int32), "log_sigma_theta2": log_vars[0],
            "log_sigma_noise2": log_vars[1]}


ALL_SITES = tuple(range(HYPER.n))
HYPER_CONSISTENCY = [
    # Default: sites with weights 0, 0.5 and 1; the slow suite checks every site at every lam.
    pytest.param("per-row", (0, 1, 2), id="per-row-sites-0-1-2"),
    pytest.param("per-row", ALL_SITES, id="per-row-every-site", marks=pytest.mark.slow),
    pytest.param("0.3", ALL_SITES, id="0.3-every-site", marks=pytest.mark.slow),
    pytest.param("1.0", ALL_SITES, id="1.0-every-site", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("lam, sites", HYPER_CONSISTENCY)
def test_hyper_site_conditionals_match_the_collapsed_joint(lam, sites, key):
    data, _ = _problem(HYPER)
    for i in sites:
        res = conditional_consistency(jax.random.fold_in(key, i), HYPER, HYPER.site_conditional(i), data,
                                      lam=LAMS[lam], sample_latent=_any_hyper_latent)
        assert res.passed, (res.name, res.worst)
    broken = _noise_off(HYPER.site_conditional(2), 1.1)
    res = conditional_consistency(key, HYPER, broken, data, lam=LAMS[lam], sample_latent=_any_hyper_latent)
    assert not res.passed and res.worst > 1e3 * res.tol


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


# A noise-variance prior with a large shape leaves room for the tilt below at lam = 0.3.
HYPER_GEWEKE = ClusteringHyper(n=8, dim=3, k=3, noise_shape=11.0, noise_scale=10.0)


class _TiltedPrior:
    """Forward simulation for the Geweke test of a model whose noise variance is a latent, at lam != 1.

    Data come from the tempered likelihood normalized in y, p(y_i | x)^{lam_i} / c_i(x) with
    c_i = (2 pi sigma_n^2)^{D (1 - lam_i) / 2} lam_i^{-D/2}, which depends on sigma_n^2. For the joint's
    conditional of x to be f(x; lam) the prior must be tilted by prod_i c_i(x): an inverse gamma whose shape
    drops by D/2 sum_{lam_i > 0} (1 - lam_i). Rows with lam_i = 0 carry no data and no factor.
    """

    def __init__(self, model, lam):
        lam = np.broadcast_to(np.asarray(lam, float), (model.n,))
        self.model = model
        self.shape = model.noise_shape - 0.5 * model.dim * np.sum(np.where(lam > 0, 1 - lam, 0.0))
        assert self.shape > 1, "tilted noise prior must stay proper with a finite mean"

    def sample_prior(self, key):
        k1, k2 = jax.random.split(key)
        latent = self.model.sample_prior(k1)
        log_v = np.log(self.model.noise_scale) - jnp.log(jax.random.gamma(k2, self.shape))
        return {**latent, "log_sigma_noise2": log_v}

    def sample_data_tempered(self, key, latent, lam):
        return self.model.sample_data_tempered(key, latent, lam)


def _hyper_statistics(model):
    partition = _partition_statistics(model)

    def statistics(latent, data):
        out = partition(latent, data)
        # Inverse-gamma variances may lack moments: compare log scales, whose moments all exist.
        del out["mean square data"], out["log-likelihood"]
        out["log mean square data"] = jnp.log(jnp.mean(data**2))
        out["log sigma_theta^2"] = latent["log_sigma_theta2"]
        out["log sigma_noise^2"] = latent["log_sigma_noise2"]
        return out

    return statistics


def _hyper_geweke(key, kernel, lam):
    return geweke(key, _TiltedPrior(HYPER_GEWEKE, lam), kernel, lam=lam, num_samples=2000, num_steps=20,
                  statistics=_hyper_statistics(HYPER_GEWEKE))


@dataclass(frozen=True)
class _NoJacobian(ClusteringHyper):
    """Negative control: slice-samples the log-variances against the inverse-gamma density of v, not of log v."""

    def _log_variance_prior(self, log_t, log_n):
        return super()._log_variance_prior(log_t, log_n) - log_t - log_n


@pytest.mark.parametrize("lam", [pytest.param(k, marks=pytest.mark.slow) if k != "1.0" else k for k in GEWEKE_LAMS],
                         ids=list(GEWEKE_LAMS))
def test_hyper_kernel_passes_geweke(lam, key):
    res = _hyper_geweke(key, HYPER_GEWEKE.default_kernel(), GEWEKE_LAMS[lam])
    assert res.passed, res.worst


@pytest.mark.slow
def test_hyper_geweke_catches_a_missing_jacobian(key):
    # Dropping the Jacobian multiplies the variance targets by 1/v: each log-variance is pulled down by about
    # one unit of its prior shape per step, which the data resampling cannot undo.
    broken = _NoJacobian(**{f.name: getattr(HYPER_GEWEKE, f.name) for f in fields(ClusteringHyper)})
    res = _hyper_geweke(key, broken.default_kernel(), 1.0)
    assert not res.passed
    assert max(abs(res.z[res.names.index(n)]) for n in ("log sigma_theta^2", "log sigma_noise^2")) > 2 * res.threshold


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


# ----- 5. paper size ----------------------------------------------------------------------------------------


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
