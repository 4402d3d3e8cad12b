"""The pilot-chosen data path of SMC (bdmc.core.smc_pilot): frozen, unbiased, more accurate, O(N) steps, costed."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import simulate_float64

import bdmc
from bdmc import BDMCError
from bdmc.core import schedules
from bdmc.core.smc import GENERIC_PARTICLES
from bdmc.core.smc_pilot import DataPathPilot, next_row, refine_data_path
from bdmc.errors import NonFiniteLogWeightError
from bdmc.kernels import MovesTable
from bdmc.models import FiniteMixture, LinearRegression

MODEL = LinearRegression()  # the paper's cubic regression; exact log p(y)


def _problem(seed=1):
    data, latent = simulate_float64(jax.random.key(seed), MODEL)
    return data, latent, float(MODEL.exact_log_marginal(data))


def test_per_case_substeps_switch_each_case_on_linearly_in_its_own_count():
    path = schedules.data_path(3, steps_per_case=[2, 1, 3], order=[2, 0, 1])
    assert path.shape == (7, 3)
    np.testing.assert_allclose(path[:, 2], [0, 1 / 3, 2 / 3, 1, 1, 1, 1])
    np.testing.assert_allclose(path[:, 0], [0, 0, 0, 0, 0.5, 1, 1])
    np.testing.assert_allclose(path[:, 1], [0, 0, 0, 0, 0, 0, 1])
    with pytest.raises(bdmc.errors.ScheduleError, match="steps_per_case"):
        schedules.data_path(3, steps_per_case=[2, 0, 1])


def test_next_row_merges_what_the_particles_agree_on_and_splits_what_they_do_not():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((400, 1))
    # Cases 0-2 agree across particles (variance 0.01 each, 0.09 together when perfectly correlated); case 3
    # alone has variance 0.4.
    terms = np.hstack([0.1 * base, 0.1 * base, 0.1 * base, np.sqrt(0.4) * rng.standard_normal((400, 1))])
    terms = (terms - terms.mean(0)) / terms.std(0) * np.sqrt([0.01, 0.01, 0.01, 0.4])
    lam = np.zeros(4)
    row, v = next_row(terms, lam, np.arange(4), target_variance=0.1, max_substeps=64)
    np.testing.assert_array_equal(row, [1, 1, 1, 0])  # three cases at once: 0.09 <= 0.1 < 0.09 + 0.4
    assert v == pytest.approx(0.09)
    row, v = next_row(terms, row, np.array([3]), target_variance=0.1, max_substeps=64)
    np.testing.assert_allclose(row, [1, 1, 1, 0.5])  # sqrt(0.1 / 0.4): the step's variance meets the target
    assert v == pytest.approx(0.1)
    # What remains (half) varies by 0.4 / 4 = 0.1: within a target of 0.11 it goes in at once; at 0.05 the
    # step takes sqrt(0.05 / 0.1) of it.
    assert next_row(terms, row, np.array([3]), target_variance=0.11, max_substeps=64)[0][3] == 1.0
    half = next_row(terms, row, np.array([3]), target_variance=0.05, max_substeps=64)[0][3]
    np.testing.assert_allclose(half, 0.5 + 0.5 * np.sqrt(0.5))
    # A -inf term (zero likelihood at one particle) kills that particle at any weight: the step is sized by
    # the survivors (cases 1, 0, 2 together vary by 0.09 across them), and the order is honoured.
    terms[5, 1] = -np.inf
    row, v = next_row(terms, np.zeros(4), np.array([1, 0, 2, 3]), target_variance=0.1, max_substeps=8)
    np.testing.assert_array_equal(row, [1, 1, 1, 0])
    assert v == pytest.approx(0.09, rel=0.05)
    # No survivor: the smallest step.
    terms[:, 1] = -np.inf
    row, _ = next_row(terms, np.zeros(4), np.array([1, 0, 2, 3]), target_variance=0.1, max_substeps=8)
    np.testing.assert_allclose(row, [0, 1 / 8, 0, 0])
    # A case that varies by 10^12 across the particles (a broad prior in natural units) takes a step of
    # sqrt(0.1 / 10^12) of its weight, far below a sixty-fourth.
    wide = np.sqrt(1e12) * rng.standard_normal((400, 1))
    row, v = next_row(wide, np.zeros(1), np.array([0]), target_variance=0.1, max_substeps=10**9)
    assert 1e-7 < row[0] < 1e-6 and v == pytest.approx(0.1)


def test_chosen_path_is_frozen_unbiased_for_z_costed_and_beats_the_plain_path(key):
    data, _, exact = _problem()
    kernel = bdmc.core.ais.default_kernel(MODEL)
    first = refine_data_path(key, MODEL, data, kernel, num_cases=MODEL.n)
    again = refine_data_path(key, MODEL, data, kernel, num_cases=MODEL.n)
    np.testing.assert_array_equal(first.path, again.path)  # the pilot's own keys: the same choice
    path = first.path
    assert np.all(np.diff(path, axis=0) >= 0) and np.all(path[0] == 0) and np.all(path[-1] == 1)
    # The early cases of a broad prior need sub-steps; once the posterior settles, one step takes several.
    per_step = np.count_nonzero(np.diff(path, axis=0), axis=1)
    assert first.substeps[:3].sum() > 3 and per_step.max() > 1, (first.substeps[:5], per_step)
    kw = dict(num_particles=8, num_runs=500, progress=False)
    tuned = bdmc.smc(key, MODEL, data, tune="pilot", **kw)
    assert tuned.settings["data_path"] == "pilot-chosen" and tuned.settings["path_steps"] == len(path) - 1
    assert tuned.details.info.acceptance.shape[0] == tuned.settings["path_steps"]
    # The pilot's evaluations are part of the estimate's cost.
    assert tuned.n_evals == tuned.details.n_evals + tuned.settings["data_pilot_evals"] > tuned.details.n_evals
    assert abs(tuned.value - exact) < 4 * tuned.stderr, (tuned.value - exact, tuned.stderr)
    plain = bdmc.smc(key, MODEL, data, tune="off", **kw)
    rmse = {name: float(np.sqrt(np.mean((np.asarray(e.runs) - exact) ** 2)))
            for name, e in (("tuned", tuned), ("plain", plain))}
    assert rmse["tuned"] < rmse["plain"] / 1.5, rmse


# -m slow: a large data set's saving; the chosen path's merging, unbiasedness and cost keep the default tests above.
@pytest.mark.slow
def test_the_chosen_path_takes_far_fewer_steps_than_cases_on_a_large_data_set(key):
    """O(N) per step, not per case: 1,000 cases of a Gaussian mean settle in a few dozen steps."""
    data = 0.7 + jax.random.normal(jax.random.key(3), (1000,))
    refined = refine_data_path(key, _Generic(), data, bdmc.core.ais.default_kernel(_Generic()), num_cases=1000)
    assert refined.healthy and refined.path.shape[0] - 1 < 100, refined.path.shape
    est = bdmc.smc(key, _Generic(), data, num_particles=32, num_runs=4, progress=False)
    exact = _generic_log_z(np.asarray(data))
    assert abs(est.value - exact) < max(4 * est.stderr, 0.3), (est.value, exact, est.stderr)


def _generic_log_z(y):
    """log p(y) of ``_Generic``: y ~ N(0, I + 11^T)."""
    from scipy import stats

    n = len(y)
    return float(stats.multivariate_normal(np.zeros(n), np.eye(n) + np.ones((n, n))).logpdf(y))


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
    for bad, name in ((dict(mass="full"), "mass"), (dict(target_acceptance=1.0), "target_acceptance"),
                      (dict(warmup=-1), "warmup"), (dict(max_steps=0), "max_steps"), (dict(seed=1.5), "seed"),
                      (dict(seed=-1), "seed")):
        with pytest.raises(BDMCError, match=name):
            DataPathPilot(**bad)


@dataclass(frozen=True)
class _Wide:
    """A mean in natural units: x ~ N(0, 100^2), y_i ~ N(x, 1). Under prior draws the first case's
    log-likelihood varies by about 10^7; the posterior is 100 times narrower than the prior after one case."""

    def sample_prior(self, key):
        return {"x": 100.0 * jax.random.normal(key, ())}

    def sample_data(self, key, latent):
        return latent["x"] + jax.random.normal(key, (40,))

    def log_prior(self, latent):
        return -0.5 * (latent["x"] / 100.0) ** 2 - jnp.log(100.0) - 0.5 * jnp.log(2 * jnp.pi)

    def log_likelihood(self, latent, data):
        return -0.5 * (data - latent["x"]) ** 2 - 0.5 * jnp.log(2 * jnp.pi)


def _wide_log_z(y):
    from scipy import stats

    n = len(y)
    return float(stats.multivariate_normal(np.zeros(n), np.eye(n) + 1e4 * np.ones((n, n))).logpdf(y))


def test_the_pilot_tunes_the_kernel_as_the_particles_concentrate_and_the_run_keeps_it_frozen(key):
    """On a broad prior in natural units the fixed kernel and the 1/64 floor on a case's step leave SMC far off;
    the pilot's steps down to 10^-7 of a case, its steered step sizes and its preconditioner bring it within
    its error, with E[Z-hat] = Z still (the tables are frozen before the run)."""
    model = _Wide()
    data = 137.0 + jax.random.normal(jax.random.key(4), (40,))
    exact = _wide_log_z(np.asarray(data))
    kernel = bdmc.core.ais.default_kernel(model)
    refined = refine_data_path(key, model, data, kernel, num_cases=40)
    assert refined.healthy and not refined.stopped
    # The first case is switched on in many small steps (its first far below a sixty-fourth).
    assert refined.path[1, 0] < 1e-4 and refined.substeps[0] > 5, (refined.path[1, 0], refined.substeps[:3])
    # The run's kernel holds tables keyed by the share of data switched on, read at each row as the pilot had it
    # (inside the table of moves per step that the pilot chose).
    assert isinstance(refined.kernel, MovesTable)
    tuned = refined.kernel.kernel
    shares = refined.path.mean(axis=1)
    sizes = np.array([float(tuned.step_size(jnp.asarray(row))) for row in refined.path])
    assert np.all(np.diff(shares) > 0) and np.all(sizes > 0)
    scale = np.array([float(np.ravel(tuned.inverse_mass.covariance(jnp.asarray(row)))[0]) for row in refined.path])
    assert scale[0] > 1e3 and scale[-1] < 0.1, (scale[0], scale[-1])  # prior variance 10^4, posterior 1/40
    # In the preconditioner's units the step stays of order one: the step a move takes in x shrinks with
    # the posterior, by about the ratio of prior to posterior sd (600).
    assert sizes[0] * np.sqrt(scale[0]) > 100 * sizes[-1] * np.sqrt(scale[-1])
    assert 0.5 < np.mean(refined.acceptance) < 0.95
    kw = dict(num_particles=16, num_runs=200, progress=False)
    est = bdmc.smc(key, model, data, **kw)
    assert est.settings["step_sizes"].startswith("StepSizeTable") and est.settings["data_pilot_acceptance"] > 0.5
    # Unbiased for Z: log of the mean of Z-hat / Z within its error (runs are independent given the tables).
    ratios = np.exp(np.asarray(est.runs) - exact)
    assert abs(np.mean(ratios) - 1) < 4 * np.std(ratios) / np.sqrt(len(ratios)) + 0.02, np.mean(ratios)
    assert abs(est.value - exact) < max(4 * est.stderr, 0.1), (est.value - exact, est.stderr)
    # Negative control: the previous pilot (one fixed kernel, one move a step, no step below 1/64 of a case)
    # leaves single runs tens of nats low, where the tuned runs sit within a nat.
    old = DataPathPilot(max_substeps=64, steer=False, mass="identity", moves_target=None)
    untuned = bdmc.smc(key, model, data, tune=old, **kw)
    errors = {name: np.median(np.abs(np.asarray(e.runs) - exact)) for name, e in (("tuned", est), ("old", untuned))}
    assert errors["tuned"] < 1 and errors["old"] > 10, errors


def test_the_pilot_follows_the_runs_particles_between_32_and_256(key):
    """A larger run gets a larger pilot: its tables are fitted from the pilot's particles."""
    auto = DataPathPilot()
    assert [auto.for_run(n).num_particles for n in (None, 8, 64, 1024)] == [32, 32, 64, 256]
    assert DataPathPilot(num_particles=16).for_run(1024).num_particles == 16  # a given count is kept
    for bad in (1, 2.5, "many", True):
        with pytest.raises(BDMCError, match="num_particles"):
            DataPathPilot(num_particles=bad)
    data = jnp.array([0.3, -0.2, 1.1, 0.4, 0.0])
    est = bdmc.smc(key, _Generic(), data, num_particles=48, num_runs=2, progress=False)
    assert est.settings["data_pilot_particles"] == 48


def test_a_pilot_past_max_steps_switches_on_what_remains_and_says_so(key):
    model = _Wide()
    data = 137.0 + jax.random.normal(jax.random.key(4), (40,))
    est = bdmc.smc(key, model, data, num_particles=8, num_runs=2, tune=DataPathPilot(max_steps=5),
                   progress=False)
    assert est.settings["path_steps"] == 5 and "max_steps = 5" in est.settings["data_path"]


def test_a_frozen_data_path_is_reused_on_equal_model_data_and_options_only(key):
    """A second call on the same model, data values and options gets the first pilot's frozen choice at no time
    (its evaluations still counted); other data, other settings or reuse=False pilot anew, and a pilot that met
    a NaN or +inf is never handed on."""
    bdmc.clear_caches()
    data = jnp.array([0.3, -0.2, 1.1, 0.4, 0.0])
    run = lambda k, d=data, model=_Generic(), **kw: bdmc.smc(  # noqa: E731
        k, model, d, num_particles=32, num_runs=2, progress=False, **kw)
    first, second = run(key), run(jax.random.fold_in(key, 1))
    assert not first.settings["data_pilot_reused"] and second.settings["data_pilot_reused"]
    for name in ("path_steps", "step_sizes", "preconditioner", "moves_per_step", "data_pilot_evals"):
        assert second.settings[name] == first.settings[name], name
    assert second.settings["data_pilot_seconds"] == 0.0 < first.settings["data_pilot_seconds"]
    assert second.n_evals == first.n_evals
    assert not run(key, d=data + 0.5).settings["data_pilot_reused"]
    assert not run(key, tune=DataPathPilot(target_variance=0.2)).settings["data_pilot_reused"]
    assert not run(key, tune=DataPathPilot(reuse=False)).settings["data_pilot_reused"]
    assert run(key, tune=DataPathPilot()).settings["data_pilot_reused"]  # the default's settings, spelled out
    # The pilot's key is its own (DataPathPilot.seed): another seed pilots anew, and its choice is recorded.
    reseeded = run(key, tune=DataPathPilot(seed=3))
    assert not reseeded.settings["data_pilot_reused"] and reseeded.settings["data_pilot_seed"] == 3
    # A pilot that met a NaN leaves the plain path and is not kept: the next call pilots again.
    buggy = _Generic(nan_above=1.0)
    kernel = bdmc.core.ais.default_kernel(buggy)
    met = [refine_data_path(key, buggy, data, kernel, num_cases=5, run_particles=64) for _ in range(2)]
    assert [(m.healthy, m.reused) for m in met] == [(False, False)] * 2 and met[1].seconds > 0
