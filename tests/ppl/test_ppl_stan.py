"""The Stan adapter against Stan itself and the built-in conjugate linear regression (closed-form log p(y)).

Tests that need the compiled program are marked slow: the first compile of a program takes one to two
minutes (httpstan then caches it). The fast tests only run ``stanc`` (the Stan-to-C++ translator).
"""

import asyncio
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc import schedules
from bdmc.kernels import HMC
from bdmc.models import LinearRegression

pytest.importorskip("stan")

from bdmc.ppl import (
    from_stan,  # noqa: E402
    stan_host,  # noqa: E402
)
from bdmc.ppl import stan as stan_adapter  # noqa: E402
from bdmc.ppl.samplers import unforked_stan_workers  # noqa: E402

# The built-in model's regression written in Stan; the prior uses _lpdf so that log_prior is normalized.
PROGRAM = """
data {
  int<lower=0> N;
  int<lower=0> P;
  matrix[N, P] X;
  vector[N] y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  vector[P] beta;
  real<lower=0> s2;
}
model {
  target += inv_gamma_lpdf(s2 | 1, 1);
  target += normal_lpdf(beta | 0, sqrt(0.1 * s2));
  target += bdmc_lambda * normal_lpdf(y | X * beta, sqrt(s2));
}
"""

BUILTIN = LinearRegression()
X = np.asarray(BUILTIN.design)
FIXED = {"N": 20, "P": 4, "X": X}
DATA = {**FIXED, "y": np.zeros(20)}
KERNEL_SETTINGS = dict(step_size=0.1, num_integration_steps=10)  # acceptance > 0.6 along the whole path


def make_simulator(*, s2_scale=1.0, noise_factor=1.0):
    """The program's generative model in numpy; the keywords break it on purpose (negative controls)."""

    def simulate(rng, params=None):
        if params is None:
            s2 = s2_scale / rng.gamma(1.0, 1.0)
            params = {"beta": rng.normal(0.0, np.sqrt(0.1 * s2), 4), "s2": s2}
        noise = noise_factor * np.sqrt(params["s2"]) * rng.normal(size=20)
        return params, {"y": X @ params["beta"] + noise}

    return simulate


def as_builtin(x):
    """Stan's unconstrained vector (beta, log s2) as the built-in model's latent."""
    return {"beta": x[..., :4], "log_s2": x[..., 4]}


@pytest.fixture(scope="module")
def model():
    return from_stan(PROGRAM, data=DATA, observed="y", simulate=make_simulator())


# ------------------------------------------------------------------------------ fast: no C++ compile


# The program as a user writes it: no bdmc_lambda, the likelihood not marked.
UNMARKED = PROGRAM.replace("  real<lower=0, upper=1> bdmc_lambda;\n", "").replace("bdmc_lambda * ", "")


def test_a_program_without_bdmc_lambda_is_taken_whole_and_points_to_the_reference_path():
    model = from_stan(UNMARKED, data=DATA, observed="y")
    assert not model.marks_likelihood and model.normalized
    x, y = jnp.zeros(5), {"y": jnp.zeros(20)}
    for call in (lambda: model.log_prior(x), lambda: model.log_likelihood(x, y),
                 lambda: model.log_density(x, y, 0.5)):
        with pytest.raises(bdmc.BDMCError, match=r"declares no data variable 'bdmc_lambda'.*reference_path"):
            call()
    # `~` statements drop constants: the normalizer a reference path estimates is then not p(y); it says so.
    with pytest.warns(UserWarning, match="marks no likelihood"):
        from_stan(UNMARKED.replace("target += inv_gamma_lpdf(s2 | 1, 1);", "s2 ~ inv_gamma(1, 1);"),
                  data=DATA, observed="y")


def test_bdmc_lambda_must_be_a_real_scalar():
    with pytest.raises(bdmc.BDMCError, match="real scalar"):
        from_stan(PROGRAM.replace("real<lower=0, upper=1> bdmc_lambda", "vector[N] bdmc_lambda")
                  .replace("bdmc_lambda * normal_lpdf", "sum(bdmc_lambda) * normal_lpdf"), data=DATA, observed="y")


def test_observed_names_and_data_must_match_the_data_block():
    with pytest.raises(bdmc.BDMCError, match=r"observed variable 'z' is not a data variable.*\['N', 'P', 'X', 'y'\]"):
        from_stan(PROGRAM, data=DATA, observed="z")
    with pytest.raises(bdmc.BDMCError, match="'bdmc_lambda' is not a data variable"):
        from_stan(PROGRAM, data=DATA, observed="bdmc_lambda")
    with pytest.raises(bdmc.BDMCError, match=r"lacks the Stan program's data variable\(s\) \['X'\]"):
        from_stan(PROGRAM, data={"N": 20, "P": 4, "y": np.zeros(20)}, observed="y")
    with pytest.raises(bdmc.BDMCError, match=r"\['w'\] that the Stan program does not declare"):
        from_stan(PROGRAM, data={**DATA, "w": 1.0}, observed="y")
    with pytest.raises(bdmc.BDMCError, match="must not contain 'bdmc_lambda'"):
        from_stan(PROGRAM, data={**DATA, "bdmc_lambda": 1.0}, observed="y")
    with pytest.raises(bdmc.BDMCError, match="'y' has 2 dimension"):
        from_stan(PROGRAM, data={**DATA, "y": np.zeros((20, 1))}, observed="y")


def test_syntax_errors_come_from_stanc():
    with pytest.raises(bdmc.BDMCError, match="does not compile"):
        from_stan(PROGRAM.replace("vector[P] beta;", "vector[P] beta"), data=DATA, observed="y")


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "stan", None)  # makes `import stan` fail
    with pytest.raises(bdmc.MissingExtraError, match=r"pip install 'pystan>=3\.9'.*\(or pip install -e '\.\[stan\]'"):
        from_stan(PROGRAM, data=DATA, observed="y")


def test_sampling_statements_warn_that_the_prior_is_unnormalized():
    code = PROGRAM.replace("target += inv_gamma_lpdf(s2 | 1, 1);", "s2 ~ inv_gamma(1, 1);")
    with pytest.warns(UserWarning, match="inv_gamma_lupdf"):
        m = from_stan(code, data=DATA, observed="y")
    assert not m.normalized
    assert from_stan(PROGRAM, data=DATA, observed="y").normalized


def test_per_case_paths_and_missing_simulator_are_refused():
    m = from_stan(PROGRAM, data=DATA, observed="y")
    with pytest.raises(bdmc.BDMCError, match="per-case data paths"):
        m.log_density(jnp.zeros(5), {"y": jnp.zeros(20)}, jnp.zeros(1))
    with pytest.raises(bdmc.BDMCError, match="needs a simulator"):
        m.sample_prior(jax.random.key(0))
    with pytest.raises(bdmc.DataError, match=r"'y' must have shape \(20,\)"):
        m.check_data({"y": jnp.zeros(19)})


class _FakeProgram:
    """Stands in for the compiled module: log f = -|x|^2 / 2 + weight(lam) * loglik + data_in_prior * sum(y)."""

    def __init__(self, weight, data_in_prior=0.0):
        self.weight, self.data_in_prior = weight, data_in_prior

    def log_prob(self, data, x):
        x, y = np.asarray(x), np.asarray(data["y"])
        loglik = -0.5 * np.sum((y - x[0]) ** 2)
        return -0.5 * x @ x + self.weight(data["bdmc_lambda"]) * loglik + self.data_in_prior * y.sum()


@pytest.mark.parametrize("weight, data_in_prior, error", [
    (lambda lam: lam, 0.0, None),
    (lambda lam: lam**2, 0.0, "not affine in bdmc_lambda"),
    (lambda lam: 0.0, 0.0, "does not change the Stan log density"),
    (lambda lam: lam, 1.0, "changes with the observed variable"),
])
def test_the_build_checks_how_bdmc_lambda_enters(weight, data_in_prior, error):
    m = from_stan(PROGRAM, data=DATA, observed="y")
    fake = _FakeProgram(weight, data_in_prior)
    built = stan_adapter.BuiltProgram(stan=lambda name, *args: getattr(fake, name)(*args),
                                      shapes={"beta": (4,), "s2": ()}, dim=5)
    m._built = built
    probe = (np.full(5, 0.3), (np.linspace(-1.0, 2.0, 20),))
    if error is None:
        stan_host._check_lambda_enters_affinely(m, built, probe)
    else:
        with pytest.raises(bdmc.BDMCError, match=error):
            stan_host._check_lambda_enters_affinely(m, built, probe)


def test_callbacks_follow_the_active_dtype():
    """Under float32 every callback declares float32 results (Stan computes in float64, results are cast).

    Abstract evaluation only: nothing is compiled or called. Importing the adapter leaves x64 as it was.
    """
    from helpers import float32, run_fresh_python

    m = from_stan(PROGRAM, data=DATA, observed="y")
    with float32():
        (y,) = m._observations({"y": np.zeros(20)})
        x, lam = jnp.zeros(5), jnp.asarray(0.5)
        value = jax.eval_shape(m._log_density, x, lam, y)
        grad = jax.eval_shape(jax.grad(lambda x, lam: m._log_density(x, lam, y), argnums=(0, 1)), x, lam)
    assert y.dtype == value.dtype == grad[0].dtype == grad[1].dtype == jnp.float32
    run_fresh_python("import jax\nimport bdmc.ppl.stan, stan, httpstan\nassert not jax.config.jax_enable_x64")


# ------------------------------------------------------------------------------ slow: compiled program


@pytest.mark.slow
def test_log_density_splits_as_stan_computes_it_and_equals_the_builtin_model(model):
    import stan

    data, _ = bdmc.simulate(jax.random.key(3), model)
    y = np.asarray(data["y"])
    prior_draws = np.asarray(jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(4), 3)))
    xs = np.concatenate([prior_draws, np.random.default_rng(0).normal(size=(3, 5))])
    value_and_grad = jax.jit(jax.vmap(jax.value_and_grad(model.log_density), in_axes=(0, None, None)))
    for lam in (0.0, 0.3, 1.0):
        # pystan's public API (through httpstan's HTTP server) as the reference.
        posterior = stan.build(PROGRAM, data={**FIXED, "y": y, "bdmc_lambda": lam})
        values, grads = value_and_grad(xs, data, lam)
        for x, value, grad in zip(xs, values, grads, strict=False):
            np.testing.assert_allclose(value, posterior.log_prob(x.tolist()), rtol=1e-12)
            np.testing.assert_allclose(grad, posterior.grad_log_prob(x.tolist()), rtol=1e-10, atol=1e-12)
            split = model.log_prior(x) + lam * model.log_likelihood(x, data).sum()
            np.testing.assert_allclose(split, value, rtol=1e-10)
            # The built-in model's density and its JAX gradient at the same point.
            def builtin(v, lam=lam):
                return BUILTIN.log_prior(as_builtin(v)) + lam * BUILTIN.log_likelihood(as_builtin(v), y).sum()

            np.testing.assert_allclose(value, builtin(x), rtol=1e-10)
            np.testing.assert_allclose(grad, jax.grad(builtin)(x), rtol=1e-9, atol=1e-10)
    # d log f / d lambda is the log-likelihood; the data are an argument of the compiled function, not a constant.
    x = xs[0]
    dlam = jax.grad(lambda lam: model.log_density(x, data, lam))(0.4)
    np.testing.assert_allclose(dlam, model.log_likelihood(x, data)[0], rtol=1e-10)
    other = {"y": y + 1.0}
    np.testing.assert_allclose(value_and_grad(xs, other, 1.0)[0][0],
                               BUILTIN.log_prior(as_builtin(x)) + BUILTIN.log_likelihood(as_builtin(x), y + 1.0).sum(),
                               rtol=1e-10)
    with pytest.raises(bdmc.BDMCError, match="observed data"):
        jax.grad(lambda yy: model.log_density(x, {"y": yy}, 1.0))(jnp.asarray(y))


@pytest.mark.slow
def test_parameters_map_between_spaces_and_the_size_is_found_without_a_simulator(model):
    x = np.array([0.1, -0.2, 0.3, 0.4, np.log(2.5)])
    params = model.constrain(x)
    np.testing.assert_allclose(params["beta"], x[:4], rtol=1e-15)
    np.testing.assert_allclose(params["s2"], 2.5, rtol=1e-14)
    np.testing.assert_allclose(model.unconstrain(params), x, rtol=1e-14)
    with pytest.raises(bdmc.BDMCError, match="cannot unconstrain"):
        model.unconstrain({"beta": np.zeros(4), "s2": -1.0})
    bare = from_stan(PROGRAM, data=DATA, observed="y")
    assert bare.dim == model.dim == 5


@pytest.mark.slow
def test_one_annealing_run_matches_the_builtin_model_step_for_step(model):
    # Same kernel, keys, path and starting points: the log-weights agree to rounding, so every callback
    # (value, gradient, vmap over chains, scan over steps) computes what the built-in model computes.
    data, _ = bdmc.simulate(jax.random.key(5), model)
    init = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(6), 8))
    path = schedules.sigmoidal(30)
    key = jax.random.key(7)
    ours = bdmc.anneal(key, model, data, HMC(model, **KERNEL_SETTINGS), path, init, progress=False)
    ref = bdmc.anneal(key, BUILTIN, data["y"], HMC(BUILTIN, **KERNEL_SETTINGS), path, as_builtin(init), progress=False)
    np.testing.assert_allclose(ours.log_weights, ref.log_weights, rtol=1e-8)
    np.testing.assert_allclose(ours.latents, np.concatenate(
        [ref.latents["beta"], ref.latents["log_s2"][:, None]], axis=1), rtol=1e-7)
    assert np.mean(ours.info.acceptance) > 0.6


@pytest.mark.slow
def test_simulator_prior_matches_the_program_prior():
    import stan

    # Reference 1: the program itself at bdmc_lambda = 0 (its prior), sampled by Stan's NUTS and thinned.
    posterior = stan.build(PROGRAM, data={**DATA, "bdmc_lambda": 0.0}, random_seed=11)
    unforked_stan_workers()  # pystan samples in a fork of this process otherwise, JAX's threads running
    fit = posterior.sample(num_chains=2, num_samples=10_000, num_thin=10, num_warmup=1000)
    nuts = np.column_stack([fit["beta"].T, np.log(fit["s2"].ravel())])
    # Reference 2: exact draws of the built-in model, whose density equals the program's (test above).
    exact = jax.vmap(BUILTIN.sample_prior)(jax.random.split(jax.random.key(8), 4000))
    exact = np.column_stack([exact["beta"], exact["log_s2"]])

    def p_values(simulate, key):
        m = from_stan(PROGRAM, data=DATA, observed="y", simulate=simulate)
        draws = np.asarray(jax.jit(jax.vmap(m.sample_prior))(jax.random.split(key, 4000)))
        return np.array([[stats.ks_2samp(draws[:, j], ref[:, j]).pvalue for j in range(5)] for ref in (nuts, exact)])

    # Ten KS tests: a correct simulator fails any one at level 1e-3 with probability about 1%.
    assert p_values(make_simulator(), jax.random.key(9)).min() > 1e-3
    # Negative control: the simulator draws s2 ~ InvGamma(1, 10) while the program says InvGamma(1, 1).
    wrong = p_values(make_simulator(s2_scale=10.0), jax.random.key(9))
    assert wrong[:, 4].max() < 1e-10  # log s2 against both references


@pytest.mark.slow
def test_forward_and_reverse_ais_sandwich_the_closed_form_and_converge(model):
    data, latent = bdmc.simulate(jax.random.key(0), model)
    exact = float(BUILTIN.exact_log_marginal(data["y"]))
    res = bdmc.sandwich(jax.random.key(1), model, data, latent, steps=[10, 100, 1000], num_runs=16,
                        kernel=HMC(model, **KERNEL_SETTINGS), progress=False)
    print("\n" + res.table[["num_steps", "direction", "value", "stderr", "mean_single", "gap_single", "alarm",
                            "seconds", "compile_seconds"]].to_string())
    t = res.table.set_index(["num_steps", "direction"])
    for T in (10, 100, 1000):
        fwd, rev = t.loc[(T, "forward")], t.loc[(T, "reverse")]
        assert fwd.value < exact + 4 * fwd.stderr and rev.value > exact - 4 * rev.stderr
        assert fwd.certified_b3 < exact < rev.certified_b3
        assert not fwd.alarm
    fwd, rev = t.loc[(10, "forward")], t.loc[(10, "reverse")]
    assert fwd.mean_single < exact - fwd.stderr_single and rev.mean_single > exact + rev.stderr_single
    gaps = res.table.groupby("num_steps").gap_single.first()
    assert gaps.is_monotonic_decreasing and gaps.loc[1000] < gaps.loc[10] / 20
    for direction in ("forward", "reverse"):
        assert abs(t.loc[(1000, direction)].value - exact) < 0.25


@pytest.mark.slow
def test_a_program_without_bdmc_lambda_is_bounded_on_its_reference_path():
    """No edit to the program: forward AIS from the fitted reference (no simulator needed: Stan-style starts)
    is a lower bound on the closed form, reverse AIS from the simulator's exact latent an upper bound."""
    data, latent = bdmc.simulate(jax.random.key(0), from_stan(PROGRAM, data=DATA, observed="y",
                                                             simulate=make_simulator()))
    exact = float(BUILTIN.exact_log_marginal(data["y"]))
    plain = from_stan(UNMARKED, data={**FIXED, "y": np.asarray(data["y"])}, observed="y")
    path = bdmc.reference_path(jax.random.key(1), plain, data, num_starts=3)
    kw = dict(num_steps=100, num_runs=32, progress=False)
    lower = bdmc.forward_ais(jax.random.key(2), path, data, **kw)
    assert lower.value < exact + 4 * lower.stderr and abs(lower.value - exact) < 0.3, (lower.value, exact)
    with_simulator = from_stan(UNMARKED, data=DATA, observed="y", simulate=make_simulator())
    upper = bdmc.reverse_ais(jax.random.key(3), bdmc.reference_path(jax.random.key(1), with_simulator, data),
                             data, exact_latent=latent, **kw)
    assert lower.certified(3.0) <= exact <= upper.certified(3.0)
    assert upper.value - lower.value < 0.3


@pytest.mark.slow
def test_bug_alarm_fires_when_the_simulator_disagrees_with_the_likelihood():
    # The simulator draws observations with 4 times the program's noise sd: the "exact" latent then fits
    # its data far worse than posterior draws do, and reverse AIS from it drops below forward AIS.
    # Disagreements in the prior only (s2 ~ InvGamma(1, 10)) widen the sandwich instead: see the prior test.
    kernel_settings, fired = KERNEL_SETTINGS, {}
    for name, simulate in {"correct": make_simulator(), "noise x4": make_simulator(noise_factor=4.0),
                           "s2 prior x10": make_simulator(s2_scale=10.0)}.items():
        m = from_stan(PROGRAM, data=DATA, observed="y", simulate=simulate)
        alarms = []
        for seed in range(6):
            res = bdmc.sandwich(jax.random.key(seed), m, steps=[10], num_runs=16,
                                kernel=HMC(m, **kernel_settings), progress=False)
            alarms.append(bool(res.table["alarm"].iloc[0]))
        fired[name] = sum(alarms)
    print(f"\nbug alarms out of 6 data sets (T = 10, 16 chains): {fired}")
    assert fired["correct"] == 0  # each false alarm has probability about 1%
    assert fired["noise x4"] >= 4


@pytest.mark.slow
def test_a_running_event_loop_and_smc_are_handled(model):
    async def build_in_loop():  # what Jupyter does: pystan's own asyncio.run refuses to nest
        return from_stan(PROGRAM, data=DATA, observed="y").dim

    assert asyncio.run(build_in_loop()) == 5
    data, _ = bdmc.simulate(jax.random.key(0), model)
    with pytest.raises(bdmc.BDMCError, match="per-case data paths"):
        bdmc.smc(jax.random.key(1), model, data, num_runs=2, progress=False)


@pytest.mark.slow
def test_a_simulator_that_disagrees_with_the_program_is_named():
    def bad_params(rng, params=None):
        return {"beta": np.zeros(4), "sigma": 1.0}, {"y": np.zeros(20)}

    def bad_observations(rng, params=None):
        return params or {"beta": np.zeros(4), "s2": 1.0}, {"y": np.zeros(21)}

    with pytest.raises(bdmc.BDMCError, match=r"keys \['beta', 's2'\], got \['beta', 'sigma'\]"):
        _ = from_stan(PROGRAM, data=DATA, observed="y", simulate=bad_params).dim
    with pytest.raises(bdmc.BDMCError, match=r"'y' has shape \(21,\)"):
        _ = from_stan(PROGRAM, data=DATA, observed="y", simulate=bad_observations).dim


@pytest.mark.slow
def test_cost_per_chain_step_against_numpyro_and_the_builtin_model(model):
    """Measured, not asserted: seconds per 1,000 chain-steps of HMC (10 leapfrog steps), compile excluded."""
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    def regression(x, y=None):
        s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
        with numpyro.plate("cases", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)

    npm = bdmc.ppl.from_numpyro(regression, jnp.asarray(X), observed="y")
    data, _ = bdmc.simulate(jax.random.key(0), model)
    chains, T = 16, 101
    rows = {}
    for name, m, d in (("stan", model, data), ("numpyro", npm, data), ("built-in", BUILTIN, data["y"])):
        init = jax.vmap(m.sample_prior)(jax.random.split(jax.random.key(1), chains))
        run = bdmc.anneal(jax.random.key(2), m, d, HMC(m, **KERNEL_SETTINGS), schedules.linear(T), init,
                          progress=False)
        one = jax.jit(jax.value_and_grad(lambda x, m=m, d=d: m.log_density(x, d, 0.5) if hasattr(m, "log_density")
                                         else bdmc.contracts.log_density(m, x, d, 0.5)))
        x0 = jax.tree.map(lambda a: a[0], init)
        jax.block_until_ready(one(x0))
        start = time.perf_counter()
        for _ in range(200):
            jax.block_until_ready(one(x0))
        per_call = (time.perf_counter() - start) / 200
        rows[name] = (run.seconds / (chains * (T - 1)) * 1000, per_call * 1e6)
    print("\nseconds per 1,000 HMC chain-steps | microseconds per value-and-gradient call")
    for name, (per_1000, per_call) in rows.items():
        print(f"  {name:9s} {per_1000:8.3f} s | {per_call:9.1f} us")
    assert all(np.isfinite(v) for row in rows.values() for v in row)


STAN_SIMULATOR = '''
import numpy as np

X = np.vander(np.linspace(-2.0, 2.0, 20), 4, increasing=True)


def simulate(rng, params=None):
    if params is None:
        s2 = 1.0 / rng.gamma(1.0)
        params = {"s2": s2, "beta": rng.normal(0.0, np.sqrt(0.1 * s2), 4)}
    return params, {"y": X @ np.asarray(params["beta"]) + np.sqrt(params["s2"]) * rng.normal(size=20)}
'''


@pytest.mark.slow
def test_the_observed_variable_may_be_left_to_the_simulator():
    """Simulated-data runs need no placeholder for y: one simulated data set fixes its shape; without a simulator
    the missing y is named."""
    model = from_stan(PROGRAM, data=FIXED, observed="y", simulate=make_simulator())
    assert model._obs_shape == {"y": (20,)}
    with pytest.raises(bdmc.BDMCError, match=r"lacks the observed variable\(s\) \['y'\].*simulate="):
        from_stan(PROGRAM, data=FIXED, observed="y")

    def broken(rng, params=None):
        raise KeyError("sigma")

    with pytest.raises(bdmc.errors.UserProgramError, match="simulator failed to draw .*KeyError"):
        from_stan(PROGRAM, data=FIXED, observed="y", simulate=broken)


def _stan_sandwich_command(tmp_path, program: str) -> list:
    """``bdmc sandwich --stan`` on ``program`` with the regression's simulator and data file."""
    (tmp_path / "reg.stan").write_text(program)
    (tmp_path / "sim.py").write_text(STAN_SIMULATOR)
    x = np.vander(np.linspace(-2.0, 2.0, 20), 4, increasing=True)
    np.savez(tmp_path / "data.npz", N=20, x=x, y=np.zeros(20))
    return ["sandwich", "--stan", str(tmp_path / "reg.stan"), "--simulator", f"{tmp_path / 'sim.py'}:simulate",
            "--data", str(tmp_path / "data.npz"), "--observed", "y", "--steps", "10,100", "--runs", "4",
            "--out", str(tmp_path / "out")]


def test_sandwich_command_hands_the_stan_file_to_from_stan(tmp_path, monkeypatch):
    """The command line's wiring, without a C++ build (about a minute on a fresh cache; the slow test below
    compiles): the program's text, the data file's arrays, the observed name and the simulator reach
    ``from_stan``, and the model it returns is the one sandwiched."""
    from typer.testing import CliRunner

    import bdmc.ppl
    from bdmc.cli import app

    calls = []

    def stand_in(program_code, *, data, observed, simulate):
        """The program's regression in NumPyro, on the data file's design (what the compiled one would be)."""
        import numpyro
        import numpyro.distributions as dist

        calls.append((program_code, data, observed, simulate))

        def regression(x, y=None):
            s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
            beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([4]).to_event(1))
            numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)

        return bdmc.ppl.from_numpyro(regression, x=jnp.asarray(data["x"]), y=jnp.zeros(20), observed=observed)

    monkeypatch.setattr(bdmc.ppl, "from_stan", stand_in)
    result = CliRunner().invoke(app, _stan_sandwich_command(tmp_path, PROGRAM))
    assert result.exit_code == 0, result.output
    assert "stan:reg" in result.output and "bug alarm: silent" in result.output
    [(code, data, observed, simulate)] = calls
    assert code == PROGRAM and observed == ["y"] and simulate.__name__ == "simulate"
    assert sorted(data) == ["N", "x", "y"] and np.asarray(data["x"]).shape == (20, 4)


@pytest.mark.slow
def test_sandwich_command_takes_a_stan_file(tmp_path):
    from typer.testing import CliRunner

    from bdmc.cli import app

    sys.path.insert(0, "benchmarks")
    try:
        from ppl_adapters import STAN_PROGRAM  # the benchmark's program: its compiled model is cached
    finally:
        sys.path.remove("benchmarks")
    result = CliRunner().invoke(app, _stan_sandwich_command(tmp_path, STAN_PROGRAM))
    assert result.exit_code == 0, result.output
    assert "stan:reg" in result.output and "bug alarm: silent" in result.output


@pytest.mark.slow
def test_float32_scores_and_simulates_in_float32(model):
    """The compiled program under float32: densities, gradients and draws come back float32, as in float64."""
    from helpers import float32

    data64, _ = bdmc.simulate(jax.random.key(3), model)
    x64 = np.asarray(model.sample_prior(jax.random.key(4)))
    value64, grad64 = jax.value_and_grad(model.log_density)(x64, data64, 0.3)
    with float32():
        data, latent = bdmc.simulate(jax.random.key(3), model)
        assert data["y"].dtype == latent.dtype == jnp.float32
        value, grad = jax.jit(jax.value_and_grad(model.log_density))(jnp.asarray(x64), data64, 0.3)
        assert value.dtype == grad.dtype == jnp.float32
        assert model.log_likelihood(latent, data).dtype == jnp.float32
    np.testing.assert_allclose(value, value64, rtol=1e-5)
    np.testing.assert_allclose(grad, grad64, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_a_density_the_user_compiled_keeps_working_after_release(model):
    """``release`` (an audit's end) must not free the built program under a user's compiled density (the native
    program it calls into); the value after release is the value before. Slow: it builds the native library
    (about a minute from an empty cache); tests/ppl/test_stan_native.py checks the same on a stand-in program."""
    import gc

    x = model.sample_prior(jax.random.key(0))
    data = model.sample_data(jax.random.key(1), x)
    density = jax.jit(lambda u: model.log_prior(u) + model.log_likelihood(u, data).sum())
    before = float(density(x))
    model.release()
    gc.collect()
    assert float(density(x)) == pytest.approx(before, rel=1e-12)
