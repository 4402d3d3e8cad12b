"""The pooled prior program: every count is served by one compiled program, with the numbers of its own size."""

import jax
import numpy as np

from bdmc.core.prior import POOL, draw_prior, prior_draws, timed_prior_draws
from bdmc.models import LinearRegression

MODEL = LinearRegression()  # an inverse-gamma prior: the gamma sampler is what the pool saves compiling


def test_every_count_gets_the_draws_of_a_program_of_its_own_size_from_one_program():
    key = jax.random.key(3)
    for num in (1, 16, POOL, POOL + 5):  # POOL + 5: past the pool, a program of its own
        draws, key_run = prior_draws(key, MODEL, num)
        own, own_key = jax.jit(lambda k, n=num: draw_prior(k, MODEL, n))(key)
        for a, b in zip(jax.tree.leaves(draws), jax.tree.leaves(own), strict=False):
            assert a.shape[0] == num
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
        np.testing.assert_array_equal(jax.random.key_data(key_run), jax.random.key_data(own_key))
    # Counts up to the pool share one compiled program: a second count compiles nothing.
    timed_prior_draws(jax.random.key(0), MODEL, 7)
    assert timed_prior_draws(jax.random.key(1), MODEL, 300)[2] == 0.0


def test_a_count_asked_again_and_again_gets_its_own_program_with_the_same_numbers():
    from bdmc.core.prior import EXACT_AFTER

    num, key = 37, jax.random.key(5)
    pooled, _, _ = timed_prior_draws(key, MODEL, num)  # a fresh count: the pool's program
    for _ in range(EXACT_AFTER - 2):
        timed_prior_draws(key, MODEL, num)
    own, _, compiled = timed_prior_draws(key, MODEL, num)  # the EXACT_AFTER-th use builds a program of 37 draws
    assert compiled > 0.0
    assert timed_prior_draws(jax.random.key(6), MODEL, num)[2] == 0.0
    for a, b in zip(jax.tree.leaves(pooled), jax.tree.leaves(own), strict=True):
        assert a.shape == b.shape == (num,) + a.shape[1:]
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_an_estimate_that_built_its_prior_program_says_it_compiled():
    """The call whose count of chains gets its own prior program reports compiling (its seconds counted in
    compile_seconds), and the next warm call does not: a warm call's timing is never a hidden compile."""
    import bdmc
    from bdmc.core.prior import EXACT_AFTER

    data, _ = bdmc.simulate(jax.random.key(0), MODEL)
    flags = []
    for s in range(EXACT_AFTER + 1):
        est = bdmc.forward_ais(jax.random.key(s), MODEL, data, num_steps=4, num_runs=23, tune="off", progress=False)
        flags.append((bool(est.compiled), est.compile_seconds > 0))
    assert flags[EXACT_AFTER - 1] == (True, True), flags  # the exact-size prior program, built
    assert flags[EXACT_AFTER] == (False, False), flags


def test_a_users_first_tempered_smc_calls_compile_nothing_new_and_a_sweep_gets_its_count_program():
    """A pilot-tuned tempered SMC call whose pilot has as many chains as the run has particles draws that count
    twice on its first call (the run's and the pilot's), once later (the pilot is reused): only the run's draws
    count as uses, so calls 2 to EXACT_AFTER - 1 compile nothing and the EXACT_AFTER-th builds the count's own
    program. Counting the pilot's draws too would build it a call sooner."""
    import bdmc
    from bdmc.core.pilot import Pilot
    from bdmc.core.prior import EXACT_AFTER
    from bdmc.kernels import HMC

    data, _ = bdmc.simulate(jax.random.key(0), MODEL)
    pilot = Pilot(num_steps=8, num_chains=19, warmup=2)
    calls = [bdmc.tempered_smc(jax.random.key(s), MODEL, data, num_steps=8, num_particles=19, num_runs=1,
                               kernel=HMC(MODEL), tune=pilot, progress=False) for s in range(EXACT_AFTER + 1)]
    assert [c.settings["pilot_reused"] for c in calls] == [False] + [True] * EXACT_AFTER
    assert EXACT_AFTER >= 3
    compiled = [bool(c.compiled) for c in calls]
    assert compiled == [True] + [False] * (EXACT_AFTER - 2) + [True, False], compiled


def test_one_off_draws_are_not_uses_but_take_a_built_program():
    from bdmc.core.prior import EXACT_AFTER, timed_prior_draws

    num, key = 41, jax.random.key(8)
    timed_prior_draws(key, MODEL, POOL)  # the pool's program, built
    for _ in range(3 * EXACT_AFTER):  # a pilot's draws, however many: never a program of their own
        assert timed_prior_draws(key, MODEL, num, one_off=True)[2] == 0.0
    built = [timed_prior_draws(key, MODEL, num)[2] > 0.0 for _ in range(EXACT_AFTER)]
    assert built == [False] * (EXACT_AFTER - 1) + [True], built
    # Once built, a one-off ask of that count uses it (same numbers as the pool's) and compiles nothing.
    again, _, seconds = timed_prior_draws(key, MODEL, num, one_off=True)
    pooled, _, _ = timed_prior_draws(key, MODEL, POOL)
    assert seconds == 0.0
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(pooled), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b)[:num], rtol=1e-12)
