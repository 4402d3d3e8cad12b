"""The pooled prior program: every count is served by one compiled program, with the numbers of its own size."""

import jax
import numpy as np

from bdmc.core.prior import POOL, draw_prior, prior_draws, timed_prior_pool
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
    _, first = timed_prior_pool(jax.random.key(0), MODEL, 7)
    _, second = timed_prior_pool(jax.random.key(1), MODEL, 300)
    assert second == 0.0


def test_a_count_asked_again_and_again_gets_its_own_program_with_the_same_numbers():
    from bdmc.core.prior import EXACT_AFTER

    num, key = 37, jax.random.key(5)
    pooled, _ = timed_prior_pool(key, MODEL, num)  # a fresh count: the pool's program
    for _ in range(EXACT_AFTER - 2):
        timed_prior_pool(key, MODEL, num)
    own, compiled = timed_prior_pool(key, MODEL, num)  # the EXACT_AFTER-th use builds a program of 37 draws
    assert compiled > 0.0
    again, compiled_again = timed_prior_pool(jax.random.key(6), MODEL, num)
    assert compiled_again == 0.0
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


def test_a_users_second_tempered_smc_call_compiles_nothing():
    """A tempered SMC call draws its particle count twice (its run's chains and its pilot's): the count's own prior
    program comes at a sweep's EXACT_AFTER-th use, not at a user's second call."""
    import bdmc

    data, _ = bdmc.simulate(jax.random.key(0), MODEL)
    compiled = [bool(bdmc.tempered_smc(jax.random.key(s), MODEL, data, num_steps=8, num_particles=19, num_runs=1,
                                       progress=False).compiled) for s in range(3)]
    assert compiled == [True, False, False], compiled
