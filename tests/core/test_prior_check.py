"""The check at exact prior draws refuses data outside the model's support, naming the case, and never a correct
model on data within it (count data, including counts far in the tail)."""

import jax
import numpy as np
import pytest

import bdmc
from bdmc.errors import DataError


def poisson_regression(x, y=None):
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Poisson(jax.numpy.exp(a + b * x)), obs=y)


X = np.linspace(-1.0, 1.0, 12)
COUNTS = np.array([4, 5, 4, 1, 0, 4, 3, 4, 0, 6, 3, 3])


def _model():
    pytest.importorskip("numpyro")
    return bdmc.ppl.from_numpyro(poisson_regression, X, observed="y")


def test_a_count_outside_the_support_is_refused_naming_the_case(key):
    model = _model()
    negative = COUNTS.copy()
    negative[2] = -4
    with pytest.raises(DataError, match=r"y\[2\] = -4 has zero density under every one of 1,024 prior draws"):
        bdmc.forward_ais(key, model, {"y": negative}, num_steps=10, num_runs=4, progress=False)
    fractional = COUNTS.astype(float)
    fractional[[0, 5]] = [1.5, 2.5]
    with pytest.raises(DataError, match=r"y\[0\] = 1.5, y\[5\] = 2.5 has zero density"):
        bdmc.forward_ais(key, model, {"y": fractional}, num_steps=10, num_runs=4, progress=False)


def test_count_data_in_the_support_are_never_refused(key):
    """Counts of a correct model, including one far in the tail (a prior draw rarely puts much mass there, but
    the likelihood is positive at every draw)."""
    model = _model()
    for counts in (COUNTS, np.where(np.arange(12) == 3, 250, COUNTS), np.zeros(12, int)):
        est = bdmc.forward_ais(key, model, {"y": counts}, num_steps=10, num_runs=4, progress=False)
        assert np.isfinite(est.value)


def test_describe_case_names_each_leaf_holding_the_cases():
    from bdmc.core.prior_check import describe_case

    assert describe_case({"y": np.array([1, -4]), "x": np.array([0.5, 2.0]), "n": np.array(3)}, 1, 2) == \
        "y[1] = -4, x[1] = 2.0"
    assert describe_case(np.array([[1.0, 2.0], [3.0, 4.0]]), 0, 2) == "y[0] = [1.0, 2.0]"
    assert describe_case({"z": np.array(1.0)}, 0, 1) == "data case 0"


def test_the_check_draws_from_the_runs_prior_program_and_names_the_draw_it_flagged():
    """The check's draws are draw_prior's on the check's stream, so a first call compiles one prior program for
    the check and the run; ``check_keys`` gives the keys of exactly the draws the check evaluated (the draw a
    failure names is the one flagged)."""
    from bdmc.core import prior
    from bdmc.core.prior_check import PRIOR_CHECK_STREAM, check_keys, prior_check_flags
    from bdmc.models import LinearRegression

    model = LinearRegression()
    key = jax.random.key(11)
    evaluated, _ = prior.draw_prior(jax.random.fold_in(key, PRIOR_CHECK_STREAM), model, 64)
    named = jax.vmap(model.sample_prior)(check_keys(key, 64))
    for a, b in zip(jax.tree.leaves(evaluated), jax.tree.leaves(named), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    data, _ = bdmc.simulate(jax.random.key(0), model)
    flags = prior_check_flags(key, data, (np.asarray(0.0), np.asarray(1.0)), model=model, num_draws=64)
    assert flags.shape == (64,) and not bool(np.any(flags))

    bdmc.clear_caches()
    bdmc.forward_ais(key, model, data, num_steps=4, num_runs=7, tune="off", progress=False)
    # The check's 1,024 and the run's 7: one prior program, and the compiled slice of the run's first 7.
    assert prior._DRAWS.get((model, prior.POOL)) is not None
    assert len(prior._DRAWS) == 2
