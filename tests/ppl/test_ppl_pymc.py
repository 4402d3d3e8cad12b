"""The PyMC adapter against PyMC itself, the built-in conjugate regression and its closed-form log-ML."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc

pm = pytest.importorskip("pymc")

from bdmc.ppl.pymc import PyMCModel, from_pymc  # noqa: E402

REFERENCE = bdmc.models.LinearRegression()  # y ~ N(X beta, s2 I), beta ~ N(0, 0.1 s2 I), s2 ~ IG(1, 1)
X = np.asarray(REFERENCE.design)  # (20, 4)
FAST = "FAST_COMPILE"  # PyMC's own reference functions: compile fast, they run a handful of times


def regression(y=None, *, s2_scale=1.0):
    """The built-in regression written in PyMC; ``s2_scale`` changes the prior of s2 to IG(1, s2_scale)."""
    with pm.Model() as model:
        s2 = pm.InverseGamma("s2", alpha=REFERENCE.h0, beta=REFERENCE.k0 * s2_scale)
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(REFERENCE.tau * s2), shape=X.shape[1])
        pm.Normal("y", X @ beta, pm.math.sqrt(s2), observed=np.zeros(X.shape[0]) if y is None else y)
    return model


@pytest.fixture(scope="module")
def program():
    return regression()


@pytest.fixture(scope="module")
def model(program):
    return from_pymc(program)


@pytest.fixture(scope="module")
def hmc(model):
    return bdmc.kernels.HMC(model, step_size=0.05, num_integration_steps=10)


def test_latent_and_data_layout(model):
    assert isinstance(model, PyMCModel)
    assert model.latent_names == ("s2_log__", "beta") and model.observed == ("y",)
    data, latent = bdmc.simulate(jax.random.key(0), model)
    assert set(latent) == {"s2_log__", "beta"} and latent["beta"].shape == (4,) and latent["s2_log__"].shape == ()
    assert data["y"].shape == (20,) and data["y"].dtype == jnp.float64
    # Same key, same draw; another key, another draw; constrain maps back through PyMC's transform.
    again, latent_again = bdmc.simulate(jax.random.key(0), model)
    np.testing.assert_array_equal(again["y"], data["y"])
    other, _ = bdmc.simulate(jax.random.key(1), model)
    assert not np.allclose(other["y"], data["y"])
    np.testing.assert_allclose(model.constrain(latent)["s2"], np.exp(latent["s2_log__"]), rtol=1e-12)


def test_split_matches_pymc_joint_gradient_and_builtin(model):
    """log_prior + sum(log_likelihood) is PyMC's own joint (Jacobian included) at data bdmc supplies."""
    rng = np.random.default_rng(0)
    y = X @ rng.normal(size=4) + 0.7 * rng.normal(size=20)  # data the adapter never saw
    observed_program = regression(y)
    logp = observed_program.compile_logp(jacobian=True, mode=FAST)
    dlogp = observed_program.compile_dlogp(jacobian=True, mode=FAST)
    data = {"y": jnp.asarray(y)}

    joint = jax.jit(lambda lat: model.log_prior(lat) + jnp.sum(model.log_likelihood(lat, data)))
    grad = jax.jit(jax.grad(lambda lat: model.log_prior(lat) + jnp.sum(model.log_likelihood(lat, data))))
    for _ in range(5):
        latent = {"s2_log__": rng.normal(), "beta": rng.normal(size=4)}
        np.testing.assert_allclose(joint(latent), logp(latent), rtol=1e-10)
        g = grad(latent)  # PyMC orders the flattened gradient as model.value_vars: s2_log__, then beta
        np.testing.assert_allclose(np.concatenate([np.atleast_1d(g["s2_log__"]), g["beta"]]), dlogp(latent),
                                   rtol=1e-9, atol=1e-12)
        builtin = {"beta": latent["beta"], "log_s2": latent["s2_log__"]}
        np.testing.assert_allclose(model.log_prior(latent), REFERENCE.log_prior(builtin), rtol=1e-12)
        np.testing.assert_allclose(model.log_likelihood(latent, data), REFERENCE.log_likelihood(builtin, y),
                                   rtol=1e-12)
    # The data is an input of the compiled likelihood, not the placeholder baked into the program.
    lat = {"s2_log__": 0.3, "beta": np.ones(4)}
    assert not np.allclose(model.log_likelihood(lat, data), model.log_likelihood(lat, {"y": jnp.zeros(20)}))


def test_prior_simulation_matches_pm_draw(program, model):
    """Two-sample KS tests of bdmc.simulate against PyMC's prior predictive; a scaled draw must fail."""
    n = 2000
    data, latent = jax.jit(jax.vmap(lambda k: bdmc.simulate(k, model)))(jax.random.split(jax.random.key(7), n))
    ours = {"s2": np.exp(latent["s2_log__"]), "beta0": latent["beta"][:, 0], "y0": data["y"][:, 0]}
    s2, beta, y = pm.draw([program["s2"], program["beta"], program["y"]], draws=n, random_seed=11, mode=FAST)
    theirs = {"s2": s2, "beta0": beta[:, 0], "y0": y[:, 0]}
    for name in ours:
        assert stats.ks_2samp(ours[name], theirs[name]).pvalue > 1e-3, name  # 3 tests, each at 1e-3
    # Negative control: s2 drawn 1.5 times too large is caught with room to spare.
    assert stats.ks_2samp(1.5 * ours["s2"], theirs["s2"]).pvalue < 1e-6


def test_sandwich_brackets_closed_form(model, hmc):
    """Forward AIS below, reverse AIS above the exact log-ML; both within 0.2 nat of it at T = 1000."""
    data, latent = bdmc.simulate(jax.random.key(3), model)
    exact = float(REFERENCE.exact_log_marginal(data["y"]))
    result = bdmc.sandwich(jax.random.key(4), model, data, latent, steps=[10, 100, 1000], num_runs=32,
                           kernel=hmc, progress=False)
    table = result.table
    forward, reverse = table[table.direction == "forward"], table[table.direction == "reverse"]
    # Each single run bounds log p(y) in expectation: 4 standard errors of slack for the chain means.
    assert np.all(forward.mean_single <= exact + 4 * forward.stderr_single)
    assert np.all(reverse.mean_single >= exact - 4 * reverse.stderr_single)
    assert forward.mean_single.iloc[0] < exact - 5 and reverse.mean_single.iloc[0] > exact + 0.5  # T = 10: wide
    assert np.all(np.diff(forward.mean_single) > 0) and np.all(np.diff(reverse.mean_single) < 0)
    assert abs(forward.value.iloc[-1] - exact) < 0.2 and abs(reverse.value.iloc[-1] - exact) < 0.2
    assert not table.alarm.any()


@pytest.mark.slow  # 10 s; the default suite keeps the path's exact-evidence test on a built-in model
def test_the_program_runs_whole_on_the_path_from_its_reference(model):
    """The same program taken whole (no prior / likelihood split used): forward AIS from the fitted reference
    below the closed form, reverse AIS from the exact latent above it."""
    data, latent = bdmc.simulate(jax.random.key(3), model)
    exact = float(REFERENCE.exact_log_marginal(data["y"]))
    path = bdmc.reference_path(jax.random.key(0), model, data, num_starts=3)
    kw = dict(num_steps=100, num_runs=32, progress=False)
    lower = bdmc.forward_ais(jax.random.key(1), path, data, **kw)
    upper = bdmc.reverse_ais(jax.random.key(2), path, data, exact_latent=latent, **kw)
    assert lower.certified(3.0) <= exact <= upper.certified(3.0)
    assert abs(lower.value - exact) < 4 * lower.stderr + 0.05, (lower.value, exact, lower.stderr)
    assert upper.value - lower.value < 0.3


def test_bug_alarm_catches_misreported_exact_sample(model, hmc):
    """A simulator that reports s2 100 times too small (a units bug): the sandwich's bug alarm fires.

    The reported latent's log-likelihood is ~1,600 nats below log p(y), and reverse AIS started there ends
    below forward AIS. The same data with the latent that really generated them raise no alarm. Not caught
    with this kernel (three data sets each, T = 100 and 1000), because 20 data cases pull HMC to the right
    posterior within a few steps: a simulator whose s2 prior is IG(1, 10) or IG(1, 100), whose beta prior
    has tau = 10, whose noise variance is 2 or 10 times the program's, or an exact sample with s2 3 or 10
    times too large or 3 times too small.
    """
    data, latent = bdmc.simulate(jax.random.key(100), model)
    misreported = {**latent, "s2_log__": latent["s2_log__"] - np.log(100.0)}
    run = dict(steps=[10, 100], num_runs=32, kernel=hmc, progress=False)
    wrong = bdmc.sandwich(jax.random.key(0), model, data, misreported, **run)
    assert wrong.table.alarm.all()
    assert len(wrong.alarms) == 2
    right = bdmc.sandwich(jax.random.key(0), model, data, latent, **run)
    assert not right.table.alarm.any()


def test_observed_variables_holding_equal_data_keep_their_own_terms():
    """Two observed variables built with the same placeholder data (zeros) are still scored on their own data.

    PyMC's log-density graph merges equal constants; had bdmc substituted its data inputs into that graph,
    y's term would read z's data (the bug this guards against: its likelihood was off by tens of nats).
    """
    with pm.Model() as program:
        mu = pm.Normal("mu", 0.0, 1.0)
        s2 = pm.InverseGamma("s2", 2.0, 2.0)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
        pm.Normal("z", 0.0, pm.math.sqrt(s2), observed=np.zeros(5))
    model = from_pymc(program, observed=["y", "z"])
    y, z = np.array([-2.7, -3.6, -2.4, -1.1, -2.3]), np.array([1.4, -0.6, 0.9, -0.6, -0.1])
    latent = {"mu": jnp.asarray(-2.9), "s2_log__": jnp.asarray(-0.7)}
    expected = stats.norm(-2.9, 1.0).logpdf(y) + stats.norm(0.0, np.exp(-0.35)).logpdf(z)
    got = model.log_likelihood(latent, {"y": jnp.asarray(y), "z": jnp.asarray(z)})
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    swapped = stats.norm(-2.9, 1.0).logpdf(z) + stats.norm(0.0, np.exp(-0.35)).logpdf(y)
    assert np.max(np.abs(np.asarray(got) - swapped)) > 1.0  # the two readings differ: the test can fail


def test_discrete_free_variable_is_refused():
    with pm.Model() as mixture:
        k = pm.Bernoulli("k", 0.5)
        pm.Normal("y", 3.0 * k, 1.0, observed=np.zeros(5))
    with pytest.raises(bdmc.BDMCError, match=r"discrete free variable\(s\) \['k'\].*Marginalize"):
        from_pymc(mixture)


def test_potential_is_refused():
    with pm.Model() as penalized:
        mu = pm.Normal("mu")
        pm.Potential("shrink", -mu**2)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    with pytest.raises(bdmc.BDMCError, match=r"pm.Potential term\(s\) \['shrink'\]"):
        from_pymc(penalized)


def test_observed_names_are_checked(program, model):
    with pytest.raises(bdmc.BDMCError, match=r"\['s2'\] are not observed variables.*free variables"):
        from_pymc(program, observed=["s2"])
    with pytest.raises(bdmc.DataError, match=r"'y' must have shape \(20,\)"):
        bdmc.sandwich(jax.random.key(0), model, {"y": np.zeros(19)}, model.sample_prior(jax.random.key(0)),
                      steps=[2])


def test_missing_extra_names_pymc(monkeypatch, program):
    real = bdmc.errors.importlib.import_module

    def without_pymc(name, *args, **kwargs):
        if name == "pymc":
            raise ImportError("No module named 'pymc'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(bdmc.errors.importlib, "import_module", without_pymc)
    with pytest.raises(bdmc.MissingExtraError, match=r"pip install 'pymc>=5\.21' \(or pip install -e '\.\[pymc\]'"):
        bdmc.ppl.from_pymc(program)


@pytest.mark.slow
def test_speed_against_numpyro_and_builtin(model):
    """Seconds per 1,000 chain-steps of HMC (compile excluded); printed, not asserted."""
    numpyro = pytest.importorskip("numpyro")
    dist = numpyro.distributions

    def numpyro_regression(x, y=None):
        s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)

    data, _ = bdmc.simulate(jax.random.key(3), model)
    contenders = [("pymc", model, data), ("numpyro", bdmc.ppl.from_numpyro(numpyro_regression, X, observed="y"),
                                          data), ("builtin", REFERENCE, data["y"])]
    num_chains, num_steps = 32, 2000
    for name, m, d in contenders:
        kernel = bdmc.kernels.HMC(m, step_size=0.05, num_integration_steps=10)
        runs = []
        for rep in range(4):  # the first run compiles; keep the fastest of the rest (a shared machine)
            start = time.perf_counter()
            est = bdmc.forward_ais(jax.random.key(rep), m, d, num_steps=num_steps, num_runs=num_chains,
                                   kernel=kernel, progress=False)
            runs.append((est.seconds, est.compile_seconds, time.perf_counter() - start))
        best = min(r[0] for r in runs[1:])
        print(f"{name:8s} {1000 * best / (num_chains * num_steps):.5f} s per 1000 chain-steps "
              f"(compile {runs[0][1]:.1f} s)")


PYMC_PROGRAM = '''
import numpy as np
import pymc as pm


def regression(x):
    with pm.Model() as model:
        s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0)
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(0.1 * s2), shape=x.shape[1])
        pm.Normal("y", x @ beta, pm.math.sqrt(s2), observed=np.zeros(x.shape[0]))
    return model
'''


def test_sandwich_command_takes_a_pymc_file(tmp_path):
    from typer.testing import CliRunner

    from bdmc.cli import app

    (tmp_path / "reg.py").write_text(PYMC_PROGRAM)
    np.savez(tmp_path / "x.npz", x=np.asarray(bdmc.models.LinearRegression().design))
    args = ["sandwich", "--pymc", f"{tmp_path / 'reg.py'}:regression", "--data", str(tmp_path / "x.npz"),
            "--observed", "y", "--steps", "10", "--runs", "4", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "pymc:reg" in result.output
    assert len(__import__("pandas").read_csv(tmp_path / "out" / "sandwich.csv")) == 2


FLOAT32_CHECK = '''
import warnings
import jax, jax.numpy as jnp, numpy as np
import bdmc
import pymc as pm
from bdmc.ppl.pymc import from_pymc

REFERENCE = bdmc.models.LinearRegression()
X = np.asarray(REFERENCE.design)


def regression():
    with pm.Model() as model:
        s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0)
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(0.1 * s2), shape=X.shape[1])
        pm.Normal("y", X @ beta, pm.math.sqrt(s2), observed=np.zeros(X.shape[0]))
    return model


assert not jax.config.jax_enable_x64
with jax.enable_x64(True):  # PyTensor's JAX backend is first imported here, and turns x64 on for the process
    wide = from_pymc(regression())
assert not jax.config.jax_enable_x64, "the process-wide x64 setting was not restored"
with warnings.catch_warnings():
    warnings.simplefilter("error")  # no "float64 requested ... truncated" noise from PyTensor's graphs
    model = from_pymc(regression())
    assert not jax.config.jax_enable_x64
    data, latent = bdmc.simulate(jax.random.key(0), model)
    assert data["y"].dtype == jnp.float32 and all(v.dtype == jnp.float32 for v in latent.values())
    prior, lik = model.log_prior(latent), model.log_likelihood(latent, data)
    grad = jax.jit(jax.grad(lambda v: model.log_prior(v) + jnp.sum(model.log_likelihood(v, data))))(latent)
    assert prior.dtype == lik.dtype == jnp.float32 and all(g.dtype == jnp.float32 for g in grad.values())
    assert all(v.dtype == jnp.float32 for v in model.constrain(latent).values())
builtin = {"beta": latent["beta"], "log_s2": latent["s2_log__"]}
np.testing.assert_allclose(prior, REFERENCE.log_prior(builtin), rtol=1e-5)
np.testing.assert_allclose(lik, REFERENCE.log_likelihood(builtin, data["y"]), rtol=1e-5, atol=1e-5)
with jax.enable_x64(True):
    assert wide.log_prior(wide.sample_prior(jax.random.key(0))).dtype == jnp.float64
'''


def test_float32_model_and_the_import_leave_x64_as_it_was():
    """In a fresh process: PyTensor's JAX backend turns x64 on when imported, the adapter turns it back.

    A model built under float32 simulates and scores in float32 (and agrees with the built-in model); one
    built in a float64 context stays float64 in it.
    """
    from helpers import run_fresh_python

    run_fresh_python(FLOAT32_CHECK)


def test_a_program_the_user_compiled_keeps_drawing_after_release():
    """``release`` (an audit's end) drops the compiled samplers, which compile again on use: a user's own
    jitted draws of the same model still run and give the same draws."""
    model = from_pymc(regression(), observed="y")
    draw = jax.jit(jax.vmap(model.sample_prior))
    keys = jax.random.split(jax.random.key(3), 3)
    before = draw(keys)
    model.release()
    after = draw(keys)
    for name in model.latent_names:
        np.testing.assert_allclose(np.asarray(after[name]), np.asarray(before[name]))
    model.release()
    eager = jax.vmap(model.sample_prior)(keys)  # the eager path, on the host directly
    for name in model.latent_names:
        np.testing.assert_allclose(np.asarray(eager[name]), np.asarray(before[name]), rtol=1e-6)
