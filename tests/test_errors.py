"""Bad input gets a clear error naming the culprit."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc import BDMCError, DataError, MissingExtraError, NonFiniteLogWeightError, ScheduleError, schedules
from bdmc.errors import require
from bdmc.models import GaussianMean, LinearRegression


@pytest.fixture
def problem(key):
    model = GaussianMean(n=10, dim=2)
    data, latent = bdmc.simulate(key, model)
    return model, data, latent


def test_nan_data_is_named(problem, key):
    model, data, _ = problem
    bad = np.array(data).copy()
    bad[3, 1] = np.nan
    with pytest.raises(DataError, match=r"non-finite.*\(3, 1\)"):
        bdmc.forward_ais(key, model, bad, num_steps=5)


def test_wrong_shape_is_named(problem, key):
    model, data, latent = problem
    with pytest.raises(DataError, match=r"shape \(10, 2\), got \(10, 3\)"):
        bdmc.reverse_ais(key, model, np.zeros((10, 3)), exact_latent=latent, num_steps=5)
    with pytest.raises(DataError, match="non-numeric"):
        bdmc.forward_ais(key, model, np.array([["a"] * 2] * 10), num_steps=5)


def test_bad_schedules_are_refused(problem, key):
    model, data, _ = problem
    with pytest.raises(ScheduleError, match="decreases"):
        bdmc.forward_ais(key, model, data, schedule=[0.0, 0.5, 0.2, 1.0])
    with pytest.raises(ScheduleError, match="at least 2"):
        bdmc.forward_ais(key, model, data, num_steps=1)
    with pytest.raises(BDMCError, match="unknown schedule"):
        bdmc.forward_ais(key, model, data, schedule="cosine")
    with pytest.raises(ScheduleError, match="columns"):
        bdmc.forward_ais(key, model, data, schedule=schedules.data_path(4))


def test_bad_exact_latent_is_refused(problem, key):
    model, data, latent = problem
    with pytest.raises(BDMCError, match="shape"):
        bdmc.reverse_ais(key, model, data, exact_latent={"mu": jnp.zeros(3)}, num_steps=5)
    with pytest.raises(BDMCError, match="structure"):
        bdmc.reverse_ais(key, model, data, exact_latent={"nu": jnp.zeros(2)}, num_steps=5)
    with pytest.raises(BDMCError, match="without exact_latent"):
        bdmc.sandwich(key, model, data, steps=[5])


@dataclasses.dataclass(frozen=True)
class BlowsUp(LinearRegression):
    """A model whose density turns NaN once lambda exceeds one half, for chains with beta_0 > 0."""

    def log_density(self, latent, data, lam):
        base = self.log_prior(latent) + jnp.sum(lam * self.log_likelihood(latent, data))
        return jnp.where((jnp.max(lam) > 0.5) & (latent["beta"][0] > 0), jnp.nan, base)


def test_nan_log_weight_names_step_lambda_and_chain(key):
    model = BlowsUp()
    data, _ = bdmc.simulate(key, model)
    init = jax.vmap(model.sample_prior)(jax.random.split(key, 16))
    first_bad_chain = int(np.argmax(np.asarray(init["beta"][:, 0]) > 0))
    path = schedules.linear(11)
    with pytest.raises(NonFiniteLogWeightError) as err:
        bdmc.anneal(key, model, data, bdmc.kernels.RandomWalkMH(model, scale=1e-9), path, init, progress=False)
    assert err.value.step == 6 and err.value.lam == pytest.approx(0.6)
    assert err.value.chain == first_bad_chain
    assert "step 6" in str(err.value) and "lambda = 0.6" in str(err.value)
    # The NaN is the model's own log density, met first by the weight at that step.
    assert isinstance(err.value, bdmc.NonFiniteLogDensityError)
    assert (err.value.term, err.value.evaluated_by) == ("log_density", "weight")


def test_missing_extra_names_the_extra():
    with pytest.raises(MissingExtraError, match=r"pip install 'bdmc\[numpyro\]'"):
        require("surely_not_an_installed_module", extra="numpyro")


def test_estimate_combinations():
    runs = np.array([-1.0, -2.0, -np.inf, -3.0])
    lme = bdmc.log_mean_exp(runs)
    assert lme == pytest.approx(np.log(np.mean(np.exp(runs))))
    assert bdmc.log_harmonic_mean(runs[:2]) == pytest.approx(-np.log(np.mean(np.exp(-runs[:2]))))
    big = np.array([1000.0, 1001.0])  # no overflow in log space
    assert bdmc.log_mean_exp(big) == pytest.approx(1001.0 + np.log((1 + np.exp(-1)) / 2))
    est = bdmc.Estimate.from_runs([-1.0, -2.0], bound="lower", seconds=0.0, compile_seconds=0.0, n_evals=1)
    with pytest.raises(ValueError):
        est.runs[0] = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.value = 0.0
    with pytest.raises(ValueError, match="only a stochastic bound"):
        bdmc.Estimate.from_runs([1.0], bound=None, seconds=0, compile_seconds=0, n_evals=0).certified()
