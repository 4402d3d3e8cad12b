"""The pilot-refined data path of SMC (bdmc.core.smc_pilot): frozen, unbiased, more accurate, and costed."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc import BDMCError
from bdmc.core import schedules
from bdmc.core.smc import GENERIC_PARTICLES
from bdmc.core.smc_pilot import DataPathPilot, refine_data_path, substeps_for
from bdmc.errors import NonFiniteLogWeightError
from bdmc.models import FiniteMixture, LinearRegression
from helpers import simulate_float64

MODEL = LinearRegression()  # the paper's cubic regression; exact log p(y)


def _problem(seed=1):
    data, latent = simulate_float64(jax.random.key(seed), MODEL)
    return data, latent, float(MODEL.exact_log_marginal(data))


def test_substeps_keep_each_steps_variance_near_the_target():
    k = substeps_for([0.0, 0.1, 0.4, 3.6, 0.35, np.inf, np.nan], target_variance=0.1, max_substeps=64)
    np.testing.assert_array_equal(k, [1, 1, 2, 6, 2, 64, 64])
    # K^2 * target covers v, and K - 1 would not (the smallest such K), wherever K is not clipped.
    v = np.array([0.3, 2.0, 17.0, 100.0])
    k = substeps_for(v, target_variance=0.5, max_substeps=1000)
    assert np.all(k**2 * 0.5 >= v) and np.all((k - 1) ** 2 * 0.5 < v)


def test_per_case_substeps_switch_each_case_on_linearly_in_its_own_count():
    path = schedules.data_path(3, steps_per_case=[2, 1, 3], order=[2, 0, 1])
    assert path.shape == (7, 3)
    np.testing.assert_allclose(path[:, 2], [0, 1 / 3, 2 / 3, 1, 1, 1, 1])
    np.testing.assert_allclose(path[:, 0], [0, 0, 0, 0, 0.5, 1, 1])
    np.testing.assert_allclose(path[:, 1], [0, 0, 0, 0, 0, 0, 1])
    with pytest.raises(bdmc.errors.ScheduleError, match="steps_per_case"):
        schedules.data_path(3, steps_per_case=[2, 0, 1])


def test_refined_smc_is_frozen_unbiased_for_z_costed_and_beats_the_plain_path(key):
    data, _, exact = _problem()
    kernel = bdmc.core.ais.default_kernel(MODEL)
    first = refine_data_path(key, MODEL, data, kernel, num_cases=MODEL.n)
    again = refine_data_path(key, MODEL, data, kernel, num_cases=MODEL.n)
    np.testing.assert_array_equal(first.substeps, again.substeps)  # the pilot's own keys: the same choice
    # The early cases of a broad prior need sub-steps; the path has one row per sub-step.
    assert first.substeps[:3].sum() > 3 and first.path.shape == (first.substeps.sum() + 1, MODEL.n)
    kw = dict(num_particles=8, num_runs=500, progress=False)
    tuned = bdmc.smc(key, MODEL, data, tune="pilot", **kw)
    assert tuned.settings["substeps_total"] > MODEL.n and tuned.settings["data_path"] == "pilot-refined"
    assert tuned.details.info.acceptance.shape[0] == tuned.settings["substeps_total"]
    # The pilot's evaluations are part of the estimate's cost.
    assert tuned.n_evals == tuned.details.n_evals + tuned.settings["data_pilot_evals"] > tuned.details.n_evals
    assert abs(tuned.value - exact) < 4 * tuned.stderr, (tuned.value - exact, tuned.stderr)
    plain = bdmc.smc(key, MODEL, data, tune="off", **kw)
    rmse = {name: float(np.sqrt(np.mean((np.asarray(e.runs) - exact) ** 2)))
            for name, e in (("tuned", tuned), ("plain", plain))}
    assert rmse["tuned"] < rmse["plain"] / 1.5, rmse


@dataclass(frozen=True)
class _Generic:
    """A Gaussian mean without a kernel of its own; optionally NaN where x > 2 (a bug the run must report)."""

    nan_above: float = np.inf

    def sample_prior(self, key):
        return {"x": jax.random.normal(key, ())}

    def sample_data(self, key, latent):
        return latent["x"] + jax.random.normal(key, (5,))

    def log_prior(self, latent):
        return -0.5 * latent["x"] ** 2 - 0.5 * jnp.log(2 * jnp.pi)

    def log_likelihood(self, latent, data):
        terms = -0.5 * (data - latent["x"]) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
        return jnp.where(latent["x"] > self.nan_above, jnp.nan, terms)


def test_auto_gives_generic_models_a_population_and_the_paper_models_one_particle(key):
    data = jnp.array([0.3, -0.2, 1.1, 0.4, 0.0])
    generic = bdmc.smc(key, _Generic(), data, num_runs=2, progress=False)
    assert generic.settings["num_particles"] == GENERIC_PARTICLES and generic.settings["tuned"] == "pilot"
    assert generic.n_evals == generic.details.n_evals + generic.settings["data_pilot_evals"]
    mixture = FiniteMixture(n=6, k=3)
    sim = simulate_float64(jax.random.key(1), mixture)
    paper = bdmc.smc(key, mixture, sim[0], num_runs=2, progress=False)
    assert paper.settings["num_particles"] == 1 and paper.settings["tuned"] == "off"


def test_a_nan_met_by_the_pilot_is_reported_by_the_run(key):
    data = jnp.array([0.3, -0.2, 1.1, 0.4, 0.0])
    with pytest.raises(NonFiniteLogWeightError):
        bdmc.smc(key, _Generic(nan_above=1.0), data, num_particles=64, num_runs=2, tune="pilot", progress=False)


def test_bad_tuning_options_name_the_culprit(key):
    data = jnp.array([0.3, -0.2, 1.1, 0.4, 0.0])
    with pytest.raises(BDMCError, match="tune must be"):
        bdmc.smc(key, _Generic(), data, tune="sometimes")
    with pytest.raises(BDMCError, match="num_particles must be a positive integer or \"auto\""):
        bdmc.smc(key, _Generic(), data, num_particles="many")
    mixture = FiniteMixture(n=6, k=3)
    with pytest.raises(BDMCError, match="posterior"):
        bdmc.smc(key, mixture, simulate_float64(jax.random.key(1), mixture)[0], proposal="posterior", tune="pilot")
    with pytest.raises(BDMCError, match="target_variance"):
        DataPathPilot(target_variance=0.0)
