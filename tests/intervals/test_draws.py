"""A user's posterior draws read onto the model's latent space (bdmc.intervals.draws): the accepted forms round
trip, every bad input is refused naming its culprit, and the sign test of check_draws holds its level on exact
posterior draws and rejects draws of another posterior."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import import_benchmark
from scipy import stats

import bdmc
from bdmc.errors import DataError, OptionError, UserProgramError
from bdmc.intervals.draws import (
    PosteriorDraws,
    check_draws,
    log_density_rises,
    nuts_draws,
    posterior_draws,
    spaced_indices,
)
from bdmc.intervals.draws_check import min_draws
from bdmc.kernels import HMC
from bdmc.models import FiniteMixture, GaussianMean, LinearRegression


def close(a, b, scale=1.0):
    tol = 1e-5 if jnp.result_type(float) == jnp.float64 else 2e-4
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol * scale)


# ------------------------------------------------------------------------------------------- spacing


def test_spaced_shares_draws_evenly_over_chains_and_within_them():
    assert spaced_indices(40, 8, 4).tolist() == [2, 7, 12, 17, 22, 27, 32, 37]
    assert spaced_indices(40, 6, 4).tolist() == [2, 7, 12, 17, 25, 35]  # the first chains take the extra
    assert spaced_indices(10, 5).tolist() == [1, 3, 5, 7, 9]
    assert spaced_indices(10, 10, 2).tolist() == list(range(10))
    draws = PosteriorDraws(latents={"mu": jnp.arange(40.0)[:, None]}, num_chains=4, source="test", diagnostics={})
    assert draws.spaced(4)["mu"][:, 0].tolist() == [5.0, 15.0, 25.0, 35.0]
    with pytest.raises(OptionError, match="41 spaced draws of 40"):
        draws.spaced(41)


# ------------------------------------------------------------------------------------------- round trips


def test_built_in_model_takes_its_latent_by_leaf_name_or_as_a_pytree():
    model = LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    latents = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), 6))
    by_name = posterior_draws(model, {"beta": np.asarray(latents["beta"]), "log_s2": np.asarray(latents["log_s2"])})
    as_tree = posterior_draws(model, latents, data=data)
    for got in (by_name, as_tree):
        assert got.num_chains is None and got.diagnostics == {} and got.num_draws == 6
        close(got.latents["beta"], latents["beta"])
        close(got.latents["log_s2"], latents["log_s2"])
    assert "dict of 2 arrays" in by_name.source


def numpyro_program():
    numpyro = pytest.importorskip("numpyro")
    dist = numpyro.distributions

    def program(y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        p = numpyro.sample("p", dist.Beta(2.0, 2.0))
        with numpyro.plate("cases", 5):
            numpyro.sample("y", dist.Normal(mu.sum() * p, sigma), obs=y)

    return bdmc.ppl.from_numpyro(program, observed="y")


def test_numpyro_values_map_to_latents_and_back():
    model = numpyro_program()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    latents = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), 8))
    values = jax.vmap(model.constrain)(latents)
    got = posterior_draws(model, {n: np.asarray(v) for n, v in values.items()}, data=data)
    for name in ("mu", "sigma", "p"):
        close(got.latents[name], latents[name])
        close(jax.vmap(model.constrain)(got.latents)[name], values[name])


def test_pymc_unconstrain_inverts_constrain_and_reads_draws():
    pm = pytest.importorskip("pymc")
    with pm.Model() as program:
        s2 = pm.InverseGamma("s2", alpha=2.0, beta=1.0)
        a = pm.HalfNormal("a", 1.0)
        u = pm.Uniform("u", 0.0, a)  # a support that depends on another variable
        beta = pm.Normal("beta", 0.0, pm.math.sqrt(s2), shape=3)
        pm.Normal("y", beta.sum() + u, pm.math.sqrt(s2), observed=np.zeros(4))
    model = bdmc.ppl.from_pymc(program)
    latents = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), 6))
    values = jax.vmap(model.constrain)(latents)
    back = jax.jit(jax.vmap(model.unconstrain))(values)
    assert set(back) == set(model.latent_names) == {"s2_log__", "a_log__", "u_interval__", "beta"}
    for name in model.latent_names:
        close(back[name], latents[name])
    got = posterior_draws(model, {n: np.asarray(v) for n, v in values.items()})
    close(got.latents["u_interval__"], latents["u_interval__"])
    with pytest.raises(DataError, match=r"missing \['a'\]"):
        model.unconstrain({"s2": 1.0, "u": 0.1, "beta": np.zeros(3)})
    outside = {n: np.asarray(v).copy() for n, v in values.items()}
    outside["u"][2] = outside["a"][2] + 0.5  # above its upper bound a
    with pytest.raises(DataError, match=r"draw 2 lies outside the support.*culprit is 'u'"):
        posterior_draws(model, outside)


class HostSideValues(GaussianMean):
    """GaussianMean whose named values are exp(mu), listed by position and mapped on the host with NumPy: the
    shape of a WebPPL or Stan adapter's constrain / unconstrain, which cannot be traced."""

    def constrain(self, latent):
        return [np.exp(np.asarray(latent["mu"], np.float64))]

    def unconstrain(self, values):
        with np.errstate(invalid="ignore"):
            return {"mu": jnp.asarray(np.log(np.asarray(values[0], np.float64)), jnp.result_type(float))}


def test_a_host_side_unconstrain_maps_draw_by_draw_and_names_sites_by_position():
    model = HostSideValues(n=10, dim=2)
    mu = np.random.default_rng(3).normal(size=(5, 2))
    for draws in ([np.exp(mu)], {"0": np.exp(mu)}):
        close(posterior_draws(model, draws).latents["mu"], mu)
    bad = np.exp(mu)
    bad[3, 1] = -1.0
    with pytest.raises(DataError, match=r"draw 3 lies outside the support: .*culprit is '0'"):
        posterior_draws(model, [bad])
    with pytest.raises(DataError, match=r"lacks \['0'\]; the model's names are 0 \(2,\)"):
        posterior_draws(model, {"mu": np.exp(mu)})


def test_arviz_inference_data_keeps_chains_diagnostics_and_divergences():
    arviz = pytest.importorskip("arviz")
    model = GaussianMean(n=10, dim=2)
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(4, 25, 2))
    diverging = np.zeros((4, 25), bool)
    diverging[1, 3] = diverging[2, 7] = True
    idata = arviz.from_dict(posterior={"mu": mu, "mu_sum": mu.sum(-1)}, sample_stats={"diverging": diverging})
    got = posterior_draws(model, idata)
    assert got.num_chains == 4 and got.num_draws == 100
    close(got.latents["mu"], mu.reshape(100, 2))  # chain 0's draws first
    assert got.diagnostics["divergences"] == 2
    assert 0.9 < got.diagnostics["rhat_max"] < 1.2 and got.diagnostics["ess_bulk_min"] > 20
    assert "ArviZ InferenceData (4 chains)" in got.source and "left out: mu_sum" in got.source
    stuck = arviz.from_dict(posterior={"mu": mu + np.arange(4.0)[:, None, None] * 3})  # chains apart
    assert posterior_draws(model, stuck).diagnostics["rhat_max"] > 2


def test_dict_with_a_chain_axis():
    model = GaussianMean(n=10, dim=2)
    mu = np.random.default_rng(1).normal(size=(3, 10, 2))
    got = posterior_draws(model, {"mu": mu}, chain_axis=True)
    assert got.num_chains == 3 and set(got.diagnostics) == {"rhat_max", "ess_bulk_min"}
    close(got.latents["mu"], mu.reshape(30, 2))
    with pytest.raises(DataError, match=r"chain_axis=True needs arrays of shape \(chains, draws"):
        posterior_draws(LinearRegression(), {"beta": np.zeros((3, 4)), "log_s2": np.zeros(3)}, chain_axis=True)


# ------------------------------------------------------------------------------------------- posteriordb

POSTERIORDB = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "posteriordb"
EIGHT = "eight_schools-eight_schools_noncentered"


@pytest.fixture(scope="module")
def pdb():
    pytest.importorskip("numpyro")
    return import_benchmark("posteriordb_models")


def posteriordb_chains(chains: int = 10) -> list:
    """The shipped draws (posteriordb's 10 chains of 1,000, in order) in posteriordb's reference format: a list of
    chains of {"theta[1]": [floats], ...}."""
    flat = dict(np.load(POSTERIORDB / EIGHT / "draws.npz"))
    return [{name: values.reshape(chains, -1)[c].tolist() for name, values in flat.items()} for c in range(chains)]


def test_posteriordb_reference_draws_map_to_the_ports_latents(pdb):
    data_json = json.loads((POSTERIORDB / EIGHT / "data.json").read_text())
    chains = json.loads(json.dumps(posteriordb_chains()))  # exactly as parsed from posteriordb's JSON
    flat = dict(np.load(POSTERIORDB / EIGHT / "draws.npz"))
    theta = np.stack([flat[f"theta[{j}]"] for j in range(1, 9)], -1)
    # The centred port's sites are the reference's names: theta, mu, tau (tau > 0 goes through its log).
    centred = pdb.POSTERIORS["eight_schools-eight_schools_centered"]
    model = bdmc.ppl.from_numpyro(centred.model, observed=list(centred.observed), **centred.covariates(data_json))
    got = posterior_draws(model, chains, data=centred.observations(data_json))
    assert got.num_chains == 10 and got.num_draws == 10000
    assert "posteriordb reference posterior (10 chains)" in got.source
    assert set(got.diagnostics) == {"rhat_max", "ess_bulk_min"}
    close(got.latents["theta"], theta, scale=10)
    close(got.latents["tau"], np.log(flat["tau"]))
    # The non-centred port samples theta_trans: the reference's theta maps to it by the entry's own inverse.
    entry = pdb.POSTERIORS[EIGHT]
    model = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data_json))
    to_sites = lambda v: {"theta_trans": (v["theta"] - v["mu"][:, None]) / v["tau"][:, None], "mu": v["mu"],
                          "tau": v["tau"]}
    got = posterior_draws(model, chains, data=entry.observations(data_json), transform=to_sites)
    expected = entry.latents(flat, entry.args(data_json))
    close(jax.vmap(model.constrain)(got.latents)["theta_trans"], expected["theta_trans"], scale=10)
    with pytest.raises(DataError, match=r"lacks \['theta_trans'\]"):
        posterior_draws(model, chains)


def test_flat_names_are_gathered_by_their_indices_not_their_order():
    numpyro = pytest.importorskip("numpyro")

    def program(y=None):
        m = numpyro.sample("m", numpyro.distributions.Normal(0.0, 1.0).expand([2, 3]).to_event(2))
        with numpyro.plate("cases", 4):
            numpyro.sample("y", numpyro.distributions.Normal(m.sum(), 1.0), obs=y)

    model = bdmc.ppl.from_numpyro(program, observed="y")
    values = np.random.default_rng(2).normal(size=(5, 2, 3))
    # Stan lists a matrix column-major (m[1,1], m[2,1], m[1,2], ...); the indices say where each entry goes.
    flat = {f"m[{i + 1},{j + 1}]": values[:, i, j] for j in range(3) for i in range(2)}
    close(posterior_draws(model, flat).latents["m"], values)
    del flat["m[2,3]"]
    with pytest.raises(DataError, match=r"lacks m\[2,3\] \(of shape \(2, 3\)\)"):
        posterior_draws(model, flat)
    chains = [{"m[1,1]": [0.0] * 3}, {"m[1,1]": [0.0] * 4}]
    with pytest.raises(DataError, match="unequal lengths"):
        posterior_draws(model, chains)


# ------------------------------------------------------------------------------------------- refusals


def test_bad_draws_are_refused_naming_the_culprit():
    model = LinearRegression()
    good = {"beta": np.zeros((6, 4)), "log_s2": np.zeros(6)}
    cases = [
        ({"beta": good["beta"]}, r"lacks \['log_s2'\]; the model's names are beta \(4,\), log_s2 \(\)"),
        ({**good, "sigma": np.zeros(6)}, r"holds \['sigma'\], which the model does not have"),
        ({**good, "beta": np.zeros((6, 3))}, r"'beta' has shape \(3,\) per draw, the model's has \(4,\)"),
        ({**good, "log_s2": np.where(np.arange(6) == 4, np.nan, 0.0)}, r"'log_s2' holds 1 NaN or inf .* draw 4"),
        ({**good, "beta": np.where(np.arange(24).reshape(6, 4) == 9, np.inf, 0.0)},
         r"'beta' holds 1 NaN or inf value\(s\), the first at draw 2, index \(1,\)"),
        ({"beta": np.zeros((1, 4)), "log_s2": np.zeros(1)}, r"holds 1 draw\(s\); at least 2"),
        ({"beta": np.zeros((6, 4)), "log_s2": np.zeros(5)}, "disagree on the number of draws"),
    ]
    for draws, message in cases:
        with pytest.raises(DataError, match=message):
            posterior_draws(model, draws)
    with pytest.raises(UserProgramError, match="transform raised KeyError"):
        posterior_draws(model, good, transform=lambda v: {"beta": v["b"]})
    with pytest.raises(DataError, match="'log_s2' holds 3 draws, the others 6"):
        posterior_draws(model, good, transform=lambda v: {**v, "log_s2": v["log_s2"][:3]})
    mixture = FiniteMixture()
    draws = {n: np.stack([np.asarray(x)] * 3) for n, x in mixture.sample_prior(jax.random.key(0)).items()}
    assert posterior_draws(mixture, {**draws, "z": draws["z"].astype(float)}).latents["z"].dtype == draws["z"].dtype
    draws["z"] = draws["z"].astype(float)
    draws["z"][1, 2] = 0.5
    with pytest.raises(DataError, match="draw 1: 'z' holds values that are not whole numbers"):
        posterior_draws(mixture, draws)


def test_draws_outside_the_support_are_refused_naming_draw_and_name():
    model = numpyro_program()
    latents = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(1), 8))
    values = {n: np.asarray(v).copy() for n, v in jax.vmap(model.constrain)(latents).items()}
    values["sigma"][5] = -0.3
    with pytest.raises(DataError, match=r"draw 5 lies outside the support: .*culprit is 'sigma'"):
        posterior_draws(model, values)
    numpyro = pytest.importorskip("numpyro")

    def uniform_cases(y=None):
        top = numpyro.sample("top", numpyro.distributions.Exponential(1.0))
        with numpyro.plate("cases", 3):
            numpyro.sample("y", numpyro.distributions.Uniform(0.0, top), obs=y)

    model = bdmc.ppl.from_numpyro(uniform_cases, observed="y")
    data = {"y": jnp.asarray([0.2, 1.5, 0.4])}
    # top = 1.0 at draw 3 is in the prior's support but below y[1]: zero likelihood, outside the posterior's.
    with pytest.raises(DataError, match=r"draw 3 lies outside the posterior's support.*-inf \(log_likelihood, "
                                        r"data case 1\).*top = 1"):
        posterior_draws(model, {"top": np.asarray([2.0, 3.0, 1.6, 1.0])}, data=data)
    assert posterior_draws(model, {"top": np.asarray([2.0, 3.0, 1.6, 1.0])}).num_draws == 4  # the prior's support


# ------------------------------------------------------------------------------------------- check_draws


@pytest.fixture(scope="module")
def gaussian():
    """GaussianMean, a data set, the pilot-tuned HMC kernel check_draws uses, and an exact posterior sampler."""
    model = GaussianMean(n=10, dim=2)
    data, truth = bdmc.simulate(jax.random.key(0), model)
    kernel = bdmc.core.pilot.tune(jax.random.key(5), model, data, HMC(model), 100).kernel

    def exact(key, n, data=data):
        return jax.vmap(lambda k: model.gibbs_update(k, truth, data, 1.0))(jax.random.split(key, n))

    return model, data, kernel, exact


def test_sign_test_holds_its_level_on_exact_posterior_draws(gaussian):
    model, data, kernel, exact = gaussian
    seeds, n, level = 300, 20, 0.05
    rises = log_density_rises(jax.random.key(1), model, data, exact(jax.random.key(2), seeds * n), kernel=kernel,
                              moves=2).reshape(seeds, n)
    moved = rises != 0
    assert moved.mean() > 0.5  # the kernel moves: the test is informative
    # The rises are symmetric about 0: half of the moved draws rise (a 4-sigma band over 6,000 draws).
    share = (rises > 0).sum() / moved.sum()
    assert abs(share - 0.5) < 4 * 0.5 / np.sqrt(moved.sum())
    p = np.array([stats.binomtest(int((r > 0).sum()), int((r != 0).sum()), 0.5, alternative="greater").pvalue
                  for r in rises])
    assert (p < level).sum() <= stats.binom.isf(1e-4, seeds, level)


def test_check_draws_passes_exact_draws_and_rejects_another_posteriors(gaussian):
    model, data, kernel, exact = gaussian
    check = check_draws(jax.random.key(3), model, data, exact(jax.random.key(4), 30), level=0.01)
    assert check.passed and check.num_draws == 30 and check.moves == 3 and "the draws pass" in check.message()
    other = exact(jax.random.key(4), 30, data=data + 1.0)  # the posterior of a data set shifted by one sd
    check = check_draws(jax.random.key(3), model, data, other, level=0.01)
    assert not check.passed and check.fraction_up > 0.8 and check.median_rise > 1.0
    assert "not draws of this posterior" in check.message()
    prior = jax.vmap(model.sample_prior)(jax.random.split(jax.random.key(6), 30))
    assert not check_draws(jax.random.key(3), model, data, prior, kernel=kernel).passed
    with pytest.raises(DataError, match="needs at least 7"):
        check_draws(jax.random.key(3), model, data, exact(jax.random.key(4), 6), level=0.01)
    assert min_draws(0.05) == 5
    still = check_draws(jax.random.key(3), model, data, other, kernel=lambda k, x, d, lam: (x, None))
    assert still.passed and not still.conclusive and still.num_moved == 0 and "inconclusive" in still.message()
    mixture = FiniteMixture()
    mixture_data, mixture_latent = bdmc.simulate(jax.random.key(0), mixture)
    discrete = jax.tree.map(lambda x: jnp.stack([x] * 8), mixture_latent)
    with pytest.raises(OptionError, match="discrete coordinates, which HMC"):
        check_draws(jax.random.key(3), mixture, mixture_data, discrete)
    with pytest.raises(OptionError, match="level must lie in"):
        check_draws(jax.random.key(3), model, data, other, level=1.5)


def test_nuts_draws_sample_the_posterior(gaussian):
    pytest.importorskip("numpyro")
    model, data, _, exact = gaussian
    got = nuts_draws(jax.random.key(7), model, data, num_chains=2, num_warmup=100, num_draws=100)
    assert got.num_chains == 2 and got.num_draws == 200 and "NumPyro NUTS" in got.source
    assert got.diagnostics["rhat_max"] < 1.1 and got.diagnostics["divergences"] == 0
    reference = exact(jax.random.key(8), 4000)["mu"]
    sd = np.asarray(reference).std(0)
    # Within 5 standard errors (an effective sample size of at least 50 of the 200 draws).
    assert np.all(np.abs(np.asarray(got.latents["mu"]).mean(0) - np.asarray(reference).mean(0)) < 5 * sd / np.sqrt(50))
