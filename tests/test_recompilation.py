"""A second check of the same program compiles nothing: what differs between audits (a pilot's step-size table,
the reference a prior-normalization run fits, the data set) travels as arguments of the compiled programs.

Without it every audit of a program in one process compiled its checks again (about two thirds of a quick
audit's time after the first) and the process grew with every audit's executables.
"""

import jax
import numpy as np
import pytest

import bdmc
from bdmc.checks import KernelSampler, geweke, sbc
from bdmc.checks.prior_normalization import prior_normalization
from bdmc.kernels import HMC
from bdmc.kernels.step_sizes import StepSizeTable

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_compiles: list[str] = []
_listening = []


def compiles_during(fn):
    """``(fn(), number of XLA compilations it triggered)``."""
    if not _listening:
        jax.monitoring.register_event_duration_secs_listener(
            lambda name, secs, **kw: _compiles.append(name) if name == COMPILE_EVENT else None)
        _listening.append(True)
    before = len(_compiles)
    out = fn()
    return out, len(_compiles) - before


@pytest.fixture(scope="module")
def model():
    return bdmc.models.LinearRegression(n=10, degree=1)


def test_the_counter_sees_a_compilation(model):
    # The negative control: a program never seen before is counted.
    _, n = compiles_during(lambda: jax.jit(lambda x: x * 3.0 + 0.25)(np.arange(7.0)).block_until_ready())
    assert n == 1


def test_geweke_with_a_new_step_size_reuses_its_program(model):
    run = lambda step, k: geweke(jax.random.key(k), model, HMC(model, step_size=table(step)),  # noqa: E731
                                 num_samples=64, num_steps=3)
    compiles_during(lambda: run(0.1, 0))
    second, n = compiles_during(lambda: run(0.2, 1))
    assert n == 0
    assert np.all(np.isfinite(second.z))


def table(step):
    """A pilot's kind of step size: a table by lambda."""
    return StepSizeTable((0.0, 0.5, 1.0), (4 * step, 2 * step, step))


@pytest.mark.parametrize("target_accept", [None, 0.8])
def test_sbc_of_a_kernel_with_a_new_step_size_table_reuses_its_program(model, target_accept):
    run = lambda step, k: sbc(jax.random.key(k), model,  # noqa: E731
                              KernelSampler(HMC(model, step_size=table(step)), warmup=5, thin=1,
                                            target_accept=target_accept),
                              num_replications=4, num_draws=7)
    first, _ = compiles_during(lambda: run(0.1, 0))
    second, n = compiles_during(lambda: run(0.05, 1))
    assert n == 0
    assert second.ranks.shape == first.ranks.shape
    # The step size is an argument, not a stale constant: the same key with another step gives other draws.
    again, _ = compiles_during(lambda: run(0.1, 1))
    assert not np.array_equal(again.ranks, second.ranks) or not np.array_equal(again.ess, second.ess)


def test_prior_normalization_on_a_new_fit_reuses_its_programs(model):
    run = lambda k: prior_normalization(jax.random.key(k), model, num_steps=20, num_runs=4,  # noqa: E731
                                        num_fit=200)
    compiles_during(lambda: run(0))
    second, n = compiles_during(lambda: run(1))
    assert n == 0
    assert np.isfinite(second.estimate)


def test_numpyro_nuts_on_new_data_reuses_its_program():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from bdmc.checks import NumPyroNUTS
    from bdmc.ppl import from_numpyro

    def program(y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        with numpyro.plate("cases", 5):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    model = from_numpyro(program, observed="y")
    # Equal options on the same program are one sampler (the audit builds a new one each time).
    run = lambda k: NumPyroNUTS(model, num_warmup=20).diagnosed_draws(  # noqa: E731
        jax.random.key(k), bdmc.simulate(jax.random.key(10 + k), model).data, num_draws=10)
    compiles_during(lambda: run(0))
    (draws, stats), n = compiles_during(lambda: run(1))
    assert n == 0
    assert np.all(np.isfinite(np.asarray(draws["mu"]))) and stats["transitions"] == 10
