"""A NUTS that fails SBC because it cannot follow the posterior (a centred funnel, a step size far too large) is
named as the sampler's failure, with its divergent transitions counted on data sets simulated again, and not left
to read as a bug in the model."""

import jax
import jax.numpy as jnp
import pytest

import bdmc
from bdmc.auditing.checks_sbc import DIVERGENCE_DATA_SETS, sbc_outcome
from bdmc.checks import NumPyroNUTS

numpyro = pytest.importorskip("numpyro")
dist = pytest.importorskip("numpyro.distributions")
SIGMA = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])

pytestmark = pytest.mark.usefixtures("arviz_without_numba")


def _centred(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(5.0))
    with numpyro.plate("schools", 8):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("y", dist.Normal(theta, SIGMA), obs=y)


def test_a_diverging_nuts_that_fails_sbc_is_named_by_its_divergences():
    model = bdmc.ppl.from_numpyro(_centred, observed="y")
    sampler = NumPyroNUTS(model, num_warmup=0, step_size=1.5, adapt_step_size=False)
    out = sbc_outcome(jax.random.key(0), model, sampler, label="NumPyro's NUTS", level=0.01, num_replications=30,
                      num_draws=40)
    found = out.details["divergences"]
    assert out.verdict == "fail" and found["data_sets"] == DIVERGENCE_DATA_SETS
    assert found["divergences"] > found["transitions"] / 2
    assert "divergent transitions" in out.summary and "not a bug shown in the model" in out.summary
