"""``benchmarks/bracketing_mixture.py --prior``: every prior term of the benchmark (the collapsed model, the (Sigma,
mu) parts of the joints, the Gibbs conditionals, the VB updates) takes the chosen prior, checked against closed
forms written here from the prior's values on a small data set; a non-default prior writes its own files."""

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from bdmc.bracketing import Categorical, Dirichlet, InverseWishart, MeanField, MultivariateNormal
from bdmc.models.niw_mixture import NIWMixture

pytestmark = pytest.mark.float64

N_SMALL, K = 12, 3
# The benchmark's priors, and one more that changes every hyperparameter (d included, which none of them changes).
CASES = ["default", "dir1", "diffuse-mean", "broad-cov", "other"]
OTHER = {"tau": 0.5, "df": 7.0, "scale": 2.0, "alpha": 0.3}


@pytest.fixture(scope="module")
def bm():
    """The benchmark script as a module; its import switches off asynchronous CPU dispatch, restored after."""
    async_dispatch = jax.config.read("jax_cpu_enable_async_dispatch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bracketing_mixture
    yield bracketing_mixture
    jax.config.update("jax_cpu_enable_async_dispatch", async_dispatch)


@pytest.fixture(scope="module")
def small(bm):
    """Twelve points and a labelling that leaves no component empty."""
    x = bm.simulate(jax.random.key(3), n=N_SMALL)
    z = jnp.asarray(np.arange(N_SMALL) % K, jnp.int32)
    return x, z


def _model(bm, name):
    """The model a case's prior gives, and the prior's values."""
    if name == "other":
        return NIWMixture(n=N_SMALL, dim=2, k=K, **OTHER), OTHER
    return bm.mixture_model(K, n=N_SMALL, prior=name), bm.PRIORS[name]


def _alpha(values, k):
    return 1.0 / k if values["alpha"] is None else values["alpha"]


def _log_marginal_sequential(x, tau, df, scale):
    """log p(x_1..x_m) of one NIW cluster as a product of multivariate-t predictives (none of the script's algebra)."""
    m_, p = x.shape
    total, S = 0.0, scale * np.eye(p)
    for i in range(m_):
        n = i
        xbar = x[:n].mean(0) if n else np.zeros(p)
        kap, nu = tau + n, df + n
        mean = n * xbar / kap
        d = x[:n] - xbar
        Sn = S + d.T @ d + tau * n / kap * np.outer(xbar, xbar)
        dof = nu - p + 1
        total += stats.multivariate_t(mean, Sn * (kap + 1) / (kap * dof), df=dof).logpdf(x[i])
    return total


def test_every_prior_is_named_recorded_and_written_apart(bm):
    names = list(bm.PRIORS)
    assert names[0] == "default" and len(names) == 4
    assert len({tuple(v.items()) for v in bm.PRIORS.values()}) == len(names)  # no two priors alike
    assert bm.PRIORS["default"] == {"tau": 0.1, "df": 4.0, "scale": 1.0, "alpha": None}  # the published run's
    files = set()
    for name in names:
        args = bm.parse_args(["--prior", name])
        settings = bm.run_settings(args)
        values = bm.PRIORS[name]
        assert settings["prior"] == name
        assert settings["prior_values"] == {**values, "alpha": "1/k" if values["alpha"] is None else values["alpha"]}
        model = bm.mixture_model(5, prior=name)
        assert (model.tau, model.df, model.scale, model.concentration) == (
            values["tau"], values["df"], values["scale"], _alpha(values, 5))
        files.add(bm.output_name("mixture_table2", name))
    assert bm.parse_args([]).prior == "default" and bm.output_name("mixture_table2", "default") == "mixture_table2"
    assert len(files) == len(names)


@pytest.mark.parametrize("name", CASES)
def test_collapsed_joint_is_the_priors_closed_form(bm, small, name):
    """log p(D, z) = Dirichlet-multinomial mass + per-cluster NIW marginals, from the prior's values."""
    x, z = small
    model, v = _model(bm, name)
    a = _alpha(v, K)
    counts = np.bincount(np.asarray(z), minlength=K)
    log_pz = gammaln(K * a) - gammaln(N_SMALL + K * a) + np.sum(gammaln(counts + a) - gammaln(a))
    X, Z = np.asarray(x), np.asarray(z)
    log_px = sum(_log_marginal_sequential(X[j == Z], v["tau"], v["df"], v["scale"]) for j in range(K))
    got = float(bm.log_joint_z(model, x)({"z": z}))
    assert got == pytest.approx(log_pz + log_px, abs=1e-9)
    if name != "default":  # the prior changes log p(D, z): the option is not a no-op
        assert abs(got - float(bm.log_joint_z(bm.mixture_model(K, n=N_SMALL), x)({"z": z}))) > 0.1


@pytest.mark.parametrize("name", CASES)
def test_joints_and_gibbs_conditionals_share_the_prior(bm, small, name):
    """log p(D, z, ...) - log p(... | z, D) = log p(D, z) at arbitrary (pi, mu, Sigma): the conditionals that the
    Gibbs sampler draws from are the posteriors of the prior that the joints use."""
    x, z = small
    model, v = _model(bm, name)
    alpha_post, df_post, scale_post, mean, kap = bm.niw_conditional(model, x, z)
    counts = np.bincount(np.asarray(z), minlength=K)
    np.testing.assert_allclose(alpha_post, _alpha(v, K) + counts)
    np.testing.assert_allclose(df_post, v["df"] + counts)
    np.testing.assert_allclose(kap, v["tau"] + counts)
    Sig = jnp.asarray([[[1.3, 0.2], [0.2, 0.7]], [[0.5, -0.1], [-0.1, 2.0]], [[1.0, 0.4], [0.4, 0.9]]])
    mu = jnp.asarray([[0.3, -1.0], [2.0, 0.5], [-1.5, 1.2]])
    th = {"z": z, "mu": mu, "Sigma": Sig}
    log_pz_d = float(bm.log_joint_z(model, x)(th))
    post_sigma = sum(float(bm.log_iw(Sig[j], df_post[j], scale_post[j])) for j in range(K))
    post_mu = sum(stats.multivariate_normal(np.asarray(mean[j]), np.asarray(Sig[j]) / float(kap[j])).logpdf(mu[j])
                  for j in range(K))
    assert float(bm.log_joint_z_sigma(model, x)(th)) - post_sigma == pytest.approx(log_pz_d, abs=1e-9)
    assert float(bm.log_joint_full(model, x)(th)) - post_sigma - post_mu == pytest.approx(log_pz_d, abs=1e-9)
    # pi: p(z) = p(z | pi) p(pi) / p(pi | z) with the prior's own concentration
    pi = np.array([0.2, 0.5, 0.3])
    prior_pi = stats.dirichlet(np.full(K, _alpha(v, K))).logpdf(pi)
    via_pi = np.sum(counts * np.log(pi)) + prior_pi - stats.dirichlet(np.asarray(alpha_post)).logpdf(pi)
    assert via_pi == pytest.approx(float(model.log_prior({"z": z})), abs=1e-9)


@pytest.mark.parametrize("name", CASES)
def test_vb_updates_use_the_prior(bm, small, name):
    x, _ = small
    model, v = _model(bm, name)
    r = jax.random.dirichlet(jax.random.key(0), jnp.ones(K), (N_SMALL,))
    q = MeanField({"pi": Dirichlet(jnp.ones(K)), "z": Categorical(r),
                   "mu": MultivariateNormal(jnp.zeros((K, 2)), jnp.zeros((K, 2, 2))),
                   "Sigma": InverseWishart(jnp.full((K,), 5.0), jnp.tile(jnp.eye(2), (K, 1, 1)))})
    up = bm.cavi_updates(model, x)
    Nk = np.asarray(r.sum(0))
    np.testing.assert_allclose(up["pi"](q).alpha, _alpha(v, K) + Nk)
    np.testing.assert_allclose(up["mu"](q).mean, np.asarray(r.T @ x) / (v["tau"] + Nk)[:, None])
    sig = up["Sigma"](q)  # with q(mu) a point mass at 0 the scatter is sum_i r_ij x_i x_i^T and the prior term is 0
    np.testing.assert_allclose(sig.df, v["df"] + Nk + 1.0)
    scat = np.einsum("nk,na,nb->kab", np.asarray(r), np.asarray(x), np.asarray(x))
    np.testing.assert_allclose(sig.scale, v["scale"] * np.eye(2) + scat, rtol=1e-12)
    init = bm.vb_init(jax.random.key(1), model, x)
    np.testing.assert_allclose(init["Sigma"].scale[0], v["scale"] * np.eye(2))
    assert math.isfinite(float(jnp.sum(init["Sigma"].df)))
