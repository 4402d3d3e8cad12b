"""ArviZ export: final states as draws, log-weights and estimates in sample_stats, a sandwich table as a group."""

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import gaussian_target

import bdmc
from bdmc import BDMCError, Estimate
from bdmc.interop import to_inference_data
from bdmc.models import CorrelatedGaussianMean

MODEL = CorrelatedGaussianMean(n=10, dim=3, rotation_angle=0.4)


@pytest.fixture(scope="module")
def simulated():
    return bdmc.simulate(jax.random.key(0), MODEL)


def test_forward_ais_round_trips_values_shapes_and_attributes(simulated):
    data, _ = simulated
    est = bdmc.forward_ais(jax.random.key(1), MODEL, data, num_steps=50, num_runs=64, progress=False)
    idata = to_inference_data(est, model=MODEL)
    assert set(idata.groups()) == {"posterior", "sample_stats"}
    x = idata.posterior["x"]
    assert x.dims == ("chain", "draw", "x_dim_0") and x.shape == (64, 1, 3)
    np.testing.assert_array_equal(x.values[:, 0], np.asarray(est.details.latents["x"]))
    stats = idata.sample_stats
    np.testing.assert_array_equal(stats["log_weight"].values[:, 0], np.asarray(est.details.log_weights))
    np.testing.assert_array_equal(stats["log_marginal_likelihood"].values, est.runs)
    assert stats.attrs["log_marginal_likelihood"] == est.value and stats.attrs["stderr"] == est.stderr
    assert stats.attrs["bound"] == "lower" and idata.posterior.attrs["combine"] == "log-mean-exp"
    assert '"num_steps": 50' in stats.attrs["settings"] and "CorrelatedGaussianMean" in stats.attrs["model"]
    summary = az.summary(idata, kind="stats")
    assert list(summary.index) == ["x[0]", "x[1]", "x[2]"]


def test_smc_particles_are_draws_and_reverse_runs_go_to_the_prior_group(simulated):
    data, latent = simulated
    smc = bdmc.smc(jax.random.key(2), MODEL, data, num_moves=2, num_runs=3, num_particles=4, progress=False)
    idata = to_inference_data(smc)
    assert idata.posterior["x"].shape == (3, 4, 3) and idata.sample_stats["log_weight"].shape == (3, 4)
    np.testing.assert_array_equal(idata.posterior["x"].values.reshape(12, 3), np.asarray(smc.details.latents["x"]))
    rev = bdmc.reverse_ais(jax.random.key(3), MODEL, data, exact_latent=latent, num_steps=20, num_runs=4,
                           progress=False)
    idata = to_inference_data(rev)
    assert set(idata.groups()) == {"prior", "sample_stats_prior"}
    assert idata.sample_stats_prior.attrs["bound"] == "upper"


def test_long_forward_ais_draws_match_the_exact_posterior_mean(simulated):
    data, _ = simulated
    est = bdmc.forward_ais(jax.random.key(4), MODEL, data, num_steps=200, num_runs=64, progress=False)
    draws = to_inference_data(est).posterior["x"].values.reshape(-1, 3)
    mean, cov, _ = gaussian_target(MODEL, data, 1.0, {"x": np.zeros(3)})
    se = np.sqrt(np.diag(cov) / draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * se), (draws.mean(0), mean, se)
    # The draws are posterior, not prior: the posterior is far narrower than the prior here.
    assert np.all(draws.std(0) < 0.5 * np.sqrt(np.diag(MODEL.prior_cov)))


def test_transform_and_sandwich_table_and_refusals(simulated):
    data, latent = simulated
    est = bdmc.forward_ais(jax.random.key(1), MODEL, data, num_steps=50, num_runs=64, progress=False)
    idata = to_inference_data(est, transform=lambda z: {"norm": jnp.sqrt(z["x"] @ z["x"])})
    assert idata.posterior["norm"].shape == (64, 1)
    np.testing.assert_allclose(idata.posterior["norm"].values[:, 0],
                               np.linalg.norm(np.asarray(est.details.latents["x"]), axis=1))
    result = bdmc.sandwich(jax.random.key(5), MODEL, data, latent, steps=[5, 10], num_runs=4, progress=False)
    table = to_inference_data(result).sandwich
    back = table.to_dataframe().reset_index(drop=True)
    np.testing.assert_array_equal(back["value"].to_numpy(), result.table["value"].to_numpy())
    assert list(back["direction"]) == ["forward", "reverse", "forward", "reverse"]
    assert table.attrs["exact"] == pytest.approx(result.exact) and '"fired": false' in table.attrs["verdict"]
    with pytest.raises(BDMCError, match="no annealing run"):
        to_inference_data(Estimate.from_runs(np.array([1.0, 2.0]), bound="lower", seconds=0.0, compile_seconds=0.0,
                                             n_evals=0))
    with pytest.raises(BDMCError, match="Estimate or a SandwichResult"):
        to_inference_data({"x": 1})
