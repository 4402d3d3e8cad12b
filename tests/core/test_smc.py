"""SMC and SHME on the engine: unbiased Z (or 1/Z) with adaptive resampling, bounds, convergence, negative controls."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import simulate_float64

import bdmc
from bdmc import BDMCError, simulate
from bdmc.core.prior import prior_draws
from bdmc.core.prior_check import PRIOR_CHECK_DRAWS
from bdmc.core.resampling import AdaptiveResampling
from bdmc.kernels import RandomWalkMH
from bdmc.models import FiniteMixture, GaussianMean, LinearRegression

EXACT = {
    "linear-regression": LinearRegression(),
    "finite-mixture": FiniteMixture(n=6, k=3),
    # Noise wider than the prior keeps the harmonic-mean weights of SHME at finite variance.
    "gaussian-mean": GaussianMean(n=20, dim=3, noise_std=2.0),
}
RUNS = {1: 2000, 8: 500, 64: 64}
# Compiling an SMC program costs ~100x running one here, and the engine caches programs by (model, kernel,
# proposal, particles, shapes) within a module: tests below reuse these (particles, runs) shapes wherever
# their claim allows, so that they run on programs already compiled.


def _problem(name, seed=1):
    model = EXACT[name]
    data, latent = simulate_float64(jax.random.key(seed), model)  # the same data set in float32 runs
    return model, data, latent, float(model.exact_log_marginal(data))


@pytest.mark.parametrize("particles", [1, 8, 64])
@pytest.mark.parametrize("name", ["linear-regression", "finite-mixture"])
def test_smc_is_unbiased_for_z_with_adaptive_resampling(name, particles, key):
    model, data, _, exact = _problem(name)
    est = bdmc.smc(key, model, data, num_particles=particles, num_runs=RUNS[particles], ess_threshold=0.5)
    assert abs(est.value - exact) < 4 * est.stderr, (est.value - exact, est.stderr)
    assert est.bound == "lower" and est.runs.shape == (RUNS[particles],)
    resampled = est.details.info.resampled
    if particles > 1:
        # Adaptive: some cases trigger resampling and some do not, so weights arrive non-uniform.
        assert 0.05 < resampled.mean() < 0.95
    else:
        assert np.all(resampled == 0)


@pytest.mark.parametrize("proposal", ["prior", "posterior"])
def test_smc_below_and_shme_above_the_enumerated_log_ml(proposal, key):
    model, data, latent, exact = _problem("finite-mixture")
    kw = dict(num_particles=8, num_runs=RUNS[8], proposal=proposal)  # the shapes of the unbiasedness test
    lower = bdmc.smc(key, model, data, **kw)
    upper = bdmc.shme(key, model, data, exact_latent=latent, **kw)
    assert lower.mean_single < exact - 2 * lower.stderr_single
    assert upper.mean_single > exact + 2 * upper.stderr_single
    assert upper.bound == "upper" and upper.settings["method"] == "shme"


def test_posterior_proposal_beats_the_prior_proposal(key):
    # Summing out the new case's assignment (Eqs. 18-20) gives lower-variance weights than proposing it from
    # its prior (Eqs. 16-17).
    model, data, _, exact = _problem("finite-mixture")
    prior = bdmc.smc(key, model, data, num_runs=RUNS[1], proposal="prior")
    post = bdmc.smc(key, model, data, num_runs=RUNS[1], proposal="posterior")
    assert exact - post.mean_single < (exact - prior.mean_single) / 3
    assert np.std(post.runs) < np.std(prior.runs) / 2


@pytest.mark.slow
def test_both_converge_with_more_moves_per_case(key):
    # A slow random-walk kernel, so that mixing, not the number of particles, limits accuracy.
    model, data, latent, exact = _problem("gaussian-mean")
    kernel = RandomWalkMH(model, scale=0.05)
    lower, upper = [], []
    for moves in (1, 10, 100):
        kw = dict(num_moves=moves, num_particles=8, num_runs=100, kernel=kernel)
        lower.append(bdmc.smc(key, model, data, **kw).mean_single - exact)
        upper.append(bdmc.shme(key, model, data, exact_latent=latent, **kw).mean_single - exact)
    assert lower[0] < lower[1] < lower[2] < 0
    assert upper[0] > upper[1] > upper[2] > 0
    assert upper[2] - lower[2] < (upper[0] - lower[0]) / 3


def test_shme_is_unbiased_for_one_over_z(key):
    model, data, latent, exact = _problem("gaussian-mean")
    est = bdmc.shme(key, model, data, exact_latent=latent, num_particles=8, num_runs=500)
    assert abs(est.value - exact) < 4 * est.stderr, (est.value - exact, est.stderr)


def test_one_particle_smc_is_ais_on_the_data_path(key):
    model, data, _, _ = _problem("linear-regression")
    smc = bdmc.smc(key, model, data, num_runs=RUNS[1], progress=False)
    path = bdmc.schedules.data_path(model.n)
    init, key_run = prior_draws(key, model, RUNS[1])
    ais = bdmc.anneal(key_run, model, data, model.default_kernel(), path, init, prior_check=PRIOR_CHECK_DRAWS,
                      progress=False)
    assert not ais.compiled  # SMC's own program: so the same numbers bit for bit
    np.testing.assert_array_equal(smc.runs, ais.log_weights)


# ------------------------------------------------------------------------------------- negative controls


@dataclasses.dataclass(frozen=True)
class ForgetfulResampling(AdaptiveResampling):
    """Resets the weights at a resampling step without banking their mean: the evidence so far is lost."""

    @staticmethod
    def bank(lw):
        return jnp.zeros(lw.shape[0], lw.dtype)


@dataclasses.dataclass(frozen=True)
class NoResetResampling(AdaptiveResampling):
    """Banks the weights' mean but keeps the weights: the weight correction at resampling is dropped."""

    def __call__(self, key, latents, logw, log_z, num_particles, **keys):
        latents, _, new_log_z, do = super().__call__(key, latents, logw, log_z, num_particles, **keys)
        return latents, logw, new_log_z, do


@dataclasses.dataclass(frozen=True)
class ResampleByW(AdaptiveResampling):
    """SHME resampling in proportion to w instead of 1/w (in engine terms, to exp(-logw))."""

    @staticmethod
    def selection_log_weights(lw):
        return -lw


def _with_resampler(monkeypatch, resampler):
    import bdmc.core.smc as smc_module

    monkeypatch.setattr(smc_module, "AdaptiveResampling", lambda **kw: resampler(**kw))


@pytest.mark.parametrize("broken", [ForgetfulResampling, NoResetResampling])
def test_a_broken_resampling_step_is_caught(broken, key, monkeypatch):
    model, data, _, exact = _problem("linear-regression")
    kw = dict(num_particles=8, num_runs=500)
    good = bdmc.smc(key, model, data, **kw)
    assert abs(good.value - exact) < 4 * good.stderr
    _with_resampler(monkeypatch, broken)
    bad = bdmc.smc(key, model, data, **kw)
    assert abs(bad.value - exact) > 4 * bad.stderr + 1.0, (bad.value - exact, bad.stderr)


def test_shme_resampling_by_w_instead_of_one_over_w_is_caught(key, monkeypatch):
    # A state-dependent kernel, so which particles survive resampling matters. Measured: correct SHME about
    # 0.9 nat above the truth, the broken one 0.3-0.5 nat below it (an upper bound violated).
    model, data, latent, exact = _problem("gaussian-mean")
    kw = dict(num_particles=64, num_runs=256, num_moves=2, kernel=RandomWalkMH(model, scale=0.3))
    good = bdmc.shme(key, model, data, exact_latent=latent, **kw)
    assert good.mean_single > exact + 4 * good.stderr_single
    _with_resampler(monkeypatch, ResampleByW)
    bad = bdmc.shme(key, model, data, exact_latent=latent, **kw)
    assert bad.mean_single < exact - 4 * bad.stderr_single, (bad.mean_single - exact, bad.stderr_single)


def test_bad_options_are_named(key):
    model, data, latent, _ = _problem("linear-regression")
    with pytest.raises(BDMCError, match="num_particles"):
        bdmc.smc(key, model, data, num_particles=0)
    with pytest.raises(BDMCError, match="unknown proposal"):
        bdmc.smc(key, model, data, proposal="magic")
    with pytest.raises(BDMCError, match="log_predictive"):
        bdmc.smc(key, model, data, proposal="posterior")
    with pytest.raises(ValueError, match="resampling scheme"):
        bdmc.smc(key, model, data, resampling="wrong")


def test_sandwich_runs_smc_and_shme_with_moves_as_the_knob(key):
    model, data, latent, exact = _problem("finite-mixture")
    runs = RUNS[8]  # one move per case reuses the programs of the tests above
    res = bdmc.sandwich(key, model, data, latent, steps=[1, 4], num_runs=runs, method="smc", num_particles=8)
    t = res.table.set_index(["num_steps", "direction"])
    assert set(res.table["method"]) == {"smc"} and len(res.table) == 4
    for moves in (1, 4):
        assert t.loc[(moves, "forward")].mean_single < exact < t.loc[(moves, "reverse")].mean_single
        assert t.loc[(moves, "forward")].n_evals == runs * 8 * model.n * (1 + moves)
    with pytest.raises(BDMCError, match="unknown method"):
        bdmc.sandwich(key, model, data, latent, method="nested")


@pytest.mark.parametrize("name", ["clustering", "low-rank", "binary"])
def test_posterior_proposal_is_unbiased_on_the_paper_models(name, key):
    # Tiny instances with exact log-ML (quadrature / enumeration); the posterior proposal sums out the new
    # row's local latents (u_i, or all 2^K rows z_i) in the weight and then draws them given the row.
    from bdmc.models import BinaryAttributes, Clustering, LowRank

    model = {"clustering": Clustering(n=6, dim=2, k=3), "low-rank": LowRank(n=6, d=2, k=1),
             "binary": BinaryAttributes(n=5, dim=2, k=2)}[name]
    data, _ = simulate(jax.random.key(1), model)
    exact = float(model.exact_log_marginal(data))
    post = bdmc.smc(key, model, data, num_particles=8, num_runs=300, proposal="posterior")
    prior = bdmc.smc(key, model, data, num_particles=8, num_runs=300, proposal="prior")
    assert abs(post.value - exact) < 4 * post.stderr, (post.value - exact, post.stderr)
    assert abs(prior.value - exact) < 4 * prior.stderr, (prior.value - exact, prior.stderr)
    assert np.std(post.runs) < np.std(prior.runs)
