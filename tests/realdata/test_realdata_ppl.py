"""The real-data regressions in PyMC and Stan against the NumPyro programs, and conditional prior draws.

The three implementations put the variances on the log scale, so their log priors (with log-Jacobians) and
log-likelihoods agree at the same unconstrained point up to rounding. ``sample_prior_given`` is checked in
every adapter: the fixed values come back and the free parameters follow the exact conditional prior
(Kolmogorov-Smirnov tests at fixed keys, each with a negative control that must be rejected). Tests that
compile a Stan program (a minute or two the first time) are marked slow.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
import bdmc.realdata

pytest.importorskip("numpyro")

X = np.random.default_rng(0).normal(size=(15, 4))  # N = 15 cases, K = 4 inputs
K = X.shape[1]
ND = 240  # conditional draws per case: 240 * (K + 1) = 1200 pooled coefficients
P_PASS, P_FAIL = 1e-3, 1e-6  # KS p-value a correct sampler clears / a wrong reference must fall below
LINEAR_NAMES = ("sigma_sq", "scale_sq", "alpha", "beta")
LOGISTIC_NAMES = ("scale_sq", "alpha", "beta")
NAMES = {"linear": LINEAR_NAMES, "logistic": LOGISTIC_NAMES}
# (model, fixed values): every free parameter's conditional is known in closed form.
CONDITIONAL_CASES = [
    ("linear", {"sigma_sq": 0.8, "scale_sq": 2.0}),
    ("linear", {"scale_sq": 0.5}),
    ("logistic", {"scale_sq": 2.0}),
]


def _pymc():
    pytest.importorskip("pymc")
    from bdmc.realdata import pymc_models

    return pymc_models


# --------------------------------------------------------------------------------------- fixtures, helpers

@pytest.fixture(scope="module")
def numpyro_models():
    return {"linear": bdmc.realdata.linear_regression(X), "logistic": bdmc.realdata.logistic_regression(X)}


@pytest.fixture(scope="module")
def pymc_models():
    module = _pymc()
    return {"linear": module.linear_regression(X), "logistic": module.logistic_regression(X)}


def perturbed_numpyro(kind, factor=1.1):
    """The NumPyro program with the coefficients' prior variance ``factor * scale_sq`` (negative control)."""
    import numpyro
    import numpyro.distributions as dist

    def program(x, y=None):
        if kind == "linear":
            sigma_sq = numpyro.sample("sigma_sq", dist.InverseGamma(1.0, 1.0))
        scale_sq = numpyro.sample("scale_sq", dist.InverseGamma(1.0, 1.0))
        alpha = numpyro.sample("alpha", dist.Normal(0.0, jnp.sqrt(factor * scale_sq)))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(factor * scale_sq)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            if kind == "linear":
                numpyro.sample("y", dist.Normal(x @ beta + alpha, jnp.sqrt(sigma_sq)), obs=y)
            else:
                numpyro.sample("y", dist.Bernoulli(logits=x @ beta + alpha), obs=y)

    return bdmc.ppl.from_numpyro(program, X, observed="y")


def random_points(kind, n, seed):
    """Unconstrained latents in NumPyro's format (variances on the log scale)."""
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(n):
        u = {"scale_sq": rng.normal(), "alpha": 1.5 * rng.normal(), "beta": 1.5 * rng.normal(size=K)}
        if kind == "linear":
            u["sigma_sq"] = rng.normal()
        points.append({k: jnp.asarray(v) for k, v in u.items()})
    return points


def random_data(kind, seed):
    rng = np.random.default_rng(seed)
    y = 2.0 * rng.normal(size=X.shape[0]) if kind == "linear" else rng.integers(0, 2, X.shape[0])
    return {"y": jnp.asarray(y)}


def to_pymc(u):
    return {(f"{n}_log__" if n in ("sigma_sq", "scale_sq") else n): v for n, v in u.items()}


def to_stan(u, kind):
    return jnp.concatenate([jnp.atleast_1d(u[n]) for n in NAMES[kind]])


def check_conditional(draws, fixed, kind):
    """Fixed values exact; alpha, beta ~ N(0, scale_sq) pooled; a free sigma_sq ~ IG(1, 1); negative controls.

    ``draws`` maps each parameter name to its ND natural-space draws.
    """
    for name, value in fixed.items():
        np.testing.assert_allclose(draws[name], value, rtol=1e-15, atol=0)
    scale_sq = fixed["scale_sq"]
    coefficients = np.concatenate([np.asarray(draws["alpha"])[:, None], np.asarray(draws["beta"])], axis=1).ravel()
    assert coefficients.size == ND * (K + 1)
    assert stats.kstest(coefficients, stats.norm(scale=np.sqrt(scale_sq)).cdf).pvalue > P_PASS
    # Negative control: the standard deviation taken as scale_sq rather than its square root (a factor sqrt(2)).
    assert stats.kstest(coefficients, stats.norm(scale=scale_sq).cdf).pvalue < P_FAIL
    if kind == "linear" and "sigma_sq" not in fixed:
        sigma_sq = np.asarray(draws["sigma_sq"])
        assert stats.kstest(sigma_sq, stats.invgamma(1.0, scale=1.0).cdf).pvalue > P_PASS
        assert stats.kstest(sigma_sq, stats.invgamma(1.0, scale=2.0).cdf).pvalue < P_FAIL  # wrong rate


def stack(dicts):
    return {n: np.stack([np.asarray(d[n]) for d in dicts]) for n in dicts[0]}


# --------------------------------------------------------------------------------------- PyMC (fast)

@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_pymc_log_prior_and_likelihood_equal_numpyro(kind, numpyro_models, pymc_models):
    reference, model = numpyro_models[kind], pymc_models[kind]
    names = tuple(n + "_log__" if n in ("sigma_sq", "scale_sq") else n for n in NAMES[kind])
    assert model.latent_names == names and model.observed == ("y",)
    assert set(reference.latent_sites) == set(NAMES[kind])
    data = random_data(kind, 1)
    wrong = perturbed_numpyro(kind)
    gaps = []
    for u in random_points(kind, 6, seed=2):
        prior = model.log_prior(to_pymc(u))
        np.testing.assert_allclose(prior, reference.log_prior(u), rtol=1e-12, atol=1e-10)
        cases = model.log_likelihood(to_pymc(u), data)
        assert cases.shape == (X.shape[0],)
        np.testing.assert_allclose(cases, reference.log_likelihood(u, data), rtol=1e-12, atol=1e-10)
        gaps.append(float(prior - wrong.log_prior(u)))
    # Negative control: the same comparison sees a prior variance 10% off.
    assert max(abs(g) for g in gaps) > 0.05
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(gaps, 0.0, atol=1e-10)


@pytest.mark.parametrize("kind, fixed", CONDITIONAL_CASES)
def test_pymc_sample_prior_given_is_the_exact_conditional(kind, fixed, pymc_models):
    model = pymc_models[kind]
    keys = jax.random.split(jax.random.key(11), ND)
    latents = [model.sample_prior_given(k, fixed) for k in keys]
    assert set(latents[0]) == set(model.latent_names)
    for latent in latents[:5]:  # the fixed values come back through PyMC's own backward transform
        back = model.constrain(latent)
        for name, value in fixed.items():
            np.testing.assert_allclose(back[name], value, rtol=1e-15, atol=0)
    draws = stack(latents)
    natural = {n.removesuffix("_log__"): (np.exp(v) if n.endswith("_log__") else v) for n, v in draws.items()}
    check_conditional(natural, fixed, kind)
    # Same key, same draw.
    again = model.sample_prior_given(keys[0], fixed)
    for name in model.latent_names:
        np.testing.assert_array_equal(again[name], latents[0][name])


def test_pymc_sample_prior_given_refuses_unknown_names_and_free_ancestors(pymc_models):
    model = pymc_models["linear"]
    with pytest.raises(bdmc.BDMCError, match=r"cannot fix \['gamma', 'tau'\].*free variables are "
                                             r"\['sigma_sq', 'scale_sq', 'alpha', 'beta'\]"):
        model.sample_prior_given(jax.random.key(0), {"tau": 1.0, "scale_sq": 1.0, "gamma": 2.0})
    with pytest.raises(bdmc.BDMCError, match=r"\['scale_sq_log__'\] are value-variable names"):
        model.sample_prior_given(jax.random.key(0), {"scale_sq_log__": 0.0})
    with pytest.raises(bdmc.BDMCError, match=r"while \['scale_sq'\] stay free"):
        model.sample_prior_given(jax.random.key(0), {"beta": np.zeros(K)})
    with pytest.raises(bdmc.BDMCError, match=r"'beta' must have shape \(4,\)"):
        model.sample_prior_given(jax.random.key(0), {"scale_sq": 1.0, "beta": np.zeros(3)})
    with pytest.raises(bdmc.BDMCError, match=r"\['scale_sq'\] lie outside the support"):
        model.sample_prior_given(jax.random.key(0), {"scale_sq": -1.0})


def test_pymc_builders_do_not_import_pymc_at_bdmc_import():
    import subprocess
    import sys

    code = "import sys, bdmc, bdmc.realdata, bdmc.realdata.pymc_models, bdmc.realdata.stan_models; " \
           "print('pymc' in sys.modules, 'stan' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_stan_programs_are_the_shipped_files():
    """Each ``*_PROGRAM`` is a package-data file read as is (the compile caches key on the text), none left over."""
    import importlib.resources

    from bdmc.realdata import stan_models

    files = {f.name: f.read_text() for f in (importlib.resources.files("bdmc.realdata") / "stan").iterdir()
             if f.name.endswith(".stan")}
    programs = {name: getattr(stan_models, name) for name in dir(stan_models) if name.endswith("_PROGRAM")}
    assert len(programs) == len(files) == 5
    assert sorted(programs.values()) == sorted(files.values())
    assert all("bdmc_lambda *" in program for program in programs.values())


# --------------------------------------------------------------------------------------- NumPyro (fast)

@pytest.mark.parametrize("kind, fixed", CONDITIONAL_CASES)
def test_numpyro_sample_prior_given_is_the_exact_conditional(kind, fixed, numpyro_models):
    model = numpyro_models[kind]
    keys = jax.random.split(jax.random.key(12), ND)
    latents = [model.sample_prior_given(k, fixed) for k in keys]
    for latent in latents[:5]:
        back = model.constrain(latent)
        for name, value in fixed.items():
            np.testing.assert_allclose(back[name], value, rtol=1e-15, atol=0)
    draws = stack(latents)  # real-valued sites are unconstrained as themselves; variances are exp'd
    natural = {n: (np.exp(v) if n in ("sigma_sq", "scale_sq") else v) for n, v in draws.items()}
    check_conditional(natural, fixed, kind)


def test_numpyro_sample_prior_given_refuses_unknown_names(numpyro_models):
    with pytest.raises(bdmc.BDMCError, match=r"cannot fix \['sigma_sq'\].*latent sites are "
                                             r"\['scale_sq', 'alpha', 'beta'\]"):
        numpyro_models["logistic"].sample_prior_given(jax.random.key(0), {"sigma_sq": 1.0})


# --------------------------------------------------------------------------------------- Stan simulators (fast)

def _simulators():
    from bdmc.realdata import stan_models

    return {"linear": stan_models.linear_regression_simulator(X),
            "logistic": stan_models.logistic_regression_simulator(X)}


@pytest.mark.parametrize("kind, fixed", CONDITIONAL_CASES)
def test_stan_simulators_draw_the_exact_conditional(kind, fixed):
    simulate = _simulators()[kind]
    draws = []
    for seed in range(ND):
        params, obs = simulate(np.random.default_rng([13, seed]), dict(fixed))
        assert set(params) == set(NAMES[kind]) and obs["y"].shape == (X.shape[0],)
        draws.append(params)
    check_conditional(stack(draws), fixed, kind)


def test_stan_simulators_prior_and_scale_given_coefficients():
    """No params: scale_sq ~ IG(1, 1); coefficients fixed: scale_sq ~ IG(1 + (K+1)/2, 1 + |c|^2 / 2)."""
    simulate = _simulators()["linear"]
    n = 1000
    prior = np.array([simulate(np.random.default_rng([14, s]))[0]["scale_sq"] for s in range(n)])
    assert stats.kstest(prior, stats.invgamma(1.0, scale=1.0).cdf).pvalue > P_PASS
    assert stats.kstest(prior, stats.invgamma(1.0, scale=1.5).cdf).pvalue < P_FAIL
    c = {"alpha": 0.4, "beta": np.array([1.0, -0.5, 2.0, 0.3])}
    ss = 0.4**2 + np.sum(c["beta"] ** 2)
    given = np.array([simulate(np.random.default_rng([15, s]), dict(c))[0]["scale_sq"] for s in range(n)])
    posterior = stats.invgamma(1.0 + 0.5 * (K + 1), scale=1.0 + 0.5 * ss)
    assert stats.kstest(given, posterior.cdf).pvalue > P_PASS
    assert stats.kstest(given, stats.invgamma(1.0, scale=1.0).cdf).pvalue < P_FAIL  # the prior is not it


def test_stan_simulators_draw_observations_given_the_parameters():
    sims = _simulators()
    params = {"sigma_sq": 0.7, "scale_sq": 1.0, "alpha": 0.3, "beta": np.array([1.0, -1.0, 0.5, 0.0])}
    mean = X @ params["beta"] + params["alpha"]
    noise = np.concatenate([(sims["linear"](np.random.default_rng([16, s]), dict(params))[1]["y"] - mean)
                            for s in range(300)])
    assert stats.kstest(noise, stats.norm(scale=np.sqrt(0.7)).cdf).pvalue > P_PASS
    assert stats.kstest(noise, stats.norm(scale=np.sqrt(2 * 0.7)).cdf).pvalue < P_FAIL  # variance doubled
    logistic = {n: params[n] for n in LOGISTIC_NAMES}
    n = 2000
    ys = np.stack([sims["logistic"](np.random.default_rng([17, s]), dict(logistic))[1]["y"] for s in range(n)])
    assert ys.dtype == np.int64 and set(np.unique(ys)) <= {0, 1}
    p = 1.0 / (1.0 + np.exp(-mean))
    z = (ys.sum(axis=0) - n * p) / np.sqrt(n * p * (1 - p))  # one z-score per case
    assert stats.kstest(z, stats.norm.cdf).pvalue > P_PASS and np.max(np.abs(z)) < 4.0
    p_wrong = 1.0 / (1.0 + np.exp(-1.2 * mean))  # logits 20% off
    z_wrong = (ys.sum(axis=0) - n * p_wrong) / np.sqrt(n * p_wrong * (1 - p_wrong))
    assert np.max(np.abs(z_wrong)) > 6.0


def test_stan_simulators_refuse_unknown_names():
    with pytest.raises(bdmc.BDMCError, match=r"cannot fix \['sigma_sq'\]"):
        _simulators()["logistic"](np.random.default_rng(0), {"sigma_sq": 1.0})


# --------------------------------------------------------------------------------------- Stan adapter (fast)

class _FakeLinearProgram:
    """Stands in for the compiled linear regression: Stan's unconstraining map, nothing else."""

    @staticmethod
    def transform_inits(data, many):
        return [np.concatenate([np.log([p["sigma_sq"], p["scale_sq"]]), [p["alpha"]], p["beta"]]) for p in many]


def _stan_linear_with_fake_build(simulate=None):
    pytest.importorskip("stan")
    from bdmc.ppl import stan as stan_adapter
    from bdmc.realdata import stan_models

    model = stan_models.linear_regression(X)
    if simulate is not None:
        model.simulate_fn = simulate
    fake = _FakeLinearProgram()
    model._built = stan_adapter.BuiltProgram(stan=lambda name, *args: getattr(fake, name)(*args),
                                       shapes={"sigma_sq": (), "scale_sq": (), "alpha": (), "beta": (K,)}, dim=K + 3)
    return model


def test_stan_sample_prior_given_keeps_the_fixed_values_and_draws_the_rest():
    model = _stan_linear_with_fake_build()
    fixed = {"sigma_sq": 0.8, "scale_sq": 2.0}
    x = model.sample_prior_given(jax.random.key(3), fixed)
    assert x.shape == (K + 3,) and x.dtype == jnp.float64
    np.testing.assert_array_equal(x[:2], np.log([0.8, 2.0]))
    # The draw is the simulator's with the key's rng: the same key gives the same vector.
    np.testing.assert_array_equal(model.sample_prior_given(jax.random.key(3), fixed), x)
    assert not np.array_equal(model.sample_prior_given(jax.random.key(4), fixed), x)


def test_stan_sample_prior_given_errors():
    model = _stan_linear_with_fake_build()
    with pytest.raises(bdmc.BDMCError, match=r"cannot fix \['gamma'\]: not parameters.*"
                                             r"\['sigma_sq', 'scale_sq', 'alpha', 'beta'\]"):
        model.sample_prior_given(jax.random.key(0), {"gamma": 1.0, "scale_sq": 1.0})
    with pytest.raises(bdmc.BDMCError, match=r"'beta' must have shape \(4,\)"):
        model.sample_prior_given(jax.random.key(0), {"scale_sq": 1.0, "beta": np.zeros(3)})
    simulate = model.simulate_fn

    def ignores_params(rng, params=None):  # draws everything from the prior whatever it is given
        return simulate(rng)

    with pytest.raises(bdmc.BDMCError, match=r"changed the fixed parameter\(s\) \['scale_sq'\]"):
        _stan_linear_with_fake_build(ignores_params).sample_prior_given(jax.random.key(0), {"scale_sq": 1.0})
    no_simulator = _stan_linear_with_fake_build()
    no_simulator.simulate_fn = None
    with pytest.raises(bdmc.BDMCError, match="sample_prior_given needs a simulator"):
        no_simulator.sample_prior_given(jax.random.key(0), {"scale_sq": 1.0})


def test_stan_unknown_names_are_refused_before_any_compile():
    pytest.importorskip("stan")
    from bdmc.realdata import stan_models

    model = stan_models.logistic_regression(X)
    with pytest.raises(bdmc.BDMCError, match=r"cannot fix \['sigma_sq'\].*\['scale_sq', 'alpha', 'beta'\]"):
        model.sample_prior_given(jax.random.key(0), {"sigma_sq": 1.0})
    assert model._built is None


# --------------------------------------------------------------------------------------- Stan compiled (slow)

@pytest.fixture(scope="module")
def stan_models():
    pytest.importorskip("stan")
    from bdmc.realdata import stan_models as module

    return {"linear": module.linear_regression(X), "logistic": module.logistic_regression(X)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_stan_log_prior_and_likelihood_equal_numpyro(kind, numpyro_models, stan_models):
    reference, model = numpyro_models[kind], stan_models[kind]
    assert model.parameter_names == NAMES[kind] and model.dim == K + len(NAMES[kind]) - 1
    assert model.normalized
    data = random_data(kind, 1)
    wrong = perturbed_numpyro(kind)
    gaps = []
    for u in random_points(kind, 6, seed=2):
        x = to_stan(u, kind)
        prior = model.log_prior(x)
        np.testing.assert_allclose(prior, reference.log_prior(u), rtol=1e-12, atol=1e-10)
        likelihood = model.log_likelihood(x, data)  # Stan reports the sum over cases as one term
        assert likelihood.shape == (1,)
        np.testing.assert_allclose(likelihood[0], jnp.sum(reference.log_likelihood(u, data)), rtol=1e-12, atol=1e-10)
        gaps.append(float(prior - wrong.log_prior(u)))
    assert max(abs(g) for g in gaps) > 0.05  # negative control: a prior variance 10% off is seen
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(gaps, 0.0, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("kind, fixed", CONDITIONAL_CASES)
def test_stan_sample_prior_given_is_the_exact_conditional(kind, fixed, stan_models):
    model = stan_models[kind]
    keys = jax.random.split(jax.random.key(18), ND)
    xs = np.stack([np.asarray(model.sample_prior_given(k, fixed)) for k in keys])
    assert xs.shape == (ND, model.dim)
    for x in xs[:5]:  # the fixed values come back through Stan's own constraining transform
        back = model.constrain(x)
        for name, value in fixed.items():
            np.testing.assert_allclose(back[name], value, rtol=1e-15, atol=0)
    columns = dict(zip(NAMES[kind], range(len(NAMES[kind])), strict=False))
    natural = {n: np.exp(xs[:, i]) for n, i in columns.items() if n in ("sigma_sq", "scale_sq")}
    natural["alpha"], natural["beta"] = xs[:, columns["alpha"]], xs[:, columns["beta"]:]
    check_conditional(natural, fixed, kind)


# --------------------------------------------------------------------------------------- the other three models
# Matrix factorization, AR(1) and the mixture in Stan against their NumPyro programs. Small sizes: the data are
# Stan data, so the same three compiled programs serve the real data sets. The mixture has K = 3 components
# so that its simplex's two unconstrained coordinates also test that both PPLs use the same stick-breaking.

MF_SHAPE, MF_DIM = (4, 5), 2
MF_CELLS = np.array(sorted(np.random.default_rng(3).choice(20, size=12, replace=False)))
MF_ROWS, MF_COLS = MF_CELLS // 5, MF_CELLS % 5
SERIES = np.cumsum(np.random.default_rng(4).normal(size=13))
MIX_N, MIX_D, MIX_K = 10, 2, 3
OTHER_NAMES = {"mf": ("scale_u_sq", "scale_v_sq", "sigma_sq", "U", "V"), "ar1": ("alpha", "beta", "sigma_sq"),
               "mixture": ("scale_sq", "sigma_sq", "mu", "pi")}
OTHER_SHAPES = {"mf": {"U": (MF_SHAPE[0], MF_DIM), "V": (MF_DIM, MF_SHAPE[1])}, "ar1": {},
                "mixture": {"mu": (MIX_K, MIX_D), "pi": (MIX_K - 1,)}}  # pi: its unconstrained coordinates


def _other_builders(module):
    return {"mf": lambda: module.matrix_factorization(MF_ROWS, MF_COLS, shape=MF_SHAPE, latent_dim=MF_DIM),
            "ar1": lambda: module.ar1(SERIES),
            "mixture": lambda: module.gaussian_mixture(MIX_N, dim=MIX_D, num_components=MIX_K)}


def other_points(kind, n, seed):
    """Unconstrained latents in NumPyro's format: every coordinate a standard normal."""
    rng = np.random.default_rng(seed)
    return [{name: jnp.asarray(rng.normal(size=OTHER_SHAPES[kind].get(name, ()))) for name in OTHER_NAMES[kind]}
            for _ in range(n)]


def other_data(kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "mf":
        return {"ratings": jnp.asarray(2.0 * rng.normal(size=MF_ROWS.size))}
    if kind == "ar1":
        return {"y": jnp.asarray(SERIES[1:] + 0.3 * rng.normal(size=SERIES.size - 1))}
    return {"y": jnp.asarray(2.0 * rng.normal(size=(MIX_N, MIX_D)))}


def other_to_stan(u):
    """Stan's unconstrained vector: the sites in NumPyro's order, matrices column-major."""
    return jnp.concatenate([jnp.ravel(jnp.asarray(v).T) for v in u.values()])


@pytest.fixture(scope="module")
def other_numpyro_models():
    from bdmc.realdata import models

    return {k: build() for k, build in _other_builders(models).items()}


@pytest.fixture(scope="module")
def other_stan_models():
    pytest.importorskip("stan")
    from bdmc.realdata import stan_models as module

    return {k: build() for k, build in _other_builders(module).items()}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mf", "ar1", "mixture"])
def test_stan_other_models_log_prior_and_likelihood_equal_numpyro(kind, other_numpyro_models, other_stan_models):
    reference, model = other_numpyro_models[kind], other_stan_models[kind]
    assert model.parameter_names == OTHER_NAMES[kind] and model.normalized
    assert tuple(reference.latent_sites) == OTHER_NAMES[kind]
    data = other_data(kind, 1)
    priors, likelihoods = [], []
    for u in other_points(kind, 6, seed=2):
        x = other_to_stan(u)
        assert x.shape == (model.dim,)
        prior = model.log_prior(x)
        np.testing.assert_allclose(prior, reference.log_prior(u), rtol=1e-12, atol=1e-10)
        likelihood = model.log_likelihood(x, data)  # one term: the sum over the data cases
        assert likelihood.shape == (1,)
        np.testing.assert_allclose(likelihood[0], jnp.sum(reference.log_likelihood(u, data)), rtol=1e-12, atol=1e-10)
        priors.append(float(prior))
        likelihoods.append(float(likelihood[0]))
    # The points differ enough that an equality by accident (a constant, a term left out) would show.
    assert np.ptp(priors) > 1.0 and np.ptp(likelihoods) > 1.0
    np.testing.assert_allclose(model.constrain(other_to_stan(u))[OTHER_NAMES[kind][0]],
                               reference.constrain(u)[OTHER_NAMES[kind][0]], rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("kind, fixed", [
    ("mf", {"scale_u_sq": 0.7, "sigma_sq": 0.2}), ("ar1", {"beta": 0.9}),
    ("mixture", {"sigma_sq": 0.3, "pi": np.array([0.2, 0.5, 0.3])})])
def test_stan_other_models_sample_prior_given_keeps_the_fixed_values(kind, fixed, other_stan_models):
    model = other_stan_models[kind]
    x = model.sample_prior_given(jax.random.key(5), fixed)
    assert x.shape == (model.dim,)
    back = model.constrain(x)
    for name, value in fixed.items():
        np.testing.assert_allclose(back[name], value, rtol=1e-12, atol=1e-15)
    _, obs = model.simulate_fn(np.random.default_rng(6), back)
    model.check_data(obs)


def _other_simulators():
    from bdmc.realdata import stan_models as sm

    return {"mf": sm.matrix_factorization_simulator(MF_ROWS, MF_COLS, shape=MF_SHAPE, latent_dim=MF_DIM),
            "ar1": sm.ar1_simulator(SERIES[:-1]),
            "mixture": sm.gaussian_mixture_simulator(MIX_N, dim=MIX_D, num_components=MIX_K)}


@pytest.mark.parametrize("kind, variance, factor", [("mf", "scale_u_sq", "U"), ("mf", "scale_v_sq", "V"),
                                                    ("mixture", "scale_sq", "mu")])
def test_stan_other_simulators_draw_a_variance_given_its_factor_conjugately(kind, variance, factor):
    """A free IG(1, 1) variance given its fixed N(0, variance) factor c: IG(1 + |c| / 2, 1 + |c|^2 / 2)."""
    simulate = _other_simulators()[kind]
    c = 0.8 * np.random.default_rng(7).normal(size=OTHER_SHAPES[kind][factor])
    draws = np.array([simulate(np.random.default_rng([19, s]), {factor: c})[0][variance] for s in range(800)])
    posterior = stats.invgamma(1.0 + 0.5 * c.size, scale=1.0 + 0.5 * np.sum(c**2))
    assert stats.kstest(draws, posterior.cdf).pvalue > P_PASS
    assert stats.kstest(draws, stats.invgamma(1.0, scale=1.0).cdf).pvalue < P_FAIL  # the prior is not it


def test_stan_other_simulators_draw_the_priors_and_observations():
    sims = _other_simulators()
    n = 800
    ar = [sims["ar1"](np.random.default_rng([20, s])) for s in range(n)]
    beta = np.array([p["beta"] for p, _ in ar])
    assert stats.kstest(beta, stats.norm(1.0, 0.1).cdf).pvalue > P_PASS
    assert stats.kstest(beta, stats.norm(1.0, 0.1 ** 0.5).cdf).pvalue < P_FAIL  # 0.1 read as a variance
    residual = np.concatenate([y["y"] - p["alpha"] - p["beta"] * SERIES[:-1] for p, y in ar[:200]])
    sigma = np.repeat([np.sqrt(p["sigma_sq"]) for p, _ in ar[:200]], SERIES.size - 1)
    assert stats.kstest(residual / sigma, stats.norm.cdf).pvalue > P_PASS
    fixed = {"sigma_sq": 0.01, "mu": np.array([[-5.0, 0.0], [0.0, 0.0], [5.0, 5.0]]), "pi": np.array([0.2, 0.5, 0.3])}
    ys = np.concatenate([sims["mixture"](np.random.default_rng([21, s]), dict(fixed))[1]["y"] for s in range(n)])
    counts = np.array([np.sum(np.all(np.abs(ys - m) < 0.5, axis=1)) for m in fixed["mu"]])
    assert counts.sum() == ys.shape[0]  # every point sits at its component's mean
    z = (counts - ys.shape[0] * fixed["pi"]) / np.sqrt(ys.shape[0] * fixed["pi"] * (1 - fixed["pi"]))
    assert np.max(np.abs(z)) < 4.0
    pis = np.stack([sims["mixture"](np.random.default_rng([22, s]))[0]["pi"] for s in range(n)])
    assert stats.kstest(pis[:, 0], stats.beta(1.0, MIX_K - 1.0).cdf).pvalue > P_PASS  # Dirichlet(1,1,1) marginal
    assert stats.kstest(pis[:, 0], stats.uniform.cdf).pvalue < P_FAIL


@pytest.mark.slow
def test_stan_mixture_is_never_nan_far_out(other_stan_models):
    """AIS and NUTS visit extreme points early on the path; a log density there may be -inf, never NaN.

    The program's fast likelihood can overflow to inf - inf (it falls back to squared distances), Dirichlet(1)'s
    lpdf is NaN where a weight underflows to 0 (written out as log (K - 1)!), and lambda = 0 times a -inf
    likelihood is NaN (skipped). Without the three guards the program gives NaN on hundreds of these points.
    """
    model = other_stan_models["mixture"]
    data = other_data("mixture", 3)
    density = jax.jit(jax.vmap(lambda x, lam: model.log_density(x, data, lam)))
    rng = np.random.default_rng(2)
    for scale in (1.0, 30.0, 300.0, 1e3, 1e5):
        xs = jnp.asarray(rng.normal(size=(2000, model.dim)) * scale)
        for lam in (0.0, 0.3, 1.0):
            values = np.asarray(density(xs, jnp.full(2000, lam)))
            assert not np.any(np.isnan(values) | (values == np.inf)), (scale, lam)
