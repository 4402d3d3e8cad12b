"""PyMC's and Stan's own NUTS as samplers SBC and the audit can run (``bdmc.ppl.samplers``).

One model with a closed-form posterior, written in PyMC and in Stan: ``mu ~ N(0, 1)``, ``s2 ~ IG(2, 2)``,
``y_i ~ N(mu, 1)`` and ``z_i ~ N(0, s2)``, i = 1..10, so that ``mu | y ~ N(sum(y) / 11, 1 / 11)`` and
``s2 | z ~ IG(2 + 5, 2 + |z|^2 / 2)`` independently. The draws each sampler returns, mapped to the adapter's
unconstrained latent (``s2_log__`` in PyMC, Stan's ``log s2``), must follow that posterior: a mapping that
forgot the transform, or draws of another data set, fail the KS tests. SBC of each (slow) must pass, and SBC
of PyMC's NUTS on a program that is not the simulator's must fail.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc.errors import BDMCError

N = 10
P_PASS, P_FAIL = 1e-3, 1e-6


def closed_form(y, z):
    return (stats.norm(y.sum() / (N + 1), (1.0 / (N + 1)) ** 0.5),
            stats.invgamma(2.0 + 0.5 * N, scale=2.0 + 0.5 * z @ z))


def observations(seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=N) + 0.5, 1.5 * rng.normal(size=N)


def assert_posterior(mu, s2, y, z):
    """KS against the closed form, and against the prior as a negative control."""
    post_mu, post_s2 = closed_form(y, z)
    assert stats.kstest(mu, post_mu.cdf).pvalue > P_PASS
    assert stats.kstest(s2, post_s2.cdf).pvalue > P_PASS
    assert stats.kstest(s2, stats.invgamma(2.0, scale=2.0).cdf).pvalue < P_FAIL  # the prior is not it
    assert stats.kstest(np.log(s2), post_s2.cdf).pvalue < P_FAIL  # nor the transformed value read as s2


# ------------------------------------------------------------------------------------------------------- PyMC

def pymc_program(y_scale=1.0):
    pm = pytest.importorskip("pymc")
    with pm.Model() as program:
        mu = pm.Normal("mu", 0.0, 1.0)
        s2 = pm.InverseGamma("s2", 2.0, 2.0)
        pm.Normal("y", mu, y_scale, observed=np.zeros(N))
        pm.Normal("z", 0.0, pm.math.sqrt(s2), observed=np.zeros(N))
    return bdmc.ppl.from_pymc(program, observed=["y", "z"])


@pytest.fixture(scope="module")
def pymc_model():
    return pymc_program()


def test_pymc_nuts_draws_the_closed_form_posterior_on_the_adapters_latent(pymc_model):
    from bdmc.ppl.samplers import PyMCNUTS

    y, z = observations()
    data = {"y": jnp.asarray(y), "z": jnp.asarray(z)}
    draws = PyMCNUTS(pymc_model, num_warmup=500, thin=2).draws(jax.random.key(0), data, num_draws=600)
    assert set(draws) == set(pymc_model.latent_names) == {"mu", "s2_log__"}
    assert all(v.shape == (600,) for v in draws.values())
    assert_posterior(np.asarray(draws["mu"]), np.exp(np.asarray(draws["s2_log__"])), y, z)
    # The observations are set per call: another data set moves the posterior.
    other = PyMCNUTS(pymc_model, num_warmup=500).draws(jax.random.key(1), {"y": data["y"] + 3.0, "z": data["z"]},
                                                      num_draws=300)
    assert stats.kstest(np.asarray(other["mu"]), closed_form(y, z)[0].cdf).pvalue < P_FAIL


def test_each_nuts_counts_its_divergences():
    """Neal's funnel at a low target acceptance makes NUTS diverge; the closed-form model does not. PyMC's and
    NumPyro's NUTS report the count over every post-warm-up transition (the thinned-away ones too)."""
    pm = pytest.importorskip("pymc")
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from bdmc.checks.samplers import NumPyroNUTS
    from bdmc.ppl.samplers import PyMCNUTS

    with pm.Model() as funnel:
        v = pm.Normal("v", 0.0, 3.0)
        pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=4)
        pm.Normal("y", 0.0, 1.0, observed=np.zeros(1))
    funnel_model = bdmc.ppl.from_pymc(funnel, observed="y")
    data = {"y": jnp.zeros(1)}
    _, stats_funnel = PyMCNUTS(funnel_model, num_warmup=200, thin=2, target_accept=0.6).diagnosed_draws(
        jax.random.key(0), data, num_draws=200)
    assert stats_funnel["transitions"] == 400 and stats_funnel["divergences"] > 0
    y, z = observations()
    _, calm = PyMCNUTS(pymc_program(), num_warmup=300).diagnosed_draws(
        jax.random.key(0), {"y": jnp.asarray(y), "z": jnp.asarray(z)}, num_draws=200)
    assert calm == {"divergences": 0, "transitions": 200}

    def numpyro_funnel(y=None):
        v = numpyro.sample("v", dist.Normal(0.0, 3.0))
        numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)).expand([4]).to_event(1))
        numpyro.sample("y", dist.Normal(0.0, 1.0).expand([1]).to_event(1), obs=y)

    model = bdmc.ppl.from_numpyro(numpyro_funnel, observed="y")
    draws, found = NumPyroNUTS(model, num_warmup=200, thin=2, target_accept_prob=0.6).diagnosed_draws(
        jax.random.key(0), data, num_draws=200)
    assert found["transitions"] == 400 and found["divergences"] > 0
    assert draws["v"].shape == (200,)


def test_pymc_nuts_refuses_other_models_and_bad_options(pymc_model):
    from bdmc.ppl.samplers import PyMCNUTS

    with pytest.raises(BDMCError, match="needs a PyMC program"):
        PyMCNUTS(bdmc.models.GaussianMean())
    with pytest.raises(BDMCError, match="thin >= 1"):
        PyMCNUTS(pymc_model, thin=0)
    with pytest.raises(BDMCError, match="target_accept"):
        PyMCNUTS(pymc_model, target_accept=1.5)


def test_the_audit_picks_each_programs_own_nuts(pymc_model):
    from bdmc.auditing.run import resolve_sampler
    from bdmc.ppl.samplers import PyMCNUTS

    resolved = resolve_sampler(jax.random.key(0), pymc_model, "auto", warmup=200, thin=None)
    assert isinstance(resolved.sampler, PyMCNUTS) and resolved.label == "PyMC's NUTS"
    assert resolved.kernel is None  # adapts during warm-up: SBC audits it, Geweke does not
    assert resolved.sampler.num_warmup == 200 and resolved.settings["sampler"] == "pymc-nuts"
    with pytest.raises(BDMCError, match="needs a Stan program"):
        resolve_sampler(jax.random.key(0), pymc_model, "stan-nuts")


@pytest.mark.slow
def test_sbc_of_pymc_nuts_passes_and_sees_a_program_that_is_not_the_simulators(pymc_model):
    from bdmc.checks import sbc
    from bdmc.ppl.samplers import PyMCNUTS

    good = sbc(jax.random.key(3), pymc_model, PyMCNUTS(pymc_model, num_warmup=300), num_replications=40,
               num_draws=49)
    assert good.verdict == "consistent", good.message
    # Negative control: the sampler's program reads y with a standard deviation of 10, not 1, so its draws of
    # mu are near the prior's. The rank of mu alone is blind to a sampler that returns the prior (the truth is a
    # prior draw too); the log-likelihood's rank is not: the truth fits the data better than such draws.
    wrong = pymc_program(y_scale=10.0)
    bad = sbc(jax.random.key(3), pymc_model, PyMCNUTS(wrong, num_warmup=300), num_replications=40, num_draws=49)
    assert bad.verdict == "miscalibrated" and "log-likelihood" in bad.miscalibrated


# ------------------------------------------------------------------------------------------------------- Stan

STAN_PROGRAM = """
data {
  int<lower=1> N;
  vector[N] y;
  vector[N] z;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real mu;
  real<lower=0> s2;
}
model {
  target += normal_lpdf(mu | 0, 1);
  target += inv_gamma_lpdf(s2 | 2, 2);
  target += bdmc_lambda * (normal_lpdf(y | mu, 1) + normal_lpdf(z | 0, sqrt(s2)));
}
"""


def stan_simulator(rng, params=None):
    p = dict(params or {})
    p.setdefault("mu", float(rng.normal()))
    p.setdefault("s2", float(1.0 / rng.gamma(2.0, 0.5)))
    return p, {"y": p["mu"] + rng.normal(size=N), "z": np.sqrt(p["s2"]) * rng.normal(size=N)}


@pytest.fixture(scope="module")
def stan_model():
    pytest.importorskip("stan")
    # backend="httpstan": the program pystan builds for StanNUTS anyway (httpstan caches it by its text) also
    # serves the adapter, so a fresh machine compiles it once; the in-process build is test_stan_native's.
    return bdmc.ppl.from_stan(STAN_PROGRAM, data={"N": N, "y": np.zeros(N), "z": np.zeros(N)}, observed=["y", "z"],
                              simulate=stan_simulator, backend="httpstan")


@pytest.mark.slow  # builds a Stan program (about 30 s): the default suite keeps Stan's adapter tests, not its NUTS
def test_stan_nuts_draws_the_closed_form_posterior_on_stans_unconstrained_space(stan_model):
    from bdmc.ppl.samplers import StanNUTS

    y, z = observations()
    draws = StanNUTS(stan_model, num_warmup=500, thin=2).draws(
        jax.random.key(0), {"y": jnp.asarray(y), "z": jnp.asarray(z)}, num_draws=600)
    assert draws.shape == (600, stan_model.dim) and stan_model.coordinate_names == ("mu", "s2")
    assert_posterior(np.asarray(draws[:, 0]), np.exp(np.asarray(draws[:, 1])), y, z)
    with pytest.raises(BDMCError, match="delta"):
        StanNUTS(stan_model, delta=1.0)


def test_stans_sampler_runs_in_a_new_interpreter_whose_errors_come_back():
    # httpstan's own pool forks this process, where JAX runs threads (the conftest fails a test that forks);
    # StanNUTS swaps in one that starts a new interpreter per call.
    pytest.importorskip("stan")
    import os

    from httpstan import services_stub

    from bdmc.ppl.samplers import FreshInterpreter, unforked_stan_workers

    unforked_stan_workers()
    pool = services_stub.executor
    assert isinstance(pool, FreshInterpreter)
    assert pool.submit(int, "42").result() == 42
    with pytest.raises(ValueError, match="invalid literal"):
        pool.submit(int, "x").result()
    with pytest.raises(RuntimeError, match="exited with status 3"):
        pool.submit(os._exit, 3).result()


@pytest.mark.slow
def test_sbc_of_stan_nuts_passes(stan_model):
    from bdmc.checks import sbc
    from bdmc.ppl.samplers import StanNUTS

    res = sbc(jax.random.key(4), stan_model, StanNUTS(stan_model, num_warmup=300), num_replications=60, num_draws=49)
    assert res.verdict == "consistent", res.message
    assert res.settings["sampler"]["sampler"] == "stan-nuts"
    assert res.names == ("mu", "s2", "log-likelihood")  # Stan's coordinates by name, not x[0], x[1]
