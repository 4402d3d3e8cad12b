"""A regression written as users write it (natural units, N(0, 10) priors, a half-normal scale) runs.

Its HMC trajectories from prior draws overflow to NaN: rejected proposals (divergences), counted, never an
error; the evidence agrees with the exact one (one quadrature over sigma).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.datasets.loaders import load_nhefs
from bdmc.exact import regression_half_normal_scale_log_marginal

pytest.importorskip("numpyro")
pytest.importorskip("causaldata")


def regression(X, y=None):
    import numpyro
    import numpyro.distributions as dist

    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("cases", X.shape[0]):
        numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


@pytest.mark.float64  # natural units: weight gains in kg against ages in years, log p(y) about -369
def test_the_textbook_regression_runs_counts_its_divergences_and_finds_the_exact_evidence():
    nhefs = load_nhefs(standardize=False)
    X, y = np.asarray(nhefs.arrays["x"])[:100], np.asarray(nhefs.arrays["y"])[:100]
    exact = regression_half_normal_scale_log_marginal(y, X, prior_sd=10.0, sigma_scale=10.0)
    model = bdmc.ppl.from_numpyro(regression, X=jnp.asarray(X), observed="y")
    est = bdmc.forward_ais(jax.random.key(0), model, {"y": jnp.asarray(y)}, num_steps=300, num_runs=32,
                           progress=False)
    assert np.isfinite(est.value) and est.divergences > 0 and est.to_dict()["divergences"] == est.divergences
    assert est.details.divergences.shape == (32,)
    # A stochastic lower bound: below the truth but for chance, and close to it at this budget.
    assert est.value < exact + 3 * est.stderr
    assert est.value > exact - 1.5, (est.value, exact, est.stderr)
