"""The bug alarm fires when the exact sample is wrong and stays silent on correct runs."""

import math

import jax
import numpy as np
import pytest

import bdmc
from bdmc.core.alarm import BugAlarm, bug_alarm
from bdmc.kernels import RandomWalkMH
from bdmc.models import FiniteMixture, GaussianMean


def _problem(model, seed=1):
    data, latent = bdmc.simulate(jax.random.key(seed), model)
    return data, latent


@pytest.mark.parametrize("T", [10, 100])
def test_alarm_fires_when_reverse_ais_starts_from_a_prior_draw(T, key):
    model = GaussianMean(n=20, dim=5)
    data, _ = _problem(model)
    wrong = model.sample_prior(jax.random.key(9))
    kernel = RandomWalkMH(model, scale=0.05)
    k1, k2 = jax.random.split(key)
    f = bdmc.forward_ais(k1, model, data, num_steps=T, num_chains=64, kernel=kernel)
    r = bdmc.reverse_ais(k2, model, data, wrong, num_steps=T, num_chains=64, kernel=kernel)
    alarm = bug_alarm(f, r)
    assert alarm.fired and alarm.certified and alarm.p_bound < 1e-6
    assert "BUG ALARM" in alarm.message()


def test_sandwich_reports_the_alarm_in_its_table(key):
    model = GaussianMean(n=20, dim=5)
    data, latent = _problem(model)
    wrong = model.sample_prior(jax.random.key(9))
    kernel = RandomWalkMH(model, scale=0.05)
    good = bdmc.sandwich(key, model, data, latent, steps=[10, 100], num_chains=32, kernel=kernel)
    bad = bdmc.sandwich(key, model, data, wrong, steps=[10, 100], num_chains=32, kernel=kernel)
    assert good.alarms.empty and not good.table["alarm"].any()
    assert list(bad.alarms["num_steps"]) == [10, 100]
    assert (bad.alarms["alarm_p"] < 0.01).all()


def test_alarm_is_silent_on_correct_runs_across_many_seeds():
    # Short chains (loose, noisy bounds) are where a false alarm is most likely. The certificate's false-alarm
    # rate is at most alpha = 1% by Markov's inequality; measured here over 300 independent sandwiches.
    model = FiniteMixture(n=6, k=3)
    data, latent = _problem(model)
    fired = []
    for seed in range(300):
        k1, k2 = jax.random.split(jax.random.key(seed))
        f = bdmc.forward_ais(k1, model, data, num_steps=5, num_chains=8, progress=False)
        r = bdmc.reverse_ais(k2, model, data, latent, num_steps=5, num_chains=8, progress=False)
        fired.append(bug_alarm(f, r).fired)
    rate = float(np.mean(fired))
    assert rate <= 0.01, rate


def test_markov_certificate_matches_its_definition():
    a = BugAlarm(crossing=5.0, p_bound=math.exp(-5.0), gap_z=1.0)  # e^-5 < alpha = 0.01
    assert a.certified and a.fired
    quiet = BugAlarm(crossing=1.0, p_bound=math.exp(-1.0), gap_z=-1.0)
    assert not quiet.fired and "no sign of a bug" in quiet.message()
    assert BugAlarm(crossing=-1.0, p_bound=1.0, gap_z=-6.0).fired  # many standard errors below zero


def test_a_kernel_invariant_for_the_wrong_distribution_needs_geweke_not_the_alarm(key):
    # Both directions converge to the thermodynamic integral under the kernel's own (wrong) intermediate
    # distributions, so they agree with each other on a wrong value and the alarm has nothing to see. This is
    # a limit of any forward/reverse comparison; the Geweke test (or an exact value) is what catches it.
    import dataclasses

    from bdmc.checks import geweke

    model = FiniteMixture(n=6, k=3)
    data, latent = _problem(model)
    exact = float(model.exact_log_marginal(data))
    wrong = dataclasses.replace(model, sigma_noise=model.sigma_noise * math.sqrt(1.1)).default_kernel()
    k1, k2 = jax.random.split(key)
    f = bdmc.forward_ais(k1, model, data, num_steps=1000, num_chains=256, kernel=wrong)
    r = bdmc.reverse_ais(k2, model, data, latent, num_steps=1000, num_chains=256, kernel=wrong)
    assert f.mean_single < exact - 4 * f.stderr_single and r.mean_single < exact - 4 * r.stderr_single
    assert not bug_alarm(f, r).fired
    small = FiniteMixture(n=6, k=2, dim=2)
    assert not geweke(key, small, dataclasses.replace(small, sigma_noise=0.5 * math.sqrt(1.1)).default_kernel(),
                      lam=1.0, num_samples=60_000, num_steps=40).passed
    # The same test sees a simulator (rather than a kernel) with a 10% variance error, which the alarm cannot
    # (benchmarks/results/alarm_power): it compares the simulator with the kernel directly.
    buggy_simulator = dataclasses.replace(small, sigma_noise=small.sigma_noise * math.sqrt(1.1))
    assert not geweke(key, buggy_simulator, small.default_kernel(), lam=1.0, num_samples=60_000,
                      num_steps=40).passed
