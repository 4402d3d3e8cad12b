"""Pilot-tuned, then frozen: the pilot's choice keeps AIS's guarantees; in-chain adaptation would not."""

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc import BDMCError, schedules, simulate
from bdmc.core.pilot import Pilot, pilot_key, thermodynamic_path, tune
from bdmc.kernels import HMC, StepSizeTable
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=20, dim=5)
PILOT = Pilot(num_steps=16, num_chains=8, warmup=4)


@pytest.fixture(scope="module")
def problem():
    data, latent = simulate(jax.random.key(1), MODEL)
    return data, latent, float(MODEL.exact_log_marginal(data))


# ------------------------------------------------------------------ why: in-chain adaptation is biased
def _ais_expectation(f, kernels_for):
    """Exact E[w] of AIS on a finite state space, by enumerating every trajectory.

    ``f[t]`` are the unnormalized intermediate densities (``f[0]`` the normalized prior); ``kernels_for(t,
    history)`` returns the transition matrix used at step t given the chain's history of accept flags,
    each matrix split into its accepted and rejected parts so a history can record which happened.
    """
    n_states, num_steps = f.shape[1], f.shape[0] - 1
    total = 0.0
    # A trajectory: a start state, then at each step a next state and whether it was an accepted move.
    for x0 in range(n_states):
        stack = [(x0, f[0][x0], f[1][x0] / f[0][x0], ())]
        for t in range(1, num_steps):
            grown = []
            for x, prob, weight, history in stack:
                accepted, rejected = kernels_for(t, history)
                for y in range(n_states):
                    for flag, part in ((True, accepted), (False, rejected)):
                        p = part[x, y]
                        if p > 0:
                            grown.append((y, prob * p, weight * f[t + 1][y] / f[t][y], history + (flag,)))
            stack = grown
        total += sum(prob * weight for _, prob, weight, _ in stack)
    return total


def _metropolis(target, proposal):
    """A Metropolis kernel's transition matrix, split into accepted moves and the rest (which stay put)."""
    n = target.size
    accepted = np.zeros((n, n))
    for x, y in itertools.product(range(n), range(n)):
        if x != y and proposal[x, y] > 0:
            accepted[x, y] = proposal[x, y] * min(1.0, target[y] * proposal[y, x] / (target[x] * proposal[x, y]))
    rejected = np.diag(1.0 - accepted.sum(axis=1))
    return accepted, rejected


def test_in_chain_adaptation_biases_ais_and_a_frozen_choice_does_not():
    # Three states, a uniform prior, a likelihood that favours the last one, four distributions.
    prior = np.full(3, 1 / 3)
    lik = np.array([1.0, 5.0, 30.0])
    lams = np.array([0.0, 0.3, 0.7, 1.0])
    f = np.array([prior * lik ** lam for lam in lams])
    z = float(f[-1].sum())
    neighbour = np.array([[0, 1, 0], [0.5, 0, 0.5], [0, 1, 0.0]])
    independent = np.full((3, 3), 0.5) - 0.5 * np.eye(3)
    local = [_metropolis(f[t], neighbour) for t in range(len(lams))]
    jump = [_metropolis(f[t], independent) for t in range(len(lams))]

    # Frozen: the kernel depends on the step (lambda) only, whichever it is. E[w] = Z exactly.
    for choice in (lambda t: local[t], lambda t: jump[t], lambda t: (local if t % 2 else jump)[t]):
        assert _ais_expectation(f, lambda t, history, choice=choice: choice(t)) == pytest.approx(z, rel=1e-12)
    # In-chain adaptation: a chain whose last move was rejected switches to bigger jumps (each kernel still
    # leaves f_t invariant). E[w] is no longer Z: the lower bound and the alarm lose their footing.
    adaptive = _ais_expectation(f, lambda t, history: jump[t] if history and not history[-1] else local[t])
    assert abs(adaptive / z - 1) > 1e-3, (adaptive, z)


def test_in_chain_adaptation_is_refused(problem):
    data, _, _ = problem
    with pytest.raises(BDMCError, match="in-chain adaptation is refused.*unbiasedness"):
        bdmc.forward_ais(jax.random.key(0), MODEL, data, num_steps=10, kernel=HMC(MODEL), tune="in-chain")
    with pytest.raises(BDMCError, match="tune must be"):
        bdmc.forward_ais(jax.random.key(0), MODEL, data, num_steps=10, kernel=HMC(MODEL), tune="adaptive")
    for seed in (1.5, -1, True):  # the pilot's own seed: a non-negative integer
        with pytest.raises(BDMCError, match="Pilot seed must be a non-negative integer"):
            Pilot(seed=seed)


# ------------------------------------------------------------------ the pilot's choice, frozen
def test_the_run_uses_the_pilots_choice_frozen_and_its_own_keys(problem):
    data, _, _ = problem
    key = jax.random.key(3)
    tuned = bdmc.forward_ais(key, MODEL, data, num_steps=20, num_runs=4, kernel=HMC(MODEL), tune=PILOT)
    # A new pilot on the pilot's own key (the first call's is kept, and a call with reuse would hand it on at no
    # cost).
    choice = tune(pilot_key(PILOT.seed), MODEL, bdmc.contracts.model.validate_data(MODEL, data), HMC(MODEL), 20,
                  pilot=dataclasses.replace(PILOT, reuse=False))
    assert isinstance(choice.kernel.step_size, StepSizeTable)
    frozen = bdmc.forward_ais(key, MODEL, data, num_runs=4, kernel=choice.kernel, schedule=choice.path,
                              num_steps=None, tune="off")
    # Same run keys, same frozen path and table, and the same compiled program (the table is an argument of it):
    # the same numbers, bit for bit. The pilot drew on other keys.
    assert not frozen.compiled
    np.testing.assert_array_equal(tuned.runs, frozen.runs)
    assert tuned.settings["tuned"] == "pilot" and frozen.settings["tuned"] == "off"
    # Its cost is part of the estimate's.
    assert tuned.n_evals == frozen.n_evals + choice.n_evals
    assert tuned.settings["pilot_evals"] == choice.n_evals
    pilot_run = tuned.settings["pilot_seconds"] - tuned.settings["pilot_compile_seconds"]
    assert pilot_run > 0 and tuned.seconds == pytest.approx(tuned.details.seconds + pilot_run, rel=1e-12)


def test_a_frozen_pilot_is_reused_on_equal_model_data_and_options_only(problem):
    data, _, _ = problem
    bdmc.clear_caches()
    run = lambda seed, d=data, **kw: bdmc.forward_ais(  # noqa: E731
        jax.random.key(seed), MODEL, d, num_steps=20, num_runs=4, kernel=HMC(MODEL), **({"tune": PILOT} | kw))
    first, second = run(0), run(1)
    assert not first.settings["pilot_reused"] and second.settings["pilot_reused"]
    # The same frozen choice (path and step-size table); it costs the second call no time, and its evaluations
    # count in both (the evaluations behind each estimate: a row's numbers do not depend on the process's past).
    assert second.settings["step_sizes"] == first.settings["step_sizes"]
    np.testing.assert_array_equal(second.details.info.mean_increment.shape, first.details.info.mean_increment.shape)
    assert second.settings["pilot_seconds"] == 0.0 < first.settings["pilot_seconds"]
    assert second.settings["pilot_evals"] == first.settings["pilot_evals"] > 0 and second.n_evals == first.n_evals
    # Its run is the run of that frozen choice on the second key, bit for bit; the choice is the pilot's on its
    # own key (Pilot.seed), not on the caller's.
    choice = tune(pilot_key(PILOT.seed), MODEL, bdmc.contracts.model.validate_data(MODEL, data), HMC(MODEL), 20,
                  pilot=dataclasses.replace(PILOT, reuse=False))
    frozen = bdmc.forward_ais(jax.random.key(1), MODEL, data, num_runs=4, kernel=choice.kernel,
                              schedule=choice.path, num_steps=None, tune="off")
    np.testing.assert_array_equal(second.runs, frozen.runs)
    # Other data values (same shapes), another T, other pilot settings: a new pilot each.
    other = jax.tree.map(lambda a: a + 0.5, data)
    assert not run(2, d=other).settings["pilot_reused"]
    assert not bdmc.forward_ais(jax.random.key(3), MODEL, data, num_steps=21, num_runs=4, kernel=HMC(MODEL),
                                tune=PILOT).settings["pilot_reused"]
    assert not run(4, tune=dataclasses.replace(PILOT, target_acceptance=0.8)).settings["pilot_reused"]
    # reuse=False forces a new pilot; clear_caches forgets them all.
    assert not run(5, tune=dataclasses.replace(PILOT, reuse=False)).settings["pilot_reused"]
    assert run(6).settings["pilot_reused"]
    bdmc.clear_caches()
    assert not run(7).settings["pilot_reused"]


# -m slow: a run on the frozen choice of its own pilot seed keeps default tests (the reuse test and
# test_the_run_uses_the_pilots_choice_frozen_and_its_own_keys).
@pytest.mark.slow
def test_an_estimators_pilot_depends_on_its_own_seed_not_on_the_callers_key_or_the_calls_before(problem):
    """The pilot draws on ``pilot_key(Pilot.seed)``: a call's numbers are the same whether its pilot ran for it or
    for an earlier call with another key (so they never depend on the process's past), and another pilot seed
    gives another pilot. Negative control: a pilot on the caller's key chooses other step sizes."""
    data, _, _ = problem
    run = lambda seed, pilot=PILOT: bdmc.forward_ais(  # noqa: E731
        jax.random.key(seed), MODEL, data, num_steps=20, num_runs=4, kernel=HMC(MODEL), tune=pilot)
    bdmc.clear_caches()
    alone = run(11)
    bdmc.clear_caches()
    run(12)
    after = run(11)
    assert after.settings["pilot_reused"] and not alone.settings["pilot_reused"]
    np.testing.assert_array_equal(after.runs, alone.runs)
    assert alone.settings["pilot_seed"] == PILOT.seed == 0
    other = run(11, dataclasses.replace(PILOT, seed=1))
    assert not other.settings["pilot_reused"] and other.settings["pilot_seed"] == 1
    assert other.settings["step_sizes"] != alone.settings["step_sizes"]
    validated = bdmc.contracts.model.validate_data(MODEL, data)
    on_callers_key = tune(jax.random.key(11), MODEL, validated, HMC(MODEL), 20,
                          pilot=dataclasses.replace(PILOT, reuse=False))
    assert repr(on_callers_key.kernel.step_size) != alone.settings["step_sizes"]


def test_a_pilot_that_met_a_nonfinite_density_is_never_reused(monkeypatch):
    from bdmc.core import pilot as pilot_module

    bad = pilot_module.Tuned(path=np.linspace(0, 1, 5), kernel=HMC(MODEL), seconds=1.0, compile_seconds=0.5,
                             n_evals=10, variances=np.zeros(0), acceptance=np.zeros(0), pilot=PILOT, healthy=False)
    assert bad.reuse().seconds == 0.0 and bad.reuse().n_evals == bad.n_evals and bad.reuse().reused
    # tune() stores only healthy pilots: an untuned choice is not found by a later call.
    data = bdmc.contracts.model.validate_data(MODEL, bdmc.simulate(jax.random.key(0), MODEL)[0])
    bdmc.clear_caches()
    with monkeypatch.context() as patch:
        patch.setattr(pilot_module, "_new_pilot", lambda *a, **k: bad)
        assert tune(jax.random.key(0), MODEL, data, HMC(MODEL), 5, pilot=PILOT) is bad
    again = tune(jax.random.key(1), MODEL, data, HMC(MODEL), 5, pilot=PILOT)
    assert not again.reused and again.healthy


def test_pilot_tuned_bounds_hold_and_sandwich_the_truth(problem):
    data, latent, exact = problem
    kw = dict(num_steps=60, num_runs=200, kernel=HMC(MODEL), tune=PILOT)
    fwd = bdmc.forward_ais(jax.random.key(4), MODEL, data, **kw)
    rev = bdmc.reverse_ais(jax.random.key(5), MODEL, data, exact_latent=latent, **kw)
    # Unbiased weights: the log-mean-exp of many runs is within its stderr of the truth from each side,
    # and single runs sit below (forward) and above (reverse) it.
    assert fwd.mean_single < exact < rev.mean_single
    assert abs(fwd.value - exact) < 4 * fwd.stderr + 0.02
    assert abs(rev.value - exact) < 4 * rev.stderr + 0.02
    # The step sizes were steered toward the target acceptance.
    acc = float(np.mean(fwd.details.info.acceptance))
    assert 0.75 < acc < 0.99, acc


def test_auto_pilots_the_default_gradient_kernel_only(problem):
    data, _, _ = problem
    own = bdmc.forward_ais(jax.random.key(0), MODEL, data, num_steps=10, num_runs=2)  # Gibbs: no pilot
    assert own.settings["tuned"] == "off"
    given = bdmc.forward_ais(jax.random.key(0), MODEL, data, num_steps=10, num_runs=2, kernel=HMC(MODEL))
    assert given.settings["tuned"] == "off"  # a kernel the user chose is used as given


# ------------------------------------------------------------------ the schedule and the table
def test_thermodynamic_path_spends_equal_length_where_the_variance_says():
    grid = np.array([0.0, 0.25, 0.5, 1.0])
    # Constant variance: equal thermodynamic length is equal spacing.
    np.testing.assert_allclose(thermodynamic_path(grid, np.ones(3), 5, weight=1.0), np.linspace(0, 1, 5),
                               atol=1e-9)
    # Variance 100x larger below lam = 0.25 (sd 10x): that quarter holds 10 / (10 + 3) of the length.
    sd = np.interp(np.linspace(0, 1, 2001), [0, 0.25, 0.2501, 1], [10, 10, 1, 1])
    path = thermodynamic_path(np.linspace(0, 1, 2001), sd[:-1] ** 2, 14, weight=1.0)
    assert np.sum(path < 0.25) == pytest.approx(10 + 1, abs=1)
    # weight=0 is the sigmoidal schedule; a failed pilot (NaN variance) falls back to it.
    np.testing.assert_allclose(thermodynamic_path(grid, np.ones(3), 9, weight=0.0), schedules.sigmoidal(9),
                               atol=1e-12)
    np.testing.assert_array_equal(thermodynamic_path(grid, np.array([1.0, np.nan, 1.0]), 9),
                                  schedules.sigmoidal(9))


def test_step_size_table_interpolates_in_log_space_and_refuses_bad_tables():
    table = StepSizeTable((0.0, 0.5, 1.0), (0.4, 0.1, 0.1))
    assert float(table(0.0)) == pytest.approx(0.4)
    assert float(table(0.25)) == pytest.approx(0.2)  # geometric midpoint of 0.4 and 0.1
    assert float(table(2.0)) == pytest.approx(0.1)
    assert float(table(np.array([0.0, 0.5]))) == pytest.approx(0.2)  # per-case lam: read at the mean weight
    hash(table)
    with pytest.raises(BDMCError, match="positive"):
        StepSizeTable((0.0, 1.0), (0.1, 0.0))
    with pytest.raises(BDMCError, match="increase"):
        StepSizeTable((0.5, 0.1), (0.1, 0.1))


def test_a_pilot_that_meets_a_nan_or_plus_inf_density_leaves_the_run_untuned_so_it_reports_it(problem,
                                                                                               monkeypatch):
    from dataclasses import dataclass

    import jax.numpy as jnp

    @dataclass(frozen=True)
    class PlusInfPrior:  # a bug: +inf log prior wherever the first coordinate exceeds 0.5
        inner: GaussianMean = MODEL

        def sample_prior(self, key):
            return self.inner.sample_prior(key)

        def sample_data(self, key, latent):
            return self.inner.sample_data(key, latent)

        def log_prior(self, latent):
            return jnp.where(latent["mu"][0] > 0.5, jnp.inf, self.inner.log_prior(latent))

        def log_likelihood(self, latent, data):
            return self.inner.log_likelihood(latent, data)

    data, _, _ = problem
    model = PlusInfPrior()
    kernel = HMC(model)
    # The prior check runs before the pilot and stops there, before the pilot's compile...
    with pytest.raises(bdmc.NonFiniteLogDensityError, match=r"the check before the pilot: .*log_prior is \+inf"):
        tune(jax.random.key(0), model, data, kernel, 20, pilot=PILOT)
    # ...and a pilot that meets such a region anyway (the check's draws missed it) does not tune around it.
    with monkeypatch.context() as patch:
        patch.setattr("bdmc.core.pilot.check_prior", lambda *a, **k: 0.0)
        choice = tune(jax.random.key(0), model, data, kernel, 20, pilot=PILOT)
    # A tuned run could steer around the bug (step sizes shrunk until nothing moves); it must not.
    assert not choice.healthy and choice.kernel is kernel
    np.testing.assert_array_equal(choice.path, schedules.sigmoidal(20))
    assert "run untuned" in choice.settings()["tuned"]
    with pytest.raises(bdmc.NonFiniteLogDensityError, match=r"log_prior is \+inf"):
        bdmc.forward_ais(jax.random.key(0), model, data, num_steps=20, num_runs=8, kernel=kernel, tune=PILOT)


def test_move_correlation_reads_an_ar1_chains_correlation_and_moves_for_inverts_it():
    from bdmc.core.chain_stats import move_correlation
    from bdmc.core.pilot import Tuned

    rng = np.random.default_rng(0)
    chains, d = 4000, 3
    for rho in (0.0, 0.6, 0.95):
        before = rng.standard_normal((chains, d)) * [1.0, 10.0, 0.1]  # unequal scales: a per-coordinate ratio
        flats, x = [], before
        for _ in range(3):
            x = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal((chains, d)) * [1.0, 10.0, 0.1]
            flats.append(x)
        got = float(move_correlation(jnp.asarray(before), jnp.asarray(np.stack(flats))))
        assert abs(got - rho) < 0.03, (rho, got)
    frozen = jnp.ones((3, 8, 2)) * jnp.arange(8.0)[None, :, None]
    assert float(move_correlation(frozen[0], frozen)) == 1.0  # chains that never move

    def tuned(rhos, healthy=True):
        return Tuned(path=np.linspace(0, 1, 3), kernel=None, seconds=0.0, compile_seconds=0.0, n_evals=0,
                     variances=np.ones(3), acceptance=np.ones(3), pilot=Pilot(), healthy=healthy,
                     correlations=np.asarray(rhos))

    assert tuned([0.6, 0.6, 0.1]).moves_for() == 4  # 0.6 ** 3 = 0.216 > 0.2 >= 0.6 ** 4
    assert tuned([0.1, 0.05]).moves_for() == 1 and tuned([1.0]).moves_for() == 10
    assert tuned([0.6], healthy=False).moves_for() == 1  # an unhealthy pilot's numbers are not used


def test_tempered_smc_takes_the_moves_its_pilot_measured(key):
    """A short-trajectory HMC (one leapfrog step) mixes slowly: its pilot measures it and asks for more moves than
    the default long-trajectory HMC's; a tempered run takes its pilot's count, and keeps one given by the caller."""
    model = GaussianMean(n=20, dim=3)
    data = simulate(jax.random.key(2), model).data
    pilot = Pilot(num_steps=8, warmup=2)
    slow = tune(key, model, data, HMC(model, num_integration_steps=1), 4, pilot=pilot)
    fast = tune(key, model, data, HMC(model), 4, pilot=pilot)
    assert np.median(slow.correlations) > 0.5 > np.median(fast.correlations)
    assert slow.moves_for() > 2 and fast.moves_for() <= 2, (slow.correlations, fast.correlations)
    kw = dict(num_steps=4, num_particles=4, num_runs=1, kernel=HMC(model), tune=pilot, progress=False)
    run = bdmc.tempered_smc(key, model, data, **kw)
    assert run.settings["moves_chosen"] == "pilot" and run.settings["num_moves"] == fast.moves_for()
    given = bdmc.tempered_smc(key, model, data, num_moves=3, **kw)
    assert given.settings["num_moves"] == 3 and given.settings["moves_chosen"] == "given"


def test_repeat_up_to_gives_repeats_numbers_and_one_program_for_every_count(key):
    """Pilot-chosen move counts vary by call: the count is data of the compiled run, not a new program."""
    from bdmc.kernels import Repeat, RepeatUpTo

    model = GaussianMean(n=10, dim=2)
    data = simulate(jax.random.key(3), model).data
    kernel = HMC(model, step_size=0.2, num_integration_steps=3)
    x = model.sample_prior(jax.random.key(4))
    for n in (1, 3):
        a, info_a = Repeat(kernel, n)(key, x, data, 0.5)
        b, info_b = RepeatUpTo(kernel, n, 5)(key, x, data, 0.5)
        np.testing.assert_allclose(np.asarray(a["mu"]), np.asarray(b["mu"]), rtol=1e-12)
        assert float(info_a.acceptance) == pytest.approx(float(info_b.acceptance))
    latents = jax.vmap(model.sample_prior)(jax.random.split(key, 8))
    runs = [bdmc.anneal(key, model, data, RepeatUpTo(kernel, n, 5), np.linspace(0, 1, 4), latents, progress=False)
            for n in (1, 2, 4)]
    assert runs[0].compiled and not runs[1].compiled and not runs[2].compiled
    assert runs[2].n_evals > runs[1].n_evals > runs[0].n_evals  # the count still prices the evaluations


def test_pilots_of_different_seeds_give_tables_of_one_shape_so_the_run_compiles_once():
    """An adaptive pilot visits as many levels as its chains need, which varies by seed; its tables are padded
    past lam = 1 to one length, read the same everywhere a run looks, and every seed reuses one program."""
    from bdmc.core.pilot import padded

    lams, sizes = padded([0.1, 0.5, 1.0], [0.3, 0.2, 0.1], length=6)
    table = StepSizeTable(tuple(lams), tuple(sizes))
    assert len(table.lams) == 6 and repr(table).startswith("StepSizeTable(3 points")
    for lam in (0.0, 0.3, 0.75, 1.0):
        assert float(table(lam)) == pytest.approx(float(StepSizeTable((0.1, 0.5, 1.0), (0.3, 0.2, 0.1))(lam)))
    model = GaussianMean(n=10, dim=2)
    data = simulate(jax.random.key(5), model).data
    compiled = []
    for seed in range(4):
        est = bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=8, num_runs=2, kernel=HMC(model),
                               tune=Pilot(num_steps=8, warmup=2), progress=False)
        compiled.append(est.details.compiled)  # the run's programs (est.compiled also counts the prior draws')
    assert compiled[1:] == [False, False, False], compiled
