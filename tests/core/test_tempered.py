"""Tempered SMC with frozen temperatures: Z unbiased forward, 1/Z unbiased in reverse from copies of the exact
latent, and the bias that temperatures adapted inside the run bring (negative control)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import simulate_float64

import bdmc
from bdmc.kernels import HMC
from bdmc.models import GaussianMean

pytestmark = pytest.mark.float64

MODEL = GaussianMean(n=10, dim=2)
# A deliberately poor kernel (short HMC trajectories): unbiasedness must not rest on the kernel mixing.
KERNEL = HMC(MODEL, step_size=0.15, num_integration_steps=3)
FEW = dict(num_steps=6, num_particles=4, schedule="geometric", tune="off", kernel=KERNEL, progress=False)


@pytest.fixture(scope="module")
def problem():
    data, latent = simulate_float64(jax.random.key(2), MODEL)
    return data, latent, float(MODEL.exact_log_marginal(data))


def _ratio_mean(log_ratios):
    """Mean and standard error of exp(log_ratios): an unbiased estimator's ratio to the truth averages 1."""
    r = np.exp(np.asarray(log_ratios, np.float64))
    return r.mean(), r.std(ddof=1) / np.sqrt(r.size)


def test_forward_tempered_smc_is_unbiased_for_z_and_its_log_a_lower_bound(problem):
    data, _, exact = problem
    est = bdmc.tempered_smc(jax.random.key(0), MODEL, data, num_runs=4000, **FEW)
    assert est.khat < 0.5  # light tails: the ratio's mean and standard error mean what they say
    mean, se = _ratio_mean(est.runs - exact)
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    # Not a vacuous check: the runs are noisy enough that Jensen's gap shows in their logs.
    logs = est.runs - exact
    assert logs.mean() < -4 * logs.std() / np.sqrt(logs.size) and logs.mean() < -0.02
    assert est.bound == "lower" and est.settings["num_particles"] == 4 and est.settings["tuned"] == "off"


def test_reverse_tempered_smc_from_copies_of_the_exact_latent_is_unbiased_for_one_over_z(problem):
    """Each run's K particles are copies of one exact posterior draw (a fresh draw per run): marginally exact,
    not independent, which is all the Feynman-Kac argument needs (docs/tempered_smc.md)."""
    data, _, exact = problem
    runs = 4000
    keys = jax.random.split(jax.random.key(5), runs)
    posterior = jax.vmap(lambda k: MODEL.gibbs_update(k, None, data, 1.0))(keys)
    # Reverse weights from the posterior out to the wide prior are heavy-tailed on a coarse path (k-hat 0.98 at
    # 6 temperatures, where a mean and its standard error say little); 40 keep them light.
    est = bdmc.reverse_tempered_smc(jax.random.key(1), MODEL, data, exact_latent=posterior, num_runs=runs,
                                    **(FEW | {"num_steps": 40}))
    assert est.khat < 0.5
    mean, se = _ratio_mean(exact - est.runs)  # runs are -log of the estimate of 1/Z
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    logs = est.runs - exact
    assert logs.mean() > 4 * logs.std() / np.sqrt(logs.size) and logs.mean() > 0.02  # an upper bound, not tight
    assert est.bound == "upper"


def test_the_sandwich_pair_brackets_the_truth_and_closes_the_gap(problem):
    data, latent, exact = problem
    result = bdmc.sandwich(jax.random.key(3), MODEL, data, latent, method="tempered-smc", steps=[3, 30],
                           num_runs=8, progress=False)  # the model's exact Gibbs moves, 32 particles
    t = result.table.set_index(["num_steps", "direction"])
    for T in (3, 30):
        assert t.loc[(T, "forward"), "certified_b3"] <= exact <= t.loc[(T, "reverse"), "certified_b3"]
    assert t.loc[(30, "forward"), "gap_single"] < t.loc[(3, "forward"), "gap_single"]
    assert abs(t.loc[(30, "forward"), "value"] - exact) < 0.05 and not result.table.alarm.any()


def test_a_pilot_places_the_temperatures_and_the_run_keeps_them_frozen(problem):
    data, latent, exact = problem
    kw = dict(num_steps=12, num_particles=16, num_runs=8, kernel=HMC(MODEL), tune="pilot", progress=False)
    lower = bdmc.tempered_smc(jax.random.key(8), MODEL, data, **kw)
    upper = bdmc.reverse_tempered_smc(jax.random.key(9), MODEL, data, exact_latent=latent, **kw)
    assert lower.settings["tuned"] == "pilot" and "StepSizeTable" in lower.settings["step_sizes"]
    assert lower.settings["num_steps"] == 12 and lower.details.info.ess.shape[0] == 11
    assert lower.certified(3.0) <= exact <= upper.certified(3.0)
    assert upper.value - lower.value < 0.5


def test_particles_and_resampling_make_fewer_temperatures_as_accurate_as_many_ais_steps(problem):
    """The population's point: at equal transitions per run (T x K), tempered SMC's per-run error is smaller
    than AIS's with as many chains, because resampling keeps the particles where the weight is."""
    data, _, exact = problem
    smc = bdmc.tempered_smc(jax.random.key(7), MODEL, data, num_steps=10, num_particles=32, num_runs=16,
                            schedule="geometric", tune="off", kernel=KERNEL, progress=False)
    ais = bdmc.forward_ais(jax.random.key(7), MODEL, data, num_steps=10, num_runs=16, schedule="geometric",
                           tune="off", kernel=KERNEL, progress=False)
    assert np.mean((smc.runs - exact) ** 2) < np.mean((ais.runs - exact) ** 2) / 4


def test_bad_options_are_refused_by_name(problem):
    data, latent, _ = problem
    with pytest.raises(bdmc.BDMCError, match="num_particles must be a positive integer"):
        bdmc.tempered_smc(jax.random.key(0), MODEL, data, num_particles=0, progress=False)
    with pytest.raises(bdmc.BDMCError, match="exact_latent"):
        bdmc.reverse_tempered_smc(jax.random.key(0), MODEL, data, progress=False)
    with pytest.raises(bdmc.BDMCError, match="ess_threshold"):
        bdmc.tempered_smc(jax.random.key(0), MODEL, data, ess_threshold=2.0, progress=False)
    with pytest.raises(bdmc.BDMCError, match="resampling"):
        bdmc.tempered_smc(jax.random.key(0), MODEL, data, resampling="best", progress=False)


# ------------------------------------------------------------------------------- negative control


# The negative control's model: one coordinate, so the estimates vary little and a few % of bias shows.
CONTROL = GaussianMean(n=20, dim=1)


def _adaptive_tempering_log_z(key, data, *, runs: int, particles: int, ess_target: float = 0.5):
    """Tempered SMC whose next temperature is chosen *inside the run* from its own particles (the conditional
    ESS of the increments kept at ``ess_target * particles``, by bisection), as adaptive tempering does, with
    exact moves (the model's Gibbs draw): everything else as the frozen sampler's."""
    def one_run(key):
        keys = jax.random.split(key, 25)
        mu = jax.vmap(CONTROL.sample_prior)(jax.random.split(keys[0], particles))

        def level(carry, k):
            mu, lam, log_z = carry
            ll = jax.vmap(lambda x: jnp.sum(CONTROL.log_likelihood(x, data)))(mu)

            def ess(delta):
                lw = delta * ll
                return jnp.exp(2 * jax.nn.logsumexp(lw) - jax.nn.logsumexp(2 * lw))

            def halve(_, b):
                lo, hi = b
                mid = 0.5 * (lo + hi)
                keep = ess(mid) >= ess_target * particles
                return jnp.where(keep, mid, lo), jnp.where(keep, hi, mid)

            room = 1.0 - lam
            lo, _ = jax.lax.fori_loop(0, 30, halve, (0.0, room))
            new = jnp.where(ess(room) >= ess_target * particles, 1.0, lam + lo)
            new = jnp.where(lam >= 1.0, 1.0, new)
            lw = (new - lam) * ll
            log_z = log_z + jax.nn.logsumexp(lw) - jnp.log(particles)
            moved = jax.vmap(lambda kk: CONTROL.gibbs_update(kk, None, data, new))(jax.random.split(k, particles))
            return (moved, new, log_z), None

        (_, lam, log_z), _ = jax.lax.scan(level, (mu, jnp.zeros(()), jnp.zeros(())), keys[1:])
        return log_z, lam

    log_z, lam = jax.jit(jax.vmap(one_run))(jax.random.split(key, runs))
    assert np.all(np.asarray(lam) == 1.0)  # every run reached the posterior
    return np.asarray(log_z)


# -m slow: in-run adaptation's bias keeps a default control (test_pilot.py's in-chain adaptation), the frozen
# path's unbiasedness test_forward_tempered_smc_is_unbiased_for_z_and_its_log_a_lower_bound.
@pytest.mark.slow
def test_temperatures_adapted_inside_the_run_bias_the_estimate_of_z():
    data, _ = simulate_float64(jax.random.key(6), CONTROL)
    exact = float(CONTROL.exact_log_marginal(data))
    adapted = _adaptive_tempering_log_z(jax.random.key(4), data, runs=30_000, particles=4)
    mean, se = _ratio_mean(adapted - exact)
    assert abs(mean - 1.0) > 6 * se, (mean, se)  # biased: E[Z_hat] != Z
    # The frozen sampler with the same exact moves (the model's own Gibbs kernel) on a fixed path is not.
    frozen = bdmc.tempered_smc(jax.random.key(4), CONTROL, data, num_steps=8, num_particles=4, num_runs=30_000,
                               schedule="geometric", tune="off", progress=False)
    mean, se = _ratio_mean(frozen.runs - exact)
    assert abs(mean - 1.0) < 4 * se, (mean, se)


def test_a_new_pilot_table_reuses_the_compiled_run_and_repeated_moves_report_divergences(problem):
    """With several moves per temperature (``Repeat``), the pilot's step-size table is data of the compiled run,
    as with one move: a second call (a new table) compiles nothing. And a move's divergence is reported."""
    data, _, _ = problem
    kw = dict(num_steps=8, num_particles=8, num_runs=2, num_moves=3, kernel=HMC(MODEL), tune="pilot",
              progress=False)
    bdmc.tempered_smc(jax.random.key(20), MODEL, data, **kw)
    again = bdmc.tempered_smc(jax.random.key(21), MODEL, data, **kw)
    assert again.compiled is False
    wild = bdmc.tempered_smc(jax.random.key(22), MODEL, data, **(kw | {"kernel": HMC(MODEL, step_size=40.0),
                                                                      "tune": "off", "schedule": "linear"}))
    assert wild.divergences > 0


class _NoKernel:
    """GaussianMean's density without its exact Gibbs kernel: what a user's own model looks like to bdmc."""

    def __init__(self):
        self.inner = GaussianMean(n=10, dim=2)

    def __getattr__(self, name):
        if name in ("default_kernel",):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_auto_runs_ais_on_a_model_with_its_own_kernel_and_tempered_smc_on_any_other(problem):
    data, latent, exact = problem
    from bdmc.checks.sandwich import auto_method

    assert auto_method(MODEL) == "ais" and auto_method(_NoKernel()) == "tempered-smc"
    result = bdmc.sandwich(jax.random.key(4), _NoKernel(), data, latent, method="auto", steps=[20], num_runs=4,
                           progress=False)
    assert result.method == "tempered-smc" and set(result.table.method) == {"tempered-smc"}
    t = result.table.set_index("direction")
    assert t.loc["forward", "certified_b3"] <= exact <= t.loc["reverse", "certified_b3"]


def test_the_default_rests_its_plus_minus_on_as_many_runs_as_forward_ais():
    """The ± is the spread of the runs; tempered SMC's default once gave it 4 numbers (3 degrees of freedom)
    where every other estimator of a pair gives it 16."""
    import inspect

    defaults = {fn.__name__: inspect.signature(fn).parameters["num_runs"].default
                for fn in (bdmc.tempered_smc, bdmc.reverse_tempered_smc, bdmc.forward_ais, bdmc.reverse_ais)}
    assert set(defaults.values()) == {16}, defaults
