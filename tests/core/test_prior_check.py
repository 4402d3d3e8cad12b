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
