"""The simulator-density check on count data: a correct Poisson model passes and a simulator with a wrong rate is
caught. (The moment tests once counted fresh draws outside the seen support against the pmf renormalized on it,
which failed every correct Poisson model at p < 1e-16; the rate over many seeds and families is measured by
``benchmarks/simulator_density_discrete.py``.)"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import gamma, poisson

from bdmc.checks.simulator_density import simulator_density

SIZES = dict(num_latents=32, num_data=32, num_prior=1000)


@dataclass(frozen=True)
class GammaPoisson:
    """30 iid counts, rate ~ Gamma(2, rate 0.1) (mean 20), on the log scale; ``simulated_rate`` multiplies the
    simulator's rate only (1: correct)."""

    n: int = 30
    simulated_rate: float = 1.0

    def sample_prior(self, key):
        return {"log_rate": jnp.log(jax.random.gamma(key, 2.0) / 0.1)}

    def sample_data(self, key, latent):
        return {"y": jax.random.poisson(key, self.simulated_rate * jnp.exp(latent["log_rate"]), (self.n,))}

    def log_prior(self, latent):
        u = latent["log_rate"]
        return gamma.logpdf(jnp.exp(u), 2.0, scale=10.0) + u

    def log_likelihood(self, latent, data):
        return poisson.logpmf(data["y"], jnp.exp(latent["log_rate"]))


def _likelihood_p(result):
    t = result.table
    return t[t["part"] == "likelihood"]


def test_correct_poisson_model_passes():
    # At three keys (each rejects with probability at most 0.01): the bug failed all three at p < 1e-16.
    for seed in range(3):
        result = simulator_density(jax.random.key(seed), GammaPoisson(), **SIZES)
        assert result.verdict == "consistent", result.message()
        mean = _likelihood_p(result).query("test == 'mean' and where == 'all cases'").iloc[0]
        assert abs(mean.statistic) < 4.0, mean


def test_poisson_simulator_with_a_five_percent_higher_rate_is_caught():
    result = simulator_density(jax.random.key(0), GammaPoisson(simulated_rate=1.05), **SIZES)
    assert result.verdict == "inconsistent", result.message()
    mean = _likelihood_p(result).query("test == 'mean' and where == 'all cases'").iloc[0]
    assert mean.fired and mean.estimate > 0, mean  # the simulated counts sit above the density's mean
    assert np.isfinite(mean.p_value)
