"""The simulator-density check on count data: a correct Poisson model passes and a simulator with a wrong rate is
caught. (The moment tests once counted fresh draws outside the seen support against the pmf renormalized on it,
which failed every correct Poisson model at p < 1e-16; the rate over many seeds and families is measured by
``benchmarks/simulator_density_discrete.py``.)"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
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


@dataclass(frozen=True)
class OneTerm:
    """A model whose log likelihood is one term for all cases, as Stan reports it; ``per_case`` adds a constant
    to every case's log pmf (a wrong normalizer), ``coupled`` a term reading neighbouring cases."""

    inner: GammaPoisson = GammaPoisson()
    per_case: float = 0.0
    coupled: float = 0.0

    def sample_prior(self, key):
        return self.inner.sample_prior(key)

    def sample_data(self, key, latent):
        return self.inner.sample_data(key, latent)

    def log_prior(self, latent):
        return self.inner.log_prior(latent)

    def log_likelihood(self, latent, data):
        y = data["y"].astype(float)
        extra = self.per_case * y.size + self.coupled * jnp.sum(jnp.sqrt(y[1:] * y[:-1] + 1.0))
        return (jnp.sum(self.inner.log_likelihood(latent, data)) + extra)[None]


def _test(result, test):
    t = result.table
    return t[(t["part"] == "likelihood") & (t["test"] == test) & (t["where"] == "all cases")].iloc[0]


def test_one_term_likelihood_is_checked_case_by_case_through_substitution():
    correct = simulator_density(jax.random.key(0), OneTerm(), **SIZES)
    assert correct.verdict == "consistent", correct.message()
    joint = _test(correct, "normalization (seen supports, all cases jointly)")
    assert abs(joint.estimate) < 4 * joint.stderr, joint  # log of the joint mass plus the share outside: 0
    assert "likelihood normalization per case" in [what for what, _ in correct.not_checked]
    wrong = simulator_density(jax.random.key(0), OneTerm(GammaPoisson(simulated_rate=1.05)), **SIZES)
    assert wrong.verdict == "inconsistent" and _test(wrong, "mean").fired, wrong.message()


def test_one_term_likelihood_with_a_wrong_constant_fails_the_joint_normalization():
    # +0.1 nats per case: the pmf's joint mass on the seen supports is e^3 times too large. (The test's power
    # falls with that mass: at +0.02 per case, e^0.6, it was not seen at these sizes.)
    result = simulator_density(jax.random.key(0), OneTerm(per_case=0.1), **SIZES)
    assert _test(result, "normalization (seen supports, all cases jointly)").fired, result.message()
    assert not _test(result, "mean").fired  # a constant moves no moment


def test_one_term_likelihood_that_is_not_a_sum_over_cases_is_reported_not_checked():
    result = simulator_density(jax.random.key(0), OneTerm(coupled=0.1), **SIZES)
    assert "likelihood" in [what for what, _ in result.not_checked], result.message()
    assert not (result.table["part"] == "likelihood").any()


@pytest.mark.slow  # six programs (16 s); the default suite's checks all run the all-at-once path
def test_cells_drawn_in_batches_equal_cells_drawn_all_at_once(monkeypatch):
    """Where all latents fit in memory, every latent's seen and fresh data sets are drawn in one batched call; in
    batches (large data sets) each cell draws its fresh ones itself. Both take the same keys, so the check's table is
    the same: for count data, a one-term (Stan-like) likelihood, and continuous data. A fresh draw on other keys
    than the cell's (or the seen draws' keys reused) moves every moment test."""
    import importlib

    from bdmc.models import LinearRegression

    checked_module = importlib.import_module("bdmc.checks.simulator_density")  # the module, not its function

    small = dict(num_latents=5, num_data=16, num_prior=64)
    for model in (GammaPoisson(), OneTerm(), LinearRegression()):
        together = simulator_density(jax.random.key(3), model, **small).table
        with monkeypatch.context() as patch:
            patch.setattr(checked_module, "_batch", lambda *args: 2)
            in_batches = simulator_density(jax.random.key(3), model, **small).table
        numbers = together.select_dtypes("number").columns
        assert list(in_batches.columns) == list(together.columns) and len(in_batches) == len(together) > 0
        np.testing.assert_allclose(in_batches[numbers].to_numpy(float), together[numbers].to_numpy(float),
                                   rtol=1e-9, atol=1e-12, err_msg=type(model).__name__)
