"""The ready adapters of ``bdmc.calibration``: each tool's log p(y) on a conjugate Gaussian mean (exact log p(y))
lands near the exact value, its stated ± is a number where the tool states one, and a compiled program is reused
across data sets of one shape."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import bdmc
from bdmc.calibration import adapters

MODEL = bdmc.models.GaussianMean(n=8, dim=2, prior_std=2.0)


@pytest.fixture(scope="module")
def data_and_exact():
    sim = bdmc.simulate(jax.random.key(5), MODEL)
    return sim.data, float(MODEL.exact_log_marginal(sim.data))


def test_the_normal_prior_transform_maps_the_cube_to_the_prior():
    transform = adapters.normal_prior_transform(MODEL, [2.0, 2.0])
    u = np.random.default_rng(0).uniform(size=(20_000, 2))
    z = transform(u)
    assert np.allclose(z.std(axis=0), 2.0, rtol=0.03) and np.allclose(z.mean(axis=0), 0.0, atol=0.05)
    with pytest.raises(bdmc.BDMCError, match="one entry per latent coordinate"):
        adapters.normal_prior_transform(MODEL, [1.0])


@pytest.mark.parametrize("tool", ["dynesty", "ultranest"])
def test_a_nested_sampler_lands_within_its_stated_error(tool, data_and_exact):
    pytest.importorskip(tool)
    data, exact = data_and_exact
    run = adapters.nested_adapter(tool, MODEL, prior_transform=adapters.normal_prior_transform(MODEL, [2.0, 2.0]),
                                  live=100)
    log_z, stderr = run(data, seed=1)
    assert 0 < stderr < 1 and abs(log_z - exact) < 4 * stderr + 0.1


@pytest.mark.slow  # 10-25 s; dynesty and UltraNest stand for the nested samplers in the default suite
def test_nautilus_lands_near_the_exact_value(data_and_exact):
    pytest.importorskip("nautilus")
    data, exact = data_and_exact
    run = adapters.nested_adapter("nautilus", MODEL,
                                  prior_transform=adapters.normal_prior_transform(MODEL, [2.0, 2.0]), live=200)
    log_z, stderr = run(data, seed=1)
    assert 0 < stderr < 0.5 and abs(log_z - exact) < 0.3


def test_blackjax_lands_near_the_exact_value_and_states_no_error(data_and_exact):
    data, exact = data_and_exact
    run = adapters.blackjax_adapter(MODEL, num_particles=256)
    log_z, stderr = run(data, seed=0)
    assert math.isnan(stderr) and abs(log_z - exact) < 0.3
    other = bdmc.simulate(jax.random.key(6), MODEL).data
    assert abs(run(other, seed=0)[0] - float(MODEL.exact_log_marginal(other))) < 0.3  # a new data set, same program


def test_an_unknown_nested_sampler_is_named():
    with pytest.raises(bdmc.BDMCError, match="multinest"):
        adapters.nested_adapter("multinest", MODEL, prior_transform=lambda u: u)


def test_pymc_smc_states_the_spread_of_its_chains(data_and_exact):
    pm = pytest.importorskip("pymc")
    data, exact = data_and_exact

    def build(data):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 2.0, shape=2)
            pm.Normal("y", mu, 1.0, observed=np.asarray(data))
        return model

    log_z, stderr = adapters.pymc_smc_adapter(build, draws=500, chains=2)(data, seed=3)
    assert 0 < stderr < 1 and abs(log_z - exact) < 0.5


def test_a_prior_transform_is_built_from_gaussian_prior_blocks_and_checked_against_the_prior():
    model = bdmc.models.LowRank(n=3, d=2, k=1, sigma_u=0.5, sigma_v=2.0)
    u = np.random.default_rng(1).uniform(size=(20_000, 5))
    z = adapters.blocks_prior_transform(model)(u)  # ravel order: U (3 x 1), then V (1 x 2)
    assert np.allclose(z.std(axis=0), [0.5, 0.5, 0.5, 2.0, 2.0], rtol=0.03)
    with pytest.raises(bdmc.MissingCapabilityError, match="gaussian_prior_blocks"):
        adapters.blocks_prior_transform(MODEL)

    class Misdeclared(bdmc.models.LowRank):
        def gaussian_prior_blocks(self):
            return (("U", 0, 1.0), ("V", 1, 3.0))  # V's prior std is 2, not 3

    with pytest.raises(bdmc.BDMCError, match="not the product of its declared Gaussian blocks"):
        adapters.blocks_prior_transform(Misdeclared(n=3, d=2, k=1, sigma_u=1.0, sigma_v=2.0))

    class Partial(bdmc.models.LowRank):
        def gaussian_prior_blocks(self):
            return (("U", 0, 1.0),)

    with pytest.raises(bdmc.BDMCError, match=r"do not cover its latent \['V'\]"):
        adapters.blocks_prior_transform(Partial(n=3, d=2, k=1))
